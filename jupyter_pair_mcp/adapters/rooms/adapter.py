"""The rooms adapter: jupyter-collaboration's live rooms of one server, re-acquired on every call.

Every read and write goes through jupyter-collaboration's room for the file — the document JupyterLab
users have open — fetched again on every call with ``get_document(copy=False, create=True)``: the
defaults would hand back a detached copy (edits vanish) or nothing when no browser has the file open,
and a handle kept from an earlier call may belong to a room that has since been deleted (edits to it
"succeed" and are lost). Rooms we had to create are ours to clean up: jupyter-collaboration only
deletes rooms when a websocket closes, so the rooms an agent uses are kept, saved and closed by
:mod:`.keepalive`. Finding a path's room without opening it is :mod:`.lookups`. Opening a room, and refusing
a file collaboration cannot load, is :mod:`.opening`; writing rooms to disk (now, on close, at stop)
is :mod:`.persist`, within a bounded interval of their first unsaved change :mod:`.saving`, and a file
changed on disk is merged with a room's unsaved changes by :mod:`.reload` (:mod:`.diskmerge`).
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
import os
from collections.abc import Callable
from typing import Any

from jupyter_pair_mcp.adapters.rooms.cellindex import CellIndex, quiet_room_observer
from jupyter_pair_mcp.adapters.rooms.disk import DiskWatch, reason_of
from jupyter_pair_mcp.adapters.rooms.edits import EditJournal
from jupyter_pair_mcp.adapters.rooms.history import (
    HistoryRecorder,
    MetadataCache,
    Row,
    people,
    read_rows,
    store_key,
)
from jupyter_pair_mcp.adapters.rooms.keepalive import KeptRooms
from jupyter_pair_mcp.adapters.rooms.lookups import ROOM_PREFIX, RoomLookups
from jupyter_pair_mcp.adapters.rooms.notebook import NotebookView
from jupyter_pair_mcp.adapters.rooms.opening import Explain, open_document
from jupyter_pair_mcp.adapters.rooms.outline import Outline, OutlineCache
from jupyter_pair_mcp.adapters.rooms.persist import (
    Unsaved,
    is_document_room,
    reload_now,
    save_unsaved,
    unsaved,
    write_now,
    write_room,
)
from jupyter_pair_mcp.adapters.rooms.problems import problem_rows
from jupyter_pair_mcp.adapters.rooms.replicas import BigReader, Replicas
from jupyter_pair_mcp.adapters.rooms.saving import adopt
from jupyter_pair_mcp.adapters.rooms.scanning import Scanner
from jupyter_pair_mcp.adapters.rooms.textdoc import TextView
from jupyter_pair_mcp.adapters.rooms.ystore import configure_store_class
from jupyter_pair_mcp.errors import PairMCPError, PermissionDenied, Unavailable
from jupyter_pair_mcp.notices import current as current_call

log = logging.getLogger(__name__)

#: Bytes of outline rows kept for paging (outline.py), all rooms together: ~15 MB for a 100,000-cell notebook.
OUTLINE_CACHE_BYTES = 64 << 20
#: Bytes of problem rows kept for paging (problems.py), all rooms together.
PROBLEMS_CACHE_BYTES = 16 << 20


def _rules(router: Any) -> list[Any]:
    """Every rule of a tornado router, nested routers included."""
    found = []
    for rule in getattr(router, "rules", []) or []:
        found.append(rule)
        found.extend(_rules(rule.target) if hasattr(rule.target, "rules") else [])
    return found


class RoomsAdapter(RoomLookups):
    """Reads and edits jupyter-collaboration's rooms: opens them, keeps them, saves them, and hands out views."""

    def __init__(
        self,
        serverapp: Any,
        *,
        idle_timeout: float = 60.0,
        ystore_path: str = "",
        max_history_updates: int = 0,
        explain: Explain | None = None,
        scan_processes: int = 1,
        max_kept_size: int = 256 << 20,
        save_interval: float = 5.0,
        max_history_cache_bytes: int = 64 << 20,
        max_replica_bytes: int = 64 << 20,
    ) -> None:
        super().__init__(serverapp)
        self.explain = explain
        self.save_interval = save_interval
        self.kept = KeptRooms(self._ydoc_extension, self._forget, idle_timeout, max_kept_size)
        self.ystore_path = ystore_path
        self.max_history_updates = max_history_updates
        self.journal = EditJournal()
        self.recorder = HistoryRecorder(self.journal, self._authors)
        self.disk = DiskWatch(self._room)
        self.scanner = Scanner(scan_processes)
        self._reader = BigReader(self.scanner, Replicas(max_replica_bytes))
        self._db_path: str | None = None
        self._metadata = MetadataCache(max_bytes=max_history_cache_bytes)
        self._ystore_configured = False
        self.outlines = OutlineCache(OUTLINE_CACHE_BYTES)
        self.problems = OutlineCache(PROBLEMS_CACHE_BYTES)  # the same keeping, for problems.py's rows

    # -- the extension (lookups that open no room are RoomLookups', lookups.py) ------------------
    def _require(self) -> Any:
        ydoc = self._ydoc_extension()
        if ydoc is None or getattr(ydoc, "ywebsocket_server", None) is None:
            raise Unavailable(
                "real-time collaboration is not enabled on this server, so notebooks cannot be edited live: "
                "install jupyter-collaboration and enable the jupyter_server_ydoc server extension"
            )
        self.configure_ystore()
        return ydoc

    def configure_ystore(self) -> None:
        """Make every room keep its update history in one configured, absolute place.

        Rooms opened over the websocket get their YStore with the server's configuration; rooms
        opened through ``get_document`` get it without, and write ``.jupyter_ystore.db`` into the
        process's working directory. We give ``get_document`` the configured class too and, when no
        ``SQLiteYStore.db_path`` is configured, set it to our absolute ``ystore_path`` for both.
        """
        ydoc = self._ydoc_extension()
        if ydoc is None or self._ystore_configured:
            return
        self._ystore_configured = True
        self.disk.listen(getattr(self.serverapp, "event_logger", None), self._observe)
        config = ydoc.config
        if self.ystore_path and "db_path" not in config.SQLiteYStore:
            os.makedirs(os.path.dirname(self.ystore_path), exist_ok=True)
            config.SQLiteYStore.db_path = self.ystore_path
        base = ydoc.ystore_class
        if base is None:
            return  # the admin turned the YStore off: no history
        ours = configure_store_class(base, config, self.recorder, self.max_history_updates, self.scanner.merge)
        ydoc.ystore_class = ours
        # Rooms opened over the websocket take their class from the handler's arguments, fixed at start.
        router = getattr(getattr(self.serverapp, "web_app", None), "default_router", None)
        for rule in _rules(router):
            kwargs = getattr(rule, "target_kwargs", None)
            if isinstance(kwargs, dict) and "ystore_class" in kwargs and "room_locks" in kwargs:
                kwargs["ystore_class"] = ours

    def _observe(self, room: Any) -> None:
        """Record the provenance of a document room's updates (and its reloads from disk) from now on."""
        if is_document_room(room):
            self.recorder.attach(room.ydoc, room, self.disk.reloaded)
            self._adopt(room)

    def _adopt(self, room: Any) -> None:
        """Our saves and reloads for the room (bounded save interval, merged reloads; see saving.py)."""
        adopt(room, self.save_interval, write_now, reload_now, self._cell_ids, self._reader)
        quiet_room_observer(room)  # its autosave trigger reads no event: no event paths (walks) for it

    async def _cell_ids(self, room: Any) -> Callable[[], list[str]]:
        """What gives the live notebook's cell ids in order, from its cell index (built off the loop now if no call
        built it yet)."""
        index = self._index(room.room_id, room._document)
        await index.prepare(self.scanner.scan)
        return lambda: list(index.ids)

    def _index(self, room_id: str, document: Any) -> CellIndex:
        entry = self._indexes.get(room_id)
        if entry is None or entry[0] is not document:
            if entry is not None:
                entry[1].close()
            entry = self._indexes[room_id] = (document, CellIndex(document.ycells))
        return entry[1]

    # -- history ----------------------------------------------------------------------------------
    def history_db(self) -> str | None:
        """The YStore database file, or None when history is not kept in SQLite on this server."""
        if self._db_path is None:
            ydoc = self._require()
            store_class = ydoc.ystore_class
            probe = store_class(path="probe") if store_class is not None else None
            db_path = getattr(probe, "db_path", None)
            self._db_path = os.path.abspath(db_path) if isinstance(db_path, str) and db_path != ":memory:" else ""
        return self._db_path or None

    async def history_rows(self, path: str, kind: str, *, upto: int | None = None, updates: bool = False) -> list[Row]:
        """Stored updates of ``path``, oldest first (after the ones still being written have landed)."""
        db_path = self.history_db()
        file_ids = self._file_ids()
        file_id = file_ids.get_id(path) if file_ids is not None else None
        if db_path is None:
            raise Unavailable(
                "document history needs jupyter-collaboration's SQLite YStore (YDocExtension.ystore_class), "
                "which is turned off on this server"
            )
        if file_id is None or not await asyncio.to_thread(os.path.exists, db_path):
            return []
        for _ in range(300):  # agent updates are written to the store a moment after their transaction
            if not self.recorder.has_pending():
                break
            await asyncio.sleep(0.01)
        key = store_key(kind, file_id)
        if upto is None and not updates:
            return await asyncio.to_thread(self._metadata.read, db_path, key)
        return await asyncio.to_thread(read_rows, db_path, key, upto=upto, updates=updates)

    def _authors(self, key: str, client_ids: list[int]) -> list[str] | None:
        """Names of the people whose clients wrote an update, from the room's awareness (while they are in
        it); None when only the room's own server-side client wrote it."""
        kind, _, rest = key.lstrip(".").partition(":")
        prefix = ROOM_PREFIX.get("notebook" if kind == "notebook" else "file")
        return people(self._room(f"{prefix}:{rest.removesuffix('.y')}"), client_ids)

    # -- the live document ------------------------------------------------------------------------
    async def notebook(self, path: str, actor: Any = None) -> NotebookView:
        """The live notebook of ``path`` for this call only (the caller checked the file exists)."""
        document, room_id = await self._document(path, "notebook")
        return NotebookView(document, self._index(room_id, document), path, journal=self.journal, actor=actor)

    async def outline(self, view: NotebookView, start: int, max_bytes: int, max_cells: int) -> Outline:
        """A page of the live notebook's outline: every page of one version of it from one scan (outline.py)."""
        key = self.room_id(view.path, "notebook", create_id=False) or view.path
        return await self.outlines.page(key, view.index, view.ydoc, self.scanner.scan, start, (max_bytes, max_cells))

    async def problem_rows(self, view: NotebookView, python: bool) -> list[str]:
        """The live notebook's problem rows (problems.py): one scan per version of it, off the loop."""
        key = f"{self.room_id(view.path, 'notebook', create_id=False) or view.path}:{int(python)}"
        shape = functools.partial(problem_rows, python=python)  # picklable for the scan process
        # Parsing a cell holds the GIL in one C call (~120 ms for 100 KB): in the scan process at any size.
        return await self.problems.rows(key, view.index, view.ydoc, self.scanner.scan_away, shape)

    async def text(self, path: str, actor: Any = None) -> TextView:
        """The live text document of ``path`` for this call only (the caller checked it is a file)."""
        document, _ = await self._document(path, "file")
        return TextView(document, path, journal=self.journal, actor=actor)

    async def _document(self, path: str, kind: str) -> tuple[Any, str]:
        ydoc = self._require()
        room_id = self.room_id(path, kind)
        if room_id is None:
            raise Unavailable("the file id service is not running: enable the jupyter_server_fileid extension")
        existed = room_id in ydoc.ywebsocket_server.rooms
        if not existed:
            self.kept.opening(room_id)
        try:
            document = await open_document(ydoc, room_id, path, kind, self.explain)
        except Exception:
            self._forget(room_id)
            raise
        room = ydoc.ywebsocket_server.rooms.get(room_id)
        self.recorder.attach(document.ydoc, room, self.disk.reloaded)
        if room is not None and is_document_room(room):
            self._adopt(room)
        observed = getattr(room, "ydoc_observed", None)
        if observed is not None and not observed.is_set():
            # A room just opened starts forwarding updates to its YStore a moment after it is ready: an
            # edit made before that would be missing from history (and the store would then disagree
            # with the file when the room reopens). Wait for it.
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(observed.wait(), 5.0)
        self.kept.used(room_id, room, existed)
        if kind == "notebook":  # a room just opened: its cell index built off the loop (a scan), before the checks
            await self._index(room_id, document).prepare(self.scanner.scan)
        call = current_call()  # a tool call (not a resource read, nor a run's output writer): once per room
        if room is not None and call is not None and room_id not in call.checked:
            await self.disk.settle(room, path)  # a file changed on disk is loaded before the call reads or edits
            self.disk.check(room_id, path, call)  # no await from here to the caller's edit
            if not call.read_only:  # and looked at again before the call answers: a change during it is merged
                call.finishers.append(lambda: self.disk.look_again(room_id, path, call))
        return document, room_id

    async def save(self, path: str, kind: str) -> bool:
        """Write the document to its file now (instead of after the room's save delay).

        Answers True only once the file holds the live content; every other outcome raises a typed error
        (see :func:`~jupyter_pair_mcp.adapters.rooms.persist.write_room`). False: no room is open, so the
        file on disk already is the document.
        """
        room_id = self.room_id(path, kind, create_id=False)
        room = self._room(room_id)
        if room is None or room_id is None:
            return False
        try:
            await write_room(room, path)
        except PairMCPError as exc:
            if isinstance(exc, PermissionDenied) or (isinstance(exc, Unavailable) and "being loaded" not in str(exc)):
                self.disk.save_failed(room_id, reason_of(exc))  # nothing else would try again
            raise
        self.disk.saved(room_id)
        return True

    def unsaved(self) -> Unsaved | None:
        """At the start of the server's stop, synchronously: the rooms and which have changes not on disk yet.

        jupyter_server_ydoc's stop runs concurrently with ours; noting them before our first ``await``
        keeps that race out of what we save.
        """
        ydoc = self._ydoc_extension()
        server = getattr(ydoc, "ywebsocket_server", None)
        return unsaved(server.rooms) if server is not None else None

    async def save_unsaved(self, before: Unsaved | None, timeout: float) -> list[str]:
        """Write the rooms noted by :meth:`unsaved` that had a save pending or changed since (bounded)."""
        server = getattr(self._ydoc_extension(), "ywebsocket_server", None)
        if before is None or server is None:
            return []
        return await save_unsaved(before, server.rooms, timeout)

    # -- cleanup ----------------------------------------------------------------------------------
    async def evict_idle(self, *, now: float | None = None) -> list[str]:
        """Save and close the kept rooms idle past ``idle_timeout``, and the biggest past the memory bound."""
        return await self.kept.evict(now=now)

    def _forget(self, room_id: str) -> None:
        self.kept.forget(room_id)
        self.outlines.drop(room_id)
        for python in (0, 1):
            self.problems.drop(f"{room_id}:{python}")
        entry = self._indexes.pop(room_id, None)
        if entry is not None:
            entry[1].close()

    async def close(self) -> None:
        await self.disk.close()
        await self.scanner.close()
        await self._reader.replicas.close()
        await self.kept.close()
        for room_id in list(self._indexes):
            self._forget(room_id)
