"""Opening a file's collaboration room, and refusing the files collaboration cannot load.

jupyter-collaboration registers a room before it loads the file and leaves it registered when the load
fails (a notebook that is not JSON or not nbformat, a binary file): from then on every ``get_document``
returns that room's *empty* document, which accepts edits and never saves them — work typed into it
is lost. :func:`open_document` removes such a room (left by a failed ``get_document`` or by a browser's
failed open) and reports the file instead. It costs nothing on the way that works: the file is examined
only after a load failed, by the contents adapter (``explain``), whose words name what to fix without
the server's absolute path that the loader's own message carries.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Awaitable, Callable
from typing import Any

from jupyter_pair_mcp.errors import InvalidArgument, Unavailable

log = logging.getLogger(__name__)

#: Why a file could not be loaded, in words for the agent (None: nothing wrong with it that we can see).
Explain = Callable[[str, str], Awaitable[str | None]]


def _failed(room: Any) -> bool:
    """A registered room that is not ready: its load failed (a load in progress holds the room lock)."""
    return room is not None and not getattr(room, "ready", True)


async def open_document(ydoc: Any, room_id: str, path: str, kind: str, explain: Explain | None) -> Any:
    """The live document of the room ``room_id``, opened if needed; a file that cannot be loaded is an error.

    A room whose load failed is removed first and the file opened once more (it may have been fixed
    since); the second failure, or a load that fails now, is reported.
    """
    rooms = ydoc.ywebsocket_server.rooms
    for attempt in range(2):
        if _failed(rooms.get(room_id)):
            await discard_failed(ydoc, room_id, rooms[room_id])
        try:
            # By room id: asking by path would re-index the file id (a database write) on every call.
            document = await ydoc.get_document(room_id=room_id, copy=False, create=True)
        except Exception as exc:
            if _failed(rooms.get(room_id)):
                await discard_failed(ydoc, room_id, rooms[room_id])
            raise await load_error(path, kind, exc, explain) from None
        if document is not None and not _failed(rooms.get(room_id)):
            return document
        log.info("Collaboration room %s for %s is not loaded (attempt %d)", room_id, path, attempt + 1)
    raise Unavailable(f"collaboration could not load {path!r}; retry, and see the server log if it persists")


async def load_error(path: str, kind: str, exc: Exception, explain: Explain | None) -> Exception:
    """The agent's error for a file collaboration failed to load with ``exc``."""
    # The reason, not a traceback (no traceback goes to a log); its first 300 characters.
    log.info("Collaboration could not load %s: %s: %.300s", path, type(exc).__name__, exc)
    reason = await explain(path, kind) if explain is not None else None
    if reason is None:
        return Unavailable(f"collaboration could not load {path!r} ({type(exc).__name__}); the server log has details")
    what = "is not a valid notebook" if kind == "notebook" else "cannot be opened as text"
    return InvalidArgument(f"{path!r} {what} ({reason}); fix or delete the file")


async def discard_failed(ydoc: Any, room_id: str, room: Any) -> None:
    """Unregister a room whose load failed, and its file loader when no other room uses it."""
    async with ydoc._room_locks[room_id]:
        if ydoc.ywebsocket_server.rooms.get(room_id) is not room or not _failed(room):
            return  # gone already, or it was still loading (under this lock) and has loaded since
        del ydoc.ywebsocket_server.rooms[room_id]
        with contextlib.suppress(Exception):  # jupyter-collaboration may have stopped it already
            await room.stop()
        file_id = room_id.rsplit(":", 1)[-1]
        # ``file_loaders[id]`` would create a loader: look first.
        if file_id in ydoc.file_loaders and ydoc.file_loaders[file_id].number_of_subscriptions == 0:
            await ydoc.file_loaders.remove(file_id)
    log.info("Removed collaboration room %s: its file could not be loaded", room_id)
