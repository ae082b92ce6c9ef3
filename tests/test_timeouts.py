"""The per-test timeout (tests/timeouts.py) ends a test that overran it without raising inside a pycrdt commit.

Each case runs a small test file in a pytest of its own, with this suite's plugins (tests/conftest.py) and a
one-second timeout, and reads its report: the overrun test fails as a timeout, with the stack the main thread
was in when the time ran out, what it was doing completes, and the session goes on to the next test.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

# patience: a second of grace (tests/timeouts.py's GRACE) for a test that does not end when it is cancelled.
INI = """\
[pytest]
timeout = 1
timeout_method = signal
patience = 0.1
"""

CONFTEST = 'pytest_plugins = ["tests.conftest"]\n'

#: The test coroutine's step commits a change whose observer (Python, called from pycrdt's Rust commit) is
#: still running when the time runs out: jupyter-collaboration's and our observers run there.
IN_A_COMMIT = """
import asyncio
import time

import pycrdt

COMMITTED = []


def observer(event):
    time.sleep(2)  # past the timeout, inside the commit (sleeping: the loop monitor counts CPU, not this)
    COMMITTED.append(str(event.target))


async def test_overrun_in_a_commit():
    doc = pycrdt.Doc()
    text = doc.get("text", type=pycrdt.Text)
    text.observe(observer)
    text += "typed"
    await asyncio.sleep(60)


def test_the_commit_completed_and_the_session_went_on():
    assert COMMITTED == ["typed"]
"""

#: A test that never awaits again (a synchronous wait in its own step), one that ignores its cancellation, and a
#: synchronous test.
BLOCKED = """
import asyncio
import time


async def test_blocked_on_the_loop():
    time.sleep(60)


async def test_ignores_the_cancellation():
    try:
        await asyncio.sleep(60)
    except asyncio.CancelledError:
        await asyncio.sleep(60)


def test_sync_overrun():
    time.sleep(60)


def test_next():
    pass
"""


def run(tmp_path: Path, tests: str) -> subprocess.CompletedProcess[str]:
    (tmp_path / "pytest.ini").write_text(INI)
    (tmp_path / "conftest.py").write_text(CONFTEST)
    (tmp_path / "test_inner.py").write_text(tests)
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    command = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-rA", "test_inner.py"]
    return subprocess.run(command, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)


def outcome(done: subprocess.CompletedProcess[str], name: str) -> str:
    """``PASSED``/``FAILED``/``ERROR`` of ``name`` in the short summary (``-rA``)."""
    for line in done.stdout.splitlines():
        word, _, rest = line.partition(" ")
        if rest.startswith(f"test_inner.py::{name}"):
            return word
    raise AssertionError(f"{name} not in the summary:\n{done.stdout}\n{done.stderr}")


@pytest.mark.timeout(300)
def test_an_overrun_inside_a_pycrdt_commit_ends_the_test_after_the_commit(tmp_path: Path) -> None:
    done = run(tmp_path, IN_A_COMMIT)
    report = done.stdout
    assert outcome(done, "test_overrun_in_a_commit") == "FAILED", report
    assert "Timeout (>1.0s)" in report, report
    assert outcome(done, "test_the_commit_completed_and_the_session_went_on") == "PASSED", report
    assert "Observer callback error" not in report, "the timeout was raised inside the commit's observer"
    where = re.search(r"Stack of MainThread.*?in observer\n.*?time\.sleep\(2\)", report, re.DOTALL)
    assert where, "the failure shows where the main thread was when the time ran out"


@pytest.mark.timeout(300)
def test_a_test_that_never_yields_or_ignores_its_cancellation_and_a_synchronous_test_are_still_ended(
    tmp_path: Path,
) -> None:
    done = run(tmp_path, BLOCKED)
    for name in ("test_blocked_on_the_loop", "test_ignores_the_cancellation", "test_sync_overrun"):
        assert outcome(done, name) == "FAILED", done.stdout
    assert done.stdout.count("Timeout (>1.0s)") >= 3, done.stdout
    assert outcome(done, "test_next") == "PASSED", done.stdout
