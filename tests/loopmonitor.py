"""A loop monitor for the whole test suite: a test fails when any step on the event loop held it too long.

The endpoint shares Jupyter's event loop with every notebook and kernel of the user, so no step on it may
hold it for more than ~50 ms at any input size. The test server runs on the test's loop in the main
thread; this plugin wraps ``asyncio.events.Handle._run`` — every callback and every task step of every
loop goes through it — and measures each one run in the main thread.

What it measures is the main thread's **CPU time** (``time.thread_time``), not wall time: on a busy machine
(CI shares two cores with other work) a step can be descheduled for a long time while doing nothing
wrong; CPU time is what the step itself cost. Two costs are left out because they are not the step's: a
step during which modules were imported (a one-off first-use cost, counted once per process), and the
time spent in the garbage collector during the step (a full collection lands on whichever step allocates
next; ``gc.callbacks`` measures it). The step in which pytest-jupyter initializes a test's server is not
measured either: a real server does that before its loop serves anything.

A step over the bound (ini ``loop_monitor_bound``, CPU seconds; the default is twice the product's 50 ms
target, room for a slower machine) fails the test phase it ran in (setup, call or teardown) with what ran
it: the callback, and the stack a sampler thread caught while the step was still running. A test that
must do heavy work of its own on the loop (building a huge input in the test coroutine, say) raises its
bound with ``@pytest.mark.loop_bound(seconds, reason=...)`` (``phases=("teardown",)`` to raise it for one phase
only); the server's work is never the reason, but for a known upstream defect an open issue names.
The ``loop_monitor`` fixture gives a test the steps recorded so far (``loop_monitor.steps``: CPU seconds of
each step over ``loop_monitor.record_over``), for tests that assert on them.
"""

from __future__ import annotations

import asyncio.events
import gc
import sys
import threading
import time
import traceback
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import pytest

SAMPLE_AFTER = 0.05  # wall seconds into a step before the sampler takes its stack (where it is busy)


@dataclass
class Stall:
    cpu: float
    wall: float
    what: str
    stack: str


class LoopMonitor:
    def __init__(self, bound: float) -> None:
        self.default_bound = bound
        self.bound = bound
        self.record_over = bound
        self.stalls: list[Stall] = []
        self.steps: list[float] = []
        self._main = threading.main_thread().ident
        self._original: Callable[..., Any] | None = None
        self._gc_cpu = 0.0
        self._gc_started = 0.0
        self._step_started: float | None = None  # wall time, read by the sampler
        self._step_id = 0
        self._sampled: dict[int, str] = {}
        self._wake = threading.Event()
        self._sampler = threading.Thread(target=self._sample, name="pytest-loop-monitor", daemon=True)

    # -- the wrapper -------------------------------------------------------------------------------------
    def install(self) -> None:
        original = asyncio.events.Handle._run
        self._original = original
        monitor = self

        def _run(handle: asyncio.events.Handle) -> None:
            if threading.get_ident() != monitor._main:
                original(handle)
                return
            modules = len(sys.modules)
            gc_before = monitor._gc_cpu
            monitor._step_id += 1
            step = monitor._step_id
            wall = time.monotonic()
            monitor._step_started = wall
            cpu = time.thread_time()
            try:
                original(handle)
            finally:
                spent = time.thread_time() - cpu - (monitor._gc_cpu - gc_before)
                monitor._step_started = None
                sampled = monitor._sampled.pop(step, "")
                if spent > monitor.record_over and len(sys.modules) == modules and not _before_serving(handle):
                    monitor.steps.append(spent)
                    if spent > monitor.bound:
                        what = _describe(handle)
                        monitor.stalls.append(Stall(spent, time.monotonic() - wall, what, sampled))

        asyncio.events.Handle._run = _run  # type: ignore[method-assign]
        gc.callbacks.append(self._on_gc)
        self._sampler.start()

    def uninstall(self) -> None:
        if self._original is not None:
            asyncio.events.Handle._run = self._original  # type: ignore[method-assign]
        if self._on_gc in gc.callbacks:
            gc.callbacks.remove(self._on_gc)

    def _on_gc(self, phase: str, info: dict[str, Any]) -> None:
        if threading.get_ident() != self._main:
            return
        if phase == "start":
            self._gc_started = time.thread_time()
        else:
            self._gc_cpu += time.thread_time() - self._gc_started

    def _sample(self) -> None:
        """Catch the main thread's stack while a long step is still running (after the step, it is gone)."""
        while True:
            time.sleep(SAMPLE_AFTER / 2)
            started, step = self._step_started, self._step_id
            if started is None or step in self._sampled or time.monotonic() - started < SAMPLE_AFTER:
                continue
            try:
                where = _where(sys._current_frames().get(self._main or 0))
            except Exception:  # the main thread moved on under the walk: no sample this time
                continue
            if where and self._step_started == started:
                self._sampled[step] = "".join(traceback.format_list(where))
                while len(self._sampled) > 64:  # steps that ended fast after the sample: drop the oldest
                    self._sampled.pop(next(iter(self._sampled)))

    # -- per test phase ----------------------------------------------------------------------------------
    def _phase(self, item: pytest.Item, when: str) -> Iterator[None]:
        marker = item.get_closest_marker("loop_bound")
        if marker is not None and when not in marker.kwargs.get("phases", (when,)):
            marker = None  # raised for other phases only
        bound = self.bound = float(marker.args[0]) if marker is not None else self.default_bound
        self.stalls.clear()
        try:
            yield
        finally:
            stalls, self.stalls = self.stalls, []
            self.bound = self.default_bound
        if stalls:
            worst = sorted(stalls, key=lambda s: -s.cpu)[:3]
            held = f"the event loop was held past {bound * 1000:.0f} ms of CPU"
            lines = [f"{held} by {len(stalls)} step(s) during {when}:"]
            for stall in worst:
                lines.append(f"- {stall.cpu * 1000:.0f} ms CPU ({stall.wall * 1000:.0f} ms wall): {stall.what}")
                if stall.stack:
                    lines.append("  busy in:\n" + stall.stack)
            raise LoopHeld("\n".join(lines))

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_setup(self, item: pytest.Item) -> Iterator[None]:
        return (yield from self._phase(item, "setup"))

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_call(self, item: pytest.Item) -> Iterator[None]:
        return (yield from self._phase(item, "the test"))

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_teardown(self, item: pytest.Item) -> Iterator[None]:
        return (yield from self._phase(item, "teardown"))


class LoopHeld(AssertionError):
    """A step on the event loop held it past the bound."""


def _where(frame: Any) -> list[traceback.FrameSummary]:
    """The innermost 25 frames of a running thread, read as plain values at once.

    Formatting reads source lines (file I/O, which lets the GIL go): the running thread then moves on and its
    frames may be gone, so nothing is formatted until the walk is over.
    """
    found = []
    while frame is not None and len(found) < 25:
        code = frame.f_code
        found.append(traceback.FrameSummary(code.co_filename, frame.f_lineno, code.co_name, lookup_line=False))
        frame = frame.f_back
    found.reverse()
    return found


#: pytest-jupyter builds each test's server with Jupyter's ``ServerApp.initialize`` (every extension linked and
#: loaded, ours included) as one step of the test's loop: ~45 ms of CPU idle, 3x that on a loaded machine. A real
#: server runs it before its loop serves anything, so no request ever waits on it: it is not measured.
BEFORE_SERVING = ("_configurable_serverapp.<locals>.initialize_app",)


def _before_serving(handle: asyncio.events.Handle) -> bool:
    task = getattr(getattr(handle, "_callback", None), "__self__", None)
    return isinstance(task, asyncio.Task) and str(getattr(task.get_coro(), "__qualname__", "")).endswith(BEFORE_SERVING)


def _describe(handle: asyncio.events.Handle) -> str:
    callback = getattr(handle, "_callback", None)
    task = getattr(callback, "__self__", None)
    if isinstance(task, asyncio.Task):
        coro = task.get_coro()
        names = []
        while coro is not None and len(names) < 8:
            names.append(getattr(coro, "__qualname__", type(coro).__name__))
            coro = getattr(coro, "cr_await", None) or getattr(coro, "gi_yieldfrom", None)
        return f"step of task {task.get_name()} ({' -> '.join(names)})"
    return f"callback {handle!r}"[:300]


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addini(
        "loop_monitor_bound",
        "CPU seconds one step on the event loop may take before the test fails (0: no monitor).",
        default="0.1",
    )


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        "loop_bound(seconds, reason, phases=('setup', 'the test', 'teardown')): this test's own work on the loop "
        "needs a higher bound (in those phases only)",
    )
    bound = float(config.getini("loop_monitor_bound"))
    if bound <= 0:
        return
    monitor = LoopMonitor(bound)
    monitor.install()
    config.pluginmanager.register(monitor, "loop-monitor")


def pytest_unconfigure(config: pytest.Config) -> None:
    monitor = config.pluginmanager.get_plugin("loop-monitor")
    if isinstance(monitor, LoopMonitor):
        monitor.uninstall()


@pytest.fixture
def loop_monitor(pytestconfig: pytest.Config) -> LoopMonitor:
    monitor = pytestconfig.pluginmanager.get_plugin("loop-monitor")
    if not isinstance(monitor, LoopMonitor):
        pytest.skip("the loop monitor is off (loop_monitor_bound = 0)")
    monitor.steps.clear()
    return monitor
