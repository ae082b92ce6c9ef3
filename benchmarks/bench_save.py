"""Benchmark: a big notebook's save read from its copy in the worker process, against the encoded-update way and
json.dumps of the notebook.

python benchmarks/bench_save.py [--cells 20000,100000] [--saves 7] [--json out.json]

Per size, one room (a fresh open, code cells with one output), one cell edited before each save; CPU seconds,
p50 and p95 over ``--saves``:

- ``json_dumps``: ``json.dumps`` of the notebook, the reference (one serialization);
- ``copy_loop`` / ``copy_total``: the save read from the room's copy (adapters/rooms/replicas.py): the loop
  thread's CPU (the room's state vector, the pending updates sent, the result taken), and the CPU of every
  thread of this process plus the copy worker's (its apply, its read of the notebook, its update for the next
  merge, the result's transfer);
- ``update_loop`` / ``update_total``: the way before (the whole document encoded on the loop, read in the scan
  worker from it);
- ``worker_rss_mb``: the copy worker's resident memory before and after the copy was seeded (what a copy costs).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import pycrdt  # noqa: E402

from benchmarks.bench_open import notebook, open_once, summary  # noqa: E402
from jupyter_pair_mcp.adapters.rooms import linear_ydoc  # noqa: E402
from jupyter_pair_mcp.adapters.rooms.replicas import Replica, Replicas, worker_rss  # noqa: E402
from jupyter_pair_mcp.adapters.rooms.scanning import Scanner  # noqa: E402


def worker_cpu(pid: int | None) -> float:
    """User and system CPU seconds of a worker process so far."""
    if pid is None:
        return 0.0
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


async def timed(work: Callable[[], Awaitable[Any]], pids: list[int | None]) -> tuple[float, float]:
    """(this thread's CPU, CPU of this process and the workers) of ``work``."""
    loop, total, workers = time.thread_time(), time.process_time(), sum(worker_cpu(p) for p in pids)
    await work()
    workers = sum(worker_cpu(p) for p in pids) - workers
    return time.thread_time() - loop, time.process_time() - total + workers


async def measure(cells: int, saves: int) -> dict[str, Any]:
    value = notebook(cells)
    _, room = await open_once(linear_ydoc._aset, value)
    replicas, scanner = Replicas(), Scanner(1, in_place_bytes=0)
    replicas.submit(worker_rss).result()  # the worker started (its own memory before any copy)
    before, _ = replicas.submit(worker_rss).result()
    replica = Replica(replicas)
    room.ydoc.observe(lambda event: replica.add(event.update))
    replica.seed(room.ydoc.get_update())
    after, _ = replicas.submit(worker_rss).result()
    await scanner.run(linear_ydoc.read_update, pycrdt.Doc().get_update(), True)  # the scan worker started
    scan_pid = next(iter(scanner._pool._processes))  # type: ignore[union-attr]
    times: dict[str, list[float]] = {}

    def add(name: str, took: float) -> None:
        times.setdefault(name, []).append(took)

    for n in range(saves):
        room.ycells[n]["source"].insert(0, f"# edit {n}\n")
        started = time.process_time()
        json.dumps(value, indent=1)
        add("json_dumps", time.process_time() - started)

        async def from_copy(n: int = n) -> None:
            content, update = await replica.read(bytes(room.ydoc.get_state()))
            assert content is not None and content["cells"][n]["source"].startswith(f"# edit {n}") and update

        async def from_update() -> None:
            assert await scanner.run(linear_ydoc.read_update, room.ydoc.get_update(), True) is not None

        loop, total = await timed(from_copy, [replicas.pid()])
        add("copy_loop", loop)
        add("copy_total", total)
        loop, total = await timed(from_update, [scan_pid])
        add("update_loop", loop)
        add("update_total", total)
    await replicas.close()
    await scanner.close()
    found: dict[str, Any] = {
        "cells": cells,
        "cpu_s": {name: summary(t) for name, t in times.items()},
        "worker_rss_mb": {"before": round(before / 2**20), "after_copy": round(after / 2**20)},
    }
    dumps = found["cpu_s"]["json_dumps"]["p50"]
    found["ratio_to_json_dumps"] = {n: round(found["cpu_s"][n]["p50"] / dumps, 2) for n in times if "total" in n}
    print(json.dumps(found), flush=True)
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cells", default="20000,100000")
    parser.add_argument("--saves", type=int, default=7)
    parser.add_argument("--json")
    args = parser.parse_args()
    results = [asyncio.run(measure(int(c), args.saves)) for c in args.cells.split(",")]
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
