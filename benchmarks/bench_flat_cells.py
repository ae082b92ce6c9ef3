"""Benchmark: one-cell operations at 100,000 cells as ratios of the same at 10 cells, and a whole outline, in one run.

Starts a Jupyter server (subprocess, loopback only) and reports, per size, p50/p95 round trips and the server's
CPU per call of: the first edit after the room opened (one sample), read one cell, update, insert, delete and
move one cell (the middle one), through a raw MCP session over HTTP; then the outline's first page and a whole
paged outline (each after a change, saved at once so that no autosave lands in them) as ratios of a one-cell
read (issue 35: one-cell ops <= 2x their 10-cell cost; a whole outline
within ~3x its first page).

    python benchmarks/bench_flat_cells.py [--sizes 10,100000] [--iterations 20] [--json out.json]

The open of the biggest size takes a minute or more on a busy machine (jupyter-collaboration applies the file).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.jupyter_process import JupyterProcess, RawSession, cpu_seconds, summary  # noqa: E402
from tests.conftest import notebook_json  # noqa: E402

OPS = ("first_update", "read_one", "update_one", "insert_one", "delete_one", "move_one")


async def measure(pid: int, call: Callable[[], Awaitable[Any]], n: int) -> dict[str, float]:
    samples: list[float] = []
    cpu = cpu_seconds(pid)
    for _ in range(n):
        started = time.perf_counter()
        await call()
        samples.append((time.perf_counter() - started) * 1000)
    found = summary(samples)
    found["cpu_ms"] = (cpu_seconds(pid) - cpu) / n * 1000
    return found


async def bench_size(server: JupyterProcess, raw: RawSession, size: int, n: int) -> dict[str, Any]:
    path = f"flat-{size}.ipynb"
    cells = [
        {"cell_type": "code", "source": f"value_{i} = {i} * 2\nprint(value_{i})", "id": f"c{i}"} for i in range(size)
    ]
    (server.root / path).write_text(notebook_json(cells))
    middle = f"c{size // 2}"
    pid = server.pid
    started, cpu = time.perf_counter(), cpu_seconds(pid)
    await raw.call("get_notebook_info", path=path)
    found: dict[str, Any] = {
        "cells": size,
        "open_s": time.perf_counter() - started,
        "open_cpu_s": cpu_seconds(pid) - cpu,
    }
    counter = iter(range(10**9))

    def update() -> Awaitable[Any]:
        return raw.call(
            "batch_update_notebook_cells",
            path=path,
            exec=False,
            updates=[{"cell_id": middle, "content": f"v = {next(counter)}"}],
        )

    found["first_update"] = await measure(pid, update, 1)
    found["read_one"] = await measure(pid, lambda: raw.call("get_notebook", path=path, cell_ids=[middle]), n)
    await raw.call("get_notebook", path=path, cell_ids=[middle])
    found["update_one"] = await measure(pid, update, n)
    inserted: list[str] = []

    async def insert() -> None:
        out = await raw.call(
            "batch_insert_notebook_cells", path=path, exec=False, cells=[{"content": "tmp"}], after_cell_id=middle
        )
        inserted.append(out["inserted"][0]["id"])

    found["insert_one"] = await measure(pid, insert, n)
    found["delete_one"] = await measure(
        pid, lambda: raw.call("batch_delete_notebook_cells", path=path, cell_ids=[inserted.pop()]), n
    )
    flip = iter(range(10**9))
    found["move_one"] = await measure(
        pid,
        lambda: raw.call("move_notebook_cell", path=path, cell_id=middle, to_index=size // 2 if next(flip) % 2 else 0),
        n,
    )

    async def new_version() -> None:
        """A change (the outline is scanned again), saved now: no autosave of the whole room lands in the timing."""
        await update()
        await raw.call("save_notebook", path=path)

    await new_version()
    found["outline_first_page"] = await measure(pid, lambda: raw.call("get_notebook_outline", path=path), 1)

    async def whole() -> None:
        start: int | None = 0
        while start is not None:
            start = (await raw.call("get_notebook_outline", path=path, start_index=start))["next_index"]

    await new_version()
    found["outline_whole"] = await measure(pid, whole, 1)
    return found


def report(results: list[dict[str, Any]]) -> None:
    print(f"{'operation (ms)':<22}" + "".join(f"{r['cells']:>30}" for r in results))
    print(" " * 22 + "".join(f"{'p50 / p95 / server CPU':>30}" for _ in results))
    for op in (*OPS, "outline_first_page", "outline_whole"):
        print(
            f"{op:<22}"
            + "".join(f"{r[op]['p50']:>12.1f} /{r[op]['p95']:>7.1f} /{r[op]['cpu_ms']:>7.1f}" for r in results)
        )
    print(f"{'open (s, CPU s)':<22}" + "".join(f"{r['open_s']:>20.1f} /{r['open_cpu_s']:>7.1f}" for r in results))
    by_size = {r["cells"]: r for r in results}
    if 10 in by_size:
        print("\np50 ratio to the 10-cell figure (target <= 2 at 100000)")
        for n, r in by_size.items():
            if n != 10:
                print(f"  {n} cells: " + ", ".join(f"{op} {r[op]['p50'] / by_size[10][op]['p50']:.2f}" for op in OPS))
    for r in results:
        read = r["read_one"]["p50"]
        print(
            f"{r['cells']} cells: outline first page {r['outline_first_page']['p50'] / read:.0f}x a one-cell read, "
            f"whole outline {r['outline_whole']['p50'] / r['outline_first_page']['p50']:.2f}x its first page"
        )


async def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", default="10,100000")
    parser.add_argument("--iterations", type=int, default=20)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    import httpx2

    with JupyterProcess() as server:
        http = httpx2.AsyncClient(headers={"Authorization": f"Bearer {server.token}"}, timeout=600)
        async with http:
            raw = RawSession(http, f"{server.url}/mcp")
            await raw.open()
            results = []
            for size in (int(s) for s in args.sizes.split(",")):
                results.append(await bench_size(server, raw, size, args.iterations))
                print(f"{size} cells measured", flush=True)
    report(results)
    if args.json:
        args.json.write_text(json.dumps(results, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(asyncio.run(main()))
