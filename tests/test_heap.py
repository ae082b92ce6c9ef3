"""A real server freezes the objects alive once it has started, so full garbage collections stay short.

Measured in ``benchmarks/bench_load.py`` (100 sessions): full collections held the loop 0.2-0.4 s each before,
0.05-0.15 s after. Shown here on a server process of its own (the suite's in-process servers leave it off: it
would freeze the test process): the freeze happens, is logged, and can be turned off.
"""

from __future__ import annotations

import re
import time

from benchmarks.jupyter_process import JupyterProcess

LINE = re.compile(r"Froze (\d+) objects alive at start out of full garbage collections")
STARTED = "MCP endpoint: "  # the extension's last startup line


def started(server: JupyterProcess, limit: float = 60.0) -> str:
    """The server's log once the extension has started (it answers HTTP before its extensions have)."""
    deadline = time.monotonic() + limit
    while STARTED not in (text := server.log_text):
        assert time.monotonic() < deadline, f"the extension did not start within {limit} s:\n{text[-2000:]}"
        time.sleep(0.05)
    return text


def test_a_server_freezes_its_startup_heap_once() -> None:
    with JupyterProcess() as server:
        frozen = [int(n) for n in LINE.findall(started(server))]
    assert len(frozen) == 1 and frozen[0] > 50_000, frozen  # Jupyter, JupyterLab and this extension: ~290 000


def test_freezing_can_be_turned_off() -> None:
    with JupyterProcess("--JupyterPairMCP.freeze_startup_heap=False") as server:
        assert not LINE.search(started(server))
