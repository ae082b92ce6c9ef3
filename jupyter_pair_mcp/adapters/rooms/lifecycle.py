"""Rooms opening: tell the server the moment one of jupyter-collaboration's rooms is ready.

An observer of a room's document sees only the transactions made after it attached, and a room's first
edits can follow its opening at once: a person types right after JupyterLab opened the file, an agent
edits right after its call opened the room. Polling for rooms misses those. jupyter-collaboration
announces every room it has loaded with an ``initialize`` event on its session event schema, emitted
by the code that loaded the room (a browser's websocket handler, or ``get_document``) once the room is
ready and before that handler serves any client message; event listeners run as tasks created at that
moment, so a listener that attaches synchronously is in place before the first edit of any client
arrives.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Callable
from typing import Any

from jupyter_pair_mcp.adapters.rooms.adapter import RoomsAdapter

log = logging.getLogger(__name__)


class RoomOpenings:
    """Calls ``callback(kind)`` ("notebook" or "file") whenever a document room has just become ready."""

    def __init__(self, rooms: RoomsAdapter, callback: Callable[[str], None]) -> None:
        self._rooms = rooms
        self._callback = callback
        self._listening: tuple[Any, str] | None = None  # (event logger, schema id)

    def start(self) -> None:
        """Listen from now on (idempotent); a server without collaboration or events has no rooms to wait for."""
        if self._listening is not None:
            return
        logger = getattr(self._rooms.serverapp, "event_logger", None)
        if logger is None:
            return
        try:
            from jupyter_server_ydoc.utils import JUPYTER_COLLABORATION_EVENTS_URI
        except ImportError:
            return
        logger.add_listener(schema_id=JUPYTER_COLLABORATION_EVENTS_URI, listener=self._on_event)
        self._listening = (logger, JUPYTER_COLLABORATION_EVENTS_URI)

    def close(self) -> None:
        if self._listening is not None:
            logger, schema_id = self._listening
            with contextlib.suppress(Exception):
                logger.remove_listener(schema_id=schema_id, listener=self._on_event)
        self._listening = None

    async def _on_event(self, logger: Any, schema_id: str, data: dict[str, Any]) -> None:
        # No await in here: the callback must run before the room serves its first client message.
        if data.get("action") != "initialize":
            return
        room_id = str(data.get("room") or "")
        kind = room_id.split(":")[1] if room_id.count(":") >= 2 else ""
        if kind not in ("notebook", "file"):
            return
        room = self._rooms._room(room_id)
        # "initialize" is also sent half-way through a load (file out of sync with the store): only a
        # ready room holds its final content, and the room sends "initialize" again once it is ready.
        if room is None or not getattr(room, "ready", False):
            return
        try:
            self._callback(kind)
        except Exception:
            log.exception("room-opened callback failed for %s", room_id)


__all__ = ["RoomOpenings"]
