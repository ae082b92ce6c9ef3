"""Benchmark: one operation across git revisions of this repository, alternated on the same machine.

python benchmarks/bench_revisions.py REV [REV ...] [--rounds 3] [--iterations 60] [--json out.json]

For each round, each revision in turn: a worktree of it (made once, in a temp dir) served by a fresh Jupyter
server process (this environment's dependencies, the revision's code first on ``PYTHONPATH``; the package
was ``jupyter_notebook_mcp`` before it was ``jupyter_pair_mcp``, and the other one is disabled), then
``--iterations`` warm runs of a ``1 + 1`` cell through the endpoint (``execute_notebook_cell``) and as many
pings. Reports per revision the p50/p95 wall milliseconds over all rounds and the server's CPU milliseconds
per run (``/proc``: user + system of the server process, kernel excluded). Alternating rounds spread the
machine's drift over every revision.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.jupyter_process import JupyterProcess, RawSession, cpu_seconds, summary  # noqa: E402
from tests.conftest import notebook_json  # noqa: E402

PACKAGES = ("jupyter_pair_mcp", "jupyter_notebook_mcp")


def worktree(rev: str, base: Path) -> Path:
    path = base / rev
    if not path.exists():
        subprocess.run(["git", "-C", str(ROOT), "worktree", "add", "-q", "--detach", str(path), rev], check=True)
    return path


def cpu_ms(pid: int) -> float:
    return cpu_seconds(pid) * 1000


async def measure(tree: Path, iterations: int) -> dict[str, Any]:
    import httpx2

    package = next(p for p in PACKAGES if (tree / p).is_dir())
    config = {"ServerApp": {"jpserver_extensions": {p: p == package for p in PACKAGES}}}
    previous = os.environ.get("PYTHONPATH")
    os.environ["PYTHONPATH"] = str(tree)
    try:
        with JupyterProcess(config=config) as server:
            (server.root / "run.ipynb").write_text(notebook_json([{"cell_type": "code", "source": "1 + 1", "id": "a"}]))
            headers = {"Authorization": f"Bearer {server.token}"}
            async with httpx2.AsyncClient(headers=headers, timeout=120) as http:
                raw = RawSession(http, f"{server.url}/mcp")
                await raw.open()
                await raw.call("execute_notebook_cell", path="run.ipynb", cell_id="a")  # starts the kernel
                runs, pings = [], []
                cpu = cpu_ms(server.pid)
                for _ in range(iterations):
                    started = time.perf_counter()
                    result = await raw.call("execute_notebook_cell", path="run.ipynb", cell_id="a")
                    runs.append((time.perf_counter() - started) * 1000)
                    assert "2" in json.dumps(result), result
                run_cpu = (cpu_ms(server.pid) - cpu) / iterations
                for _ in range(iterations):
                    started = time.perf_counter()
                    await raw.request("ping", {})
                    pings.append((time.perf_counter() - started) * 1000)
    finally:
        if previous is None:
            os.environ.pop("PYTHONPATH", None)
        else:
            os.environ["PYTHONPATH"] = previous
    return {"runs": runs, "pings": pings, "run_cpu": run_cpu}


async def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("revs", nargs="+")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--iterations", type=int, default=60)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    base = Path(tempfile.gettempdir()) / "jnmcp-revisions"
    trees = {rev: worktree(rev, base) for rev in args.revs}
    found: dict[str, dict[str, list[float]]] = {rev: {"runs": [], "pings": [], "run_cpu": []} for rev in args.revs}
    for round_ in range(args.rounds):
        for rev in args.revs if round_ % 2 == 0 else reversed(args.revs):
            measured = await measure(trees[rev], args.iterations)
            found[rev]["runs"] += measured["runs"]
            found[rev]["pings"] += measured["pings"]
            found[rev]["run_cpu"].append(measured["run_cpu"])
            print(rev, "round", round_, "run p50", round(summary(measured["runs"])["p50"], 2), flush=True)
    results = {}
    for rev, samples in found.items():
        results[rev] = {
            "execute": summary(samples["runs"]),
            "ping": summary(samples["pings"]),
            "server_cpu_ms_per_run": round(sum(samples["run_cpu"]) / len(samples["run_cpu"]), 2),
        }
        figures = results[rev]
        print(
            f"{rev}: execute p50 {figures['execute']['p50']:.2f} p95 {figures['execute']['p95']:.2f} ms, "
            f"ping p50 {figures['ping']['p50']:.2f} ms, server CPU {figures['server_cpu_ms_per_run']} ms a run"
        )
    if args.json:
        args.json.write_text(json.dumps(results, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
