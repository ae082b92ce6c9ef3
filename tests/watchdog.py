"""A watchdog for the whole test process: a run ends, with every thread's stack, instead of hanging.

pytest-timeout bounds each test (``timeout`` in pyproject.toml; tests/timeouts.py ends it). Nothing bounds the
rest of the process: collection, a teardown after a test's timeout failure was raised (it is raised once per
test), the session's end, and the interpreter's exit, which joins every non-daemon thread (one run hung there
after its summary line, with SIGINT ignored). This plugin bounds all of it:

* pytest-timeout's own ``session_timeout`` (ini option or ``--session-timeout``, seconds) is the soft
  bound: past it, pytest-timeout stops the run *between* tests, with the usual summary and a failure.
* ``watchdog_grace`` (ini option, seconds) past ``session_timeout`` is the hard bound, for a run that
  never gets between tests. Past it, a daemon thread writes which test was running, the tests failed so
  far and every thread's stack (``faulthandler.dump_traceback``, with the threads' names) to the
  terminal, and ends the process with exit code 2 (``ExitCode.INTERRUPTED``: the run did not finish).
  No ``session_timeout``: no watchdog.
* ``watchdog_exit_timeout`` (ini option, seconds): once pytest is done (``pytest_unconfigure``), the
  process has that long to exit. Past it, the same dump, then ``os._exit`` with the session's exit
  status, or 1 when that was 0: a thread that keeps the process alive is a defect to fix, not a pass.
  This is the last resort only; the threads that outlive the session are fixed at their cause.
* A backstop for a main thread stuck in C code that holds the GIL (the watchdog thread would never run):
  ``faulthandler.dump_traceback_later`` with ``exit=True``, ``BACKSTOP`` seconds after either bound.

Output goes to a duplicate of the terminal's stderr taken at configure time, so pytest's per-test
capture of file descriptor 2 cannot swallow it. pytest's own ``faulthandler_timeout`` must stay unset:
it re-arms the single ``dump_traceback_later`` slot after every test.
"""

from __future__ import annotations

import faulthandler
import os
import sys
import threading
import time
from typing import IO, Any

import pytest

BACKSTOP = 30.0  # seconds after a bound: faulthandler's C-level timer ends the process if Python could not
EXIT_STATUS = int(pytest.ExitCode.INTERRUPTED)


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addini(
        "watchdog_grace",
        "Seconds past session_timeout (pytest-timeout's, which stops a run only between tests) before every "
        "thread's stack is dumped and the process ended.",
        default="300",
    )
    parser.addini(
        "watchdog_exit_timeout",
        "Seconds the process may take to exit once pytest is done before it is ended (stacks dumped).",
        default="60",
    )


class Watchdog:
    def __init__(self, session_timeout: float, exit_timeout: float) -> None:
        self.session_timeout = session_timeout
        self.exit_timeout = exit_timeout
        self.current: str | None = None
        self.failed: list[str] = []
        self.exit_status = 0
        self._phase = "session"
        self._deadline = time.monotonic() + session_timeout
        self._rearmed = threading.Condition()
        self._out: IO[str] = os.fdopen(os.dup(_stderr_fileno()), "w", buffering=1, errors="replace")
        self._thread = threading.Thread(target=self._watch, name="pytest-session-watchdog", daemon=True)

    def start(self) -> None:
        faulthandler.dump_traceback_later(self.session_timeout + BACKSTOP, exit=True, file=self._out)
        self._thread.start()

    def stop(self) -> None:
        """pytest is done: from now on the process has ``exit_timeout`` seconds to exit."""
        with self._rearmed:
            self._phase = "exit"
            self._deadline = time.monotonic() + self.exit_timeout
            self._rearmed.notify()
        faulthandler.dump_traceback_later(self.exit_timeout + BACKSTOP, exit=True, file=self._out)

    def _watch(self) -> None:
        with self._rearmed:
            while (remaining := self._deadline - time.monotonic()) > 0:
                self._rearmed.wait(remaining)
            phase = self._phase
        self._fire(phase)

    def _fire(self, phase: str) -> None:
        out = self._out
        bar = "+" * 30
        if phase == "session":
            bound = f"{self.session_timeout:g} s (session_timeout + watchdog_grace)"
            out.write(f"\n{bar} session timeout: the test session ran past {bound} {bar}\n")
            out.write(f"running: {self.current or '(no test: collection, or between tests)'}\n")
            status = EXIT_STATUS
        else:
            out.write(f"\n{bar} the process did not exit within {self.exit_timeout:g} s after pytest was done {bar}\n")
            lingering = [t for t in threading.enumerate() if t is not threading.main_thread() and not t.daemon]
            out.write(f"non-daemon threads keeping it alive: {[t.name for t in lingering]}\n")
            status = self.exit_status or 1
        if self.failed:
            out.write("failed so far:\n" + "".join(f"  {nodeid}\n" for nodeid in self.failed))
        out.write("threads (name: id, as in the stacks below):\n")
        for thread in threading.enumerate():
            out.write(f"  {thread.name}: {thread.ident:#x}{' (daemon)' if thread.daemon else ''}\n")
        out.flush()
        faulthandler.dump_traceback(file=out, all_threads=True)
        out.write(f"{bar} ending the process with exit code {status} {bar}\n")
        out.flush()
        os._exit(status)

    # -- pytest hooks ------------------------------------------------------------------------------------
    def pytest_runtest_logstart(self, nodeid: str, location: Any) -> None:
        self.current = nodeid

    def pytest_runtest_logfinish(self, nodeid: str, location: Any) -> None:
        self.current = None

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        if report.failed and report.nodeid not in self.failed:
            self.failed.append(report.nodeid)

    def pytest_sessionfinish(self, session: pytest.Session, exitstatus: int) -> None:
        self.exit_status = int(exitstatus)


def _stderr_fileno() -> int:
    try:
        fileno = sys.stderr.fileno()
    except (AttributeError, ValueError):
        fileno = -1
    if fileno < 0:
        assert sys.__stderr__ is not None
        fileno = sys.__stderr__.fileno()
    return fileno


def _session_timeout(config: pytest.Config) -> float:
    """pytest-timeout's ``session_timeout``, as it reads it (the option first, then the ini file); 0: none."""
    value = config.getoption("session_timeout", None)
    if value is None:
        value = config.getini("session_timeout") or 0
    return float(value)


def pytest_configure(config: pytest.Config) -> None:
    session_timeout = _session_timeout(config)
    if session_timeout <= 0 or hasattr(config, "workerinput"):  # off, or an xdist worker (its controller bounds it)
        return
    grace = float(config.getini("watchdog_grace"))
    watchdog = Watchdog(session_timeout + grace, float(config.getini("watchdog_exit_timeout")))
    config.pluginmanager.register(watchdog, "session-watchdog")
    watchdog.start()


@pytest.hookimpl(trylast=True)
def pytest_unconfigure(config: pytest.Config) -> None:
    watchdog = config.pluginmanager.get_plugin("session-watchdog")
    if isinstance(watchdog, Watchdog):
        watchdog.stop()
