"""Load: many MCP sessions reading, editing and running cells at once against one real Jupyter server.

Reports the calls' latency under load, the slowest answer to ``GET /api/status`` meanwhile (what every
JupyterLab page of the user waits for), the server's CPU per call (its process, all threads, from /proc: the
client shares the machine and is not counted), and the server's memory before and after.

Each session reads its cell and appends to it every round; every ``--run-every``-th session also runs it
(default 3; 0: reads and small edits only, the mix issue 25's target is stated for).

Usage: python benchmarks/bench_load.py [--sessions 100] [--rounds 10] [--notebooks 4] [--run-every 3]
       [--json out.json]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.jupyter_process import JupyterProcess, cpu_seconds, rss_mb
from benchmarks.load import run_load, write_notebooks


async def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sessions", type=int, default=100)
    parser.add_argument("--rounds", type=int, default=10)
    parser.add_argument("--notebooks", type=int, default=4)
    parser.add_argument("--run-every", type=int, default=3, help="every n-th session runs its cell; 0: none")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    with JupyterProcess("--JupyterPairMCP.room_idle_timeout=3600") as server:
        paths = write_notebooks(server.root, args.sessions, args.notebooks)
        warm = await run_load(
            server.url, server.token, paths, sessions=args.notebooks, rounds=1, run_every=1, poll=False
        )
        idle = await run_load(server.url, server.token, paths, sessions=1, rounds=20, run_every=1000)
        before = rss_mb(server.pid)
        cpu = cpu_seconds(server.pid)
        run_every = args.run_every or args.sessions + 1  # 0: no session runs its cell
        report = await run_load(
            server.url, server.token, paths, sessions=args.sessions, rounds=args.rounds, run_every=run_every
        )
        cpu = cpu_seconds(server.pid) - cpu
        after = rss_mb(server.pid)
        summary = {
            **report.summary(),
            "server_cpu_s": round(cpu, 2),
            "server_cpu_per_call_ms": round(cpu * 1000 / max(1, report.calls), 2),
            "idle_status_max_ms": round(idle.slowest_status_ms, 1),
            "rss_before_mb": round(before, 1),
            "rss_after_mb": round(after, 1),
            "errors_sample": (warm.errors + report.errors)[:5],
        }
    for key, value in summary.items():
        print(f"{key:>22}: {value}")
    if args.json:
        args.json.write_text(json.dumps(summary, indent=2))
    return 1 if summary["errors_sample"] else 0


if __name__ == "__main__":
    raise SystemExit(asyncio.run(main()))
