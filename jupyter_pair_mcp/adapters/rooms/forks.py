"""Forks: a private copy of a live document that an agent drafts in, merged back as one CRDT update.

A fork is a fresh Y document holding the live room's state at fork time, served as a room of the
collaboration websocket server under its own id (as jupyter-collaboration's own forks are), so a person
may open it to look at the draft; the document's room never sees its edits until the merge. Merging
applies exactly the fork's own changes (``fork.get_update(live.get_state())``) inside one agent
transaction on the live room: it is a CRDT merge, so what people typed meanwhile survives. A
synchronized fork also receives every live update as it happens.
"""

from __future__ import annotations

import contextlib
import logging
import weakref
from typing import Any

from jupyter_ydoc import YFile, YNotebook
from pycrdt import Doc

from jupyter_pair_mcp.adapters.rooms.cellindex import CellIndex
from jupyter_pair_mcp.adapters.rooms.edits import Edit, EditJournal
from jupyter_pair_mcp.adapters.rooms.notebook import NotebookView
from jupyter_pair_mcp.adapters.rooms.textdoc import TextView

log = logging.getLogger(__name__)


def copy_of(update: bytes) -> Doc[Any]:
    """A new document holding ``update`` (a whole document's): run in a worker thread - applying a large
    notebook's update is O(N) (34 ms for 10,000 cells) and a pycrdt document made there works on the loop."""
    doc: Doc[Any] = Doc()
    doc.apply_update(update)
    return doc


class ForkDocument:
    """The Y side of one fork: its document, views on it, live synchronization and merge."""

    def __init__(
        self,
        live_document: Any,
        kind: str,
        path: str,
        *,
        synchronize: bool,
        doc: Doc[Any] | None = None,
        seed: tuple[list[str], list[str], list[bool]] | None = None,
    ) -> None:
        """``doc``: the copy already made (:func:`copy_of`, off the loop); ``seed``: the live cell index's
        :meth:`~.CellIndex.seed` taken with that copy, so the fork's index needs no rebuild."""
        if doc is None:
            doc = Doc()
            doc.apply_update(live_document.ydoc.get_update())
        self.kind = kind
        self.path = path
        self.document: Any = _wrap(doc, kind)
        self.journal = EditJournal()  # fork edits feed no history, undo or presence of the live room
        self.summaries: list[str] = []
        self.touched: dict[str, None] = {}  # the cells its edits changed since its last merge (their locks are checked)
        self.journal.on_edit(self._recorded)
        self._index: CellIndex | None = None
        if kind == "notebook":
            ycells = self.document.ycells
            self._index = CellIndex.seeded(ycells, seed) if seed is not None else CellIndex(ycells)
        self.synchronize = synchronize
        self._live_ref: weakref.ref[Any] | None = None
        self._subscription: Any = None
        if synchronize:
            self.follow(live_document.ydoc)
        self.room: Any = None
        self._listed: str | None = None  # its room id in jupyter-collaboration's fork registry

    def _recorded(self, edit: Edit) -> None:
        self.summaries.append(edit.summary)
        self.touched.update(dict.fromkeys(edit.touched))

    @property
    def ydoc(self) -> Doc[Any]:
        return self.document.ydoc  # type: ignore[no-any-return]

    def follow(self, live: Any) -> None:
        """Keep receiving ``live``'s updates (re-attached when the room was closed and reopened)."""
        current = self._live_ref() if self._live_ref is not None else None
        if current is live:
            return
        self.unfollow()
        self.ydoc.apply_update(live.get_update(self.ydoc.get_state()))
        fork = weakref.ref(self.ydoc)

        def forward(event: Any) -> None:
            target = fork()
            if target is not None:
                target.apply_update(event.update)

        self._subscription = live.observe(forward)
        self._live_ref = weakref.ref(live)

    def unfollow(self) -> None:
        live = self._live_ref() if self._live_ref is not None else None
        if live is not None and self._subscription is not None:
            with contextlib.suppress(Exception):
                live.unobserve(self._subscription)
        self._subscription = None
        self._live_ref = None

    @property
    def index(self) -> CellIndex | None:
        return self._index

    def notebook_view(self, actor: Any) -> NotebookView:
        assert self._index is not None, "a notebook fork"
        return NotebookView(self.document, self._index, self.path, journal=self.journal, actor=actor)

    def text_view(self, actor: Any) -> TextView:
        return TextView(self.document, self.path, journal=self.journal, actor=actor)

    def merge_into(
        self, live_document: Any, journal: EditJournal, actor: Any, summary: str, *, catch_up: bool = True
    ) -> int:
        """Apply the fork's own changes to the live document as one agent edit; returns the update's size."""
        live = live_document.ydoc
        update = self.ydoc.get_update(live.get_state())
        origin = actor.origin if actor is not None else "jupyter-pair-mcp"
        with (
            journal.recording(live, Edit(self.path, self.kind, actor, summary, "agent", touched=list(self.touched))),
            live.transaction(origin=origin),
        ):
            live.apply_update(update)
        if catch_up:  # a fork kept after merging continues from the merged state
            self.ydoc.apply_update(live.get_update(self.ydoc.get_state()))
        return len(update)

    async def serve(self, websocket_server: Any, room_id: str) -> None:
        """Expose the fork as a room of the collaboration websocket server (so a person can open it)."""
        from jupyter_server_ydoc.websocketserver import exception_logger
        from pycrdt.websocket import YRoom

        # The exception handler keeps a failing room from taking the whole websocket server down.
        room = YRoom(ready=True, ydoc=self.ydoc, log=log, exception_handler=exception_logger)
        await websocket_server.start_room(room)
        websocket_server.add_room(room_id, room)
        self.room = room

    def list_in_collaboration(self, room_id: str, root_room_id: str, title: str, description: str) -> None:
        """List the fork in jupyter-collaboration's own fork registry, so that its fork API
        (``GET /api/collaboration/fork/<root room>``) and the fork-aware clients built on it see it too."""
        try:
            from jupyter_server_ydoc import handlers
        except ImportError:  # pragma: no cover - jupyter-collaboration is a dependency
            return
        registry = getattr(handlers, "FORK_ROOMS", None)
        if isinstance(registry, dict):
            registry[room_id] = {
                "root_roomid": root_room_id,
                "synchronize": False,
                "title": title,
                "description": description,
            }
            self._listed = room_id

    def _unlist(self) -> None:
        if self._listed is not None:
            with contextlib.suppress(Exception):
                from jupyter_server_ydoc import handlers

                handlers.FORK_ROOMS.pop(self._listed, None)
            self._listed = None

    async def close(self, websocket_server: Any) -> None:
        self._unlist()
        self.unfollow()
        if self._index is not None:
            self._index.close()
        if self.room is not None and websocket_server is not None:
            with contextlib.suppress(Exception):
                await websocket_server.delete_room(room=self.room)
            self.room = None


def _wrap(doc: Doc[Any], kind: str) -> Any:
    return YNotebook(doc) if kind == "notebook" else YFile(doc)
