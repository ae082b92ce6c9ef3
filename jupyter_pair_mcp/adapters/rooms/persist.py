"""Writing a room's document to its file when it matters: on demand, when a room closes, before the server stops.

jupyter-collaboration writes a room ``document_save_delay`` after its last change (debounced), and its
save task swallows the outcome: a failed write is logged, a file changed on disk is reloaded over the
room, a read-only file is skipped — and the task returns None in every case, so awaiting it cannot
tell whether the file holds the content. :func:`write_room` therefore writes through the room's own
file loader, the same call and lock the autosave uses, which returns the saved model or raises, and
turns every outcome other than "written" into a typed error.

Nothing in the server waits for a pending autosave when it stops: the loop ends while the save task
still sleeps out its delay, and the edits in it are lost. :func:`unsaved` takes note, at the start of
the stop, of the rooms that have changes on their way to disk, and :func:`save_unsaved` writes them.
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass
from typing import Any

from tornado.web import HTTPError

from jupyter_pair_mcp.adapters.rooms.diskmerge import Merged
from jupyter_pair_mcp.adapters.rooms.reload import merge_reload
from jupyter_pair_mcp.adapters.rooms.saving import (
    OutOfStep,
    SaveState,
    acquire_patiently,
    convert,
    path_of,
    read_for_write,
    state_of,
    take,
    taken_size,
)
from jupyter_pair_mcp.errors import Conflict, NotFound, PermissionDenied, Unavailable

log = logging.getLogger(__name__)

#: Seconds the stop waits on, past its own time, for documents still being written: a hung disk must not
#: hold the stop forever, but a big notebook on a slow one must not lose its edits for a prompt stop.
SAVE_OVERRUN = 30.0


def save_pending(room: Any) -> bool:
    """Whether the room's debounced autosave is waiting or writing right now (it has changes not on disk)."""
    task = getattr(room, "_saving_document", None)
    return task is not None and not task.done()


def is_document_room(room: Any) -> bool:
    return hasattr(room, "_file") and hasattr(room, "_document") and hasattr(room, "_update_lock")


async def write_room(room: Any, path: str, *, merged_once: bool = False) -> None:
    """Write the room's document to its file now; return only once the file holds it, else raise.

    A file changed on disk since the room loaded or wrote it is merged into the room first (:mod:`.reload`:
    the room's unsaved changes are kept where they do not conflict), then the merge is written. Raises
    :class:`Conflict` when the merge had conflicts (the file's side won there; the room's side is in the
    history), :class:`NotFound` when the file is gone, :class:`PermissionDenied` when it is read-only,
    :class:`Unavailable` for anything else.
    """
    state = state_of(room)
    try:  # after any load: what people and agents see now
        content, update, size = await _read(room, state)
    except TimeoutError:
        raise Unavailable(f"{path!r} is being reloaded from disk; retry in a moment") from None
    pending = getattr(room, "_saving_document", None)
    if pending is not None and not pending.done() and (state is None or pending is not state.writing):
        pending.cancel()  # it would write what we are writing now; a write already under way completes first
    model = {"format": room.file_format, "type": room.file_type, "content": content}
    seen = getattr(room._file, "last_modified", None)  # the file's time as the room last wrote or loaded it
    try:
        saved = await room._file.maybe_save_content(model)
    except HTTPError as exc:
        log.warning("Saving %s failed: HTTP %s", path, exc.status_code)
        if exc.status_code == 404:
            raise NotFound(f"{path!r} no longer exists on disk, so nothing was written") from None
        if exc.status_code == 403:
            raise PermissionDenied(f"the server may not write {path!r}; nothing was written") from None
        raise Unavailable(
            f"writing {path!r} failed (HTTP {exc.status_code}): nothing was written; the server log has the details"
        ) from None
    except Exception as exc:
        from jupyter_server_ydoc.utils import OutOfBandChanges  # installed: the room is one of its rooms

        if not isinstance(exc, OutOfBandChanges):
            log.warning("Saving %s failed: %s", path, type(exc).__name__)
            raise Unavailable(
                f"writing {path!r} failed ({type(exc).__name__}): nothing was written; the server log has the details"
            ) from None
        found = getattr(room._file, "last_modified", None)  # the loader took the file's time now
        if seen is not None and found is not None and found < seen and not merged_once:
            # Older than what the room wrote: not another program's change but the room's own write undone (a
            # read of the notebook during the write, through jupyter_server, restores the file it backed up).
            # Merging would take the old file's side everywhere the room had not changed since: write again.
            log.warning("%s went back to an older version on disk; writing the live document again", path)
            await write_room(room, path, merged_once=True)
            return
        merged = await _reload(room, path)
        if merged is not None and merged.kept_ours and not merged_once:
            await write_room(room, path, merged_once=True)  # the merge holds changes the file lacks
        if merged is None or merged.conflicts:
            where = ", ".join(merged.conflicts[:10]) if merged is not None else "the whole document"
            raise Conflict(
                f"{path!r} changed on disk since it was opened (another program wrote it) and it was merged into the "
                f"live document, but both had changed the same place ({where}): the file's version won there, and "
                "the version before is in the document's history (get_document_history); read it again"
            ) from None
        return
    if not saved:
        raise PermissionDenied(f"{path!r} is read-only on disk; nothing was written")
    async with room._update_lock:  # as the room does after its own saves; the lock keeps this out of autosave
        room._document.dirty = False
        room._document.hash = saved.get("hash")
    if state is not None:
        state.written(update, content, size)
        state.writes += 1


async def write_now(room: Any) -> None:
    """:func:`write_room` of the room's file as it is named now (the autosave's write)."""
    await write_room(room, path_of(room))


async def reload_now(room: Any) -> None:
    """The room's file changed on disk: merge it in (the loader's poll, the room's own reload)."""
    await _reload(room, path_of(room))


async def _read(room: Any, state: SaveState | None) -> tuple[Any, bytes | None, int]:
    """The document's content for its file, for a big notebook its state as a Yjs update (the next merge's base;
    else the content is), and about its encoded size, read together,
    under the room's update lock (a load of the file ends first; TimeoutError past LOAD_WAIT when no reload runs)."""
    lock = room._update_lock
    for attempt in (1, 2):
        await acquire_patiently(room)
        try:
            update, taken = take(room, state)
            read_for_write(room)
        finally:
            lock.release()
        try:
            content, read_from = await convert(room, state, update, taken)
            break
        except OutOfStep:  # the copy was not the room's: the second take encodes the room and seeds it anew
            if attempt == 2:
                raise
    if content is None:  # repeated cell ids: get() repairs them in the live document
        async with lock:
            content = room._document.get()
    return content, read_from, taken_size(read_from, taken, state)


async def _reload(room: Any, path: str) -> Merged | None:
    """Load the changed file into the room, merged with the room's unsaved changes."""
    state = state_of(room)
    try:
        if state is not None and state.cell_ids is not None:
            return await merge_reload(room, state.cell_ids)
        await room._on_outofband_change()
    except Exception as exc:
        log.error("Reloading %s after an out-of-band change failed: %s", path, type(exc).__name__)
    return None


@dataclass(frozen=True)
class Unsaved:
    """Rooms as they were when the server began to stop: which had a save pending, and each one's state."""

    rooms: dict[str, tuple[Any, bytes, bool]]  # room id -> (room, state vector, save pending)


def unsaved(rooms: dict[str, Any]) -> Unsaved:
    """Take note (synchronously: before any other extension's stop runs) of the document rooms and their state.

    A room's pending autosave is cancelled here: :func:`save_unsaved` writes that room, and the autosave
    would read the whole document on the loop first (``YNotebook.aget``: seconds for a big notebook),
    delaying the stop's own writes. A write already under way is shielded by the loader and completes.
    """
    noted = {}
    for room_id, room in list(rooms.items()):
        if is_document_room(room) and getattr(room, "ready", False):
            pending = save_pending(room)
            noted[room_id] = (room, bytes(room.ydoc.get_state()), pending)
            state = state_of(room)
            if pending and (state is None or room._saving_document is not state.writing):
                # Only a save still waiting: one writing is left alone. jupyter-collaboration's loader shields a
                # write from one cancel, but a second (the room's next change cancels its save task again)
                # releases the loader's lock before the write ends, and the next save takes the file's new
                # time for another program's change.
                room._saving_document.cancel()
    return Unsaved(noted)


async def save_unsaved(
    before: Unsaved, rooms: dict[str, Any], timeout: float, overrun: float = SAVE_OVERRUN
) -> list[str]:
    """Write every room that had a save pending when the stop began, or changed since; return their room ids.

    A room nobody changed is not written (its file keeps its exact bytes). Failures are logged, not
    raised: the server is stopping and every other room still gets its chance. Rooms are written
    concurrently (each reads its notebook in linear time and converts it in a worker thread, see
    snapshot.py), within ``timeout``; rooms still being written then are waited for up to ``overrun``
    seconds more (a warning names them), and any still unwritten after that are named in an error. A
    write under way is never interrupted (the loader shields it): no file is left half written.
    """
    candidates = dict(before.rooms)
    for room_id, room in list(rooms.items()):
        if room_id not in candidates and is_document_room(room) and getattr(room, "ready", False):
            candidates[room_id] = (room, b"", save_pending(room))  # opened during the stop
    due = [
        (room_id, room)
        for room_id, (room, state, pending) in candidates.items()
        if pending or (state and bytes(room.ydoc.get_state()) != state)
    ]

    async def save(room_id: str, room: Any) -> str | None:
        path = path_of(room)
        try:
            await write_room(room, path)
        except Exception as exc:
            log.error("Could not save %s before the server stopped: %s", path, exc)
            return None
        log.info("Saved %s before the server stopped", path)
        return room_id

    if not due:
        return []
    tasks = {asyncio.ensure_future(save(room_id, room)): path_of(room) for room_id, room in due}
    done, writing = await asyncio.wait(tasks, timeout=timeout)
    if writing:  # an edit lost is worse than a late stop: wait on, bounded by the overrun
        log.warning(
            "Still writing %s when the stop's time (JupyterPairMCP.shutdown_timeout) ran out; waiting up to %.0f s "
            "more for them",
            ", ".join(sorted(tasks[task] for task in writing)),
            overrun,
        )
        more, writing = await asyncio.wait(writing, timeout=overrun)
        done |= more
    for task in writing:  # left running: a write under way may still finish before the loop ends
        log.error("Could not save %s before the server stopped: writing it took too long", tasks[task])
    return [written for task in done if (written := task.result()) is not None]
