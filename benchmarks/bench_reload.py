"""Benchmark: loading a changed file into a notebook with cells, and saving, against a fresh open and json.dumps.

python benchmarks/bench_reload.py [--cells 20000,100000] [--runs 3] [--json out.json]

In one run, per size, in CPU seconds of this thread (p50 and p95 over ``--runs``), each as a ratio:

- ``fresh``: a fresh open (``aset`` into a scratch document, its update applied to the room's), the reference;
- ``stale_one`` / ``stale_all``: ``aset`` of the file into the room's document that already has the cells (a room
  whose stored history is not its file's: changed while the server was down), one cell changed / every cell;
- ``merge_one`` / ``merge_all``: a file changed on disk under the open room, the merge applied as edits
  (``reload._apply_notebook``), one cell / every cell; ``merge_moved``: a tenth of the cells moved or deleted;
- ``save``: what a save costs us (a small notebook: its JSON on the loop and its conversion; a big one: its update
  encoded on the loop and read in the worker, here in-process), against ``json.dumps`` of the notebook.

Upstream's reload (jupyter_ydoc ``_set``) is quadratic: it is timed only up to ``--upstream-max`` cells.
"""

from __future__ import annotations

import argparse
import asyncio
import copy
import json
import random
import sys
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from jupyter_ydoc import YNotebook  # noqa: E402

from benchmarks.bench_open import notebook, open_once, summary  # noqa: E402
from jupyter_pair_mcp.adapters.rooms import linear_ydoc, reload  # noqa: E402
from jupyter_pair_mcp.adapters.rooms.snapshot import notebook_content, notebook_json  # noqa: E402


def one_changed(value: dict[str, Any]) -> dict[str, Any]:
    after = copy.deepcopy(value)
    after["cells"][len(after["cells"]) // 2]["source"] = "changed on disk"
    return after


def all_changed(value: dict[str, Any]) -> dict[str, Any]:
    after = copy.deepcopy(value)
    for cell in after["cells"]:
        cell["source"] += " # reformatted"
    return after


def tenth_moved(value: dict[str, Any]) -> dict[str, Any]:
    after = copy.deepcopy(value)
    rng = random.Random(0)
    cells = after["cells"]
    for _ in range(len(cells) // 10):
        cell = cells.pop(rng.randrange(len(cells)))
        if rng.random() < 0.5:
            cells.insert(rng.randrange(len(cells)), cell)
    return after


async def cpu(work: Callable[[], Awaitable[Any]]) -> float:
    started = time.thread_time()
    await work()
    return time.thread_time() - started


async def measure(cells: int, runs: int, upstream: bool) -> dict[str, Any]:
    value = notebook(cells)
    changes = {"one": one_changed(value), "all": all_changed(value), "moved": tenth_moved(value)}
    times: dict[str, list[float]] = {}

    def add(name: str, took: float) -> None:
        times.setdefault(name, []).append(took)

    for _ in range(runs):
        took, room = await open_once(linear_ydoc._aset, copy.deepcopy(value))
        add("fresh", took)
        for kind in ("one", "all"):
            _, room = await open_once(linear_ydoc._aset, copy.deepcopy(value))
            add(f"stale_{kind}", await cpu(lambda r=room, k=kind: linear_ydoc._aset(r, copy.deepcopy(changes[k]))))
            if upstream:
                _, room = await open_once(linear_ydoc._aset, copy.deepcopy(value))
                add(f"upstream_{kind}", await cpu(lambda r=room, k=kind: linear_ydoc.UPSTREAM_ASET(r, changes[k])))
        for kind in ("one", "all", "moved"):
            _, room = await open_once(linear_ydoc._aset, copy.deepcopy(value))
            *_, ours = linear_ydoc._get(room, True)  # (upstream's get() reads each cell at its index)
            ids = [c["id"] for c in ours["cells"]]

            async def merge(r: YNotebook = room, o: Any = ours, i: list[str] = ids, k: str = kind) -> None:
                reload._apply_notebook(r, i, o, changes[k])

            add(f"merge_{kind}", await cpu(merge))
        add("json_dumps", await cpu(lambda: asyncio.sleep(0, json.dumps(value, indent=1))))

        async def small_save(r: YNotebook = room) -> None:
            notebook_content(*notebook_json(r))

        async def big_save(r: YNotebook = room) -> None:
            assert linear_ydoc.read_update(r.ydoc.get_update(), True) is not None

        add("save_in_place", await cpu(small_save))
        add("save_worker", await cpu(big_save))
        started = time.thread_time()
        room.ydoc.get_update()
        add("save_worker_loop_part", time.thread_time() - started)
    found: dict[str, Any] = {"cells": cells, "cpu_s": {name: summary(t) for name, t in times.items()}}
    fresh = found["cpu_s"]["fresh"]["p50"]
    dumps = found["cpu_s"]["json_dumps"]["p50"]
    found["ratio"] = {
        **{n: round(found["cpu_s"][n]["p50"] / fresh, 2) for n in times if n.startswith(("stale", "merge", "up"))},
        **{n: round(found["cpu_s"][n]["p50"] / dumps, 2) for n in times if n.startswith("save")},
    }
    print(json.dumps(found), flush=True)
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cells", default="20000,100000")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--upstream-max", type=int, default=5000)
    parser.add_argument("--json")
    args = parser.parse_args()
    results = [
        asyncio.run(measure(n, args.runs if n < 100000 else 1, n <= args.upstream_max))
        for n in (int(c) for c in args.cells.split(","))
    ]
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
