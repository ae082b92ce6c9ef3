"""Benchmark: running cells through the endpoint — warm `1+1`, first run (kernel start), progress delay,
and output floods (1000 ``display()`` calls, 100 000 printed lines): time until the last output is in the room
(as a collaborator on the room websocket sees it) and room transactions per 1000 kernel messages.

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
from tests.collaborator import Collaborator  # noqa: E402
from tests.conftest import notebook_json  # noqa: E402

FLOODS = {
    "display_1000": ("for i in range(1000):\n    display(i)", 1000),
    "print_100000_lines": ("for i in range(100000):\n    print(i)", None),
}


async def flood(server: Any, client: Any, cell_id: str, messages: int | None) -> dict[str, Any]:
    """Run a flooding cell with a collaborator in the room: time until its last output reached the
    collaborator, and how many room updates (server transactions) carried the outputs."""
    async with Collaborator(server.url, "/", server.token, "run.ipynb") as human:
        index = human.ids().index(cell_id)
        before = human.changes
        t0 = time.perf_counter()
        result = await client.call_tool("execute_notebook_cell", {"path": "run.ipynb", "cell_id": cell_id})
        returned = (time.perf_counter() - t0) * 1000
        assert not result.is_error, result
        await human.wait_until(lambda: human.execution_state(index) == "idle", limit=120)
        in_room = (time.perf_counter() - t0) * 1000
        outputs = human.cells()[index]["outputs"]
        transactions = human.changes - before
    count = messages if messages is not None else len(outputs)
    return {
        "call_ms": returned,
        "last_output_in_room_ms": in_room,
        "outputs": len(outputs),
        "transactions": transactions,
        "transactions_per_1000_messages": transactions * 1000 / max(count, 1) if messages else None,
    }


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
        *({"cell_type": "code", "source": code, "id": name} for name, (code, _) in FLOODS.items()),
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

            for name, (_, messages) in FLOODS.items():
                results[name] = await flood(server, client, name, messages)

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
    for name in FLOODS:
        f = results[name]
        per = f["transactions_per_1000_messages"]
        print(
            f"{name:<22} last output in room {f['last_output_in_room_ms']:8.1f} ms  (call {f['call_ms']:.1f} ms), "
            f"{f['transactions']} transactions for {f['outputs']} outputs"
            + (f", {per:.0f} per 1000 messages" if per is not None else "")
        )
    if args.json:
        args.json.write_text(json.dumps(results, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(asyncio.run(main()))
