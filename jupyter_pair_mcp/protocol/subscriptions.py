"""``resources/subscribe``: tell subscribed sessions when a notebook or document changes, whoever changed it.

One watcher per subscribed document observes the content of the document's room — its cells and
metadata, or its text; not ``YNotebook.observe``, which would replace the room's own autosave observer,
and not the room's state writes such as the dirty flag a save clears — and only marks it dirty and wakes
the sender. The first change after a quiet period is announced at once; further changes within
``interval`` seconds are coalesced into one ``notifications/resources/updated`` at its end: at most one
per subscription per interval, however many edits arrive. A cell subscription reads just that cell when
it is due and fires only if the cell really changed. Rooms come and go (the last browser leaving deletes
one, an agent's call opens one): subscribing opens no room, and the watcher attaches to a room the moment
it opens — when jupyter-collaboration announces it ready (a person opening the file) and just before an
agent edit in a room it does not watch yet — so the first change in a fresh room is announced like any
other; an observer attached any later would miss it. A check once per interval follows rooms that closed.
Subscriptions are bounded per session and released when the session ends.

Sessions holding any subscription (``notebook://list`` included) also get
``notifications/resources/list_changed`` when files are created, renamed, copied or deleted, and a
subscription to ``notebook://list`` gets ``notifications/resources/updated`` for it then.

The 2026-07-28 protocol has no sessions and no ``resources/subscribe``: a client opens a
``subscriptions/listen`` stream naming the URIs it wants (and whether it wants list changes). Each stream
is a subscriber like a session — the same watchers, bounds and coalescing — whose notifications wait in a
:class:`ListenStream` for the request that holds the stream open to send them; it is released when that
request ends. This module knows no MCP types: the server turns what a stream yields into notifications. URIs,
subscribers and listen streams are ``subscribers.py``'s.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from jupyter_pair_mcp.adapters.contents.adapter import ContentsAdapter
from jupyter_pair_mcp.adapters.rooms import ContentWatch, Edit, RoomsAdapter, cell_digests
from jupyter_pair_mcp.adapters.rooms.lifecycle import RoomOpenings
from jupyter_pair_mcp.errors import InvalidArgument, PairMCPError
from jupyter_pair_mcp.protocol.subscribers import ListenStream, ResourceRef, Subscriber, parse_uri

log = logging.getLogger(__name__)


@dataclass
class _Watched:
    kind: str
    path: str
    uris: dict[str, set[int]] = field(default_factory=dict)  # uri -> subscribed session keys
    watch: ContentWatch | None = None
    dirty: bool = False
    last_sent: float = float("-inf")
    cell_hashes: dict[str, str] = field(default_factory=dict)
    wake: Any = None

    def on_change(self, event: Any) -> None:
        # Only flag and wake the sender: an observer that raises would fail the editor's transaction.
        self.dirty = True
        if self.wake is not None:
            self.wake()


class SubscriptionManager:
    def __init__(
        self,
        rooms: RoomsAdapter,
        contents: ContentsAdapter,
        *,
        interval: float,
        per_session: int,
        streams_per_principal: int = 16,
    ) -> None:
        self.rooms = rooms
        self.contents = contents
        self.interval = interval
        self.per_session = per_session
        self.streams_per_principal = streams_per_principal
        self._watched: dict[tuple[str, str], _Watched] = {}
        self._sessions: dict[int, Subscriber] = {}  # key: id() of the session's connection, or of the stream
        self._task: asyncio.Task[None] | None = None
        self._wakeup = asyncio.Event()
        self._list_last = float("-inf")
        self._list_dirty = False
        self._saved: set[str] = set()
        self._openings = RoomOpenings(rooms, self._room_opened)
        rooms.journal.before_edit(self._before_edit)

    @property
    def subscription_count(self) -> int:
        return sum(len(entry.uris) for entry in self._sessions.values())

    @property
    def stream_count(self) -> int:
        """Open ``subscriptions/listen`` streams."""
        return sum(1 for entry in self._sessions.values() if entry.stream)

    async def subscribe(self, session: Any, connection: Any, uri: str) -> None:
        """``resources/subscribe`` of a session (2025-11-25 and before)."""
        ref, path = await self._resolve(uri)
        key = id(connection)
        if key not in self._sessions:
            self._sessions[key] = Subscriber(session)
            # The session's end (DELETE, idle timeout, shutdown) releases everything it subscribed to.
            connection.exit_stack.callback(self.release, key)
        await self._add(key, uri, ref, path)

    async def listen(self, stream: ListenStream, uris: Sequence[str], *, list_changed: bool) -> list[str]:
        """Subscribe a ``subscriptions/listen`` stream; returns the URIs honored (those that name a resource
        that exists: the acknowledgement tells the client). :meth:`release` it when the stream ends."""
        wanted = list(dict.fromkeys(uris))
        if len(wanted) > self.per_session:
            raise InvalidArgument(
                f"{len(wanted)} resource subscriptions on one listen stream: at most {self.per_session}"
            )
        held = sum(1 for e in self._sessions.values() if e.stream and e.principal == stream.principal)
        if held >= self.streams_per_principal:
            raise InvalidArgument(f"this credential already has {held} listen streams open (the limit): end one first")
        key = id(stream)
        self._sessions[key] = Subscriber(stream, lists=list_changed, stream=True, principal=stream.principal)
        honored = []
        try:
            for uri in wanted:
                try:
                    ref, path = await self._resolve(uri)
                    await self._add(key, uri, ref, path)
                except PairMCPError as exc:
                    log.debug("listen stream: not honoring %r: %s", uri, exc)
                    continue
                honored.append(uri)
        except BaseException:
            self.release(key)
            raise
        self._ensure_running()
        return honored

    async def _resolve(self, uri: str) -> tuple[ResourceRef, str]:
        ref = parse_uri(uri)
        if ref is None:
            raise InvalidArgument(
                f"cannot subscribe to {uri!r}: subscribe to a notebook:// or document:// resource URI"
            )
        return ref, ref.path if ref.kind == "list" else await self.contents.require(ref.path, ref.kind)

    async def _add(self, key: int, uri: str, ref: ResourceRef, path: str) -> None:
        entry = self._sessions[key]
        if uri not in entry.uris and len(entry.uris) >= self.per_session:
            raise InvalidArgument(f"this session already has {self.per_session} subscriptions: unsubscribe some first")
        if ref.cell_id is not None:
            view = await self.rooms.notebook(path)
            view.resolve(cell_id=ref.cell_id)  # the cell must exist now
            if self._sessions.get(key) is not entry:
                return  # the session or stream ended meanwhile
        entry.uris.add(uri)
        if ref.kind == "list":  # no document to watch: list_changed comes from contents events
            self._ensure_running()
            return
        self._openings.start()  # before looking for the room: one opening now is seen either way
        watched = self._watched.setdefault((ref.kind, path), _Watched(ref.kind, path, wake=self._wakeup.set))
        watched.uris.setdefault(uri, set()).add(key)
        if ref.cell_id is not None and ref.cell_id not in watched.cell_hashes:
            watched.cell_hashes[ref.cell_id] = await self._cell_hash(path, ref.cell_id)
        self._attach(watched)
        self._ensure_running()

    def _ensure_running(self) -> None:
        if self._task is None or self._task.done():
            self._task = asyncio.get_running_loop().create_task(self._run(), name="jnmcp-subscriptions")

    async def on_contents_event(self, logger: Any, schema_id: str, data: dict[str, Any]) -> None:
        """Jupyter's contents events: a file created, renamed, copied or deleted changes resource lists.

        Creating a file shows up as a ``save`` (plus ``get``s, which every open room also emits each
        second and are ignored); the first save of a path we have not seen saved counts as a creation.
        """
        action, path = data.get("action"), str(data.get("path", "")).lstrip("/")
        if action in ("rename", "copy", "delete"):
            self._list_dirty = True
        elif action == "save" and path not in self._saved:
            self._saved.add(path)
            self._list_dirty = True
        if self._list_dirty:
            self._wakeup.set()

    def unsubscribe(self, connection: Any, uri: str) -> None:
        key = id(connection)
        entry = self._sessions.get(key)
        if entry is not None:
            entry.uris.discard(uri)
        self._drop(key, uri)

    def release(self, key: int) -> None:
        """Forget every subscription of a session or listen stream that ended."""
        entry = self._sessions.pop(key, None)
        for uri in list(entry.uris) if entry is not None else []:
            self._drop(key, uri)

    def _drop(self, key: int, uri: str) -> None:
        entry = self._sessions.get(key)
        if entry is not None and not entry.uris and not entry.stream:
            del self._sessions[key]  # nothing subscribed any more: no list_changed either
        for doc_key, watched in list(self._watched.items()):
            holders = watched.uris.get(uri)
            if holders is not None:
                holders.discard(key)
                if not holders:
                    del watched.uris[uri]
            if not watched.uris:
                self._detach(watched)
                del self._watched[doc_key]

    def end_streams(self, principal: str, where: Callable[[str], bool] | None = None) -> int:
        """End a credential's listen streams (its grant was revoked), or with ``where`` only their subscriptions
        to the documents it accepts (a person stopped the agent there); how many streams were touched. A legacy
        session's subscriptions end with its session, which the revocation or stop ends."""
        touched = 0
        for key, entry in list(self._sessions.items()):
            if not entry.stream or entry.principal != principal:
                continue
            if where is None:
                entry.notifier.close()
                self.release(key)
                touched += 1
                continue
            gone = {
                uri
                for (_, path), watched in self._watched.items()
                if where(path)
                for uri, holders in watched.uris.items()
                if key in holders
            }
            for uri in gone:
                entry.uris.discard(uri)
                self._drop(key, uri)
            touched += bool(gone)
        return touched

    async def close(self) -> None:
        self._openings.close()
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self._task
        for watched in self._watched.values():
            self._detach(watched)
        for entry in self._sessions.values():
            if entry.stream:
                entry.notifier.close()  # its request sends the stream's final result
        self._watched.clear()
        self._sessions.clear()

    # -- watching ---------------------------------------------------------------------------------
    def _room_opened(self, kind: str) -> None:
        """A room just became ready: watch it before its first edit (one file-id lookup per watched document)."""
        for watched in list(self._watched.values()):
            if watched.kind == kind:
                self._attach(watched)

    def _before_edit(self, ydoc: Any, edit: Edit) -> None:
        """An agent is about to edit ``ydoc``: if it is a watched document's room we are not observing yet
        (the call just opened it), attach now so the edit itself is seen."""
        watched = self._watched.get((edit.kind, edit.path))
        if watched is not None and (watched.watch is None or watched.watch.ydoc is not ydoc):
            self._attach(watched)

    def _attach(self, watched: _Watched) -> None:
        current = self.rooms.live_ydoc(watched.path, watched.kind)
        if watched.watch is not None and current is watched.watch.ydoc:
            return
        self._detach(watched)
        if current is not None:
            watched.watch = self.rooms.watch_content(watched.path, watched.kind, watched.on_change)

    def _detach(self, watched: _Watched) -> None:
        if watched.watch is not None:
            watched.watch.close()
        watched.watch = None

    async def _run(self) -> None:
        last_attach = float("-inf")
        while self._watched or self._sessions:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._wakeup.wait(), self._next_timeout())
            self._wakeup.clear()
            now = time.monotonic()
            if now - last_attach >= self.interval:  # follow rooms that closed or opened, once per interval
                last_attach = now
                for watched in self._watched.values():
                    self._attach(watched)
            if self._list_dirty and now - self._list_last >= self.interval:
                self._list_dirty, self._list_last = False, now
                for entry in list(self._sessions.values()):
                    with contextlib.suppress(Exception):  # a session going away must not stop the others
                        if entry.lists:
                            await entry.notifier.send_resource_list_changed()
                        for uri in [u for u in entry.uris if u.startswith("notebook://list")]:
                            await entry.notifier.send_resource_updated(uri)
            for watched in list(self._watched.values()):
                if watched.dirty and now - watched.last_sent >= self.interval:
                    watched.last_sent = now
                    try:
                        await self._tick(watched)
                    except Exception:
                        log.exception("resource subscription update failed")

    def _next_timeout(self) -> float:
        """Sleep until the earliest throttled notification is due (or one interval, to follow rooms)."""
        now = time.monotonic()
        due = [w.last_sent + self.interval - now for w in self._watched.values() if w.dirty]
        if self._list_dirty:
            due.append(self._list_last + self.interval - now)
        return max(0.005, min([self.interval, *due]))

    async def _tick(self, watched: _Watched) -> None:
        watched.dirty = False
        cells = {uri: ref.cell_id for uri in watched.uris if (ref := parse_uri(uri)) is not None and ref.cell_id}
        digests = await self._cell_hashes(watched.path, sorted(set(cells.values()))) if cells else {}
        for uri, holders in list(watched.uris.items()):
            cell_id = cells.get(uri)
            if cell_id is not None:
                digest = digests.get(cell_id)
                if digest is None or digest == watched.cell_hashes.get(cell_id):
                    continue
                watched.cell_hashes[cell_id] = digest
            for key in list(holders):
                entry = self._sessions.get(key)
                if entry is not None:
                    with contextlib.suppress(Exception):  # a session going away must not stop the others
                        await entry.notifier.send_resource_updated(uri)

    async def _cell_hash(self, path: str, cell_id: str) -> str:
        return (await self._cell_hashes(path, [cell_id]))[cell_id]

    async def _cell_hashes(self, path: str, cell_ids: list[str]) -> dict[str, str]:
        """A digest of each cell, made by a scan (in the scan process for a big notebook): a cell holding a 12 MB
        figure, converted and serialized on the loop, held it 330 ms at each change of the notebook."""
        try:
            view = await self.rooms.notebook(path)
            digests: dict[str, str] = await self.rooms.scanner.scan(view.ydoc, cell_digests, cell_ids)
        except PairMCPError:
            return dict.fromkeys(cell_ids, "<unavailable>")
        return digests
