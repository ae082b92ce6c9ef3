"""Benchmark: an agent's one-cell edit against a person's, side by side, in server CPU (issue 35 item 5).

Starts a Jupyter server (subprocess, loopback only) with a notebook open by two raw pycrdt collaborators on the
room websocket (A and B). Each round is one cell's source replaced and seen by B:

- **raw Yjs**: A replaces the cell's source in one transaction; the server applies the update and sends it to B.
- **agent**: an MCP session (plain JSON-RPC over HTTP, so the SDK client's own cost is not the server's)
  calls ``batch_update_notebook_cells`` with the new source; the server merges it into the room and sends it
  to A and B.

- **MCP floor**: the same session's ``ping`` (answered with one JSON body): what any MCP call over HTTP costs the
  server before a tool does anything, for scale.

It reports the server's CPU per round (user + system of the server process, all its threads, read from /proc
before and after a block of rounds, blocks alternated so both see the same machine) and round-trip p50/p95,
and the ratio agent / raw (target: <= 2).

    python benchmarks/bench_edit_cost.py [--sizes 10,10000] [--rounds 200] [--blocks 5] [--json out.json]
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

from benchmarks.jupyter_process import JupyterProcess, RawSession, cpu_seconds, summary  # noqa: E402
from tests.collaborator import Collaborator  # noqa: E402
from tests.conftest import notebook_json  # noqa: E402


async def raw_round(a: Collaborator, b: Collaborator, index: int, text: str) -> None:
    source = a.document.ycells[index]["source"]
    with a.doc.transaction():
        del source[0 : len(source)]
        source += text
    await b.wait_until(lambda: b.source(index) == text, limit=30)


async def agent_round(agent: RawSession, b: Collaborator, path: str, cell_id: str, index: int, text: str) -> None:
    await agent.call(
        "batch_update_notebook_cells", path=path, exec=False, updates=[{"cell_id": cell_id, "content": text}]
    )  # a tool error raises
    await b.wait_until(lambda: b.source(index) == text, limit=30)


async def bench_size(server: JupyterProcess, agent: RawSession, size: int, rounds: int, blocks: int) -> dict[str, Any]:
    path = f"edit-{size}.ipynb"
    cells = [{"cell_type": "code", "source": f"value_{i} = {i}", "id": f"c{i}"} for i in range(size)]
    (Path(server.root) / path).write_text(notebook_json(cells))
    index = size // 2
    cell_id = f"c{index}"
    counter = iter(range(10**9))
    cpu: dict[str, list[float]] = {"raw": [], "agent": [], "ping": []}
    wall: dict[str, list[float]] = {"raw": [], "agent": [], "ping": []}
    async with (
        Collaborator(server.url, "/", server.token, path, sync_limit=600) as a,
        Collaborator(server.url, "/", server.token, path, sync_limit=600) as b,
    ):
        await agent.call("get_notebook", path=path, cell_ids=[cell_id])
        for _ in range(20):  # warm both paths
            await raw_round(a, b, index, f"warm = {next(counter)}")
            await agent.call("get_notebook", path=path, cell_ids=[cell_id])
            text = f"warm = {next(counter)}"
            await agent_round(agent, b, path, cell_id, index, text)
            await a.wait_until(lambda t=text: a.source(index) == t, limit=30)  # A edits from the latest text
        for _ in range(blocks):
            for kind in ("raw", "agent", "ping"):
                if kind == "agent":  # the agent edits from what it read: read once per block, outside the count
                    await agent.call("get_notebook", path=path, cell_ids=[cell_id])
                before = cpu_seconds(server.pid)
                for _ in range(rounds):
                    text = f"value = {next(counter)}"
                    started = time.perf_counter()
                    if kind == "ping":
                        await agent.request("ping", {})
                        wall[kind].append((time.perf_counter() - started) * 1000)
                        continue
                    if kind == "raw":
                        await raw_round(a, b, index, text)
                    else:
                        await agent_round(agent, b, path, cell_id, index, text)
                    wall[kind].append((time.perf_counter() - started) * 1000)
                    await a.wait_until(lambda t=text: a.source(index) == t, limit=30)
                cpu[kind].append((cpu_seconds(server.pid) - before) * 1000 / rounds)
    raw_cpu, agent_cpu = statistics.median(cpu["raw"]), statistics.median(cpu["agent"])
    return {
        "cells": size,
        "raw_cpu_ms": raw_cpu,
        "agent_cpu_ms": agent_cpu,
        "ping_cpu_ms": statistics.median(cpu["ping"]),
        "cpu_ratio": agent_cpu / raw_cpu,
        "raw_round_trip": summary(wall["raw"]),
        "agent_round_trip": summary(wall["agent"]),
        "round_trip_ratio": statistics.median(wall["agent"]) / statistics.median(wall["raw"]),
    }


async def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", default="10,10000")
    parser.add_argument("--rounds", type=int, default=200)
    parser.add_argument("--blocks", type=int, default=5)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()

    import httpx2

    results = []
    with JupyterProcess() as server:
        http = httpx2.AsyncClient(headers={"Authorization": f"Bearer {server.token}"}, timeout=120)
        async with http:
            agent = RawSession(http, f"{server.url}/mcp")
            await agent.open()
            for size in (int(s) for s in args.sizes.split(",")):
                results.append(await bench_size(server, agent, size, args.rounds, args.blocks))
                r = results[-1]
                print(
                    f"{size:>7} cells  server CPU per edit: raw Yjs {r['raw_cpu_ms']:.2f} ms, agent "
                    f"{r['agent_cpu_ms']:.2f} ms ({r['cpu_ratio']:.2f}x; target <= 2), "
                    f"MCP ping {r['ping_cpu_ms']:.2f} ms"
                    f"  round trip p50/p95: raw "
                    f"{r['raw_round_trip']['p50']:.2f}/{r['raw_round_trip']['p95']:.2f} ms, agent "
                    f"{r['agent_round_trip']['p50']:.2f}/{r['agent_round_trip']['p95']:.2f} ms "
                    f"({r['round_trip_ratio']:.2f}x)",
                    flush=True,
                )
    if args.json:
        args.json.write_text(json.dumps(results, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(asyncio.run(main()))
