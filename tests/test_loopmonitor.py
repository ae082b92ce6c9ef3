"""The loop monitor (tests/loopmonitor.py) catches a step that holds the loop, and only such a step."""

from __future__ import annotations

import asyncio
import time

import pytest

from .loopmonitor import LoopMonitor


def _spin(seconds: float, until_sampled: LoopMonitor | None = None) -> None:
    """Work for ``seconds`` of CPU (and on, while ``until_sampled`` has not caught this step's stack: on a busy
    machine its sampler thread may be scheduled late)."""
    end = time.thread_time() + seconds
    while time.thread_time() < end or (until_sampled is not None and not until_sampled._sampled):
        if time.thread_time() > end + 30:
            raise AssertionError("the monitor's sampler never caught the busy step")


@pytest.mark.loop_bound(60, reason="the test holds a loop on purpose; the monitor under test judges it")
def test_a_step_holding_the_loop_is_caught_with_where_it_was_busy() -> None:
    monitor = LoopMonitor(0.05)
    monitor.install()
    try:
        loop = asyncio.new_event_loop()
        try:

            async def busy() -> None:
                _spin(0.01)  # fine
                await asyncio.sleep(0)
                _spin(0.2, until_sampled=monitor)  # held

            loop.run_until_complete(busy())
        finally:
            loop.close()
    finally:
        monitor.uninstall()
    assert len(monitor.stalls) == 1, monitor.stalls
    stall = monitor.stalls[0]
    assert stall.cpu >= 0.2
    assert "busy" in stall.what
    assert "_spin" in stall.stack


def test_waiting_is_not_holding() -> None:
    """Sleeping (or being descheduled on a busy machine) costs no CPU: only work counts."""
    monitor = LoopMonitor(0.05)
    monitor.install()
    try:
        loop = asyncio.new_event_loop()
        try:

            async def waits() -> None:
                time.sleep(0.2)  # noqa: ASYNC251 (a blocking wait: wall time, no CPU)

            loop.run_until_complete(waits())
        finally:
            loop.close()
    finally:
        monitor.uninstall()
    assert monitor.stalls == []
