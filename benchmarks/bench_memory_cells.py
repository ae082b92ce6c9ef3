"""Benchmark: what a big notebook room holds in memory, per cell, and which part is ours (issue 35 item 6).

No server: the room's document is built as the server builds it (the linear load of ``linear_ydoc``, then the
room's ``apply_update``), and each part is measured as the process's resident memory grows (glibc's
``malloc_trim`` first, so freed pages do not count) and, for Python objects, with ``tracemalloc``:

- **upstream**: the room's pycrdt document (jupyter_ydoc's ``YNotebook``) - what jupyter-collaboration holds
  for any open notebook, with or without this extension;
- **ours**: the save state's base (the encoded document the next disk merge starts from), the ``CellIndex``
  (ids, types, run state, positions, after a lookup of every cell), and the outline's rows for every cell (kept
  in a cache bounded across rooms, ``outline.py``). The worker process's copy of a big notebook
  (``replicas.py``) is another process: ``bench_save.py`` reports it.

    python benchmarks/bench_memory_cells.py [--cells 10000,100000] [--json out.json]
"""

from __future__ import annotations

import argparse
import asyncio
import ctypes
import ctypes.util
import gc
import json
import sys
import tracemalloc
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import pycrdt  # noqa: E402
from jupyter_ydoc import YNotebook  # noqa: E402

from benchmarks.jupyter_process import rss_mb  # noqa: E402
from jupyter_pair_mcp.adapters.rooms import linear_ydoc  # noqa: E402
from jupyter_pair_mcp.adapters.rooms.cellindex import CellIndex  # noqa: E402
from jupyter_pair_mcp.adapters.rooms.outline import outline_rows  # noqa: E402

_libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")


def resident() -> float:
    gc.collect()
    _libc.malloc_trim(0)
    return rss_mb(__import__("os").getpid())


def notebook(cells: int) -> dict[str, Any]:
    """Cells like a worked notebook's: two lines of source, one short stream output, run."""
    return {
        "cells": [
            {
                "id": f"cell-{i}",
                "cell_type": "code",
                "source": f"value_{i} = compute({i})\nprint(value_{i})",
                "metadata": {},
                "outputs": [{"output_type": "stream", "name": "stdout", "text": f"{i * 7}\n"}],
                "execution_count": i + 1,
            }
            for i in range(cells)
        ],
        "metadata": {"kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"}},
        "nbformat": 4,
        "nbformat_minor": 5,
    }


async def measure(cells: int) -> dict[str, Any]:
    value = notebook(cells)
    file_bytes = len(json.dumps(value, indent=1))
    start = resident()
    scratch = YNotebook(pycrdt.Doc(client_id=0))
    await linear_ydoc._aset(scratch, value)
    update = scratch.ydoc.get_update()
    del scratch
    before_room = resident()
    room = YNotebook(pycrdt.Doc())
    room.ydoc.apply_update(update)
    upstream = resident() - before_room
    del value
    found: dict[str, Any] = {"cells": cells, "file_mb": file_bytes / 2**20, "upstream_mb": upstream}

    # The save state's base: the encoded document, kept as bytes.
    found["base_mb"] = len(update) / 2**20

    tracemalloc.start()
    index = CellIndex(room.ycells)
    index._ensure()
    for i in range(0, cells, max(1, cells // 1000)):  # cells met by calls: kept live (bounded, MAX_LIVE)
        index.position(f"cell-{i}")
    found["index_mb"] = tracemalloc.get_traced_memory()[0] / 2**20
    tracemalloc.stop()

    with room.ydoc.transaction() as txn:
        snapshot = room.ycells.integrated.to_json(txn._txn)
    rows = outline_rows(snapshot)
    found["outline_rows_mb"] = (sys.getsizeof(rows) + sum(sys.getsizeof(r) for r in rows)) / 2**20
    del rows, snapshot

    ours = found["base_mb"] + found["index_mb"] + found["outline_rows_mb"]
    found["ours_mb"] = ours
    found["upstream_bytes_per_cell"] = upstream * 2**20 / cells
    found["ours_bytes_per_cell"] = ours * 2**20 / cells
    found["total_rss_mb"] = resident() - start
    return found


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--cells", default="10000,100000")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    results = []
    for n in (int(c) for c in args.cells.split(",")):
        r = asyncio.run(measure(n))
        results.append(r)
        print(
            f"{n:>7} cells (file {r['file_mb']:.1f} MB): room document (upstream) {r['upstream_mb']:.1f} MB "
            f"({r['upstream_bytes_per_cell']:.0f} B/cell); ours {r['ours_mb']:.1f} MB "
            f"({r['ours_bytes_per_cell']:.0f} B/cell: save base {r['base_mb']:.1f}, cell index {r['index_mb']:.1f}, "
            f"outline rows {r['outline_rows_mb']:.1f})",
            flush=True,
        )
    if args.json:
        args.json.write_text(json.dumps(results, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
