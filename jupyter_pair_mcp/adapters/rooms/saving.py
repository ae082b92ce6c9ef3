"""A room's changes reach its file within ``max_save_interval`` of the first one, however often it keeps changing.

jupyter-collaboration saves a room ``document_save_delay`` after its *last* change: every change cancels the
waiting save and starts a new wait. A room that never pauses that long (a person typing, an agent looping) is
never written; a 68-minute soak never wrote its notebook, and SIGKILL after a burst of agent edits lost all of
them. The room starts its save through ``self._maybe_save_document(previous_task)``, looked up on every change;
:func:`adopt` puts :func:`autosave` there for each room. It waits as upstream does, but never past
``max_save_interval`` after the first change not yet written, and a write under way is never cancelled by a new
change (the next one waits for it). Writes go through :func:`.persist.write_room`, the same call the tools' save,
the stop and the retries use: one place knows what "written" means, and one place merges a file changed on disk
(:mod:`.reload`).

The room's own reload on its file poll is routed there too: the loader's subscription for the room is replaced
(``FileLoader.observe`` keyed by room id) by the merging reload.
"""

from __future__ import annotations

import asyncio
import logging
import weakref
from collections.abc import Awaitable, Callable, Coroutine
from dataclasses import dataclass
from typing import Any, Protocol, TypeVar

from jupyter_pair_mcp.adapters.rooms.snapshot import is_notebook, notebook_content, notebook_json
from jupyter_pair_mcp.errors import Conflict

log = logging.getLogger(__name__)

T = TypeVar("T")

#: ``await cell_ids(room)``: prepares the room's cell index (off the loop) and gives what reads its ids in order.
CellIds = Callable[[Any], Awaitable[Callable[[], list[str]]]]

#: The attribute of a room holding its :class:`SaveState` (the state travels with the room and dies with it).
STATE = "_pair_mcp_saving"

#: Seconds a call or a save waits for a load of the room's file (its first load, or a reload after an out-of-band
#: change) to finish, and then on for as long as a reload still runs (it takes as long as the notebook is big).
LOAD_WAIT = 30.0


#: A read of a big notebook from its copy: awaited, (the notebook, its copy's update: the next merge's base), or
#: (None, None) for a repeated cell id (read it in the live room); raises :class:`OutOfStep`.
Read = Coroutine[Any, Any, "tuple[Any, bytes | None]"]


#: A merge made on a big notebook's copy: awaited, (its updates, each a bounded number of cells, and the client id
#: that wrote them); raises :class:`OutOfStep`.
Merge = Coroutine[Any, Any, "tuple[list[bytes], int]"]


class OutOfStep(Exception):
    """The room's copy in the worker was gone or not the room's document: read again (the copy is seeded anew)."""


class Copy(Protocol):
    """A big notebook's copy in the worker process, fed the room's updates (:mod:`.replicas`)."""

    def seeded(self) -> bool: ...

    def add(self, update: bytes) -> None: ...

    def read(self, state: bytes) -> Read: ...

    def merge(self, ours: dict[str, Any], target: dict[str, Any]) -> Merge: ...

    def release(self) -> None: ...


class Reader(Protocol):
    """Reads a big notebook for its file off the loop: from its copy, or from its Yjs update."""

    def big(self, update: bytes) -> bool: ...

    def limit(self) -> int:
        """The encoded size up to which a notebook is read in place (infinite: never in the worker)."""
        ...

    async def read(self, update: bytes) -> Any | None: ...

    def copy(self, replica: Any, update: bytes) -> Copy | None:
        """``replica`` (a :class:`Copy` or None) seeded with the whole document's ``update``: the copy a big
        notebook's next saves read; None when there is no worker."""
        ...


@dataclass
class SaveState:
    """What the saver knows of one room."""

    max_interval: float  # seconds from the first unsaved change to its write (0: upstream's debounce only)
    first_unsaved: float | None = None  # loop time of the first change not yet read for a write
    writing: asyncio.Task[None] | None = None  # the autosave past its wait, writing now
    base: bytes | None = None  # the document as its file last held it (a Yjs update): what a merge starts from
    base_content: Any = None  # or that content itself, after a reload (the file's, with no Yjs update of it)
    merging: Any = None  # the merge being applied now (a :class:`.diskmerge.Merged`), for the reload's listeners
    writes: int = 0  # writes of the file (tests count them)
    merge_write_due: bool = False  # a merge kept changes the file lacks, and their write has not ended yet
    cell_ids: CellIds | None = None  # a notebook's live cell ids, from its cell index
    reader: Reader | None = None  # where a big notebook is read for its file
    reloading: int = 0  # reloads of the file under way (from reading the file to the merge's last edit)
    encoded: int = 0  # bytes of the document's update when it was last encoded (its load, its last write)
    grown: int = 0  # bytes of the updates made to it since: with ``encoded``, its size, never encoded to measure it
    subscription: Any = None  # the document observer that counts ``grown`` and feeds ``replica``
    replica: Copy | None = None  # a big notebook's copy in the worker process, which its saves read

    def size(self) -> int:
        """About the document's encoded size (an upper bound: updates that replaced content count whole)."""
        return self.encoded + self.grown

    def written(self, update: bytes | None, content: Any, size: int) -> None:
        """The file holds ``content`` now (``update``: the same as a Yjs update, for a big notebook)."""
        self.base, self.base_content = update, (None if update is not None else content)
        self.encoded, self.grown = size, 0


def state_of(room: Any) -> SaveState | None:
    state = getattr(room, STATE, None)
    return state if isinstance(state, SaveState) else None


Write = Callable[[Any], Awaitable[None]]

Reload = Callable[[Any], Awaitable[None]]


def adopt(
    room: Any,
    max_interval: float,
    write: Write,
    reload: Reload,
    cell_ids: CellIds,
    reader: Reader | None = None,
) -> bool:
    """Take over the room's autosave and its reload on a file change (idempotent; call once the room is ready).

    ``write(room)`` writes the room's document to its file or raises; ``reload(room)`` loads a changed file into
    the room, merging what was not saved yet. The closures hold the room weakly: the room keeps them, not the
    other way round.
    """
    if state_of(room) is not None or not getattr(room, "ready", False):
        return False
    # Ready: the document is its file's content.
    base = bytes(room.ydoc.get_update())
    state = SaveState(max_interval, base=base, cell_ids=cell_ids, reader=reader, encoded=len(base))
    setattr(room, STATE, state)
    if reader is not None and is_notebook(room._document) and reader.big(base):
        state.replica = reader.copy(None, base)  # the encoding done here seeds it: saves encode nothing more

    def grew(event: Any) -> None:
        update = event.update
        state.grown += len(update)
        if state.replica is not None:
            state.replica.add(update)

    state.subscription = room.ydoc.observe(grew)
    ref = weakref.ref(room)

    async def maybe_save(previous: asyncio.Task[None] | None, save_now: bool = False) -> None:
        target = ref()
        if target is not None:
            await autosave(target, previous, save_now, write)

    async def on_file_change() -> None:
        target = ref()
        if target is not None:
            await reload(target)

    room._maybe_save_document = maybe_save
    room._on_outofband_change = on_file_change
    stop = room.stop

    async def stopped() -> None:
        """The room closed: its copy is freed now. Not left to the room's collection: its bound methods and tasks
        reference it, so only Python's cyclic collector frees it, maybe much later (a copy was seen held 30 s)."""
        try:
            await stop()
        finally:
            if state.replica is not None:
                state.replica.release()
                state.replica = None

    room.stop = stopped
    loader = getattr(room, "_file", None)
    if loader is not None:  # the loader calls what it was given at the room's creation: give it ours
        loader.observe(room.room_id, on_file_change, room._on_filepath_change)
    return True


async def patiently(room: Any, awaitable: Awaitable[T]) -> T:
    """``awaitable``'s result once it is done: waited for :data:`LOAD_WAIT` seconds, and then on while the room
    reloads its file (a reload runs in linear time, so a big notebook's takes longer: a call waits for it rather
    than being refused); TimeoutError past that. ``awaitable`` goes on (the caller cancels it if it must)."""
    task = asyncio.ensure_future(awaitable)
    while True:
        done, _ = await asyncio.wait({task}, timeout=LOAD_WAIT)
        if done:
            return task.result()
        if not still_loading(room):
            raise TimeoutError


def still_loading(room: Any) -> bool:
    """Whether a reload of the room's file is under way (a call waiting on the room waits on)."""
    state = state_of(room)
    return state is not None and state.reloading > 0


async def acquire_patiently(room: Any) -> None:
    """The room's update lock, held once a load or a reload under way has ended (:func:`patiently`); the caller
    releases it. Given up (TimeoutError, cancelled), the lock is not taken."""
    lock = room._update_lock
    task = asyncio.ensure_future(lock.acquire())
    try:
        await patiently(room, task)
    except BaseException:
        if task.done() and not task.cancelled() and task.exception() is None:
            lock.release()
        task.cancel()
        raise


def read_for_write(room: Any) -> None:
    """The content is being read for a write now: changes from here on are the next write's."""
    state = state_of(room)
    if state is not None:
        state.first_unsaved = None


async def autosave(room: Any, previous: asyncio.Task[None] | None, save_now: bool, write: Write) -> None:
    """The room's save after a change, as jupyter-collaboration's ``_maybe_save_document``, but bounded."""
    state = state_of(room)
    if state is None:
        return
    loop = asyncio.get_running_loop()
    now = loop.time()
    if state.first_unsaved is None:
        state.first_unsaved = now
    delay = room._save_delay
    if delay is None and not save_now:
        return  # autosave is off on this server: a person saves, or the stop does
    if previous is not None and not previous.done() and previous is not state.writing:
        previous.cancel()  # still waiting: this one waits instead (a write under way completes)
    if not save_now:
        wait = float(delay)
        if state.max_interval > 0:
            wait = min(wait, state.first_unsaved + state.max_interval - now)
        try:
            if wait > 0:
                await asyncio.sleep(wait)
        except asyncio.CancelledError:
            return
    task = asyncio.current_task()
    state.writing = task
    path = path_of(room)
    try:
        await write(room)
    except asyncio.CancelledError:
        return  # the stop, or a save now, took over; the loader finishes a write under way
    except Conflict as exc:
        log.info("Saving %s: %s", path, exc)
    except Exception as exc:
        log.warning("Saving %s failed: %s", path, exc)
        _emit(room, "ERROR", None, f"Error saving file: {path}\n{type(exc).__name__}")
    else:
        _emit(room, "INFO", "save", "Content saved.")
    finally:
        if state.writing is task:
            state.writing = None
        if save_now:
            state.merge_write_due = False


def take(room: Any, state: SaveState | None) -> tuple[bytes | None, Any]:
    """In one step, with the room's update lock held, what :func:`convert` makes the content from: a text's string,
    a small notebook's JSON texts (its serialization, which a save needs anyway), or, for a big notebook, a read
    of its copy in the worker process (:mod:`.replicas`), sent with the room's state vector: nothing proportional
    to the document on the loop. A big notebook without a copy (its first big save, its copy lost, or dropped for
    ``max_replica_bytes``) is encoded as a Yjs update (pycrdt, ~2.5 ns a byte), which seeds its copy and is
    converted in the scan worker. The update
    (None for a text or a small notebook: no whole-document encoding) is what the next merge starts from; else
    the content is. Big is told by :meth:`SaveState.size` (the saver knows it without encoding), by encoding for
    a room the saver does not know."""
    document = room._document
    if not is_notebook(document):
        return None, document.get()
    reader = state.reader if state is not None else None
    if reader is None:
        return None, notebook_json(document)
    if state is not None and state.size() <= reader.limit():
        return None, notebook_json(document)
    if state is not None and state.replica is not None and state.replica.seeded():
        return None, state.replica.read(bytes(room.ydoc.get_state()))
    update = bytes(room.ydoc.get_update())
    if not reader.big(update):
        return update, notebook_json(document)
    if state is not None:
        state.replica = reader.copy(state.replica, update)
    return update, None


async def convert(room: Any, state: SaveState | None, update: bytes | None, taken: Any) -> tuple[Any, bytes | None]:
    """The content :func:`take` read, as ``document.get()`` gives it (None: repeated cell ids, read it in place),
    and the update it was read from (None but for a big notebook). Raises :class:`OutOfStep` when the copy it
    read was not the room's (take again: the copy is seeded anew)."""
    if not is_notebook(room._document):
        return taken, update
    if isinstance(taken, Coroutine):
        content, update = await taken
        return content, update
    if taken is None:
        assert state is not None and state.reader is not None and update is not None
        return await state.reader.read(update), update
    return await asyncio.to_thread(notebook_content, *taken), update


def taken_size(update: bytes | None, taken: Any, state: SaveState | None = None) -> int:
    """About the encoded size of what :func:`take` read (its JSON's for a small notebook: close enough)."""
    if update is not None:
        return len(update)
    if isinstance(taken, Coroutine):  # a copy's read that left the reading to the room: the size known before
        return state.size() if state is not None else 0
    if isinstance(taken, tuple):
        return sum(len(part) for part in taken)
    return len(str(taken))


def path_of(room: Any) -> str:
    """The room's file path now (it follows renames), else its room id (the file id goes with a deleted file)."""
    try:
        return str(room._file.path)
    except Exception:
        return str(getattr(room, "room_id", "?"))


def _emit(room: Any, level: str, action: str | None, msg: str) -> None:
    """The event jupyter-collaboration's own save emits (its listeners, ours among them, hear the outcome)."""
    try:
        from jupyter_server_ydoc.utils import LogLevel

        room._emit(LogLevel[level], action, msg)
    except Exception:
        log.debug("emitting a room event failed", exc_info=True)


__all__ = [
    "LOAD_WAIT",
    "Copy",
    "Merge",
    "OutOfStep",
    "Read",
    "Reader",
    "SaveState",
    "acquire_patiently",
    "adopt",
    "autosave",
    "convert",
    "path_of",
    "patiently",
    "read_for_write",
    "state_of",
    "take",
    "taken_size",
]
