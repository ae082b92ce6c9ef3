"""Files changed on disk under their open rooms, and rooms that cannot write their file: what agents are told.

Another program may rewrite a file while its room is open. jupyter-collaboration notices it (it polls the
file every ``file_poll_interval``; its autosave finds the file newer than what it loaded) and loads the file
over the room: every change not yet saved is replaced — an agent's edit made a moment before among them,
though its tool call answered OK. So before any call works on a document, :meth:`DiskWatch.settle` lets the
room look at its file now: a change on disk is loaded before the call reads or edits, and a reload already
under way finishes first. Each reload is counted per room (the history recorder sees it commit); an agent
that used the document before a reload it was not told about is told on its next call of the document,
and that call, when it writes, is refused with nothing done: what the agent read is out of date.

An autosave that fails (read-only file, full disk) is logged by jupyter-collaboration and not tried again
until the next change. DiskWatch hears of it from the room's events, writes the room again with a bounded
backoff until the file holds it, and meanwhile every call of the document is told its edits are not on disk.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from jupyter_core.utils import ensure_async
from jupyter_server.services.contents.filemanager import AsyncFileContentsManager, FileContentsManager

from jupyter_pair_mcp.adapters.rooms.persist import save_pending, write_room
from jupyter_pair_mcp.adapters.rooms.saving import acquire_patiently, path_of, patiently, state_of
from jupyter_pair_mcp.errors import Conflict, PairMCPError, Unavailable
from jupyter_pair_mcp.notices import CallNotes

log = logging.getLogger(__name__)

#: Principals x rooms whose last seen reload is remembered, and rooms whose reloads are (least recent first out).
MAX_SEEN = 10_000
#: Jupyter's own model reads for local files (see :func:`unchanged_on_disk`).
_LOCAL_GETS = (AsyncFileContentsManager.get, FileContentsManager.get)
#: Seconds before the first retry of a failed autosave, and the most between two retries (doubling).
RETRY_FIRST = 0.5
RETRY_MAX = 30.0


@dataclass
class Reload:
    count: int  # reloads of this room so far
    at: float  # wall-clock time of the last one
    dropped: bool  # it replaced changes that were not saved yet (a conflict of the merge, or no merge)
    conflicts: tuple[str, ...] = ()  # where the file's side won over the room's (cell ids, or "text")


@dataclass
class SaveFailure:
    since: float  # wall-clock time of the first failed save
    reason: str
    retry: asyncio.Task[None] | None = None


def _clock(at: float) -> str:
    return time.strftime("%H:%M:%S UTC", time.gmtime(at))


class DiskWatch:
    """Reloads from disk and failed saves, per room id; ``room_of(room_id)`` is the open room (or None)."""

    def __init__(self, room_of: Callable[[str], Any]) -> None:
        self._room_of = room_of
        self._reloads: dict[str, Reload] = {}
        self._seen: OrderedDict[tuple[str, str], int] = OrderedDict()
        self._failures: dict[str, SaveFailure] = {}
        self._listening: tuple[Any, str] | None = None
        self._on_ready: Callable[[Any], None] | None = None
        #: ``on_merge(path, reload)`` after a file changed on disk was merged into its room (people are told).
        self.on_merge: Callable[[str, Reload], object] | None = None

    def listen(self, event_logger: Any, on_ready: Callable[[Any], None]) -> None:
        """Hear jupyter-collaboration's room events from now on (idempotent); ``on_ready(room)`` runs when a
        room has loaded (history observes it from then on, whoever opened it)."""
        if self._listening is not None or event_logger is None:
            return
        try:
            from jupyter_server_ydoc.utils import JUPYTER_COLLABORATION_EVENTS_URI
        except ImportError:
            return
        self._on_ready = on_ready
        event_logger.add_listener(schema_id=JUPYTER_COLLABORATION_EVENTS_URI, listener=self._on_event)
        self._listening = (event_logger, JUPYTER_COLLABORATION_EVENTS_URI)

    async def _on_event(self, logger: Any, schema_id: str, data: dict[str, Any]) -> None:
        try:
            if data.get("action") == "initialize":
                room = self._room_of(str(data.get("room") or ""))
                if room is not None and getattr(room, "ready", False) and self._on_ready is not None:
                    self._on_ready(room)
                return
            await self.room_event(data)
        except Exception:
            log.exception("handling a collaboration room event failed")

    # -- reloads ----------------------------------------------------------------------------------
    def reloaded(self, room: Any) -> None:
        """The room just loaded its file over its content (called inside that commit, synchronously)."""
        room_id = str(getattr(room, "room_id", ""))
        last = self._reloads.pop(room_id, None)
        state = state_of(room)
        merging = state.merging if state is not None else None
        if merging is not None:  # merged with the room's unsaved changes: only conflicts replaced any
            conflicts = tuple(merging.conflicts)
            self._reloads[room_id] = Reload((last.count if last else 0) + 1, time.time(), bool(conflicts), conflicts)
        else:
            self._reloads[room_id] = Reload((last.count if last else 0) + 1, time.time(), save_pending(room))
        while len(self._reloads) > MAX_SEEN:  # the rooms reloaded longest ago are forgotten first
            del self._reloads[next(iter(self._reloads))]
        if self.on_merge is not None:
            try:
                self.on_merge(path_of(room), self._reloads[room_id])
            except Exception:
                log.exception("the merge listener failed for room %s", room_id)
        log.info("Room %s was reloaded from its file, changed on disk by another program", room_id)

    async def settle(self, room: Any, path: str) -> None:
        """Let the room load a change of its file now, and wait for a load under way: then the live content
        includes every change on disk so far, and what the call reads or edits next is that content."""
        loader = getattr(room, "_file", None)
        if loader is None or not getattr(room, "ready", False):
            return
        try:
            # The loader's lock is held while the file is written (a save of a big notebook takes seconds): the
            # file's time moves under a save, and the save itself finds a change by another program. So a call
            # goes on with the live document during a save; its edit is the next save's.
            if not loader._lock.locked() and not unchanged_on_disk(loader):
                # The room's own poll, now: a newer file is merged into the room before this returns. Shielded:
                # a call given up (timeout, cancelled) must not cut the room's load short.
                state = state_of(room)
                if state is not None:
                    state.reloading += 1  # the file changed: this look loads it, however long that takes
                try:
                    await patiently(room, asyncio.shield(loader.maybe_notify()))
                finally:
                    if state is not None:
                        state.reloading -= 1
            await acquire_patiently(room)  # a load or merge under way ends first
            room._update_lock.release()
        except TimeoutError:
            raise Unavailable(
                f"{path!r} is being loaded from disk into the live document (a change by another program); retry in "
                "a moment"
            ) from None
        except Exception as exc:  # the file is gone or unreadable: the call goes on with the live document
            log.debug("Checking %s on disk failed: %s", path, exc)

    async def look_again(self, room_id: str, path: str, call: CallNotes) -> None:
        """Before a writing call answers: a change of the file during the call is merged now, and the call is told
        (what it did is in the room; where the file won a conflict, the notice says where)."""
        room = self._room_of(room_id)
        if room is None:
            return
        await self.settle(room, path)
        call.checked.discard(room_id)
        self.check(room_id, path, call, done=True)

    def check(self, room_id: str, path: str, call: CallNotes | None, *, done: bool = False) -> None:
        """Tell the call what happened to the document's file since this principal last used it.

        A reload it was not told about refuses a writing call (nothing done) and is a notice for a read;
        a failed save is a notice. Once per room and call.
        """
        if call is None or room_id in call.checked:
            return
        call.checked.add(room_id)
        failure = self._failures.get(room_id)
        if failure is not None:
            call.add(
                f"{path!r} could not be written to disk since {_clock(failure.since)} ({failure.reason}): edits "
                "are in the live document but not in the file; the server keeps retrying the save, and this "
                "notice goes away once the file holds them."
            )
        if call.principal is None:
            return
        reload = self._reloads.get(room_id)
        count = reload.count if reload is not None else 0
        key = (room_id, call.principal)
        seen = self._seen.pop(key, None)
        self._seen[key] = count
        while len(self._seen) > MAX_SEEN:
            self._seen.popitem(last=False)
        if reload is None or seen is None or seen >= count:
            return
        if reload.conflicts:
            where = ", ".join(reload.conflicts[:10])
            what = (
                f"{path!r} was changed on disk by another program (at {_clock(reload.at)}) and merged into the live "
                f"document; where both had changed the same place ({where}) the file's version won, replacing "
                "changes not yet saved then (the version before is in get_document_history): what you read before "
                "is out of date."
            )
        elif reload.dropped:
            what = (
                f"{path!r} was changed on disk by another program (at {_clock(reload.at)}) and the live document was "
                "reloaded from the file, replacing changes not yet saved then: what you read before is out of date."
            )
        else:
            call.add(
                f"{path!r} was changed on disk by another program (at {_clock(reload.at)}) and merged into the live "
                "document; every change not saved yet was kept. Read again the cells you work on: some may differ "
                "from what you read."
            )
            return
        if done:  # the call's work is done: it is told, not refused
            call.add(f"{what} Your call's changes were applied first; check the places named.")
            return
        if not call.read_only:
            raise Conflict(
                f"{what} Nothing was done: read it again, then redo the call. Never write its file directly."
            )
        call.add(what)

    # -- failed saves -----------------------------------------------------------------------------
    def failing(self, room_id: str) -> SaveFailure | None:
        return self._failures.get(room_id)

    def save_failed(self, room_id: str, reason: str) -> None:
        """The room's save did not write its file: retry it (bounded backoff) until it does."""
        failure = self._failures.get(room_id)
        if failure is None:
            failure = self._failures[room_id] = SaveFailure(time.time(), reason)
            log.warning("Room %s could not save its file (%s); retrying", room_id, reason)
        else:
            failure.reason = reason
        if failure.retry is None or failure.retry.done():
            failure.retry = asyncio.get_running_loop().create_task(self._retry(room_id, failure))

    def saved(self, room_id: str) -> None:
        """The file holds the room's content: no failure any more."""
        failure = self._failures.pop(room_id, None)
        if failure is not None:
            log.info("Room %s saved its file again", room_id)
            if failure.retry is not None and failure.retry is not asyncio.current_task():
                failure.retry.cancel()

    async def room_event(self, data: dict[str, Any]) -> None:
        """A jupyter-collaboration room event: a save that failed, or one that says it saved (also when it
        skipped a read-only file, which only the file's model tells)."""
        room_id = str(data.get("room") or "")
        room = self._room_of(room_id) if room_id else None
        if room is None:
            return
        if data.get("level") == "ERROR" and str(data.get("msg") or "").startswith("Error saving file"):
            self.save_failed(room_id, "writing the file failed")
        elif data.get("action") == "save":
            loader = room._file
            try:
                model = await ensure_async(loader._contents_manager.get(loader.path, content=False))
            except Exception:
                return  # gone, or unreadable: the next save or the poll says more
            if model.get("writable", True) is False:
                self.save_failed(room_id, "the file is read-only")
            else:
                self.saved(room_id)

    async def _retry(self, room_id: str, failure: SaveFailure) -> None:
        delay = RETRY_FIRST
        while self._failures.get(room_id) is failure:
            await asyncio.sleep(delay)
            room = self._room_of(room_id)
            if room is None:  # closed: what it held went with it (its own close saved, or logged why not)
                self._failures.pop(room_id, None)
                return
            path = path_of(room)
            try:
                await write_room(room, path)
            except Conflict:
                self.saved(room_id)  # the file changed on disk and was merged (and the merge written)
                return
            except PairMCPError as exc:
                failure.reason = reason_of(exc)
                delay = min(delay * 2, RETRY_MAX)
                continue
            except Exception:
                log.exception("Retrying the save of %s failed", path)
                delay = min(delay * 2, RETRY_MAX)
                continue
            self.saved(room_id)
            return

    async def close(self) -> None:
        if self._listening is not None:
            event_logger, schema_id = self._listening
            with contextlib.suppress(Exception):
                event_logger.remove_listener(schema_id=schema_id, listener=self._on_event)
            self._listening = None
        tasks = [f.retry for f in self._failures.values() if f.retry is not None]
        self._failures.clear()
        for task in tasks:
            task.cancel()
        for task in tasks:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task


def unchanged_on_disk(loader: Any) -> bool:
    """Whether the room's file is as its loader last saw it, known from one ``lstat``: the loader's poll
    (``maybe_notify``) reads the file's model through the contents manager (its path checks, file-id lookups
    and a contents event: ~0.5-1 ms of the loop, on every call) and loads the file only when that model's
    ``last_modified`` is newer. The same test is made here when the contents manager is Jupyter's own for local
    files (its ``get`` not overridden: one that is may compute ``last_modified`` otherwise); else, or after a
    rename, or when in doubt, False: the caller polls as the loader does."""
    manager = getattr(loader, "_contents_manager", None)
    seen = getattr(loader, "last_modified", None)
    if seen is None or manager is None or type(manager).get not in _LOCAL_GETS:
        return False
    try:
        path = loader.path
        if path != loader._current_path:
            return False  # renamed: the loader's poll tells the room
        mtime = os.lstat(manager._get_os_path(path)).st_mtime
        return bool(datetime.fromtimestamp(mtime, UTC) <= seen)  # as Jupyter's model has it
    except Exception:
        return False


def reason_of(exc: Exception) -> str:
    """A failed write's reason, short: read-only, or the write failing."""
    text = str(exc)
    if "read-only" in text:
        return "the file is read-only"
    return "the server may not write it" if "may not write" in text else "writing the file failed"


__all__ = ["DiskWatch", "Reload", "SaveFailure"]
