"""Whole-notebook scans (search, outline, replace plans, what a clear changes) without holding the event loop.

A scan reads every cell as JSON. pycrdt's ``to_json`` of the cells array costs ~40 ns per byte of JSON and holds
the GIL throughout, as ``json.loads`` does: moved to a worker thread it still stops the loop thread for as long
(measured: a 2 MB notebook held the loop 80-120 ms either way). pycrdt's ``get_update`` encodes the same
document about nine times cheaper (~2.5 ns per byte). So a scan encodes the document on the loop; a small one
is then converted in place (cheaper than any hand-off), a bigger one's update goes to a worker process that
rebuilds the document, converts it and runs the scan there: the loop pays the encoding only, and no other
thread of Jupyter holds the GIL for the scan. The pool is spawned on first need, one process by default
(``JupyterPairMCP.scan_processes``); 0 keeps every scan in the server's process (worker threads). A worker
watches the server process and ends with it, however the server ends (:func:`_exit_with`).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import multiprocessing
import multiprocessing.connection
import os
import signal
import threading
from collections import Counter
from collections.abc import Awaitable, Callable
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from typing import Any, TypeVar

import pycrdt

log = logging.getLogger(__name__)

T = TypeVar("T")

#: Encoded documents up to this size are converted in place: ~15 ms of loop at most on a slow machine.
IN_PLACE_BYTES = 512 << 10

#: Folds document updates into one (history checkpoints and trimming): :meth:`Scanner.merge`.
Merge = Callable[[list[bytes]], Awaitable[bytes]]


def fold_updates(updates: list[bytes]) -> bytes:
    """``updates`` applied to a new document, encoded as one update (pycrdt-store's checkpoints do the same)."""
    ydoc: pycrdt.Doc[Any] = pycrdt.Doc()
    for update in updates:
        ydoc.apply_update(update)
    return ydoc.get_update()


def cells_snapshot(ydoc: Any) -> str:
    """Every cell of a notebook document as JSON text, from Rust in one linear pass."""
    cells = ydoc.get("cells", type=pycrdt.Array)
    with ydoc.transaction() as txn:
        return str(cells.integrated.to_json(txn._txn))


def _scan_update(update: bytes, fn: Callable[..., T], args: tuple[Any, ...], kwargs: dict[str, Any]) -> T:
    """In the worker process: the document rebuilt from ``update``, its cells as JSON, ``fn`` run on them."""
    ydoc: pycrdt.Doc[Any] = pycrdt.Doc()
    ydoc.apply_update(update)
    return fn(cells_snapshot(ydoc), *args, **kwargs)


def worker_start() -> None:
    """In a new worker: ignore Ctrl-C (the server in front of it handles the interrupt and shuts the pool down),
    and end when the server process ends, however it ends."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    parent = multiprocessing.parent_process()
    if parent is not None:
        threading.Thread(target=_exit_with, args=(parent.sentinel,), name="jnmcp-scan-parent", daemon=True).start()


def _exit_with(sentinel: int) -> None:
    """End this worker once ``sentinel`` is ready: the parent's end of the pipe multiprocessing spawned it through
    closed, which the kernel does when the parent process ends for any reason (SIGKILL included, where no code of
    the server runs to stop its pool). A worker waiting for work holds its task queue open and never noticed.
    With the worker gone, multiprocessing's resource tracker sees the last holder of its pipe go and ends too."""
    multiprocessing.connection.wait([sentinel])
    os._exit(0)  # at once: nothing here is the server's to finish, and it is gone


class Scanner:
    """Runs ``fn(snapshot, *args)`` on a notebook's cells JSON, in a worker process for a big document."""

    def __init__(self, processes: int = 1, in_place_bytes: int = IN_PLACE_BYTES) -> None:
        self.processes = processes
        self.in_place_bytes = in_place_bytes
        #: Work run in the worker process, by function name (tests and benchmarks read it).
        self.offloaded: Counter[str] = Counter()
        self._pool: ProcessPoolExecutor | None = None

    async def scan(self, ydoc: Any, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        """``fn(snapshot, *args, **kwargs)`` on ``ydoc``'s cells as they are now; ``fn`` is a module-level function
        (it is pickled by name), its arguments and result are picklable."""
        if self.processes <= 0:
            return await asyncio.to_thread(fn, cells_snapshot(ydoc), *args, **kwargs)
        update: bytes = ydoc.get_update()
        if len(update) <= self.in_place_bytes:
            return await asyncio.to_thread(fn, cells_snapshot(ydoc), *args, **kwargs)
        return await self.run(_scan_update, update, fn, args, kwargs)

    async def scan_away(self, ydoc: Any, fn: Callable[..., T], *args: Any) -> T:
        """:meth:`scan`, in the worker process at any size when there is one: for work whose single C calls hold
        the GIL longer than the loop may wait, whatever the document's size (``ast.parse`` of a 100 KB cell: ~120
        ms in one call, which a worker thread would hold the loop for)."""
        if self.processes <= 0:
            return await asyncio.to_thread(fn, cells_snapshot(ydoc), *args)
        return await self.run(_scan_update, ydoc.get_update(), fn, args, {})

    async def merge(self, updates: list[bytes]) -> bytes:
        """:func:`fold_updates`, in the worker process when the updates are big (see :class:`Merge`)."""
        if self.processes <= 0 or sum(len(u) for u in updates) <= self.in_place_bytes:
            return fold_updates(updates)  # small: cheaper here than any hand-off
        return await self.run(fold_updates, updates)

    async def run(self, fn: Callable[..., T], *args: Any) -> T:
        """``fn(*args)`` in the worker process (module-level ``fn``, picklable arguments and result)."""
        self.offloaded[getattr(fn, "__name__", "?")] += 1
        loop = asyncio.get_running_loop()
        for attempt in (1, 2):
            pool = self._ensure_pool()
            try:
                return await loop.run_in_executor(pool, fn, *args)
            except BrokenProcessPool:  # the worker died (killed, out of memory): one more try in a new one
                log.warning("The notebook scan process stopped; starting a new one (attempt %d)", attempt)
                if self._pool is pool:
                    self._pool = None
                pool.shutdown(wait=False, cancel_futures=True)
        raise RuntimeError("the notebook scan process stopped twice")  # pragma: no cover - reported as internal

    def _ensure_pool(self) -> ProcessPoolExecutor:
        if self._pool is None:
            # spawn, never fork: the server runs threads (a forked copy of their locks can deadlock).
            context = multiprocessing.get_context("spawn")
            self._pool = ProcessPoolExecutor(self.processes, mp_context=context, initializer=worker_start)
        return self._pool

    async def close(self, timeout: float = 5.0) -> None:
        """Stop the worker process: queued scans are cancelled, a running one has ``timeout`` to end."""
        pool, self._pool = self._pool, None
        self.processes = 0  # what still reads (a room's last save) reads in this process
        if pool is not None:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(asyncio.to_thread(pool.shutdown, True, cancel_futures=True), timeout)
