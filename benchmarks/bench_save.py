"""Benchmark: a big notebook's save read from its copy in the worker process, against the encoded-update way and
json.dumps of the notebook.

python benchmarks/bench_save.py [--cells 20000,100000] [--saves 7] [--json out.json]

Per size, one room (a fresh open, code cells with one output), one cell edited before each save; CPU seconds,
p50 and p95 over ``--saves``:

- ``json_dumps``: ``json.dumps`` of the notebook, the reference (one serialization);
- ``copy_loop`` / ``copy_longest_step`` / ``copy_total``: the save read from the room's copy
  (adapters/rooms/replicas.py): the loop thread's CPU (the room's state vector, the pending updates sent,
  the result taken; garbage collections left out, as the loop monitor does; its waits for the GIL while the
  executor's thread unpickles the result count), its longest loop step (what holds Jupyter's loop), and the CPU
  of every thread of this process plus the copy worker's (its apply, its read of the notebook, its update for the next
  merge, the result's transfer);
- ``update_loop`` / ``update_longest_step`` / ``update_total``: the way before (the whole document encoded on
  the loop, read in the scan worker from it);
- ``free_read``: freeing what a save read, once it was written (on the loop, either way);
- ``merge_all``: a file with every cell changed on disk (once): merged in the room as before (one loop step), or
  on a copy as a big notebook's is now (the worker's CPU), its updates of ``MERGE_CELLS`` cells each applied to
  the room (one loop step each: the longest, and all), against the same merge applied as one update;
- ``worker_rss_mb``: the copy worker's resident memory before and after the copy was seeded (what a copy costs).
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import os
import sys
import threading
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import pycrdt  # noqa: E402
from jupyter_ydoc import YNotebook  # noqa: E402

from benchmarks.bench_open import notebook, open_once, summary  # noqa: E402
from benchmarks.bench_reload import all_changed  # noqa: E402
from jupyter_pair_mcp.adapters.rooms import linear_ydoc, reload, replicas  # noqa: E402
from jupyter_pair_mcp.adapters.rooms.replicas import Replica, Replicas, worker_rss  # noqa: E402
from jupyter_pair_mcp.adapters.rooms.scanning import Scanner  # noqa: E402


def worker_cpu(pid: int | None) -> float:
    """User and system CPU seconds of a worker process so far."""
    if pid is None:
        return 0.0
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


class Collections:
    """CPU of garbage collections in this thread (the loop monitor leaves them out: a full collection lands on
    whatever step allocates next, here mostly the notebook read coming back)."""

    def __init__(self) -> None:
        self.cpu = 0.0
        self._started = 0.0
        self._thread = threading.get_ident()
        gc.callbacks.append(self._on_gc)

    def _on_gc(self, phase: str, _: dict[str, Any]) -> None:
        if threading.get_ident() == self._thread:
            if phase == "start":
                self._started = time.thread_time()
            else:
                self.cpu += time.thread_time() - self._started


class Steps:
    """CPU of each loop step (every callback and task step goes through ``Handle._run``), garbage collections left
    out, as the test suite's loop monitor measures them: the longest step of a save is what holds Jupyter's loop."""

    def __init__(self, gcs: Collections) -> None:
        self.longest = 0.0
        self.since = 0  # steps are counted from the last reset (a step running then is the benchmark's own)
        run = asyncio.events.Handle._run
        steps = self

        def measured(handle: asyncio.events.Handle) -> None:
            started, collected, since = time.thread_time(), gcs.cpu, steps.since
            try:
                run(handle)
            finally:
                if since == steps.since:
                    took = time.thread_time() - started - (gcs.cpu - collected)
                    steps.longest = max(steps.longest, took)

        asyncio.events.Handle._run = measured  # type: ignore[method-assign]

    def reset(self) -> None:
        self.longest = 0.0
        self.since += 1


async def timed(work: Callable[[], Awaitable[Any]], pids: list[int | None], gcs: Collections) -> tuple[float, float]:
    """(this thread's CPU but its garbage collections, CPU of this process and the workers) of ``work``."""
    loop, total, workers, collected = time.thread_time(), time.process_time(), sum(worker_cpu(p) for p in pids), gcs.cpu
    await asyncio.ensure_future(work())  # its own task: its steps are loop steps of their own
    workers = sum(worker_cpu(p) for p in pids) - workers
    return time.thread_time() - loop - (gcs.cpu - collected), time.process_time() - total + workers


async def merge_all(room: Any, value: dict[str, Any]) -> dict[str, float]:
    """Every cell changed on disk: merged in the room (one loop step, as before), or on a copy (in the worker, one
    transaction per ``MERGE_CELLS`` cells), its updates applied to the room one per loop step, or whole."""
    target = all_changed(value)
    encoded = room.ydoc.get_update()

    def clone() -> YNotebook:
        copy = YNotebook(pycrdt.Doc())
        copy.ydoc.apply_update(encoded)
        return copy

    in_room = clone()
    *_, ours = linear_ydoc._get(in_room, True)
    assert ours is not None
    ids = [c["id"] for c in ours["cells"]]
    started = time.thread_time()
    reload._apply_notebook(in_room, ids, ours, target)
    found = {"in_room_step_s": round(time.thread_time() - started, 3)}
    del in_room
    state = room.ydoc.get_state()
    replicas._COPIES["bench"] = copy = clone()
    started = time.thread_time()
    status, made, _ = replicas._merge("bench", [], ours, target, replicas.MERGE_CELLS)
    found["on_copy_s"] = round(time.thread_time() - started, 3)
    assert status == "merged"
    whole = copy.ydoc.get_update(state)
    del replicas._COPIES["bench"], copy
    steps = []
    for update in made:
        started = time.thread_time()
        room.ydoc.apply_update(update)
        steps.append(time.thread_time() - started)
    found |= {"updates": len(made), "longest_step_s": round(max(steps), 3), "steps_total_s": round(sum(steps), 3)}
    other = clone()
    started = time.thread_time()
    other.ydoc.apply_update(whole)
    found |= {
        "whole_update_mb": round(len(whole) / 2**20, 1),
        "whole_update_step_s": round(time.thread_time() - started, 3),
    }
    return found


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
    gcs = Collections()
    steps = Steps(gcs)
    kept: list[Any] = []  # what a save read, freed after its timing (as the write's model is, after the write)

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
            kept.append(content)

        async def from_update() -> None:
            kept.append(await scanner.run(linear_ydoc.read_update, room.ydoc.get_update(), True))

        steps.reset()
        loop, total = await timed(from_copy, [replicas.pid()], gcs)
        add("copy_loop", loop)
        add("copy_longest_step", steps.longest)
        add("copy_total", total)
        steps.reset()
        loop, total = await timed(from_update, [scan_pid], gcs)
        add("update_loop", loop)
        add("update_longest_step", steps.longest)
        add("update_total", total)
        started = time.thread_time()
        kept.clear()
        add("free_read", (time.thread_time() - started) / 2)
    await replicas.close()
    await scanner.close()
    merged = await merge_all(room, value)
    found: dict[str, Any] = {
        "cells": cells,
        "cpu_s": {name: summary(t) for name, t in times.items()},
        "merge_all": merged,
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
