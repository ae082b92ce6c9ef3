"""A per-test timeout safe for pycrdt, and the ``patience`` ini option (tests/patience.py).

pytest-timeout's ``signal`` method raises its failure in the main thread wherever it is when the time runs
out. The main thread runs the test's event loop, and the test server's on it: the
failure can land inside a pycrdt commit (an observer is Python called from the Rust commit; pycrdt's own
``Transaction.__exit__`` releases its lock and drops the transaction after committing), where it leaves a
change half-observed or a transaction never dropped, and the teardown then fails or hangs. This plugin keeps
pytest-timeout's settings (``timeout``, ``timeout_method = "signal"``, ``@pytest.mark.timeout``) and changes
what happens when the time runs out:

1. Every thread's stack is taken, the main thread's where it was: the failure shows them.
2. A coroutine test's task is cancelled through its loop (``call_soon_threadsafe``): the step running now
   completes, the test ends at its next await as a cancelled task does (its ``finally`` and ``async with``
   exits run) and fails as a timeout; its teardown runs on a working loop.
3. A test that has not ended ``GRACE`` later (it never yields to its loop, or swallows the cancellation), a
   synchronous test, a setup or a teardown past the time, and a teardown still running ``GRACE`` after a
   cancelled test: the failure is raised in the main thread as pytest-timeout raises it, but never while a
   frame of pycrdt is on its stack (tried again every ``RETRY`` s until none is).

A hang even that cannot break (C code holding the GIL) is the session watchdog's (tests/watchdog.py).
The ``thread`` method is left to pytest-timeout.
"""

from __future__ import annotations

import asyncio
import functools
import inspect
import signal
import sys
import threading
import traceback
from collections.abc import Iterator
from types import FrameType
from typing import Any

import pytest
from pytest_timeout import PYTEST_FAILURE_MESSAGE, is_debugging

from . import patience
from .patience import patient

GRACE = 10.0  # idle seconds a cancelled test has to unwind, and its teardown after it (times patience)
RETRY = 0.05  # seconds between attempts to raise outside pycrdt


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addini(
        "patience",
        "Factor applied to every deadline of the suite's waits (each written for an idle machine).",
        default="3",
    )


def pytest_configure(config: pytest.Config) -> None:
    patience.PATIENCE = float(config.getini("patience"))


class Overrun:
    """One test's timeout: armed at its start, disarmed at its end, fired at most once as a failure."""

    def __init__(self, item: pytest.Item, settings: Any) -> None:
        self.item = item
        self.settings = settings
        self.task: asyncio.Task[Any] | None = None  # the coroutine test's task, while it runs
        self.stacks = ""  # every thread's, when the time ran out
        self.cancelled = False  # the test's task was cancelled
        self.raised = False  # the failure was raised from the handler (and the timer disarmed)

    @property
    def message(self) -> str:
        return f"{PYTEST_FAILURE_MESSAGE % self.settings.timeout}\nStacks when the time ran out:\n{self.stacks}"

    def arm(self, seconds: float) -> None:
        signal.signal(signal.SIGALRM, self._on_alarm)
        signal.setitimer(signal.ITIMER_REAL, seconds)

    def disarm(self) -> None:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, signal.SIG_DFL)

    def _on_alarm(self, signum: int, frame: FrameType | None) -> None:
        # A signal handler: it runs in the main thread between two bytecodes of whatever runs there.
        __tracebackhide__ = True
        if not self.settings.disable_debugger_detection and is_debugging():
            return
        if not self.stacks:
            self.stacks = _stacks(frame)
        task = self.task
        if task is not None and not self.cancelled and not task.done():
            self.cancelled = True
            task.get_loop().call_soon_threadsafe(task.cancel, "pytest timeout")
            signal.setitimer(signal.ITIMER_REAL, patient(GRACE))
            return
        if _in_pycrdt(frame):
            signal.setitimer(signal.ITIMER_REAL, RETRY)
            return
        self.disarm()
        self.raised = True
        raise pytest.fail.Exception(self.message)


def _in_pycrdt(frame: FrameType | None) -> bool:
    """Whether pycrdt's code is on the stack (a Python callback of a Rust call has its caller as ``f_back``)."""
    while frame is not None:
        if str(frame.f_globals.get("__name__", "")).split(".")[0] == "pycrdt":
            return True
        frame = frame.f_back
    return False


def _stacks(main: FrameType | None) -> str:
    """Every thread's stack, the main thread's (``main``, where the signal found it) first, without pytest's
    own frames (the runner's, the plugins' hook calls)."""
    frames = sys._current_frames()
    parts = []
    for thread in sorted(threading.enumerate(), key=lambda t: t is not threading.main_thread()):
        frame = main if thread is threading.main_thread() else frames.get(thread.ident or 0)
        if frame is not None:
            stack = [entry for entry in traceback.extract_stack(frame) if not _runner(entry.filename)]
            parts.append(f"~~~~~ Stack of {thread.name} ({thread.ident}) ~~~~~\n")
            parts.append("".join(traceback.format_list(stack)))
    return "".join(parts)


def _runner(filename: str) -> bool:
    return any(part in filename for part in ("/_pytest/", "/pluggy/", "/pytest/", "<frozen runpy>", __file__))


KEY = pytest.StashKey[Overrun]()


@pytest.hookimpl(tryfirst=True)
def pytest_timeout_set_timer(item: pytest.Item, settings: Any) -> bool | None:
    if settings.method != "signal" or threading.current_thread() is not threading.main_thread():
        return None  # pytest-timeout's own
    overrun = Overrun(item, settings)
    item.stash[KEY] = overrun
    item.cancel_timeout = overrun.disarm  # type: ignore[attr-defined]  # what pytest-timeout's cancel calls
    overrun.arm(settings.timeout)
    return True


@pytest.hookimpl(wrapper=True)
def pytest_pyfunc_call(pyfuncitem: pytest.Function) -> Iterator[Any]:
    """Run a coroutine test (pytest-jupyter runs it on its loop) so that its task is known to its timeout."""
    __tracebackhide__ = True
    overrun = pyfuncitem.stash.get(KEY, None)
    test = pyfuncitem.obj
    if overrun is None or not inspect.iscoroutinefunction(test):
        return (yield)

    @functools.wraps(test)
    async def tracked(**kwargs: Any) -> Any:
        overrun.task = asyncio.current_task()
        return await test(**kwargs)

    pyfuncitem.obj = tracked
    try:
        result = yield
    except BaseException as error:
        if not overrun.cancelled or isinstance(error, pytest.fail.Exception):
            raise
        # The cancellation, or what the test raised while it unwound (an exception group of its task group's)
        raise pytest.fail.Exception(overrun.message) from (None if isinstance(error, asyncio.CancelledError) else error)
    finally:
        pyfuncitem.obj = test
        overrun.task = None
        if overrun.cancelled and not overrun.raised:
            overrun.arm(patient(GRACE))  # the teardown's bound
    if overrun.cancelled:  # the test caught the cancellation and returned
        raise pytest.fail.Exception(overrun.message)
    return result
