"""Benchmark: review mode on notebooks of 10 to 100,000 cells - a proposal and a person's accept, against a plain
update of the same cell.

A proposal (``batch_update_notebook_cells`` with ``propose=true`` on the last cell) records the cells its edit
touches (no copy of the document); an accept (``POST api/mcp/suggestions/<id>/accept``) applies them to the live
room by cell id. Both should cost about what a plain one-cell update costs (``batch_update_notebook_cells`` on the
same cell, live), at any size: reported as p50/p95 wall milliseconds of each, their p50 as a ratio to the plain
update's, and the same of the server process's CPU milliseconds (all its threads: steadier than wall time on a
busy machine). Each timed call is followed by
``--settle`` seconds, so the autosave a plain update or an accept starts (jupyter-collaboration writes the file
a second later) is not timed as part of the next call.

python benchmarks/bench_review.py [--iterations 30] [--sizes 10 1000 10000 100000] [--json out.json]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.jupyter_process import JupyterProcess, RawSession, cpu_seconds, summary  # noqa: E402
from tests.conftest import notebook_json  # noqa: E402

SIZES = (10, 1_000, 10_000, 100_000)


def cpu_ms(pid: int) -> float:
    return cpu_seconds(pid) * 1000


async def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--iterations", type=int, default=30)
    parser.add_argument(
        "--settle", type=float, default=2.0, help="seconds after each timed call: its autosave is not the next one's"
    )
    parser.add_argument("--sizes", type=int, nargs="+", default=list(SIZES))
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()

    import httpx2

    results: dict[str, Any] = {}
    with JupyterProcess() as server:
        for size in args.sizes:
            cells = [{"cell_type": "code", "source": f"v{i} = {i}", "id": f"c{i}"} for i in range(size)]
            (server.root / f"nb{size}.ipynb").write_text(notebook_json(cells))
        headers = {"Authorization": f"Bearer {server.token}"}
        async with httpx2.AsyncClient(headers=headers, timeout=120) as http:
            raw = RawSession(http, f"{server.url}/mcp")
            await raw.open()
            api = f"{server.url}/api/mcp"
            for size in args.sizes:
                path = f"nb{size}.ipynb"
                await raw.call("get_notebook_info", path=path)  # opens the room (issue 25 times that)
                await asyncio.sleep(3)  # its first autosave lands before the timed calls
                plain, proposing, accepting = [], [], []
                cpu: dict[str, list[float]] = {"update": [], "propose": [], "accept": []}
                live = f"v{size - 1} = {size - 1}"  # the cell's text (each edit says it read it: no merge from a base)
                for i in range(args.iterations):
                    cpu_before = cpu_ms(server.pid)
                    started = time.perf_counter()
                    await raw.call(
                        "batch_update_notebook_cells",
                        path=path,
                        exec=False,
                        updates=[{"cell_id": f"c{size - 1}", "content": f"w = {i}", "expected_source": live}],
                    )
                    updated = time.perf_counter()
                    cpu["update"].append(cpu_ms(server.pid) - cpu_before)
                    await asyncio.sleep(args.settle)
                    started_proposal = time.perf_counter()
                    cpu_before = cpu_ms(server.pid)
                    result = await raw.call(
                        "batch_update_notebook_cells",
                        path=path,
                        propose=True,
                        exec=False,
                        updates=[{"cell_id": f"c{size - 1}", "content": f"v = {i}", "expected_source": f"w = {i}"}],
                    )
                    proposed = time.perf_counter()
                    cpu["propose"].append(cpu_ms(server.pid) - cpu_before)
                    await asyncio.sleep(args.settle)
                    cpu_before = cpu_ms(server.pid)
                    started_accept = time.perf_counter()
                    response = await http.post(f"{api}/suggestions/{result['suggestion']['id']}/accept", json={})
                    response.raise_for_status()
                    accepted = time.perf_counter()
                    cpu["accept"].append(cpu_ms(server.pid) - cpu_before)
                    live = f"v = {i}"
                    await asyncio.sleep(args.settle)
                    plain.append((updated - started) * 1000)
                    proposing.append((proposed - started_proposal) * 1000)
                    accepting.append((accepted - started_accept) * 1000)
                results[f"update_{size}_cells"] = summary(plain)
                results[f"propose_{size}_cells"] = summary(proposing)
                results[f"accept_{size}_cells"] = summary(accepting)
                for kind, samples in cpu.items():
                    results[f"server_cpu_{kind}_{size}_cells"] = summary(samples)
                for prefix in ("", "server_cpu_"):
                    base = results[f"{prefix}update_{size}_cells"]["p50"]
                    for kind in ("propose", "accept"):
                        figures = results[f"{prefix}{kind}_{size}_cells"]
                        figures["ratio_to_update_p50"] = figures["p50"] / max(base, 1e-9)
                print(f"{size} cells done", file=sys.stderr, flush=True)

    width = max(len(name) for name in results)
    for name, figures in results.items():
        ratio = f"  {figures['ratio_to_update_p50']:5.2f}x update" if "ratio_to_update_p50" in figures else ""
        print(f"{name:<{width}}  p50 {figures['p50']:7.2f} ms  p95 {figures['p95']:7.2f} ms{ratio}")
    if args.json:
        args.json.write_text(json.dumps(results, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(asyncio.run(main()))
