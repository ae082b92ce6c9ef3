"""Benchmark: the /mcp endpoint through the MCP SDK client, against the same server run natively.

Starts a real Jupyter server with the extension (subprocess, 127.0.0.1, throwaway config/data/runtime
dirs) and, in the same run, the same MCP server natively under uvicorn (benchmarks/native_server.py,
also a subprocess). Measures, with the SDK client after a warm-up:

- initialize: a full client connect + handshake (legacy era), new HTTP client each time;
- tools/list (cache bypassed) and a cheap tool call (document_exists "notes.md"), in both protocol
  eras (legacy 2025-11-25 and modern 2026-07-28), plus the same two over raw HTTP (no SDK client);
- bridge overhead: Jupyter p50 minus native p50 for the same operation, and their ratio. The two
  servers are measured taking turns call by call so that drift on a noisy machine hits both alike;
- server start: spawn until GET /api/status answers, extension enabled vs disabled (median of N);
- idle memory: VmRSS after start + one MCP session + 1 s settle, enabled vs disabled (median of N);
- the floor: the cheap call against an MCP ``ping`` on the same session (SDK and raw HTTP), and against the
  native twin (targets: <= 1.6x ping, <= 1.3x native);
- tools/list size: bytes of the result as sent (compact JSON) and estimated tokens (bytes / 4), by
  default and with ``--JupyterPairMCP.output_schemas=True``;
- first call of a fresh client: a new Python process imports the SDK, connects and calls one tool
  (list_notebooks, get_notebook, document_exists) once; the time from connect-complete to the result,
  median of N processes, by default and with output schemas listed (the SDK client then builds a
  jsonschema validator on the first call of each tool).

    python benchmarks/bench_endpoint.py [--iterations 200] [--init-iterations 30] [--starts 3]
        [--fresh-clients 3] [--json out.json]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import functools
import json
import os
import platform
import signal
import statistics
import subprocess
import sys
import time
import urllib.error
import urllib.request
import warnings
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.jupyter_process import JupyterProcess, RawSession, free_port, rss_mb  # noqa: E402

MODES = ("legacy", "2026-07-28")
ERA = {"legacy": "legacy 2025-11-25", "2026-07-28": "modern 2026-07-28"}
JUPYTER_ARGS = ("--ServerApp.base_url=/", "--JupyterPairMCP.enable_test_fixtures=False")
# traitlets' command line takes Dict traits as key=value (a JSON object is read as a list and refused).
DISABLED_ARGS = ("--ServerApp.base_url=/", "--ServerApp.jpserver_extensions=jupyter_pair_mcp=False")
CHEAP = ("document_exists", {"path": "notes.md"})
INITIALIZE = "sdk legacy 2025-11-25 | initialize"
OUTPUT_SCHEMAS_ARGS = ("--JupyterPairMCP.output_schemas=True",)
FIRST_CALLS: tuple[tuple[str, dict[str, Any]], ...] = (
    ("list_notebooks", {}),
    ("get_notebook", {"path": "analysis.ipynb"}),
    ("document_exists", {"path": "notes.md"}),
)
PROBE = "--first-call-probe"  # argv[1] of the fresh client process (see first_call_probe)

TARGETS = {  # figure -> (limit, unit)
    "cheap_call_p50_ms": (3.0, "ms"),
    "tools_list_p50_ms": (10.0, "ms"),
    "bridge_overhead_ms": (0.5, "ms"),
    "start_slowdown_s": (0.7, "s"),
    "idle_memory_added_mb": (50.0, "MB"),
    "tools_list_bytes": (30000.0, "B"),
    "first_call_fresh_ms": (300.0, "ms"),
    "native_ratio": (1.3, "x"),
    "ping_ratio": (1.6, "x"),
}

NOTEBOOK = {
    "cells": [
        {"cell_type": "markdown", "id": "intro", "metadata": {}, "source": "# Bench\n"},
        {
            "cell_type": "code",
            "id": "sum",
            "metadata": {},
            "source": "1 + 1",
            "outputs": [],
            "execution_count": None,
        },
    ],
    "metadata": {"kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"}},
    "nbformat": 4,
    "nbformat_minor": 5,
}

_LOOPBACK = urllib.request.build_opener(urllib.request.ProxyHandler({}))  # never a proxy: 127.0.0.1 only


# -- measuring -------------------------------------------------------------------------------------
def stats(samples: list[float]) -> dict[str, float]:
    ordered = sorted(samples)
    return {
        "p50": statistics.median(ordered),
        "p95": ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))],
        "mean": statistics.fmean(ordered),
        "n": len(ordered),
    }


async def sample(call: Callable[[], Awaitable[Any]], n: int, into: list[float]) -> None:
    for _ in range(n):
        started = time.perf_counter()
        await call()
        into.append((time.perf_counter() - started) * 1000)


def _http(headers: dict[str, str]) -> Any:
    import httpx2

    return httpx2.AsyncClient(headers=headers, timeout=30, trust_env=False)


@contextlib.asynccontextmanager
async def sdk_client(url: str, headers: dict[str, str], mode: str) -> AsyncIterator[Any]:
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client

    async with _http(headers) as http, Client(streamable_http_client(url, http_client=http), mode=mode) as client:
        yield client


async def cheap_call(client: Any) -> None:
    result = await client.call_tool(*CHEAP)
    if result.is_error or not (result.structured_content or {}).get("exists"):
        raise RuntimeError(f"document_exists failed: {result}")


async def ping(client: Any) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the SDK flags ping as legacy-only, which this session is
        await client.send_ping()


async def list_tools(client: Any) -> None:
    result = await client.list_tools(cache_mode="bypass")  # a wire round trip every time
    if not result.tools:
        raise RuntimeError("tools/list returned no tools")


async def connect_once(url: str, headers: dict[str, str]) -> float:
    """Milliseconds for a full legacy connect + handshake (closing the session is not timed)."""
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client

    async with contextlib.AsyncExitStack() as stack:
        started = time.perf_counter()
        http = await stack.enter_async_context(_http(headers))
        client = await stack.enter_async_context(Client(streamable_http_client(url, http_client=http), mode="legacy"))
        elapsed = (time.perf_counter() - started) * 1000
        # The client posts notifications/initialized in the background; closing at once races its
        # DELETE against that POST (the SDK server then logs ClosedResourceError). One untimed round
        # trip lets it land, as it would for any client that goes on to use its session.
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # ping is legacy-only, which this session is
            await client.send_ping()
    return elapsed


async def latency(targets: dict[str, tuple[str, dict[str, str]]], iterations: int, init_iterations: int) -> Any:
    """Samples per target (jupyter/native) for every operation, the targets taking turns."""
    samples: dict[str, dict[str, list[float]]] = {t: {} for t in targets}
    async with contextlib.AsyncExitStack() as stack:
        ops: dict[str, dict[str, Callable[[], Awaitable[Any]]]] = {t: {} for t in targets}
        for target, (url, headers) in targets.items():
            for mode in MODES:
                client = await stack.enter_async_context(sdk_client(url, headers, mode))
                ops[target][f"sdk {ERA[mode]} | cheap call"] = functools.partial(cheap_call, client)
                ops[target][f"sdk {ERA[mode]} | tools/list"] = functools.partial(list_tools, client)
                if mode == "legacy":  # ping is retired in 2026-07-28
                    ops[target][f"sdk {ERA[mode]} | ping"] = functools.partial(ping, client)
            http = await stack.enter_async_context(_http(headers))
            raw = RawSession(http, url)
            await raw.open()
            ops[target]["raw http legacy | cheap call"] = functools.partial(raw.call, CHEAP[0], **CHEAP[1])
            ops[target]["raw http legacy | tools/list"] = functools.partial(raw.request, "tools/list", {})
            ops[target]["raw http legacy | ping"] = functools.partial(raw.request, "ping", {})

        # Warm-up: lazy imports on the client side (the first call_tool costs ~1 s), first-use paths
        # on the servers, and httpx connection pools.
        for target, (url, headers) in targets.items():
            for _ in range(3):
                await connect_once(url, headers)
            for call in ops[target].values():
                for _ in range(10):
                    await call()

        # Jupyter and native take turns call by call (who goes first alternates too), so that drift
        # and background noise on a small machine hit both sides alike.
        names = list(targets)
        for i in range(init_iterations):
            for target in names if i % 2 == 0 else names[::-1]:
                url, headers = targets[target]
                samples[target].setdefault(INITIALIZE, []).append(await connect_once(url, headers))
        # Operations are interleaved too (one of each per round, the order rotating): measured one block after
        # another, drift made a later block look ~1-2 ms slower (a ping measured after the cheap calls seemed to
        # cost more than they did; interleaved, the two cost the same).
        op_names = list(ops[names[0]])
        for i in range(iterations):
            shift = i % len(op_names)
            for name in op_names[shift:] + op_names[:shift]:
                for target in names if i % 2 == 0 else names[::-1]:
                    await sample(ops[target][name], 1, samples[target].setdefault(name, []))
    return {target: {name: stats(s) for name, s in ops_.items()} for target, ops_ in samples.items()}


# -- a fresh client's first call, and the size of tools/list ------------------------------------
def first_call_probe(url: str, token: str, name: str, arguments: str) -> None:
    """Run in a new process: import the SDK, connect (legacy), call ``name`` once; print the times as JSON."""
    started = time.perf_counter()
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client

    imported = time.perf_counter()

    async def probe() -> dict[str, float]:
        async with _http({"Authorization": f"Bearer {token}"}) as http:
            begin = time.perf_counter()
            async with Client(streamable_http_client(url, http_client=http), mode="legacy") as client:
                connected = time.perf_counter()
                result = await client.call_tool(name, json.loads(arguments))
                done = time.perf_counter()
                if result.is_error or result.structured_content is None:
                    raise RuntimeError(f"{name} failed or returned no structured content: {result}")
        return {
            "import_ms": (imported - started) * 1000,
            "connect_ms": (connected - begin) * 1000,
            "first_call_ms": (done - connected) * 1000,
        }

    print(json.dumps(asyncio.run(probe())))


def fresh_first_calls(url: str, token: str, processes: int) -> dict[str, dict[str, Any]]:
    """Per tool, the median over ``processes`` fresh client processes of connect-complete to first result."""
    out: dict[str, dict[str, Any]] = {}
    for name, arguments in FIRST_CALLS:
        runs = []
        for _ in range(processes):
            command = [sys.executable, __file__, PROBE, url, token, name, json.dumps(arguments)]
            done = subprocess.run(command, capture_output=True, text=True, timeout=120, check=False)
            if done.returncode != 0:
                raise RuntimeError(f"first-call probe of {name} failed:\n{done.stderr[-2000:]}")
            runs.append(json.loads(done.stdout.strip().splitlines()[-1]))
        out[name] = {
            key: statistics.median(run[key] for run in runs) for key in ("first_call_ms", "import_ms", "connect_ms")
        }
        out[name]["samples"] = [run["first_call_ms"] for run in runs]
    return out


async def tools_list_size(url: str, token: str) -> dict[str, Any]:
    """Bytes of the tools/list result as sent (compact JSON), an estimate of its tokens, and what it holds."""
    async with _http({"Authorization": f"Bearer {token}"}) as http:
        raw = RawSession(http, url)
        await raw.open()
        result = (await raw.request("tools/list", {}))["result"]
    size = len(json.dumps(result, separators=(",", ":"), ensure_ascii=False).encode())
    tools = result["tools"]
    output = sum(len(json.dumps(t["outputSchema"], separators=(",", ":"))) for t in tools if "outputSchema" in t)
    return {"tools": len(tools), "bytes": size, "tokens_est": size // 4, "output_schema_bytes": output}


async def lean_listing(processes: int) -> dict[str, Any]:
    """tools/list size and fresh clients' first calls, by default and with output schemas listed."""
    out: dict[str, Any] = {}
    for variant, extra in (("default", ()), ("output_schemas", OUTPUT_SCHEMAS_ARGS)):
        with jupyter_server(*JUPYTER_ARGS, *extra) as server:
            url = f"{server.url}/mcp"
            out[variant] = {
                "tools_list": await tools_list_size(url, server.token),
                "first_call": await asyncio.to_thread(fresh_first_calls, url, server.token, processes),
            }
    return out


# -- servers -----------------------------------------------------------------------------------
def populate(root: Path) -> None:
    (root / "notes.md").write_text("# Notes\n\nA markdown file for the benchmark.\n")
    (root / "analysis.ipynb").write_text(json.dumps(NOTEBOOK))
    (root / "data" / "raw").mkdir(parents=True)
    (root / "data" / "readme.txt").write_text("data\n")
    (root / "data" / "raw" / "values.csv").write_text("a,b\n1,2\n")


@contextlib.contextmanager
def jupyter_server(*args: str) -> Iterator[JupyterProcess]:
    """A populated Jupyter server; stopped and removed however the block (or its start) ends."""
    server = JupyterProcess(*args)
    populate(server.root)
    try:
        server.__enter__()
        yield server
    finally:
        # Also when the start fails or is interrupted: JupyterProcess.__enter__ then leaves the
        # process or its temp dir behind. Calling __exit__ twice is harmless.
        with contextlib.suppress(AttributeError):  # the start failed before its log was opened
            server.__exit__(None, None, None)


def post_mcp_status(url: str, token: str) -> int:
    request = urllib.request.Request(
        f"{url}/mcp", data=b"{}", method="POST", headers={"Content-Type": "application/json"}
    )
    request.add_header("Authorization", f"Bearer {token}")
    try:
        with _LOOPBACK.open(request, timeout=10) as response:
            return int(response.status)
    except urllib.error.HTTPError as exc:
        return exc.code


@contextlib.contextmanager
def native_server(root: Path) -> Any:
    """The same MCP server under uvicorn in a subprocess; yields its /mcp URL."""
    port = free_port()
    process = subprocess.Popen([sys.executable, str(ROOT / "benchmarks" / "native_server.py"), str(root), str(port)])
    try:
        deadline = time.monotonic() + 30
        while True:
            if process.poll() is not None:
                raise RuntimeError(f"native server exited early ({process.returncode})")
            if time.monotonic() > deadline:
                raise RuntimeError("native server did not start in 30 s")
            try:
                _LOOPBACK.open(f"http://127.0.0.1:{port}/mcp", timeout=1)
                break
            except urllib.error.HTTPError:
                break  # it answers (a GET without a session is refused): it is up
            except OSError:
                time.sleep(0.05)
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        if process.poll() is None:
            process.terminate()
            try:
                process.wait(10)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(5)


async def start_and_memory(starts: int) -> dict[str, Any]:
    """Start cost and idle RSS with the extension enabled and disabled, starts interleaved."""
    out: dict[str, dict[str, list[float]]] = {
        "enabled": {"start_s": [], "rss_mb": [], "first_session_ms": []},
        "disabled": {"start_s": [], "rss_mb": []},
    }
    for i in range(starts):
        order = ("enabled", "disabled") if i % 2 == 0 else ("disabled", "enabled")
        for variant in order:
            enabled = variant == "enabled"
            with jupyter_server(*(JUPYTER_ARGS if enabled else DISABLED_ARGS)) as server:
                out[variant]["start_s"].append(server.started_in)
                status = post_mcp_status(server.url, server.token)
                if (status == 404) == enabled:
                    raise RuntimeError(f"extension {variant} but POST /mcp answered {status}")
                if enabled:
                    started = time.perf_counter()
                    async with sdk_client(
                        f"{server.url}/mcp", {"Authorization": f"Bearer {server.token}"}, "legacy"
                    ) as client:
                        await list_tools(client)
                        await cheap_call(client)
                    out[variant]["first_session_ms"].append((time.perf_counter() - started) * 1000)
                await asyncio.sleep(1.0)
                out[variant]["rss_mb"].append(rss_mb(server.pid))
    return {v: {k: {"median": statistics.median(s), "samples": s} for k, s in d.items()} for v, d in out.items()}


# -- report ------------------------------------------------------------------------------------
def mark(name: str, value: float) -> str:
    limit, unit = TARGETS[name]
    return f"<= {limit:g} {unit:<3} {'PASS' if value <= limit else 'MISS'}"


def report(results: dict[str, Any]) -> None:
    jupyter, native = results["latency"]["jupyter"], results["latency"]["native"]
    print(f"\nLatency through the endpoint (ms; n per row in the last column; {results['machine']})")
    print(f"{'operation':<44}{'server':<9}{'p50':>8}{'p95':>8}{'mean':>8}{'n':>6}")
    for name in jupyter:
        for label, block in (("jupyter", jupyter), ("native", native)):
            s = block[name]
            print(f"{name:<44}{label:<9}{s['p50']:>8.2f}{s['p95']:>8.2f}{s['mean']:>8.2f}{s['n']:>6}")

    print("\nBridge overhead: Jupyter (auth + handler + Tornado->ASGI bridge) minus native uvicorn, p50")
    print(f"{'operation':<44}{'jupyter':>9}{'native':>9}{'diff ms':>9}{'ratio':>7}")
    for name, row in results["bridge"].items():
        print(f"{name:<44}{row['jupyter']:>9.2f}{row['native']:>9.2f}{row['diff_ms']:>9.2f}{row['ratio']:>7.2f}")

    sm = results["start_memory"]
    print(f"\nServer start and idle memory (median of {len(sm['enabled']['start_s']['samples'])} starts each)")
    print(f"{'':<36}{'enabled':>10}{'disabled':>10}{'diff':>10}")
    print(
        f"{'start to /api/status (s)':<36}{sm['enabled']['start_s']['median']:>10.2f}"
        f"{sm['disabled']['start_s']['median']:>10.2f}{results['figures']['start_slowdown_s']:>10.2f}"
    )
    print(
        f"{'idle RSS after 1 session (MB)':<36}{sm['enabled']['rss_mb']['median']:>10.1f}"
        f"{sm['disabled']['rss_mb']['median']:>10.1f}{results['figures']['idle_memory_added_mb']:>10.1f}"
    )
    print(f"{'first session after start (ms)':<36}{sm['enabled']['first_session_ms']['median']:>10.1f}")

    lean = results["lean"]
    print("\ntools/list and a fresh client's first call (new process: import, connect, one call; medians)")
    print(f"{'':<36}{'default':>16}{'output schemas':>16}")
    for label, key in (("tools/list bytes", "bytes"), ("tokens (bytes / 4)", "tokens_est")):
        row = "".join(f"{lean[v]['tools_list'][key]:>16,}" for v in ("default", "output_schemas"))
        print(f"{label:<36}{row}")
    for name, _ in FIRST_CALLS:
        row = "".join(f"{lean[v]['first_call'][name]['first_call_ms']:>16.1f}" for v in ("default", "output_schemas"))
        print(f"{'first ' + name + ' (ms)':<36}{row}")
    imports = statistics.median(lean["default"]["first_call"][n]["import_ms"] for n, _ in FIRST_CALLS)
    print(f"{'(SDK import, not in the above; ms)':<36}{imports:>16.1f}")

    print("\nTargets")
    for name, value in results["figures"].items():
        if name in TARGETS:
            print(f"  {name:<28}{value:>9.3f}   {mark(name, value)}   ({results['figure_sources'][name]})")


async def run(args: argparse.Namespace) -> dict[str, Any]:
    results: dict[str, Any] = {
        "machine": f"{platform.machine()}, {os.cpu_count()} cpus, Python {platform.python_version()}",
        "iterations": args.iterations,
        "init_iterations": args.init_iterations,
    }
    # SIGTERM ends the run like Ctrl-C does: cancelled, so every server is stopped on the way out.
    task = asyncio.current_task()
    assert task is not None
    asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, task.cancel)
    with jupyter_server(*JUPYTER_ARGS) as server:
        if post_mcp_status(server.url, server.token) == 404:
            raise RuntimeError("the extension is not enabled: POST /mcp answered 404")
        with native_server(server.root) as native_url:
            targets = {
                "jupyter": (f"{server.url}/mcp", {"Authorization": f"Bearer {server.token}"}),
                "native": (native_url, {}),
            }
            async with asyncio.timeout(args.time_limit):
                results["latency"] = await latency(targets, args.iterations, args.init_iterations)
    async with asyncio.timeout(args.time_limit):
        results["start_memory"] = await start_and_memory(args.starts)
    async with asyncio.timeout(args.time_limit):
        results["lean"] = await lean_listing(args.fresh_clients)

    jupyter, native = results["latency"]["jupyter"], results["latency"]["native"]
    results["bridge"] = {
        name: {
            "jupyter": jupyter[name]["p50"],
            "native": native[name]["p50"],
            "diff_ms": jupyter[name]["p50"] - native[name]["p50"],
            "ratio": jupyter[name]["p50"] / native[name]["p50"],
        }
        for name in jupyter
    }
    sm = results["start_memory"]
    cheap, listing = "sdk legacy 2025-11-25 | cheap call", "sdk legacy 2025-11-25 | tools/list"
    modern_cheap, modern_list = "sdk modern 2026-07-28 | cheap call", "sdk modern 2026-07-28 | tools/list"
    results["figures"] = {
        "cheap_call_p50_ms": jupyter[cheap]["p50"],
        "cheap_call_modern_p50_ms": jupyter[modern_cheap]["p50"],
        "tools_list_p50_ms": jupyter[listing]["p50"],
        "tools_list_modern_p50_ms": jupyter[modern_list]["p50"],
        "initialize_p50_ms": jupyter[INITIALIZE]["p50"],
        "bridge_overhead_ms": results["bridge"][cheap]["diff_ms"],
        "bridge_ratio": results["bridge"][cheap]["ratio"],
        "bridge_overhead_raw_http_ms": results["bridge"]["raw http legacy | cheap call"]["diff_ms"],
        "native_ratio": results["bridge"][cheap]["ratio"],
        "ping_ratio": jupyter[cheap]["p50"] / jupyter["sdk legacy 2025-11-25 | ping"]["p50"],
        "ping_ratio_raw_http": jupyter["raw http legacy | cheap call"]["p50"]
        / jupyter["raw http legacy | ping"]["p50"],
        "start_slowdown_s": sm["enabled"]["start_s"]["median"] - sm["disabled"]["start_s"]["median"],
        "idle_memory_added_mb": sm["enabled"]["rss_mb"]["median"] - sm["disabled"]["rss_mb"]["median"],
        "tools_list_bytes": results["lean"]["default"]["tools_list"]["bytes"],
        "tools_list_tokens_est": results["lean"]["default"]["tools_list"]["tokens_est"],
        "first_call_fresh_ms": max(c["first_call_ms"] for c in results["lean"]["default"]["first_call"].values()),
    }
    results["figure_sources"] = {
        "cheap_call_p50_ms": "Jupyter, SDK client, legacy era",
        "tools_list_p50_ms": "Jupyter, SDK client, legacy era",
        "bridge_overhead_ms": "cheap call, SDK legacy, Jupyter p50 - native p50",
        "start_slowdown_s": "median enabled - median disabled",
        "idle_memory_added_mb": "median VmRSS enabled - disabled",
        "tools_list_bytes": "default tools/list result, compact JSON",
        "first_call_fresh_ms": "slowest of the fresh-client first calls, medians",
        "native_ratio": "cheap call, SDK legacy, Jupyter p50 / native uvicorn twin p50",
        "ping_ratio": "cheap call / MCP ping on the same session, SDK legacy, Jupyter p50",
    }
    return results


def main() -> int:
    if len(sys.argv) == 6 and sys.argv[1] == PROBE:
        first_call_probe(*sys.argv[2:])
        return 0
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--iterations", type=int, default=200, help="samples per call figure (default 200)")
    parser.add_argument("--init-iterations", type=int, default=30, help="samples of initialize (default 30)")
    parser.add_argument("--starts", type=int, default=3, help="server starts per variant (default 3)")
    parser.add_argument("--fresh-clients", type=int, default=3, help="fresh client processes per tool (default 3)")
    parser.add_argument("--time-limit", type=float, default=300.0, help="seconds allowed per phase (default 300)")
    parser.add_argument("--json", type=Path, help="also write every figure and sample summary here")
    args = parser.parse_args()
    started = time.perf_counter()
    try:
        results = asyncio.run(run(args))
    except (KeyboardInterrupt, asyncio.CancelledError):
        print("interrupted; servers stopped", file=sys.stderr)
        return 130
    results["wall_s"] = time.perf_counter() - started
    report(results)
    print(f"\nwall time {results['wall_s']:.1f} s")
    if args.json:
        args.json.write_text(json.dumps(results, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
