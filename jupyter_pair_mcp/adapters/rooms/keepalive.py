"""How much the rooms kept open for agents hold, and which to close first when they hold too much.

The rooms adapter keeps a room nobody has open in a browser for ``room_idle_timeout`` after an agent's last
call (an agent pausing to think would otherwise pay the whole open again). Kept rooms are bounded in memory
too (``max_kept_rooms_size``): past the bound the biggest go first, so many small notebooks stay warm and
one huge one is what gets reopened. A room's size is its encoded state (a document's memory is a few times
that): the size of its update when the saver last encoded it (its load, its last write) plus the updates made
since (:class:`.saving.SaveState`), never encoded just to measure it (a 100,000-cell notebook: seconds of the
loop). A room the saver does not know is encoded, again only when its state vector moved. A room used within
:data:`MIN_KEEP` seconds is never closed for memory: it would be reopened at once.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from jupyter_pair_mcp.adapters.rooms.persist import write_room
from jupyter_pair_mcp.adapters.rooms.saving import state_of
from jupyter_pair_mcp.adapters.rooms.ystore import stored_all

log = logging.getLogger(__name__)

#: Seconds after an agent's last call in a room during which memory pressure does not close it.
MIN_KEEP = 60.0


@dataclass
class RoomSizes:
    """Encoded sizes of kept rooms, cached per state vector."""

    _sizes: dict[str, tuple[bytes, int]] = field(default_factory=dict)
    measured: int = 0  # encodings done (tests count them: an unchanged room is not encoded again)

    def size(self, room_id: str, ydoc: Any, room: Any = None) -> int:
        saving = state_of(room)
        if saving is not None:  # known from its last encoding and the updates since: not encoded to measure it
            return saving.size()
        state = bytes(ydoc.get_state())
        cached = self._sizes.get(room_id)
        if cached is not None and cached[0] == state:
            return cached[1]
        self.measured += 1
        size = len(ydoc.get_update())
        self._sizes[room_id] = (state, size)
        return size

    def forget(self, room_id: str) -> None:
        self._sizes.pop(room_id, None)


def to_close(sizes: dict[str, int], last_used: dict[str, float], budget: int, now: float) -> list[str]:
    """The kept rooms to close, biggest first, until the rest fit in ``budget`` bytes (rooms used within
    :data:`MIN_KEEP` seconds stay, even past the budget)."""
    total = sum(sizes.values())
    closing = []
    for room_id in sorted(sizes, key=lambda r: -sizes[r]):
        if total <= budget:
            break
        if now - last_used.get(room_id, now) < MIN_KEEP:
            continue
        closing.append(room_id)
        total -= sizes[room_id]
    return closing


class KeptRooms:
    """The rooms agents use: kept open while they do, saved and closed when idle or too big, re-opens counted.

    When the last browser leaves a room, jupyter_server_ydoc closes it ``document_cleanup_delay`` later (a
    minute): an agent pausing to think would pay the whole open again (seconds at 10,000 cells). Its pending
    cleaner is cancelled here, as a browser reconnecting cancels it, and the room is ours to close.
    """

    def __init__(
        self, extension: Callable[[], Any | None], forget: Callable[[str], None], idle_timeout: float, max_size: int
    ) -> None:
        self._extension = extension  # jupyter_server_ydoc's extension app, or None (looked up lazily)
        self._forget = forget  # what the adapter drops with a room (its cell index)
        self.idle_timeout = idle_timeout
        self.max_size = max_size
        self.sizes = RoomSizes()
        self.reopened = 0  # rooms an agent had to open again after we closed them (benchmarks read it)
        self._opened: dict[str, float] = {}  # rooms we keep open (nobody has them in a browser) -> last use
        self._used: dict[str, float] = {}  # every room an agent used -> its last use (monotonic)
        self._closed: OrderedDict[str, float] = OrderedDict()  # rooms we closed -> when (the newest 1000)
        self._janitor: asyncio.Task[None] | None = None

    def _room(self, room_id: str) -> Any | None:
        server = getattr(self._extension(), "ywebsocket_server", None)
        return server.rooms.get(room_id) if server is not None else None

    def opening(self, room_id: str) -> None:
        """An agent's call opens ``room_id`` (it was not open): a re-open if we closed it."""
        closed = self._closed.pop(room_id, None)
        if closed is not None:
            self.reopened += 1
            ago = time.monotonic() - closed
            log.info("Reopening collaboration room %s, closed %.0f s ago, for an MCP agent", room_id, ago)

    def used(self, room_id: str, room: Any | None, existed: bool) -> None:
        """An agent's call uses ``room_id`` now: kept when no browser has it (or it was not open before)."""
        now = self._used[room_id] = time.monotonic()
        if not existed or room_id in self._opened or (room is not None and not room.clients):
            self._keep(room_id, room, now)
        else:
            self._start_janitor()  # watches for its last browser leaving

    def _keep(self, room_id: str, room: Any, used: float) -> None:
        cleaner = getattr(room, "cleaner", None)
        if cleaner is not None and not cleaner.done():
            cleaner.cancel()
            log.info("Keeping collaboration room %s open while an MCP agent uses it", room_id)
        self._opened[room_id] = used
        self._start_janitor()

    def _start_janitor(self) -> None:
        if self.idle_timeout and (self._janitor is None or self._janitor.done()):
            self._janitor = asyncio.get_running_loop().create_task(self._sweep_forever())

    async def _sweep_forever(self) -> None:
        # Often enough to catch a room whose last browser left before jupyter_server_ydoc's cleaner closes it.
        cleanup = getattr(self._extension(), "document_cleanup_delay", None) or 60.0
        interval = max(0.2, min(self.idle_timeout / 4, 15.0, float(cleanup) / 2))
        while self._opened or self._used:
            await asyncio.sleep(interval)
            try:
                await self.evict()
            except Exception:
                log.exception("evicting idle collaboration rooms failed")

    async def evict(self, *, now: float | None = None) -> list[str]:
        """Save and close the kept rooms nobody joined and no agent used for ``idle_timeout``, then the biggest
        while together they hold more than ``max_size``; the rooms closed."""
        now = time.monotonic() if now is None else now
        for room_id, used in list(self._used.items()):
            room = self._room(room_id)
            if room is None or now - used >= self.idle_timeout:
                self._used.pop(room_id, None)  # gone, or unused for long: jupyter_server_ydoc's to close
            elif not room.clients and room_id not in self._opened:
                self._keep(room_id, room, used)  # its last browser left while an agent uses it
        evicted = []
        for room_id, last_used in list(self._opened.items()):
            room = self._room(room_id)
            if room is None or room.clients:
                # Gone already, or a browser joined: its websocket handler cleans it up from now on.
                self._forget(room_id)
                continue
            if now - last_used < self.idle_timeout:
                continue
            idle = f"no browser has it open and no MCP agent used it for {self.idle_timeout:.0f} s"
            if await self._close(room_id, room, idle):
                evicted.append(room_id)
        return evicted + await self._evict_big(now)

    async def _evict_big(self, now: float) -> list[str]:
        if not self.max_size or not self._opened:
            return []
        sizes = {}
        for room_id in list(self._opened):
            room = self._room(room_id)
            if room is not None and not room.clients:
                sizes[room_id] = self.sizes.size(room_id, room.ydoc, room)
                await asyncio.sleep(0)  # an encoding (a room not adopted: linear) in its own loop turn
        evicted = []
        for room_id in to_close(sizes, self._opened, self.max_size, now):
            room = self._room(room_id)
            mb = sizes[room_id] / (1 << 20)
            why = f"{mb:.1f} MB, the biggest of the rooms kept for MCP agents past max_kept_rooms_size"
            if room is not None and not room.clients and await self._close(room_id, room, why):
                evicted.append(room_id)
        return evicted

    async def _close(self, room_id: str, room: Any, why: str) -> bool:
        """Save and close a room we keep (``why`` goes to the log); False if a browser joined it meanwhile."""
        ydoc: Any = self._extension()
        pending = getattr(room, "_saving_document", None)
        if pending is not None and not pending.done():
            # An autosave is still waiting out its delay: deleting the room would cancel it.
            try:
                await write_room(room, room_id)
            except Exception as exc:
                log.warning("Saving room %s before closing it failed: %s", room_id, exc)
        if not await stored_all(room):
            log.warning("The history of room %s had not stored its last edits when it was closed", room_id)
        async with ydoc._room_locks[room_id]:
            if room.clients or self._room(room_id) is not room:
                return False
            await ydoc.ywebsocket_server.delete_room(room=room)
            file_id = room_id.rsplit(":", 1)[-1]
            loader = ydoc.file_loaders[file_id]
            if loader.number_of_subscriptions == 0:
                await ydoc.file_loaders.remove(file_id)
        self._forget(room_id)
        self._used.pop(room_id, None)
        self._closed[room_id] = time.monotonic()
        while len(self._closed) > 1000:
            self._closed.popitem(last=False)
        log.info("Closed collaboration room %s: %s", room_id, why)
        return True

    def forget(self, room_id: str) -> None:
        self._opened.pop(room_id, None)
        self.sizes.forget(room_id)

    async def close(self) -> None:
        if self._janitor is not None:
            self._janitor.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self._janitor
