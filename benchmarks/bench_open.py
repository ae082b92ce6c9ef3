"""Benchmark: opening and saving a notebook room, jupyter_ydoc's way against the linear override (no server).

python benchmarks/bench_open.py [--cells 1000,10000,100000] [--runs 3] [--upstream-max 20000] [--json out.json]

Opening is what jupyter_server_ydoc does with a file: ``aset`` the notebook into a fresh document of client id 0,
then apply its update to the room's document. Saving reads it back (``aget``). Each is timed in CPU seconds of
this thread, p50 and p95 over ``--runs``, for notebooks of ``--cells`` code cells with one stream output each
(~200 bytes a cell). Upstream's (O(cells²)) is timed up to ``--upstream-max`` cells only. The read here is the
in-process one; the server reads a notebook over 512 KiB encoded in its worker process (the loop then pays
``get_update``, reported as ``encode``).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import pycrdt  # noqa: E402
from jupyter_ydoc import YNotebook  # noqa: E402

from jupyter_pair_mcp.adapters.rooms import linear_ydoc  # noqa: E402

OUT = {"output_type": "stream", "name": "stdout", "text": "printed\n"}


def notebook(cells: int) -> dict[str, Any]:
    return {
        "cells": [
            {
                "id": f"c{i}",
                "cell_type": "code",
                "source": f"print({i})",
                "metadata": {},
                "outputs": [OUT],
                "execution_count": i,
            }
            for i in range(cells)
        ],
        "metadata": {"kernelspec": {"name": "python3", "display_name": "Python 3"}},
        "nbformat": 4,
        "nbformat_minor": 5,
    }


async def open_once(aset: Any, value: dict[str, Any]) -> tuple[float, YNotebook]:
    started = time.thread_time()
    scratch = YNotebook(pycrdt.Doc(client_id=0))
    await aset(scratch, value)
    room = YNotebook(pycrdt.Doc())
    room.ydoc.apply_update(scratch.ydoc.get_update())
    return time.thread_time() - started, room


async def read_once(get: Any, room: YNotebook) -> float:
    started = time.thread_time()
    *_, value = get(room, True)
    assert value is not None
    return time.thread_time() - started


def summary(times: list[float]) -> dict[str, float]:
    ordered = sorted(times)
    p95 = ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]
    return {"p50": round(statistics.median(ordered), 3), "p95": round(p95, 3)}


async def measure(cells: int, runs: int, upstream: bool) -> dict[str, Any]:
    value = notebook(cells)
    found: dict[str, Any] = {"cells": cells}
    sides = [("linear", linear_ydoc._aset, linear_ydoc._get)]
    if upstream:
        sides.append(("upstream", linear_ydoc.UPSTREAM_ASET, linear_ydoc.UPSTREAM_GET))
    for name, aset, get in sides:
        opens, reads, encodes = [], [], []
        for _ in range(runs):
            took, room = await open_once(aset, value)
            opens.append(took)
            reads.append(await read_once(get, room))
            started = time.thread_time()
            room.ydoc.get_update()
            encodes.append(time.thread_time() - started)
        found[name] = {"open": summary(opens), "save_read": summary(reads), "encode": summary(encodes)}
        print(cells, name, found[name], flush=True)
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cells", default="1000,10000,100000")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--upstream-max", type=int, default=20000)
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
