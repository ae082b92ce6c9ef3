"""A bounded load: 100 sessions reading, editing and running at once against a real server process.

No call fails (the default limits never refuse such a load), every edit lands, the server keeps
answering ``/api/status`` throughout, and what the sessions held is released when they end: no
session, no stored event, and the server's memory back within a bound. The longer run and its
figures (the slowest ``/api/status`` during the load) are ``benchmarks/bench_load.py``.
"""

from __future__ import annotations

import asyncio
import json

import pytest

from benchmarks.jupyter_process import JupyterProcess, rss_mb
from benchmarks.load import run_load, write_notebooks

SESSIONS = 100
#: Memory the server may keep after the load ends (rooms, kernels and history stay; sessions do not).
RSS_BOUND_MB = 150
#: The load's own bound (two run_load calls of at most 300 s each). Tens of seconds on an idle machine,
#: minutes on a busy one: the test's timeout covers it, the server's start (60 s at most) and stop.
LOAD_BOUND = 600


@pytest.mark.timeout(LOAD_BOUND + 180)
def test_a_hundred_sessions_of_mixed_work_leave_nothing_behind() -> None:
    with JupyterProcess("--JupyterPairMCP.room_idle_timeout=600") as server:
        paths = write_notebooks(server.root, SESSIONS, notebooks=4)

        async def scenario() -> tuple[float, float, dict[str, object], list[str]]:
            # Open every room and start every kernel first (and measure memory once they are there).
            warm = await run_load(server.url, server.token, paths, sessions=4, rounds=1, run_every=1, poll=False)
            assert warm.errors == []
            before = rss_mb(server.pid)
            report = await run_load(server.url, server.token, paths, sessions=SESSIONS, rounds=3, run_every=3)
            after = rss_mb(server.pid)
            return before, after, report.summary(), report.errors

        before, after, summary, errors = asyncio.run(asyncio.wait_for(scenario(), LOAD_BOUND))
        assert errors == []
        runs = len(range(0, SESSIONS, 3))
        assert summary["calls"] == SESSIONS * 3 * 2 + runs * 3
        assert summary["status_polls"] > 10  # the server kept answering another client throughout
        assert after - before < RSS_BOUND_MB, (before, after, summary)
        server.stop()
        for path in paths:
            cells = json.loads((server.root / path).read_text())["cells"]
            for cell in cells:
                i = int(cell["id"][1:])
                source = "".join(cell["source"])
                assert all(f"# {i}.{r}" in source for r in range(3)), (path, cell["id"], source)
