"""A copy of each big notebook's document in a worker process, fed the room's changes: a save reads the copy.

A big notebook's save encoded the whole document on the loop (pycrdt's ``get_update``: ~2.5 ns a byte, 0.26 s of
one loop step at 100,000 cells) for the scan worker to rebuild and read it; pycrdt documents cannot be read from
another thread. Here the worker keeps a copy of the document instead, seeded once with the update the saver
encodes anyway when it adopts the room, then fed each transaction's update (``Doc.observe`` gives it, already
encoded: forwarding costs the loop nothing proportional to the document). A save sends what is still pending and
the room's state vector (cheap: a pair of numbers per client); the worker applies, checks that its copy holds
the same insertions, and reads the notebook from the copy, with its update as the next merge's base. The loop
pays nothing proportional to the document.

The copies live in a process of their own (:class:`Replicas`, one worker, tasks in order: a copy's updates are
applied as they were sent), not in the scan pool, whose tasks go to any of its processes. A worker that died
(killed, out of memory) loses every copy: the room's next save finds it gone and seeds it again, encoding on the
loop once (counted in :attr:`Replicas.seeds` and :attr:`Replicas.lost`). Only big notebooks (past the scanner's
in-place bound) get a copy: a small one's save reads its JSON on the loop, which the write needs anyway. The copies
together are bounded by their encoded bytes (``max_replica_bytes``, :mod:`.copybudget`): past it the least recently
saved or edited copy is dropped, and its room is saved as one without a copy (encoded on the loop, which seeds its
copy again); a notebook past the bound alone gets none. A room gone (closed, collected) drops its copy.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import multiprocessing
import os
import sys
import threading
import weakref
from concurrent.futures import Future, ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from typing import Any
from uuid import uuid4

from jupyter_ydoc import YNotebook
from pycrdt import Doc

from jupyter_pair_mcp.adapters.rooms.cellindex import cells_json
from jupyter_pair_mcp.adapters.rooms.copybudget import MAX_BYTES, CopyBudget
from jupyter_pair_mcp.adapters.rooms.linear_ydoc import read_copy, read_packed
from jupyter_pair_mcp.adapters.rooms.parcels import pack, unpack
from jupyter_pair_mcp.adapters.rooms.reload import notebook_edits
from jupyter_pair_mcp.adapters.rooms.saving import Merge, OutOfStep, Read
from jupyter_pair_mcp.adapters.rooms.scanning import Scanner, worker_start
from jupyter_pair_mcp.adapters.rooms.updates import state_vector

log = logging.getLogger(__name__)

#: Seconds a room's changes wait before they are sent to its copy together (a save sends what is left at once).
FLUSH_DELAY = 0.5

#: Cells a merge on a copy makes, changes or deletes per update it sends back: the room applies each in one loop
#: step (~8-10 µs a cell of an update of every cell changed, measured: 1,000 cells ~10 ms, room for the room's
#: observers and a slower machine).
MERGE_CELLS = 1000

#: Pending bytes past which they are sent at once (a big paste, a reload's merge): the list does not pile up.
FLUSH_BYTES = 4 << 20

# -- in the worker process -------------------------------------------------------------------------------------

_COPIES: dict[str, YNotebook] = {}


def _feed(key: str, seed: bytes | None, updates: list[bytes]) -> bool:
    """In the worker: ``key``'s copy (made from ``seed`` when given) with ``updates`` applied; False if unknown."""
    if seed is not None:
        _COPIES[key] = YNotebook(Doc())
        _COPIES[key].ydoc.apply_update(seed)
    notebook = _COPIES.get(key)
    if notebook is None:
        return False
    for update in updates:
        notebook.ydoc.apply_update(update)
    return True


def _read(key: str, updates: list[bytes], state: bytes) -> tuple[str, Any, bytes]:
    """In the worker: ("read", the notebook as ``get`` gives it (its cells in parcels: :mod:`.parcels`), the copy's
    update) once ``updates`` are applied
    and the copy holds what ``state`` counts; ("lost" | "out of step", None, b"") when it does not (the caller
    seeds it again); ("duplicates", None, b"") for a non-identical repeated cell id (read in the live room)."""
    if not _feed(key, None, updates):
        return "lost", None, b""
    notebook = _COPIES[key]
    if state_vector(notebook.ydoc.get_state()) != state_vector(state):
        del _COPIES[key]
        return "out of step", None, b""
    value = read_copy(notebook)
    if value is None:
        return "duplicates", None, b""
    return "read", pack(value), notebook.ydoc.get_update()


def _merge(
    key: str, updates: list[bytes], ours: dict[str, Any], target: dict[str, Any], cells: int
) -> tuple[str, list[bytes], int]:
    """In the worker: a merge with a file changed on disk made on ``key``'s copy (``ours``: the room as its reload
    read it, ``target``: the merge), one transaction per ``cells`` cells made or changed; ("merged", each
    transaction's update, the copy's client id), or ("lost" | "failed", [], 0) (the copy is dropped then)."""
    if not _feed(key, None, updates):
        return "lost", [], 0
    notebook = _COPIES[key]
    made: list[bytes] = []
    subscription = notebook.ydoc.observe(lambda event: made.append(event.update))
    try:
        live = [str(c.get("id", "") or "") for c in cells_json(notebook.ycells)]
        edits = notebook_edits(notebook, live, ours, target, cells)
        done, mark = False, 0
        while not done:
            with notebook.ydoc.transaction():
                for touched in edits:
                    if touched - mark >= cells:
                        mark = touched
                        break
                else:
                    done = True
    except Exception:
        log.exception("A merge on a notebook's copy failed; it is merged in the room instead")
        del _COPIES[key]
        return "failed", [], 0
    finally:
        notebook.ydoc.unobserve(subscription)
    return "merged", made, int(notebook.ydoc.client_id)


def _drop(keys: list[str]) -> None:
    for key in keys:
        _COPIES.pop(key, None)


def worker_rss() -> tuple[int, int]:
    """In the worker: (its resident memory in bytes, copies held); benchmarks and tests read it."""
    with open("/proc/self/statm") as statm:
        pages = int(statm.read().split()[1])
    return pages * os.sysconf("SC_PAGE_SIZE"), len(_COPIES)


# -- in the server -----------------------------------------------------------------------------------------------


class Replicas:
    """The worker process holding the copies: one process, its tasks run in the order they were sent."""

    def __init__(self, max_bytes: int = MAX_BYTES) -> None:
        self.budget = CopyBudget(max_bytes)  # the copies held in the worker now (this generation's), by key
        self.generation = 0  # bumped when the worker is replaced: copies of an older one are gone
        self.seeds = 0  # whole documents encoded on the loop and sent (a room's first, and after a loss)
        self.lost = 0  # copies found gone or out of step at a save (then seeded again)
        self.reads = 0  # saves read from a copy
        self.merges = 0  # reloads of a file changed on disk merged on a copy
        self.merge_updates = 0  # the updates they came back in (one loop step each)
        self.closed = False
        self._pool: ProcessPoolExecutor | None = None

    @property
    def copies(self) -> int:  # copies held in the worker now (``budget.evicted``: dropped for the bound)
        return self.budget.copies

    @property
    def copy_bytes(self) -> int:  # their encoded bytes together (as last read, plus the updates fed since)
        return self.budget.bytes

    def used(self, key: str, size: int, grown: bool) -> bool:
        """``key``'s copy was fed (``size`` bytes more) or read (``size`` bytes): whether it is still held; the copies
        dropped for the bound are freed now."""
        held = self.budget.used(key, size, grown)
        if self.budget.dropping:
            self._send_drops()
        return held

    def release(self, key: str) -> None:
        """``key``'s room closed: its copy is freed in the worker now."""
        self.budget.gone(key)
        self._send_drops()

    def submit(self, fn: Any, *args: Any) -> Future[Any]:
        """``fn(*args)`` in the worker, after every task sent before (a broken worker is replaced once)."""
        for attempt in (1, 2):
            pool = self._ensure_pool()
            try:
                dropped = self.budget.take_drops()
                if dropped:
                    pool.submit(_drop, dropped)
                return pool.submit(fn, *args)
            except BrokenProcessPool:
                self.broken(pool)
                if attempt == 2:
                    raise
        raise AssertionError("unreachable")  # pragma: no cover

    def broken(self, pool: ProcessPoolExecutor | None) -> None:
        """The worker died (``pool``'s tasks raised BrokenProcessPool): the next task starts a new one, with no
        copies (nothing to do when ``pool`` was replaced already)."""
        if pool is not None and pool is self._pool:
            log.warning("The notebook copy process stopped; big notebooks' copies are made again at their next save")
            old, self._pool = self._pool, None
            self.generation += 1
            self.budget.clear()
            if old is not None:
                old.shutdown(wait=False, cancel_futures=True)

    def drop(self, key: str, loop: asyncio.AbstractEventLoop) -> None:
        """A room's copy is no longer needed (its room went). A finalizer calls it, at any point of any thread: it
        takes note, and the loop sends the note (with the next task, or on its own)."""
        self.budget.gone(key)
        with contextlib.suppress(RuntimeError):  # the loop is closed: the worker goes with the server
            loop.call_soon_threadsafe(self._send_drops)

    def _send_drops(self) -> None:
        pool = self._pool
        dropped = self.budget.take_drops()
        if dropped and pool is not None:
            with contextlib.suppress(BrokenProcessPool, RuntimeError):
                pool.submit(_drop, dropped)

    def _ensure_pool(self) -> ProcessPoolExecutor:
        if self._pool is None:
            context = multiprocessing.get_context("spawn")  # never fork: the server runs threads
            self._pool = ProcessPoolExecutor(1, mp_context=context, initializer=worker_start)
        return self._pool

    def pid(self) -> int | None:
        """The worker's process id (tests kill it), None before it started."""
        pool = self._pool
        processes = getattr(pool, "_processes", None) or {}
        return next(iter(processes), None)

    async def close(self, timeout: float = 5.0) -> None:
        self.closed = True
        self.budget.clear()
        pool, self._pool = self._pool, None
        if pool is not None:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(asyncio.to_thread(pool.shutdown, True, cancel_futures=True), timeout)


class Replica:
    """One room's copy in the worker: its key there, and the room's updates not sent yet."""

    def __init__(self, replicas: Replicas) -> None:
        self.replicas = replicas
        self.key = uuid4().hex
        self.generation = -1  # the worker's generation it was seeded in (-1: not seeded)
        self.pending: list[bytes] = []
        self.pending_bytes = 0
        self._loop = asyncio.get_running_loop()
        self._thread = threading.get_ident()
        self._armed = False
        weakref.finalize(self, replicas.drop, self.key, self._loop)

    def release(self) -> None:
        """The room closed: the copy is freed in the worker now (the room waits for Python's cyclic collector)."""
        self.generation = -1
        self.pending, self.pending_bytes = [], 0
        self.replicas.release(self.key)

    def seeded(self) -> bool:
        replicas = self.replicas
        return self.generation == replicas.generation and not replicas.closed and self.key in replicas.budget

    def seed(self, update: bytes) -> None:
        """The copy made anew from the room's whole ``update``, encoded in this same step (nothing between), unless
        the notebook alone is past the bound (then it has none)."""
        self.pending, self.pending_bytes = [], 0
        replicas = self.replicas
        if not replicas.budget.admit(self.key, len(update)):
            self.generation = -1
            return
        try:
            replicas.submit(_feed, self.key, update, [])  # the copies dropped to make room are freed first
        except BrokenProcessPool:
            self.generation = -1
            replicas.budget.discard(self.key)
            return
        if self.key not in replicas.budget:  # a worker found dead on the way was replaced (no copies held now)
            replicas.budget.admit(self.key, len(update))
        self.generation = replicas.generation
        replicas.seeds += 1

    def add(self, update: bytes) -> None:
        """The room's document changed (its observer, in the transaction's thread): the update goes to the copy."""
        if self.generation < 0:
            return
        if threading.get_ident() != self._thread:  # never seen: a copy that cannot tell the order is seeded anew
            self.generation = -1
            return
        if not self.replicas.used(self.key, len(update), grown=True):  # dropped for the bound, or lost
            self.generation = -1
            self.pending, self.pending_bytes = [], 0
            return
        self.pending.append(update)
        self.pending_bytes += len(update)
        if self.pending_bytes > FLUSH_BYTES:
            self.flush()
        elif not self._armed:
            self._armed = True
            self._loop.call_later(FLUSH_DELAY, self.flush)

    def flush(self) -> None:
        self._armed = False
        updates, self.pending, self.pending_bytes = self.pending, [], 0
        if not updates or not self.seeded():  # a copy lost: the next save seeds it with the whole document
            return
        try:
            self.replicas.submit(_feed, self.key, None, updates)
        except BrokenProcessPool:
            self.generation = -1

    def merge(self, ours: dict[str, Any], target: dict[str, Any]) -> Merge:
        """A reload's merge made on the copy, the room's pending updates sent first (:func:`_merge`): awaited, the
        updates that make the room the merge (each a bounded number of cells) and the client id that wrote them;
        raises :class:`OutOfStep` when the copy was lost or the merge failed there (merge in the room)."""
        updates, self.pending, self.pending_bytes = self.pending, [], 0
        replicas, generation = self.replicas, self.generation
        try:
            future = asyncio.wrap_future(replicas.submit(_merge, self.key, updates, ours, target, MERGE_CELLS))
        except BrokenProcessPool:
            future = None
        pool = replicas._pool

        async def result() -> tuple[list[bytes], int]:
            try:
                status, made, client = await future if future is not None else ("lost", [], 0)
            except BrokenProcessPool:
                replicas.broken(pool)
                status, made, client = "lost", [], 0
            if status != "merged":
                replicas.lost += 1
                if self.generation == generation:
                    self.generation = -1
                    replicas.budget.discard(self.key)
                raise OutOfStep(status)
            replicas.merges += 1
            replicas.merge_updates += len(made)
            return made, client

        return result()

    def read(self, state: bytes) -> Read:
        """The notebook read from the copy once it holds ``state`` (the room's state vector now): sent in this step,
        with the updates still pending, so the copy is the room as it is now."""
        updates, self.pending, self.pending_bytes = self.pending, [], 0
        self.replicas.reads += 1
        replicas, generation = self.replicas, self.generation
        try:
            future = asyncio.wrap_future(replicas.submit(_read, self.key, updates, state))
        except BrokenProcessPool:
            future = None
        pool = replicas._pool  # the one it was sent to (a new one may replace it meanwhile)

        async def result() -> tuple[Any, bytes | None]:
            try:
                status, value, update = await future if future is not None else ("lost", None, b"")
            except BrokenProcessPool:
                replicas.broken(pool)
                status, value, update = "lost", None, b""
            if status == "duplicates":
                return None, None
            if status != "read":
                replicas.lost += 1
                if self.generation == generation:
                    self.generation = -1
                    replicas.budget.discard(self.key)
                raise OutOfStep(status)
            if self.generation == generation == replicas.generation:
                replicas.used(self.key, len(update), grown=False)  # its exact size now, and saved: used
            return await unpack(value), update

        return result()


class BigReader:
    """A big notebook read for its file off the loop: from its copy (:class:`Replica`), or from an update in the
    scan worker process (the loop pays the encoding only)."""

    def __init__(self, scanner: Scanner, replicas: Replicas | None = None) -> None:
        self.scanner = scanner
        self.replicas = replicas if replicas is not None else Replicas()

    def big(self, update: bytes) -> bool:
        return len(update) > self.limit()

    def limit(self) -> int:
        return self.scanner.in_place_bytes if self.scanner.processes > 0 else sys.maxsize

    async def read(self, update: bytes) -> Any | None:
        return await unpack(await self.scanner.run(read_packed, update, True))

    def copy(self, replica: Replica | None, update: bytes) -> Replica | None:
        """``replica`` (or a new one) seeded with the room's whole ``update``; None when there is no worker."""
        if self.scanner.processes <= 0 or self.replicas.closed:
            return None
        try:
            asyncio.get_running_loop()
        except RuntimeError:  # not on the loop (the copy's updates are sent from it)
            return None
        replica = replica if replica is not None else Replica(self.replicas)
        replica.seed(update)
        return replica


__all__ = ["BigReader", "Replica", "Replicas", "worker_rss"]
