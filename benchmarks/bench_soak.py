"""Soak: a long mixed load on one real server, and whether its memory levels off and comes back.

``--agents`` MCP sessions at a time (raw JSON-RPC over HTTP, loopback) each open, make a random number of
calls from a mix — notebook reads, cell edits from the revision read, cell inserts and deletes, runs, text
reads and edits, history, undo, resources read, subscriptions (some with their notification stream open),
presence and activity, forks, ``tools/list`` — and close; a new session replaces each one that ends. A
collaborator on the notebooks' room websocket types meanwhile (inserting and deleting, so the text stays
small). The server's RSS (``/proc``) is sampled every ``--sample`` seconds.

Figures: calls and errors (by tool), RSS at the start and the end of the load, the RSS slope (MB/min, least
squares) over the last third of the load, and RSS once every session has closed and the server was left
``--settle`` seconds. What holds the memory comes from ``benchmarks/memprobe.py``, a benchmark-only server
extension: the containers reachable from the extension (lengths, at the warm-up's end and after the load,
those that changed), the rooms' document sizes, RSS after ``malloc_trim`` (memory freed but kept by the
allocator), and with ``--trace N`` the top allocation sites grown since the warm-up (tracemalloc, N frames:
it slows the server, so the RSS figures of such a run are not comparable).

``--package-root``: the checkout whose ``jupyter_pair_mcp`` the server imports (default: this one), to
measure another revision with the same load.

Usage: python benchmarks/bench_soak.py [--minutes 30] [--agents 6] [--sample 5] [--settle 30] [--trace 0]
       [--package-root PATH] [--json out.json]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import sys
import time
from pathlib import Path
from typing import Any
from urllib.parse import quote

import httpx2

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from benchmarks.jupyter_process import JupyterProcess, rss_mb  # noqa: E402
from benchmarks.load import handshake  # noqa: E402

NOTEBOOKS = ("soak-0.ipynb", "soak-1.ipynb", "soak-2.ipynb")
TEXTS = ("soak-0.md", "soak-1.py")
CELLS = 20
LINE = 40  # characters of each text line an agent rewrites


def write_files(root: Path) -> None:
    for path in NOTEBOOKS:
        cells = [
            {
                "id": f"c{i}",
                "cell_type": "code",
                "source": f"v{i} = {i}",
                "metadata": {},
                "outputs": [],
                "execution_count": None,
            }
            for i in range(CELLS)
        ]
        notebook = {
            "cells": cells,
            "metadata": {
                "kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"},
                "language_info": {"name": "python"},
            },
            "nbformat": 4,
            "nbformat_minor": 5,
        }
        (root / path).write_text(json.dumps(notebook))
    for path in TEXTS:
        (root / path).write_text("".join(f"{i:04d} {'.' * (LINE - 6)}\n" for i in range(50)))


class Tally:
    def __init__(self) -> None:
        self.calls = 0
        self.sessions = 0
        self.errors: dict[str, int] = {}
        self.samples: list[str] = []

    def error(self, what: str, detail: str) -> None:
        self.errors[what] = self.errors.get(what, 0) + 1
        if len(self.samples) < 8:
            self.samples.append(f"{what}: {detail[:240]}")


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


class Session:
    """One MCP session over raw HTTP; failures are tallied, never raised."""

    def __init__(self, http: httpx2.AsyncClient, url: str, auth: dict[str, str], tally: Tally) -> None:
        self.http, self.url, self.auth, self.tally = http, url, auth, tally
        self.headers: dict[str, str] = {}
        self.next_id = 1
        self.listener: asyncio.Task[None] | None = None

    async def open(self, name: str) -> None:
        self.headers = await handshake(self.http, self.url, self.auth, name)
        self.tally.sessions += 1

    def listen(self) -> None:
        """Hold the session's notification stream (GET) open, reading what comes, until the session closes."""

        async def read() -> None:
            headers = {k: v for k, v in self.headers.items() if k != "Content-Type"}
            headers["Accept"] = "text/event-stream"
            try:
                async with self.http.stream("GET", self.url, headers=headers) as response:
                    async for _ in response.aiter_bytes():
                        pass
            except (httpx2.HTTPError, asyncio.CancelledError):
                pass

        self.listener = asyncio.ensure_future(read())

    async def request(self, method: str, params: dict[str, Any], what: str | None = None) -> dict[str, Any] | None:
        request_id, self.next_id = self.next_id, self.next_id + 1
        message = {"jsonrpc": "2.0", "id": request_id, "method": method, "params": params}
        what = what or method
        self.tally.calls += 1
        try:
            response = await self.http.post(self.url, json=message, headers=self.headers)
        except httpx2.HTTPError as error:
            self.tally.error(what, repr(error))
            return None
        if response.status_code != 200:
            self.tally.error(what, f"HTTP {response.status_code} {response.text[:200]}")
            return None
        reply = _reply(response, request_id) or {}
        if "error" in reply:
            self.tally.error(what, json.dumps(reply["error"]))
            return None
        result = reply.get("result")
        return result if isinstance(result, dict) else None

    async def call(self, name: str, **arguments: Any) -> dict[str, Any] | None:
        result = await self.request("tools/call", {"name": name, "arguments": arguments}, name)
        if result is None:
            return None
        if result.get("isError"):
            self.tally.error(name, json.dumps(result.get("content"))[:300])
            return None
        structured = result.get("structuredContent")
        return structured if isinstance(structured, dict) else {}

    async def close(self) -> None:
        try:
            await self.http.delete(self.url, headers=self.headers)
        except httpx2.HTTPError as error:
            self.tally.error("DELETE", repr(error))
        if self.listener is not None:
            self.listener.cancel()
            await asyncio.gather(self.listener, return_exceptions=True)


async def one_call(s: Session, rng: random.Random, agent: int, n: int) -> None:
    """One call of the mix, on this agent's cell and line (agents share the documents)."""
    notebook = NOTEBOOKS[agent % len(NOTEBOOKS)]
    text = TEXTS[agent % len(TEXTS)]
    cell = f"c{agent % CELLS}"
    kind = rng.choices(
        [
            "read",
            "edit",
            "text_read",
            "text_edit",
            "run",
            "outline",
            "info",
            "search",
            "insert_delete",
            "history",
            "version",
            "undo",
            "resource",
            "resource_text",
            "online",
            "activity",
            "broadcast",
            "cursor",
            "tools",
            "list",
            "fork",
        ],
        weights=[20, 15, 8, 8, 5, 3, 3, 3, 4, 3, 1, 2, 4, 2, 2, 2, 1, 2, 1, 2, 1],
    )[0]
    if kind == "read":
        await s.call(
            "get_notebook",
            path=notebook,
            start_index=rng.randrange(CELLS - 5),
            end_index=None if rng.random() < 0.2 else CELLS,
        )
    elif kind == "edit":
        read = await s.call("get_notebook", path=notebook, cell_ids=[cell], include_outputs=False)
        update: dict[str, Any] = {"cell_id": cell, "content": f"v{agent} = {n}  # agent {agent}"}
        if read and read.get("cells"):
            update["base_revision"] = read["cells"][0]["revision"]
        await s.call("batch_update_notebook_cells", path=notebook, exec=False, updates=[update])
    elif kind == "text_read":
        await s.call("get_document", path=text)
    elif kind == "text_edit":
        read = await s.call("get_document", path=text)
        if read:
            line = agent % 50
            content = f"{line:04d} agent {agent} call {n}".ljust(LINE - 1, ".")[: LINE - 1]
            await s.call(
                "batch_update_document",
                path=text,
                base_revision=read["revision"],
                operations=[{"position": line * LINE, "length": LINE - 1, "content": content}],
            )
    elif kind == "run":
        await s.call("execute_notebook_cell", path=notebook, cell_id=cell, timeout=20)
    elif kind == "outline":
        await s.call("get_notebook_outline", path=notebook)
    elif kind == "info":
        await s.call("get_notebook_info", path=notebook)
    elif kind == "search":
        await s.call("search_notebook", path=notebook, query=f"v{rng.randrange(CELLS)}")
    elif kind == "insert_delete":
        inserted = await s.call(
            "batch_insert_notebook_cells",
            path=notebook,
            exec=False,
            cells=[{"content": f"# scratch {agent}.{n}", "cell_type": "markdown"}],
        )
        ids = [c.get("id") for c in (inserted or {}).get("inserted", []) if isinstance(c, dict)]
        if ids:
            await s.call("batch_delete_notebook_cells", path=notebook, cell_ids=ids)
    elif kind == "history":
        await s.call("get_document_history", path=rng.choice([notebook, text]), limit=10)
    elif kind == "version":
        path = rng.choice([notebook, text])
        history = await s.call("get_document_history", path=path, limit=5)
        versions = (history or {}).get("versions") or []
        if versions:
            await s.call(
                "get_document_version", path=path, version_id=versions[-1]["version_id"], max_content_length=20000
            )
    elif kind == "undo":
        await s.call("undo_agent_edits", path=rng.choice([notebook, text]))
    elif kind == "resource":
        uri = (
            f"notebook://{quote(notebook, safe='')}/cells/{cell}"
            if rng.random() < 0.7
            else f"notebook://{quote(notebook, safe='')}"
        )
        await s.request("resources/read", {"uri": uri})
    elif kind == "resource_text":
        await s.request("resources/read", {"uri": f"document://{quote(text, safe='')}"})
    elif kind == "online":
        await s.call("get_online_users", document_path=notebook)
    elif kind == "activity":
        await s.call("get_user_activity", document_path=rng.choice([notebook, None]), limit=20)
    elif kind == "broadcast":
        await s.call(
            "broadcast_user_activity",
            activity_type="analyzing",
            description=f"agent {agent} call {n}",
            document_path=notebook,
        )
    elif kind == "cursor":
        await s.call(
            "update_cursor_position", document_path=notebook, cell_id=cell, position={"line": 1, "column": 1 + n % 5}
        )
    elif kind == "tools":
        await s.request("tools/list", {})
    elif kind == "list":
        await s.call("list_notebooks")
    elif kind == "fork":
        fork = await s.call("fork_document", path=text, title=f"draft {agent}.{n}")
        if fork and fork.get("fork_id"):
            await s.call("get_document", path=text, fork_id=fork["fork_id"])
            await s.call("discard_document_fork", path=text, fork_id=fork["fork_id"])


async def agent_loop(
    http: httpx2.AsyncClient,
    url: str,
    auth: dict[str, str],
    tally: Tally,
    agent: int,
    stop: asyncio.Event,
    seed: int,
    think: float = 0.0,
) -> None:
    """Sessions one after another until ``stop``: each opens, makes 10-80 calls, closes."""
    rng = random.Random(seed)
    n = 0
    while not stop.is_set():
        s = Session(http, url, auth, tally)
        try:
            await s.open(f"soak-agent-{agent}")
        except httpx2.HTTPError as error:
            tally.error("initialize", repr(error))
            await asyncio.sleep(1)
            continue
        try:
            if rng.random() < 0.5:
                uri = f"notebook://{quote(NOTEBOOKS[agent % len(NOTEBOOKS)], safe='')}"
                await s.request("resources/subscribe", {"uri": uri})
                if rng.random() < 0.5:
                    s.listen()
            for _ in range(rng.randint(10, 80)):
                if stop.is_set():
                    break
                n += 1
                await one_call(s, rng, agent, n)
                if think:
                    await asyncio.sleep(rng.uniform(0, 2 * think))
        finally:
            await s.close()


async def typist(server: JupyterProcess, stop: asyncio.Event, tally: Tally) -> None:
    """A person typing in the first notebook: a character every 0.2 s, deleted again every 40."""
    from tests.collaborator import Collaborator

    async with Collaborator(server.url, "/", server.token, NOTEBOOKS[0], sync_limit=60) as person:
        typed = 0
        while not stop.is_set():
            if typed < 40:
                person.type_into(CELLS - 1, len(person.source(CELLS - 1)), "x")
                typed += 1
            else:
                source = person.source(CELLS - 1)
                cell = person._ytext(CELLS - 1)
                del cell[len(source) - typed : len(source)]
                typed = 0
            await asyncio.sleep(0.2)


async def probe(http: httpx2.AsyncClient, server: JupyterProcess, **params: str) -> dict[str, Any]:
    response = await http.get(
        f"{server.url}/bench/memory", params=params, headers={"Authorization": f"token {server.token}"}, timeout=300
    )
    response.raise_for_status()
    return response.json()  # type: ignore[no-any-return]


def slope(points: list[tuple[float, float]]) -> float:
    """Least-squares slope of (seconds, MB) points, in MB per minute."""
    if len(points) < 2:
        return 0.0
    n = len(points)
    mt = sum(t for t, _ in points) / n
    mr = sum(r for _, r in points) / n
    var = sum((t - mt) ** 2 for t, _ in points)
    return 60 * sum((t - mt) * (r - mr) for t, r in points) / var if var else 0.0


def changed(before: dict[str, int], after: dict[str, int], top: int = 30) -> list[tuple[str, int, int]]:
    keys = set(before) | set(after)
    rows = [(k, before.get(k, 0), after.get(k, 0)) for k in keys if before.get(k, 0) != after.get(k, 0)]
    rows.sort(key=lambda r: -abs(r[2] - r[1]))
    return rows[:top]


async def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--minutes", type=float, default=30.0)
    parser.add_argument("--agents", type=int, default=6)
    parser.add_argument("--think", type=float, default=0.05, help="mean seconds an agent waits between calls")
    parser.add_argument("--sample", type=float, default=5.0, help="seconds between RSS samples")
    parser.add_argument("--settle", type=float, default=30.0, help="seconds left idle after the sessions closed")
    parser.add_argument("--trace", type=int, default=0, help="tracemalloc frames (0: off)")
    parser.add_argument("--holders", default="", help="type names whose live objects' holders are reported")
    parser.add_argument("--package-root", type=Path, default=REPO)
    parser.add_argument("--seed", type=int, default=31)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    roots = [str(args.package_root.resolve()), str(REPO / "benchmarks")]
    os.environ["PYTHONPATH"] = os.pathsep.join(roots + [p for p in [os.environ.get("PYTHONPATH")] if p])
    config = {"ServerApp": {"jpserver_extensions": {"memprobe": True}}}
    tally = Tally()
    with JupyterProcess("--JupyterPairMCP.room_idle_timeout=3600", config=config) as server:
        write_files(server.root)
        url, auth = f"{server.url}/mcp", {"Authorization": f"Bearer {server.token}"}
        limits = httpx2.Limits(max_connections=4 * args.agents + 10, max_keepalive_connections=4 * args.agents + 10)
        async with httpx2.AsyncClient(timeout=120, limits=limits) as http:
            # Warm-up: every room open, every kernel started, every tool's code path run once.
            warm_stop = asyncio.Event()
            warm = [
                asyncio.ensure_future(agent_loop(http, url, auth, tally, a, warm_stop, args.seed + a))
                for a in range(len(NOTEBOOKS) * 2)
            ]
            await asyncio.sleep(30)
            warm_stop.set()
            await asyncio.gather(*warm)
            # The heap the warm-up freed is given back first, so both ends of the load are measured alike.
            trace = {"trace": "start", "frames": str(args.trace)} if args.trace else {}
            first = await probe(http, server, trim="1", **trace)
            tally.calls = 0
            started = time.monotonic()
            samples: list[tuple[float, float]] = [(0.0, rss_mb(server.pid))]
            stop = asyncio.Event()
            tasks = [
                asyncio.ensure_future(agent_loop(http, url, auth, tally, a, stop, args.seed * 1000 + a, args.think))
                for a in range(args.agents)
            ]
            tasks.append(asyncio.ensure_future(typist(server, stop, tally)))
            deadline = started + args.minutes * 60
            while time.monotonic() < deadline:
                await asyncio.sleep(min(args.sample, max(0.0, deadline - time.monotonic())))
                samples.append((time.monotonic() - started, rss_mb(server.pid)))
                if len(samples) % max(1, int(60 / args.sample)) == 0:
                    print(
                        f"  {samples[-1][0] / 60:5.1f} min  rss {samples[-1][1]:7.1f} MB  calls {tally.calls}",
                        flush=True,
                    )
            stop.set()
            results = await asyncio.gather(*tasks, return_exceptions=True)
            failures = [repr(r) for r in results if isinstance(r, BaseException)]
            elapsed = time.monotonic() - started
            end_rss = rss_mb(server.pid)
            await asyncio.sleep(args.settle)
            closed_rss = rss_mb(server.pid)
            extra = {"trace": "compare"} if args.trace else {}
            if args.holders:
                extra["holders"] = args.holders
            last = await probe(http, server, trim="1", **extra)
    third = [p for p in samples if p[0] >= samples[-1][0] * 2 / 3]
    summary: dict[str, Any] = {
        "minutes": round(elapsed / 60, 1),
        "agents": args.agents,
        "sessions": tally.sessions,
        "calls": tally.calls,
        "calls_per_s": round(tally.calls / elapsed, 1),
        "errors": sum(tally.errors.values()),
        "errors_by_call": tally.errors,
        "rss_start_mb": round(samples[0][1], 1),
        "rss_start_trimmed_mb": first.get("trimmed_rss_mb"),
        "rss_end_mb": round(end_rss, 1),
        "rss_slope_last_third_mb_per_min": round(slope(third), 2),
        "rss_slope_whole_mb_per_min": round(slope(samples), 2),
        "rss_sessions_closed_mb": round(closed_rss, 1),
        "rss_after_trim_mb": last.get("trimmed_rss_mb"),
        "trim_ms": last.get("trim_ms"),
        "smaps_start_mb": first.get("trimmed_smaps_mb"),
        "smaps_closed_mb": last.get("smaps_mb"),
        "smaps_trimmed_mb": last.get("trimmed_smaps_mb"),
        "rooms": last.get("rooms"),
        "stores_changed": changed(first.get("stores", {}), last.get("stores", {})),
        "gc_top": last.get("gc", [])[:12],
        "task_failures": failures,
        "error_samples": tally.samples,
    }
    if args.holders:
        summary["holders"] = last.get("holders")
    if args.trace:
        summary["tracemalloc"] = last.get("tracemalloc")
    for key, value in summary.items():
        if isinstance(value, list) and value and key in ("stores_changed", "rooms", "gc_top", "error_samples"):
            print(f"{key}:")
            for row in value:
                print(f"    {row}")
        elif key == "tracemalloc" and isinstance(value, dict):
            print(f"tracemalloc: traced {value.get('traced_mb')} MB")
            for row in value.get("top", []):
                print(f"    {row['kib']:9.1f} KiB {row['count']:7d}  {' <- '.join(row['where'])}")
        else:
            print(f"{key:>34}: {value}")
    if args.json:
        args.json.write_text(json.dumps({**summary, "samples": samples}, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(asyncio.run(main()))
