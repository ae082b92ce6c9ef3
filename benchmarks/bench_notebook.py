"""Benchmark: notebook tools on live rooms at 10, 100, 1000 and 10000 cells, through the real endpoint.

Starts a Jupyter server (subprocess, loopback only), connects the MCP SDK client over HTTP and a
collaborator over the collaboration websocket, and reports p50/p95 round trips of: read one cell,
get info, update one cell, insert one cell, delete one cell, move one cell, search; plus the delay
until an agent's update is visible to the collaborator, and the server memory an open room costs.

    python benchmarks/bench_notebook.py [--sizes 10,100,1000,10000,100000] [--iterations 40] [--json out.json]

The table adds, per operation, its p50 over the 10-cell p50 at every size (one-cell operations must stay flat:
<= 1.5x at 10000 cells, <= 2x at 100000). ``search`` reads every cell and grows with the notebook by nature;
the first open of a 100000-cell notebook takes minutes in jupyter-collaboration itself (jupyter_ydoc's
``YNotebook.set`` walks the cells array per cell), so that size is slow to set up.
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

from benchmarks.jupyter_process import JupyterProcess, RawSession, rss_mb, summary, timed  # noqa: E402
from tests.collaborator import Collaborator  # noqa: E402
from tests.conftest import notebook_json  # noqa: E402

# One-cell operations must not cost more on a big notebook: p50 at N over p50 at 10 cells.
FLAT_OPS = (
    "read_one",
    "read_one_raw_http",
    "info",
    "update_one",
    "update_one_raw_http",
    "insert_one",
    "delete_one",
    "move_one",
)
RATIO_TARGETS = {10000: 1.5, 100000: 2.0}

TARGETS_AT_1000 = {
    "read_one": 3.0,
    "read_one_raw_http": 3.0,
    "update_one": 5.0,
    "update_one_raw_http": 5.0,
    "visible_to_collaborator": 5.0,
}


async def bench_size(
    server: JupyterProcess, client: Any, raw: RawSession, size: int, iterations: int
) -> dict[str, Any]:
    path = f"bench-{size}.ipynb"
    cells = [
        {"cell_type": "code", "source": f"value_{i} = {i} * 2\nprint(value_{i})", "id": f"c{i}"} for i in range(size)
    ]
    (server.root / path).write_text(notebook_json(cells))
    middle = f"c{size // 2}"
    rss_before = rss_mb(server.pid)

    async def call(name: str, **args: Any) -> Any:
        result = await client.call_tool(name, args)
        if result.is_error:
            raise RuntimeError(f"{name} failed: {result.content[0].text}")
        return result.structured_content

    started = time.perf_counter()
    await call("get_notebook_info", path=path)  # opens the room
    first_open_ms = (time.perf_counter() - started) * 1000
    room_mb = rss_mb(server.pid) - rss_before
    results: dict[str, Any] = {"cells": size, "first_open_ms": first_open_ms, "room_rss_mb": room_mb}

    results["read_one"] = summary(await timed(lambda: call("get_notebook", path=path, cell_ids=[middle]), iterations))
    results["read_one_raw_http"] = summary(
        await timed(lambda: raw.call("get_notebook", path=path, cell_ids=[middle]), iterations)
    )
    results["info"] = summary(await timed(lambda: call("get_notebook_info", path=path), iterations))
    counter = iter(range(10**9))
    results["update_one"] = summary(
        await timed(
            lambda: call(
                "batch_update_notebook_cells",
                path=path,
                exec=False,
                updates=[{"cell_id": middle, "content": f"value = {next(counter)}"}],
            ),
            iterations,
        )
    )
    # The raw session read the cell before the other session's updates: its edits are merged from that
    # read (see docs/notebooks.md), so a whole-source write from it would conflict. Read it again first.
    await raw.call("get_notebook", path=path, cell_ids=[middle])
    results["update_one_raw_http"] = summary(
        await timed(
            lambda: raw.call(
                "batch_update_notebook_cells",
                path=path,
                exec=False,
                updates=[{"cell_id": middle, "content": f"v = {next(counter)}"}],
            ),
            iterations,
        )
    )
    inserted: list[str] = []

    async def insert() -> None:
        out = await call(
            "batch_insert_notebook_cells", path=path, exec=False, cells=[{"content": "tmp"}], after_cell_id=middle
        )
        inserted.append(out["inserted"][0]["id"])

    results["insert_one"] = summary(await timed(insert, iterations))
    results["delete_one"] = summary(
        await timed(lambda: call("batch_delete_notebook_cells", path=path, cell_ids=[inserted.pop()]), iterations)
    )
    flip = iter(range(10**9))
    results["move_one"] = summary(
        await timed(
            lambda: call(
                "move_notebook_cell", path=path, cell_id=middle, to_index=(size // 2) if next(flip) % 2 else 0
            ),
            iterations,
        )
    )
    results["search"] = summary(await timed(lambda: call("search_notebook", path=path, query="value_7 ="), iterations))

    async with Collaborator(server.url, "/", server.token, path, sync_limit=300) as human:
        position = human.ids().index(middle)
        await call("get_notebook", path=path, cell_ids=[middle])  # the other session wrote it since our read
        delays = []
        for k in range(iterations):
            target = f"seen = {k}"
            await call(
                "batch_update_notebook_cells", path=path, exec=False, updates=[{"cell_id": middle, "content": target}]
            )
            returned = time.perf_counter()
            await human.wait_until(lambda p=position, t=target: human.source(p) == t, limit=10)
            delays.append((time.perf_counter() - returned) * 1000)
        results["visible_to_collaborator"] = summary(delays)
    return results


def print_table(all_results: list[dict[str, Any]]) -> None:
    ops = [
        "read_one",
        "read_one_raw_http",
        "info",
        "update_one",
        "update_one_raw_http",
        "insert_one",
        "delete_one",
        "move_one",
        "search",
        "visible_to_collaborator",
    ]
    header = f"{'operation (ms)':<26}" + "".join(f"{r['cells']:>18}" for r in all_results)
    print(header)
    print(" " * 26 + "".join(f"{'p50 / p95':>18}" for _ in all_results))
    for op in ops:
        row = f"{op:<26}"
        for r in all_results:
            row += f"{r[op]['p50']:>9.2f} /{r[op]['p95']:>7.2f}"
        print(row)
    print(f"{'first open (room load)':<26}" + "".join(f"{r['first_open_ms']:>18.1f}" for r in all_results))
    print(f"{'room memory (RSS MB)':<26}" + "".join(f"{r['room_rss_mb']:>18.1f}" for r in all_results))
    by_size = {r["cells"]: r for r in all_results}
    if 10 in by_size and len(by_size) > 1:
        print("\np50 ratio to the 10-cell figure (targets: <= 1.5 at 10000 cells, <= 2 at 100000)")
        print(f"{'operation':<26}" + "".join(f"{n:>10}" for n in by_size if n != 10))
        for op in FLAT_OPS:
            row = f"{op:<26}"
            for n, r in by_size.items():
                if n == 10:
                    continue
                ratio = r[op]["p50"] / by_size[10][op]["p50"]
                limit = RATIO_TARGETS.get(n)
                row += f"{ratio:>8.2f}{'' if limit is None else (' ✓' if ratio <= limit else ' ✗')}"
            print(row)
    if 1000 in by_size:
        print("\ntargets at 1000 cells:")
        for op, target in TARGETS_AT_1000.items():
            value = by_size[1000][op]["p50"]
            print(f"  {op:<26} p50 {value:6.2f} ms  target <= {target} ms  {'PASS' if value <= target else 'MISS'}")


async def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", default="10,100,1000,10000,100000")
    parser.add_argument("--iterations", type=int, default=40)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]

    import httpx2
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client

    with JupyterProcess() as server:
        http = httpx2.AsyncClient(headers={"Authorization": f"Bearer {server.token}"}, timeout=60)
        async with http, Client(streamable_http_client(f"{server.url}/mcp", http_client=http), mode="legacy") as client:
            await client.call_tool("list_notebooks", {})  # warm up the client's lazy imports
            raw = RawSession(http, f"{server.url}/mcp")
            await raw.open()
            all_results = []
            for size in sizes:
                all_results.append(await bench_size(server, client, raw, size, args.iterations))
                print(
                    f"{size} cells: "
                    + ", ".join(f"{k} {v['p50']:.1f}" for k, v in all_results[-1].items() if isinstance(v, dict)),
                    flush=True,
                )
    print_table(all_results)
    if args.json:
        args.json.write_text(json.dumps(all_results, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(asyncio.run(main()))
