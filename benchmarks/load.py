"""A bounded load on a real server: many MCP sessions reading, editing and running cells at once, while
another client polls ``/api/status`` (what every JupyterLab page does) and times each answer.

Used by the suite (``tests/test_load.py``: short, asserts no errors and that memory comes back) and by
``benchmarks/bench_load.py`` (longer, prints the figures). Raw JSON-RPC over HTTP, so a hundred
sessions cost the client little; loopback only, bounded in count and time.
"""

from __future__ import annotations

import asyncio
import json
import statistics
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx2

VERSION = "2025-11-25"
HEADERS = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}


def write_notebooks(root: Path, sessions: int, notebooks: int) -> list[str]:
    """Notebooks with one code cell per session (cell ``s<i>`` in notebook ``load-<i % notebooks>``)."""
    paths = [f"load-{n}.ipynb" for n in range(notebooks)]
    for n, path in enumerate(paths):
        cells = [
            {
                "id": f"s{i}",
                "cell_type": "code",
                "source": f"x{i} = {i}",
                "metadata": {},
                "outputs": [],
                "execution_count": None,
            }
            for i in range(n, sessions, notebooks)
        ]
        notebook = {
            "cells": cells,
            "metadata": {"kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"}},
            "nbformat": 4,
            "nbformat_minor": 5,
        }
        (root / path).write_text(json.dumps(notebook))
    return paths


@dataclass
class LoadReport:
    sessions: int
    calls: int = 0
    errors: list[str] = field(default_factory=list)
    call_ms: list[float] = field(default_factory=list)
    status_ms: list[float] = field(default_factory=list)
    elapsed: float = 0.0

    @property
    def slowest_status_ms(self) -> float:
        return max(self.status_ms, default=0.0)

    def summary(self) -> dict[str, Any]:
        calls = sorted(self.call_ms)
        status = sorted(self.status_ms)
        return {
            "sessions": self.sessions,
            "calls": self.calls,
            "errors": len(self.errors),
            "elapsed_s": round(self.elapsed, 2),
            "calls_per_s": round(self.calls / self.elapsed, 1) if self.elapsed else 0.0,
            "call_p50_ms": round(statistics.median(calls), 1) if calls else 0.0,
            "call_p95_ms": round(calls[int(len(calls) * 0.95)], 1) if calls else 0.0,
            "status_polls": len(status),
            "status_p50_ms": round(statistics.median(status), 1) if status else 0.0,
            "status_max_ms": round(self.slowest_status_ms, 1),
        }


async def handshake(http: httpx2.AsyncClient, url: str, auth: dict[str, str], name: str) -> dict[str, str]:
    """Open a legacy MCP session over raw HTTP (initialize, then initialized); the headers of its requests."""
    init = {"protocolVersion": VERSION, "capabilities": {}, "clientInfo": {"name": name, "version": "0"}}
    response = await http.post(
        url, json={"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": init}, headers={**HEADERS, **auth}
    )
    response.raise_for_status()
    headers = {
        **HEADERS,
        **auth,
        "mcp-session-id": response.headers["mcp-session-id"],
        "mcp-protocol-version": VERSION,
    }
    note = await http.post(url, json={"jsonrpc": "2.0", "method": "notifications/initialized"}, headers=headers)
    note.raise_for_status()
    return headers


class _Session:
    def __init__(self, http: httpx2.AsyncClient, url: str, auth: dict[str, str], report: LoadReport) -> None:
        self.http, self.url, self.auth, self.report = http, url, auth, report
        self.headers: dict[str, str] = {}
        self.next_id = 1

    async def open(self) -> None:
        self.headers = await handshake(self.http, self.url, self.auth, "load")

    async def call(self, name: str, **arguments: Any) -> dict[str, Any] | None:
        request_id, self.next_id = self.next_id, self.next_id + 1
        message = {
            "jsonrpc": "2.0",
            "id": request_id,
            "method": "tools/call",
            "params": {"name": name, "arguments": arguments},
        }
        started = time.perf_counter()
        response = await self.http.post(self.url, json=message, headers=self.headers)
        self.report.call_ms.append((time.perf_counter() - started) * 1000)
        self.report.calls += 1
        if response.status_code != 200:
            self.report.errors.append(f"{name}: HTTP {response.status_code} {response.text[:200]}")
            return None
        reply = _reply(response, request_id)
        result = (reply or {}).get("result")
        if not isinstance(result, dict) or result.get("isError"):
            self.report.errors.append(f"{name}: {json.dumps(reply)[:300]}")
            return None
        return result.get("structuredContent")

    async def close(self) -> None:
        response = await self.http.delete(self.url, headers=self.headers)
        if response.status_code != 200:
            self.report.errors.append(f"DELETE: HTTP {response.status_code}")


def _reply(response: httpx2.Response, request_id: int) -> dict[str, Any] | None:
    if response.headers.get("content-type", "").startswith("application/json"):
        return response.json()  # type: ignore[no-any-return]
    for block in response.text.split("\n\n"):
        data = "".join(line[5:].strip() for line in block.splitlines() if line.startswith("data:"))
        if data:
            message = json.loads(data)
            if message.get("id") == request_id:
                return message  # type: ignore[no-any-return]
    return None


async def run_load(
    server_url: str,
    token: str,
    paths: list[str],
    *,
    sessions: int = 100,
    rounds: int = 3,
    run_every: int = 3,
    poll: bool = True,
) -> LoadReport:
    """``sessions`` sessions at once, each ``rounds`` times: read its cell, append to it, and (every
    ``run_every``-th session) run it; then end every session. ``/api/status`` is polled throughout
    (``poll``; not while kernels start: jupyter_server 2.21 answers 500 for a kernel without its first
    ``last_activity`` yet, its own race)."""
    report = LoadReport(sessions)
    url = f"{server_url}/mcp"
    auth = {"Authorization": f"Bearer {token}"}
    limits = httpx2.Limits(max_connections=sessions + 10, max_keepalive_connections=sessions + 10)
    done = asyncio.Event()
    async with httpx2.AsyncClient(timeout=120, limits=limits) as http:

        async def poll_status() -> None:
            while poll and not done.is_set():
                started = time.perf_counter()
                response = await http.get(f"{server_url}/api/status", headers=auth)
                report.status_ms.append((time.perf_counter() - started) * 1000)
                if response.status_code != 200:
                    report.errors.append(f"/api/status: HTTP {response.status_code}")
                await asyncio.sleep(0.01)

        async def one(i: int) -> None:
            session = _Session(http, url, auth, report)
            await session.open()
            path, cell = paths[i % len(paths)], f"s{i}"
            for r in range(rounds):
                read = await session.call("get_notebook", path=path, cell_ids=[cell], include_outputs=False)
                revision = read["cells"][0]["revision"] if read else None
                update: dict[str, Any] = {"cell_id": cell, "operations": [{"content": f"\n# {i}.{r}"}]}
                if revision:
                    update["base_revision"] = revision
                await session.call("batch_update_notebook_cells", path=path, exec=False, updates=[update])
                if i % run_every == 0:
                    await session.call("execute_notebook_cell", path=path, cell_id=cell)
            await session.close()

        poller = asyncio.ensure_future(poll_status())
        started = time.perf_counter()
        try:
            await asyncio.wait_for(asyncio.gather(*(one(i) for i in range(sessions))), 300)
        finally:
            report.elapsed = time.perf_counter() - started
            done.set()
            await poller
    return report
