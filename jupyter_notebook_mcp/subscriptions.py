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
``notifications/resources/list_changed`` when files are created, renamed, copied or deleted.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import time
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import unquote, urlsplit

from .contents import ContentsAdapter
from .errors import InvalidArgument, NotebookMCPError, NotFound
from .rooms import ContentWatch, Edit, RoomsAdapter
from .rooms.lifecycle import RoomOpenings

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


def parse_uri(uri: str) -> tuple[str, str, str | None]:
    """(kind, path, cell_id) of a subscribable resource URI; kind "list" for ``notebook://list``."""
    parts = urlsplit(uri)
    segments = parts.path.split("/")
    if parts.scheme == "notebook" and parts.netloc == "list" and parts.path in ("", "/"):
        return "list", "", None
    if parts.scheme == "document" and parts.netloc and parts.path in ("", "/"):
        return "file", unquote(parts.netloc), None
    if parts.scheme == "notebook" and parts.netloc and parts.netloc != "list":
        path = unquote(parts.netloc)
        if parts.path in ("", "/json", "/cells"):
            return "notebook", path, None
        if len(segments) == 3 and segments[1] == "cells" and segments[2]:
            return "notebook", path, unquote(segments[2])
    raise InvalidArgument(f"cannot subscribe to {uri!r}: subscribe to a notebook:// or document:// resource URI")


class SubscriptionManager:
    def __init__(self, rooms: RoomsAdapter, contents: ContentsAdapter, *, interval: float, per_session: int) -> None:
        self.rooms = rooms
        self.contents = contents
        self.interval = interval
        self.per_session = per_session
        self._watched: dict[tuple[str, str], _Watched] = {}
        self._sessions: dict[int, tuple[Any, set[str]]] = {}  # key -> (notifier session, uris)
        self._task: asyncio.Task[None] | None = None
        self._wakeup = asyncio.Event()
        self._list_last = float("-inf")
        self._list_dirty = False
        self._saved: set[str] = set()
        self._openings = RoomOpenings(rooms, self._room_opened)
        rooms.journal.before_edit(self._before_edit)

    @property
    def subscription_count(self) -> int:
        return sum(len(uris) for _, uris in self._sessions.values())

    async def subscribe(self, session: Any, connection: Any, uri: str) -> None:
        kind, path, cell_id = parse_uri(uri)
        if kind != "list":
            path = await self.contents.require(path, kind)
        key = id(connection)
        if key not in self._sessions:
            self._sessions[key] = (session, set())
            # The session's end (DELETE, idle timeout, shutdown) releases everything it subscribed to.
            connection.exit_stack.callback(self.release, key)
        _, uris = self._sessions[key]
        if uri not in uris and len(uris) >= self.per_session:
            raise InvalidArgument(f"this session already has {self.per_session} subscriptions: unsubscribe some first")
        if cell_id is not None:
            view = await self.rooms.notebook(path)
            view.resolve(cell_id=cell_id)  # the cell must exist now
        uris.add(uri)
        if kind == "list":  # no document to watch: list_changed comes from contents events
            self._ensure_running()
            return
        self._openings.start()  # before looking for the room: one opening now is seen either way
        watched = self._watched.setdefault((kind, path), _Watched(kind, path, wake=self._wakeup.set))
        watched.uris.setdefault(uri, set()).add(key)
        if cell_id is not None and cell_id not in watched.cell_hashes:
            watched.cell_hashes[cell_id] = await self._cell_hash(path, cell_id)
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
            entry[1].discard(uri)
        self._drop(key, uri)

    def release(self, key: int) -> None:
        """Forget every subscription of a session that ended."""
        entry = self._sessions.pop(key, None)
        for uri in list(entry[1]) if entry is not None else []:
            self._drop(key, uri)

    def _drop(self, key: int, uri: str) -> None:
        entry = self._sessions.get(key)
        if entry is not None and not entry[1]:
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

    async def close(self) -> None:
        self._openings.close()
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self._task
        for watched in self._watched.values():
            self._detach(watched)
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
                for session, _ in list(self._sessions.values()):
                    with contextlib.suppress(Exception):
                        await session.send_resource_list_changed()
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
        for uri, holders in list(watched.uris.items()):
            _, _, cell_id = parse_uri(uri)
            if cell_id is not None:
                digest = await self._cell_hash(watched.path, cell_id)
                if digest == watched.cell_hashes.get(cell_id):
                    continue
                watched.cell_hashes[cell_id] = digest
            for key in list(holders):
                entry = self._sessions.get(key)
                if entry is not None:
                    with contextlib.suppress(Exception):  # a session going away must not stop the others
                        await entry[0].send_resource_updated(uri)

    async def _cell_hash(self, path: str, cell_id: str) -> str:
        try:
            view = await self.rooms.notebook(path)
            return json.dumps(view.ycell(cell_id).to_py(), sort_keys=True, default=str)
        except NotFound:
            return "<deleted>"
        except NotebookMCPError:
            return "<unavailable>"
