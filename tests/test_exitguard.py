"""The server process exits even when anyio worker threads outlive the loop (see exitguard.py)."""

from __future__ import annotations

import subprocess
import sys
import threading

import pytest

from jupyter_pair_mcp.transport import exitguard

# A blocking call through anyio under a task still pending when the loop stops, as a room's file watcher
# is when Jupyter stops: the worker thread is never told to end.
SCENARIO = """
import asyncio, time, anyio
{guard}
loop = asyncio.new_event_loop()
started = asyncio.Event()
async def watcher():
    await anyio.to_thread.run_sync(time.sleep, 0.01)
    started.set()
    await asyncio.sleep(3600)
async def stop():
    loop.create_task(watcher())
    await started.wait()
    loop.stop()
loop.create_task(stop())
loop.run_forever()
print("loop stopped")
"""


def run(guard: str, timeout: float) -> subprocess.CompletedProcess[str] | None:
    try:
        return subprocess.run(
            [sys.executable, "-c", SCENARIO.format(guard=guard)], capture_output=True, text=True, timeout=timeout
        )
    except subprocess.TimeoutExpired:
        return None


def test_without_the_guard_the_process_never_exits() -> None:
    assert run("", timeout=4) is None  # still waiting for the worker thread


def test_with_the_guard_it_exits() -> None:
    done = run("from jupyter_pair_mcp.transport import exitguard; exitguard.install()", timeout=30)
    assert done is not None and done.returncode == 0 and "loop stopped" in done.stdout


def test_the_guard_is_registered_once(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(threading, "_threading_atexits", [])
    exitguard.install()
    exitguard.install()
    assert len(threading._threading_atexits) == 1  # type: ignore[attr-defined]
