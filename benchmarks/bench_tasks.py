"""Benchmark: a run as an MCP task (2025-11-25) against the same run as a plain call.

Reports p50/p95 wall milliseconds of: a plain ``execute_notebook_cell`` of ``1+1``; the task-augmented call
answering with its task id (the run goes on in the background); one ``tasks/get`` poll of a running task; and
a task's whole round (create, then ``tasks/result``). The task id should come back in about a plain call's
protocol cost, whatever the cell does.

python benchmarks/bench_tasks.py [--iterations 30] [--json out.json]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.jupyter_process import JupyterProcess, RawSession, summary  # noqa: E402
from tests.conftest import notebook_json  # noqa: E402

#: A cell that waits for the file ``go`` (so a poll finds it running), and a quick one.
WAIT = "import os, time\nwhile not os.path.exists('go'):\n    time.sleep(0.005)\n'released'"


async def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--iterations", type=int, default=30)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()

    import httpx2

    timings: dict[str, list[float]] = {"plain call": [], "task id": [], "poll": [], "task round": []}
    with JupyterProcess() as server:
        cells = [
            {"cell_type": "code", "source": "1 + 1", "id": "quick"},
            {"cell_type": "code", "source": WAIT, "id": "wait"},
        ]
        (server.root / "tasks.ipynb").write_text(notebook_json(cells))
        headers = {"Authorization": f"Bearer {server.token}"}
        async with httpx2.AsyncClient(headers=headers, timeout=120) as http:
            raw = RawSession(http, f"{server.url}/mcp")
            await raw.open()
            call = {"name": "execute_notebook_cell", "arguments": {"path": "tasks.ipynb", "cell_id": "quick"}}
            await raw.request("tools/call", call)  # starts the kernel
            for _ in range(args.iterations):
                started = time.perf_counter()
                await raw.request("tools/call", call)
                timings["plain call"].append((time.perf_counter() - started) * 1000)

                started = time.perf_counter()
                task = (await raw.request("tools/call", {**call, "task": {}}))["result"]["task"]
                await raw.request("tasks/result", {"taskId": task["taskId"]})
                timings["task round"].append((time.perf_counter() - started) * 1000)

                (server.root / "go").unlink(missing_ok=True)
                waiting = {**call, "arguments": {**call["arguments"], "cell_id": "wait"}, "task": {}}
                started = time.perf_counter()
                task = (await raw.request("tools/call", waiting))["result"]["task"]
                timings["task id"].append((time.perf_counter() - started) * 1000)
                started = time.perf_counter()
                polled = (await raw.request("tasks/get", {"taskId": task["taskId"]}))["result"]
                timings["poll"].append((time.perf_counter() - started) * 1000)
                assert polled["status"] == "working", polled
                (server.root / "go").touch()
                result = (await raw.request("tasks/result", {"taskId": task["taskId"]}))["result"]
                assert result["structuredContent"]["outputs"][0]["text"] == "'released'", result
    results = {name: summary(samples) for name, samples in timings.items()}
    for name, figures in results.items():
        print(f"{name:12s} p50 {figures['p50']:7.1f} ms  p95 {figures['p95']:7.1f} ms  (n={figures['n']})")
    if args.json:
        args.json.write_text(json.dumps(results, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
