"""Finding a path's room and what is in it, without opening one: the lookups under :class:`RoomsAdapter`.

jupyter-collaboration names a document's room after the file id service's id for the path; these
lookups find that room among the websocket server's open ones, who is connected to it, its Y document,
watchers on its content, and where cells sit by the room's cell index. None of them opens a room or
writes a document, so presence, subscriptions and the activity panel may call them at any time (a room
closes under them only when its last browser leaves); opening, saving and editing rooms stay in
``adapter.py``.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass
from typing import Any

from pycrdt import Array, Map, Text

from jupyter_pair_mcp.adapters.rooms.awareness import people as room_people
from jupyter_pair_mcp.adapters.rooms.cellindex import CellIndex, observe_changes

#: Room id prefixes as jupyter-collaboration builds them: ``{file_format}:{content_type}:{file_id}``.
ROOM_PREFIX = {"notebook": "json:notebook", "file": "text:file"}


@dataclass(frozen=True)
class ContentWatch:
    """Observers on one room document's content; ``close()`` detaches them."""

    ydoc: Any
    subscriptions: list[tuple[Any, Any]]

    def close(self) -> None:
        for shared, subscription in self.subscriptions:
            with contextlib.suppress(Exception):  # the document may be gone already
                if isinstance(shared, Text):
                    shared.unobserve(subscription)
                else:
                    subscription.drop()  # a raw subscription (observe_changes)


@dataclass(frozen=True)
class RoomInfo:
    room_id: str
    file_id: str
    collaborators: int
    users: list[dict[str, Any]]


class RoomLookups:
    """A path's open room and what is in it; looks jupyter-collaboration up lazily (it may load after us)."""

    def __init__(self, serverapp: Any) -> None:
        self.serverapp = serverapp
        self._ydoc: Any = None
        #: Each room's cell index, with the document it follows (a room reopened gets a new one).
        self._indexes: dict[str, tuple[Any, CellIndex]] = {}

    def _ydoc_extension(self) -> Any | None:
        if self._ydoc is not None:
            return self._ydoc
        manager = getattr(self.serverapp, "extension_manager", None)
        point = manager.extension_points.get("jupyter_server_ydoc") if manager is not None else None
        self._ydoc = getattr(point, "app", None) if point is not None else None
        return self._ydoc

    def _file_ids(self) -> Any:
        settings = getattr(getattr(self.serverapp, "web_app", None), "settings", {})
        return settings.get("file_id_manager")

    def room_id(self, path: str, kind: str, *, create_id: bool = True) -> str | None:
        file_ids = self._file_ids()
        if file_ids is None:
            return None
        # get_id is a read; index() writes to the id database on every call, so only when needed.
        file_id = file_ids.get_id(path)
        if file_id is None and create_id:
            file_id = file_ids.index(path)
        return f"{ROOM_PREFIX[kind]}:{file_id}" if file_id else None

    def _room(self, room_id: str | None) -> Any | None:
        ydoc = self._ydoc_extension()
        server = getattr(ydoc, "ywebsocket_server", None)
        return server.rooms.get(room_id) if server is not None and room_id else None

    def collaborators(self, path: str, kind: str) -> int:
        """Number of clients connected to the room of ``path`` (0 when no room is open); opens nothing."""
        if kind not in ROOM_PREFIX:
            return 0
        room = self._room(self.room_id(path, kind, create_id=False))
        return len(room.clients) if room is not None else 0

    def live_ydoc(self, path: str, kind: str) -> Any | None:
        """The Y document of the room open for ``path`` right now, or None; never opens a room."""
        room = self._room(self.room_id(path, kind, create_id=False))
        return getattr(room, "ydoc", None) if room is not None else None

    def watch_content(self, path: str, kind: str, callback: Any) -> ContentWatch | None:
        """Call ``callback`` on every change to the content of the open room of ``path`` (cells and notebook
        metadata, or a file's text) — not on the room's own state writes, like the dirty flag a save clears.
        Opens nothing: None when no room is open."""
        ydoc = self.live_ydoc(path, kind)
        if ydoc is None:
            return None
        if kind == "notebook":
            shared: list[Any] = [ydoc.get("cells", type=Array), ydoc.get("meta", type=Map)]
            return ContentWatch(ydoc, [(s, observe_changes(s, callback)) for s in shared])  # no event paths (walks)
        text = ydoc.get("source", type=Text)
        return ContentWatch(ydoc, [(text, text.observe(callback))])

    def cell_position(self, path: str, cell_id: str | None) -> int | None:
        """Where a cell sits in the open room of ``path``, from its cell index (None: no index or no cell)."""
        entry = self._indexes.get(self.room_id(path, "notebook", create_id=False) or "")
        return entry[1].position(cell_id) if entry is not None and cell_id else None

    def cell_positions(self, path: str, cell_ids: list[str]) -> dict[str, int | None]:
        """Where each cell sits in the open room of ``path``, for people to see, from its cell index without
        walking the cells (one room lookup for all of them; None for a cell not there, and for all when no room
        is open or its index is of an older room)."""
        room_id = self.room_id(path, "notebook", create_id=False) or ""
        entry = self._indexes.get(room_id)
        if entry is None or entry[0].ydoc is not getattr(self._room(room_id), "ydoc", None):
            return dict.fromkeys(cell_ids)
        return {cell_id: entry[1].shown_position(cell_id) for cell_id in cell_ids}

    def info(self, path: str, kind: str) -> RoomInfo | None:
        """Room id and who is in the room of ``path`` (from awareness), or None when no room is open."""
        room_id = self.room_id(path, kind, create_id=False)
        room = self._room(room_id)
        if room is None or room_id is None:
            return None
        users = [
            {
                "client_id": p.client_id,
                "username": p.user["username"],
                "display_name": p.user.get("display_name") or p.user.get("name") or p.user["username"],
            }
            for p in room_people(room)
        ]
        return RoomInfo(room_id, room_id.rsplit(":", 1)[-1], len(room.clients), users)

    def server_session_id(self) -> str:
        """The collaboration session id browsers get from ``PUT /api/collaboration/session``."""
        from jupyter_server_ydoc.utils import SERVER_SESSION

        return str(SERVER_SESSION)

    def index_seed(self, path: str, document: Any) -> tuple[list[str], list[str], list[bool]] | None:
        """The live notebook's cell index, copied (:meth:`CellIndex.seed`), when it follows ``document``."""
        entry = self._indexes.get(self.room_id(path, "notebook", create_id=False) or "")
        return entry[1].seed() if entry is not None and entry[0] is document else None
