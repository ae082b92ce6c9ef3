"""Live collaboration rooms: the only module that touches jupyter_server_ydoc.

So far it only answers "who is in this document": a read of the room registry that never opens
or creates a room. Editing through the live YDoc arrives with the notebook tools.
"""

from __future__ import annotations

from typing import Any

#: Room id prefixes as jupyter-collaboration builds them: ``{file_format}:{content_type}:{file_id}``.
_ROOM_PREFIX = {"notebook": "json:notebook", "file": "text:file"}


class RoomsAdapter:
    """Reads jupyter-collaboration's rooms; looks the extension up lazily (it may load after us)."""

    def __init__(self, serverapp: Any) -> None:
        self.serverapp = serverapp

    def _ydoc_extension(self) -> Any | None:
        point = self.serverapp.extension_manager.extension_points.get("jupyter_server_ydoc")
        return getattr(point, "app", None) if point is not None else None

    def collaborators(self, path: str, kind: str) -> int:
        """Number of clients connected to the room of ``path`` (0 when no room is open)."""
        prefix = _ROOM_PREFIX.get(kind)
        ydoc = self._ydoc_extension()
        file_ids = self.serverapp.web_app.settings.get("file_id_manager")
        if prefix is None or ydoc is None or file_ids is None:
            return 0
        server = getattr(ydoc, "ywebsocket_server", None)
        file_id = file_ids.get_id(path)
        if server is None or file_id is None:
            return 0
        room = server.rooms.get(f"{prefix}:{file_id}")
        return len(room.clients) if room is not None else 0
