"""The server's heap: short full garbage collections, and freed memory given back to the system.

Short full garbage collections: the objects alive once the server has started are frozen.

CPython's cyclic garbage collector runs a full collection on whichever thread allocates, at moments nobody
picks, and a full collection walks every tracked object. A Jupyter server with JupyterLab and this extension
holds about 280 000 of them once started (modules, classes, schemas, parsers), so under many agents each
full collection held the event loop 0.2-0.4 s, and ``GET /api/status`` answered in up to 0.6 s
(``benchmarks/bench_load.py``, 100 sessions). Those objects live as long as the process: after one
collection at start they are moved out of the collector's reach (``gc.freeze``), and a full collection walks
only what was made since (0.1-0.16 s under the same load: the live sessions' own objects). A frozen object is
still freed when its last reference goes; only a reference cycle among frozen objects would never be collected.
"""

from __future__ import annotations

import asyncio
import contextlib
import ctypes
import ctypes.util
import gc
import logging
import sys
import time
from collections.abc import Callable

log = logging.getLogger(__name__)


def freeze_startup_heap(log: logging.Logger) -> int:
    """Collect once, then freeze every object still alive; answers how many are frozen."""
    started = time.perf_counter()
    gc.collect()
    gc.freeze()
    frozen = gc.get_freeze_count()
    log.info(
        "Froze %d objects alive at start out of full garbage collections in %.2f s (freeze_startup_heap)",
        frozen,
        time.perf_counter() - started,
    )
    return frozen


def _malloc_trim() -> Callable[[int], int] | None:
    """glibc's ``malloc_trim``, or None where the C library has none (musl, macOS, Windows)."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        trim = libc.malloc_trim
    except (OSError, AttributeError):
        return None
    trim.argtypes = [ctypes.c_size_t]
    trim.restype = ctypes.c_int
    return trim


class HeapTrim:
    """Gives the memory the server freed back to the system, once sessions have ended.

    glibc's malloc keeps what a process frees for its next allocations; with several threads (the loop, the
    workers that read history and write the YStore, sqlite's) it keeps one heap per thread that allocated, and
    returns pages only from the top of each. A long run of agents makes and frees many result and document
    objects in them: under a soak the server's RSS kept rising and did not come down after every session had
    ended, although what it held alive had not grown nearly as much (``benchmarks/bench_soak.py``: RSS against
    RSS after ``malloc_trim``). When MCP sessions end, this asks glibc to return the free pages of every heap
    (``malloc_trim(0)``): a few milliseconds for hundreds of MB, in a worker thread (ctypes lets go of the GIL),
    at most once every ``interval`` seconds, the last one after the last session ended. Nothing is freed
    that is in use; on C libraries without ``malloc_trim`` it does nothing.
    """

    def __init__(self, interval: float, *, settle: float = 1.0, trim: Callable[[int], int] | None = None) -> None:
        self.interval = interval
        self.settle = settle  # seconds after a session ends, so that what it held is freed first
        self._trim = trim if trim is not None else _malloc_trim()
        self._last = -float("inf")
        self._handle: asyncio.TimerHandle | None = None
        self._running: asyncio.Task[None] | None = None
        self.trims = 0  # trims done (tests and the benchmark read it)
        self._closed = False

    @property
    def available(self) -> bool:
        return self._trim is not None and self.interval > 0

    def request(self, *_: object) -> None:
        """A session ended: trim soon (``settle`` s from now, and not within ``interval`` s of the last trim)."""
        if not self.available or self._handle is not None or self._closed:
            return  # (sessions end during the server's stop too: no trim is started then)
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            return
        now = loop.time()
        delay = max(self.settle, self._last + self.interval - now)
        self._handle = loop.call_later(delay, self._start)

    def _start(self) -> None:
        self._handle = None
        if self._running is not None and not self._running.done():
            return
        self._last = asyncio.get_running_loop().time()
        self._running = asyncio.ensure_future(self._run())

    async def _run(self) -> None:
        trim = self._trim
        if trim is None:
            return
        started = time.perf_counter()
        try:
            await asyncio.to_thread(trim, 0)
        except Exception:  # never let housekeeping fail anything else
            log.debug("malloc_trim failed", exc_info=True)
            return
        self.trims += 1
        log.debug("Returned freed heap memory to the system in %.1f ms", (time.perf_counter() - started) * 1000)

    async def close(self) -> None:
        self._closed = True
        if self._handle is not None:
            self._handle.cancel()
            self._handle = None
        if self._running is not None:
            with contextlib.suppress(Exception):
                await self._running
