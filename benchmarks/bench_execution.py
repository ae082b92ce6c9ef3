"""Benchmark: running cells through the endpoint — warm `1+1`, first run (kernel start), progress delay.

python benchmarks/bench_execution.py [--iterations 50] [--json out.json]
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import json
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.jupyter_process import JupyterProcess, RawSession, summary  # noqa: E402
from tests.conftest import notebook_json  # noqa: E402


async def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--iterations", type=int, default=50)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()

    import httpx2
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client

    slow = "import time\nfor i in range(10):\n    print(i, flush=True)\n    time.sleep(0.1)"
    cells = [
        {"cell_type": "code", "source": "1+1", "id": "add"},
        {"cell_type": "code", "source": slow, "id": "slow"},
    ]
    results: dict[str, Any] = {}
    with JupyterProcess() as server:
        (server.root / "run.ipynb").write_text(notebook_json(cells))
        headers = {"Authorization": f"Bearer {server.token}"}
        url = f"{server.url}/mcp"
        http = httpx2.AsyncClient(headers=headers, timeout=120)
        async with http, Client(streamable_http_client(url, http_client=http), mode="legacy") as client:
            started = time.perf_counter()
            first = await client.call_tool(
                "execute_notebook_cell", {"path": "run.ipynb", "cell_id": "add", "timeout": 120}
            )
            results["first_run_with_kernel_start_ms"] = (time.perf_counter() - started) * 1000
            assert not first.is_error, first
            samples = []
            for _ in range(args.iterations):
                t0 = time.perf_counter()
                await client.call_tool("execute_notebook_cell", {"path": "run.ipynb", "cell_id": "add"})
                samples.append((time.perf_counter() - t0) * 1000)
            results["execute_1_plus_1_sdk"] = summary(samples)

            raw = RawSession(http, url)
            await raw.open()
            samples = []
            for _ in range(args.iterations):
                t0 = time.perf_counter()
                await raw.call("execute_notebook_cell", path="run.ipynb", cell_id="add")
                samples.append((time.perf_counter() - t0) * 1000)
            results["execute_1_plus_1_raw_http"] = summary(samples)

            # Progress: time between a print in the kernel (every 100 ms) and its notification arriving.
            arrivals: list[float] = []

            async def on_progress(done: float, total: float | None, message: str | None) -> None:
                arrivals.append(time.perf_counter())

            t0 = time.perf_counter()
            await client.call_tool(
                "execute_notebook_cell", {"path": "run.ipynb", "cell_id": "slow"}, progress_callback=on_progress
            )
            gaps = [(b - a) * 1000 for a, b in itertools.pairwise(arrivals)]
            results["progress_notifications"] = len(arrivals)
            results["progress_interval_ms"] = summary(gaps) if gaps else None
            results["first_progress_after_ms"] = (arrivals[0] - t0) * 1000 if arrivals else None

    sdk, raw_s = results["execute_1_plus_1_sdk"], results["execute_1_plus_1_raw_http"]
    print(
        f"execute 1+1 (SDK client)   p50 {sdk['p50']:6.2f} ms  p95 {sdk['p95']:6.2f} ms  target <= 30 ms  "
        f"{'PASS' if sdk['p50'] <= 30 else 'MISS'}"
    )
    print(f"execute 1+1 (raw HTTP)     p50 {raw_s['p50']:6.2f} ms  p95 {raw_s['p95']:6.2f} ms")
    print(f"first run incl. kernel start   {results['first_run_with_kernel_start_ms']:8.1f} ms")
    interval = results["progress_interval_ms"]
    print(
        f"progress notifications         {results['progress_notifications']} for 10 prints 100 ms apart; "
        f"interval p50 {interval['p50'] if interval else float('nan'):.1f} ms; "
        f"first after {results['first_progress_after_ms'] or float('nan'):.1f} ms"
    )
    if args.json:
        args.json.write_text(json.dumps(results, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(asyncio.run(main()))
