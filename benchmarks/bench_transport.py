"""Benchmark: the endpoint itself — initialize, tools/list, a cheap tool call — and what Jupyter costs.

Starts Jupyter with the extension (subprocess, loopback) and, in the same run, the same MCP server
natively under uvicorn (benchmarks/native_server.py), then reports p50/p95 round trips through the
MCP SDK client and over raw HTTP, the bridge's per-call overhead (Jupyter minus native, raw HTTP),
how much the extension slows server start, and the idle memory it adds.

    python benchmarks/bench_transport.py [--iterations 200] [--json out.json]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.jupyter_process import JupyterProcess, RawSession, free_port, rss_mb, summary, timed  # noqa: E402

TARGETS = {
    "cheap_call_sdk": 3.0,
    "cheap_call_raw_http": 3.0,
    "tools_list_sdk": 10.0,
    "bridge_overhead_ms": 0.5,
    "start_slowdown_s": 0.7,
    "idle_memory_mb": 50.0,
}


async def raw_figures(url: str, headers: dict[str, str], iterations: int) -> dict[str, Any]:
    import httpx2

    async with httpx2.AsyncClient(headers=headers, timeout=30) as http:
        raw = RawSession(http, url)
        await raw.open()
        await raw.call("document_exists", path="notes.md")
        return {
            "cheap_call": summary(await timed(lambda: raw.call("document_exists", path="notes.md"), iterations)),
            "tools_list": summary(await timed(lambda: raw.request("tools/list", {}), iterations)),
        }


async def sdk_figures(url: str, headers: dict[str, str], iterations: int) -> dict[str, Any]:
    import httpx2
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client

    async def connect() -> None:
        http = httpx2.AsyncClient(headers=headers, timeout=30)
        async with http, Client(streamable_http_client(url, http_client=http), mode="legacy"):
            pass

    out: dict[str, Any] = {"initialize": summary(await timed(connect, max(10, iterations // 10)))}
    for mode in ("legacy", "2026-07-28"):
        http = httpx2.AsyncClient(headers=headers, timeout=30)
        async with http, Client(streamable_http_client(url, http_client=http), mode=mode) as client:
            await client.call_tool("document_exists", {"path": "notes.md"})  # warm up lazy imports
            out[mode] = {
                "cheap_call": summary(
                    await timed(lambda c=client: c.call_tool("document_exists", {"path": "notes.md"}), iterations)
                ),
                "tools_list": summary(
                    await timed(
                        lambda c=client: c.list_tools(cache_mode="bypass") if _has_cache_mode(c) else c.list_tools(),
                        iterations,
                    )
                ),
            }
    return out


def _has_cache_mode(client: Any) -> bool:
    import inspect

    return "cache_mode" in inspect.signature(client.list_tools).parameters


def start_cost(extra: list[str], *, endpoint: bool, runs: int = 3) -> tuple[float, float]:
    """Median seconds until /api/status answers, and the median idle RSS (MB) a second later."""
    times, memory = [], []
    for _ in range(runs):
        with JupyterProcess(*extra) as server:
            times.append(server.started_in)
            request = urllib.request.Request(f"{server.url}/mcp?token={server.token}", data=b"{}", method="POST")
            request.add_header("Content-Type", "application/json")
            try:
                urllib.request.urlopen(request, timeout=5)
                status = 200
            except urllib.error.HTTPError as exc:
                status = exc.code
            if (status != 404) != endpoint:
                raise RuntimeError(f"endpoint {'missing' if endpoint else 'still served'} (POST /mcp -> {status})")
            time.sleep(1.0)
            memory.append(rss_mb(server.pid))
    return statistics.median(times), statistics.median(memory)


async def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--iterations", type=int, default=200)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    results: dict[str, Any] = {}

    with JupyterProcess() as server:
        (server.root / "notes.md").write_text("hello")
        headers = {"Authorization": f"Bearer {server.token}"}
        results["jupyter_sdk"] = await sdk_figures(f"{server.url}/mcp", headers, args.iterations)
        results["jupyter_raw"] = await raw_figures(f"{server.url}/mcp", headers, args.iterations)

        port = free_port()
        native = subprocess.Popen(
            [sys.executable, str(ROOT / "benchmarks" / "native_server.py"), str(server.root), str(port)]
        )
        try:
            deadline = time.monotonic() + 30
            while time.monotonic() < deadline:
                try:
                    urllib.request.urlopen(f"http://127.0.0.1:{port}/mcp", timeout=1)
                except urllib.error.HTTPError:
                    break  # it answers (405/406/400): it is up
                except OSError:
                    time.sleep(0.05)
            results["native_raw"] = await raw_figures(f"http://127.0.0.1:{port}/mcp", {}, args.iterations)
        finally:
            native.terminate()
            native.wait(10)

    with_ext, mem_with = start_cost([], endpoint=True)
    without_ext, mem_without = start_cost(
        ["--ServerApp.jpserver_extensions=jupyter_notebook_mcp=False"], endpoint=False
    )
    results["start_s"] = {"with": with_ext, "without": without_ext}
    results["idle_rss_mb"] = {"with": mem_with, "without": mem_without}

    sdk, raw, native_raw = results["jupyter_sdk"], results["jupyter_raw"], results["native_raw"]
    overhead = raw["cheap_call"]["p50"] - native_raw["cheap_call"]["p50"]
    figures = {
        "initialize_sdk": sdk["initialize"]["p50"],
        "cheap_call_sdk": sdk["legacy"]["cheap_call"]["p50"],
        "cheap_call_sdk_2026": sdk["2026-07-28"]["cheap_call"]["p50"],
        "cheap_call_raw_http": raw["cheap_call"]["p50"],
        "tools_list_sdk": sdk["legacy"]["tools_list"]["p50"],
        "tools_list_raw_http": raw["tools_list"]["p50"],
        "native_cheap_call_raw_http": native_raw["cheap_call"]["p50"],
        "bridge_overhead_ms": overhead,
        "bridge_ratio": raw["cheap_call"]["p50"] / native_raw["cheap_call"]["p50"],
        "start_slowdown_s": with_ext - without_ext,
        "idle_memory_mb": mem_with - mem_without,
    }
    results["figures"] = figures
    print(f"{'figure':<30}{'value':>12}   target")
    for name, value in figures.items():
        target = TARGETS.get(name)
        mark = "" if target is None else f"<= {target:<6} {'PASS' if value <= target else 'MISS'}"
        print(f"{name:<30}{value:>12.3f}   {mark}")
    print("\np50/p95 detail (ms):")
    for label, block in (
        ("jupyter sdk legacy", sdk["legacy"]),
        ("jupyter sdk 2026", sdk["2026-07-28"]),
        ("jupyter raw http", raw),
        ("native raw http", native_raw),
    ):
        for op, s in block.items():
            print(f"  {label:<20} {op:<12} {s['p50']:7.2f} / {s['p95']:7.2f}")
    if args.json:
        args.json.write_text(json.dumps(results, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(asyncio.run(main()))
