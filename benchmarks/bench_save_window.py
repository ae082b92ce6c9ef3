"""How long edits answered OK wait for the disk while a notebook keeps changing, and what a SIGKILL loses.

A real server (default save settings unless given), one agent editing one cell every ``--pace`` seconds for
``--seconds``. The file's modification time is watched (never its content while the server may write it); the gaps
between writes are reported (p50 / p95 / max), then the server is SIGKILLed and the file read: the edits answered
OK but not in the file are what the kill lost, with how long before the kill the oldest of them was answered.
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import json
import os
import signal
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import httpx2
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from benchmarks.jupyter_process import JupyterProcess, summary


def notebook(cells: int) -> str:
    body = [
        {"cell_type": "code", "source": "step = 0", "id": "a", "metadata": {}, "outputs": [], "execution_count": None}
    ]
    body += [
        {
            "cell_type": "code",
            "source": f"x = {i}",
            "id": f"c{i}",
            "metadata": {},
            "outputs": [],
            "execution_count": None,
        }
        for i in range(cells - 1)
    ]
    return json.dumps({"cells": body, "metadata": {}, "nbformat": 4, "nbformat_minor": 5})


async def edit(server: JupyterProcess, target: Path, pace: float, seconds: float) -> tuple[list[float], list[float]]:
    """(times of the writes seen, times each edit was answered), in monotonic seconds."""
    writes: list[float] = []
    answered: list[float] = []
    headers = {"Authorization": f"Bearer {server.token}"}
    http = httpx2.AsyncClient(headers=headers, timeout=60)
    transport = streamable_http_client(f"{server.url}/mcp", http_client=http)
    async with http, Client(transport, mode="legacy") as client:  # type: ignore[arg-type]
        seen = os.stat(target).st_mtime_ns
        end = time.monotonic() + seconds
        step = 0
        while time.monotonic() < end:
            step += 1
            await client.call_tool(
                "batch_update_notebook_cells",
                {"path": target.name, "exec": False, "updates": [{"cell_id": "a", "content": f"step = {step}"}]},
            )
            answered.append(time.monotonic())
            if (now := os.stat(target).st_mtime_ns) != seen:
                seen = now
                writes.append(time.monotonic())
            await asyncio.sleep(pace)
    return writes, answered


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--cells", type=int, default=100)
    parser.add_argument("--pace", type=float, default=0.1)
    parser.add_argument("--seconds", type=float, default=30.0)
    parser.add_argument(
        "--args", default="", help="extra server arguments, e.g. '--JupyterPairMCP.max_save_interval=0'"
    )
    parser.add_argument("--json")
    options = parser.parse_args()
    with JupyterProcess(*options.args.split()) as server:
        target = server.root / "window.ipynb"
        target.write_text(notebook(options.cells))
        writes, answered = asyncio.run(edit(server, target, options.pace, options.seconds))
        killed = time.monotonic()
        os.kill(server.pid, signal.SIGKILL)
        server._process.wait(10)  # type: ignore[union-attr]
        on_disk = int("".join(json.loads(target.read_text())["cells"][0]["source"]).removeprefix("step = "))
    gaps = [(b - a) * 1000 for a, b in itertools.pairwise(writes)]
    lost = answered[on_disk:]
    result = {
        "cells": options.cells,
        "edits": len(answered),
        "writes": len(writes),
        "gap_ms": summary(gaps) if gaps else None,
        "lost_edits": len(lost),
        "lost_window_s": round(killed - lost[0], 2) if lost else 0.0,
    }
    print(json.dumps(result, indent=2))
    if options.json:
        Path(options.json).write_text(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
