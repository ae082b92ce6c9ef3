"""Benchmark: our tools/list against the most used peer's, datalayer's jupyter-mcp-server 2.2.4.

Both run as Jupyter server extensions in subprocesses on 127.0.0.1, token on, throwaway config/data/runtime
dirs and the same root contents (two notebooks, a Markdown file). The peer needs its own environment (its
own pins of mcp, jupyter-collaboration, jupyterlab, ...): a venv made once with ``sys.executable -m venv`` at
``--peer-venv`` and ``pip install jupyter-mcp-server==2.2.4`` (its dependencies bring jupyter-collaboration,
which it requires, and jupyterlab, which that requires); later runs reuse it.

The peer as an extension (``jupyter_mcp_server.jupyter_extension``, enabled on install by its
``jupyter_server_config.d`` file) answers MCP at ``{base_url}mcp``: one JSON-RPC message per POST, a JSON
body, no session id. Its ``JupyterMCPServerExtensionApp.allowed_jupyter_mcp_tools`` (default
``notebook_run-all-cells,notebook_get-selected-cell``) names the JupyterLab commands that
jupyter-mcp-tools adds to its own tools; while it is non-empty (and ``jupyterlab`` mode is on, the
default), every tools/list asks jupyter-mcp-tools for them first. Set empty, that query is skipped and
only its own tools are listed: its fastest tools/list. (Without its ``jupyterlab`` extra, jupyter-mcp-tools
is not installed and the query fails on its import, each time; with it and no JupyterLab page open, the
query waits up to ``jupyter_mcp_tools_timeout`` = 5 s, each time, since an empty answer is not cached.)

Its other cost is logging: its MCPServer (mcp's default ``log_level`` INFO) puts a rich ``RichHandler`` on
the root logger, and its handler logs several INFO lines per request, which rich renders as tables (over
80% of its tools/list under py-spy). No setting of its own turns that off; Jupyter's
``ServerApp.logging_config`` (loggers ``jupyter_mcp_server`` and ``mcp`` at WARNING) does, so that
configuration is measured too: with ``allowed_jupyter_mcp_tools`` empty, it is the peer's fastest.

Measured over raw HTTP (initialize, notifications/initialized, then JSON-RPC POSTs; SSE or JSON answers),
all servers taking turns call by call after a warm-up so that drift hits them alike:

- tools/list: p50/p95/mean ms, the number of tools, the result's bytes as compact JSON and the HTTP body's
  bytes as sent; for ours by default and with one tool group (``--tool-group``, like for like: the peer's
  tools are notebook and execution tools), the peer by default, with ``allowed_jupyter_mcp_tools`` empty,
  and with that and its INFO logging off;
- on every server, a cheap call that lists the root (our ``list_notebooks``, the peer's ``list_files``) and
  the floor, an MCP ``ping`` (the peer answers it "method not found", which still times its handler);
- verdicts: each of our configurations against the peer's fastest tools/list p50, and against its fastest
  by its own settings.

    python benchmarks/bench_peer.py [--iterations 200] [--warmup 20] [--peer-venv /tmp/jnmcp-peer-venv]
        [--tool-group notebook] [--json out.json]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.jupyter_process import JupyterProcess, RawSession  # noqa: E402

PEER_REQUIREMENT = "jupyter-mcp-server==2.2.4"
PEER_VERSION = "2.2.4"
PEER_APP = "JupyterMCPServerExtensionApp"
OURS_ARGS = ("--ServerApp.base_url=/", "--JupyterPairMCP.enable_test_fixtures=False")
PEER_ARGS = ("--ServerApp.base_url=/",)
PEER_FASTEST = (f"--{PEER_APP}.allowed_jupyter_mcp_tools=",)
PEER_BY_SETTINGS = "peer allowed tools empty"  # the configuration above: its fastest by its own settings
# The peer's MCPServer (mcp's default log_level INFO) puts a rich.logging.RichHandler on the root logger, and
# its handler logs several INFO lines per request: rendering them is most of its tools/list. It has no setting
# for that; Jupyter's own logging_config quiets its loggers, the one other way to make it faster.
PEER_QUIET = {
    "ServerApp": {
        "logging_config": {"loggers": {"jupyter_mcp_server": {"level": "WARNING"}, "mcp": {"level": "WARNING"}}}
    }
}
CHEAP: dict[str, tuple[str, dict[str, Any]]] = {"ours": ("list_notebooks", {}), "peer": ("list_files", {})}
CHECK = (
    "import importlib.metadata as m, jupyter_mcp_server, jupyter_collaboration, jupyterlab;"
    "print(m.version('jupyter-mcp-server'), m.version('mcp'), m.version('jupyter-collaboration'),"
    " m.version('jupyterlab'), m.version('jupyter-server'))"
)

NOTEBOOK = {
    "cells": [
        {"cell_type": "markdown", "id": "intro", "metadata": {}, "source": "# Analysis\n\nA short notebook."},
        {"cell_type": "code", "id": "load", "metadata": {}, "execution_count": None, "outputs": [],
         "source": "values = [1, 2, 3]\nsum(values)"},
        {"cell_type": "code", "id": "plot", "metadata": {}, "execution_count": None, "outputs": [],
         "source": "print(max(values))"},
    ],
    "metadata": {"kernelspec": {"display_name": "Python 3", "language": "python", "name": "python3"}},
    "nbformat": 4,
    "nbformat_minor": 5,
}  # fmt: skip


class PeerUnavailable(RuntimeError):
    """The peer's environment could not be made or does not work."""


class BenchError(RuntimeError):
    """A server did not serve what the benchmark needs: a message and the end of that server's log."""


# -- the peer's environment ----------------------------------------------------------------------------
def _run(args: list[str], timeout: float) -> subprocess.CompletedProcess[str]:
    return subprocess.run(args, capture_output=True, text=True, timeout=timeout, check=False)


def peer_versions(python: Path) -> dict[str, str] | None:
    """Versions in the peer venv (None if it lacks the pinned peer or cannot import it)."""
    if not python.exists():
        return None
    try:
        done = _run([str(python), "-c", CHECK], timeout=120)
    except subprocess.TimeoutExpired:
        return None
    parts = done.stdout.split()
    if done.returncode != 0 or len(parts) != 5 or parts[0] != PEER_VERSION:
        return None
    return dict(
        zip(("jupyter-mcp-server", "mcp", "jupyter-collaboration", "jupyterlab", "jupyter-server"), parts, strict=True)
    )


def ensure_peer_venv(venv: Path, install_timeout: float) -> tuple[Path, dict[str, str]]:
    """The peer venv's python and its versions; made (or remade, if it is a broken venv) when needed."""
    python = venv / "bin" / "python"
    versions = peer_versions(python)
    if versions is not None:
        return python, versions
    if venv.exists() and any(venv.iterdir()) and not (venv / "pyvenv.cfg").exists():
        raise PeerUnavailable(f"{venv} exists and is not a venv; pass another --peer-venv")
    print(f"making the peer venv at {venv} ({PEER_REQUIREMENT}) ...", file=sys.stderr, flush=True)
    steps = (
        [sys.executable, "-m", "venv", "--clear", str(venv)],
        [str(python), "-m", "pip", "install", "--quiet", "--disable-pip-version-check", PEER_REQUIREMENT],
    )
    for step in steps:
        try:
            done = _run(step, timeout=install_timeout)
        except subprocess.TimeoutExpired:
            raise PeerUnavailable(f"{' '.join(step[:4])} ... took over {install_timeout:.0f} s") from None
        if done.returncode != 0:
            tail = "\n".join((done.stdout + done.stderr).strip().splitlines()[-15:])
            raise PeerUnavailable(f"{' '.join(step[:4])} ... failed (exit {done.returncode}):\n{tail}")
    versions = peer_versions(python)
    if versions is None:
        raise PeerUnavailable(f"{PEER_REQUIREMENT} installed in {venv} but does not import (see pip's output)")
    return python, versions


# -- servers -------------------------------------------------------------------------------------------
def populate(root: Path) -> None:
    """The same root on every server; notebook.ipynb is also the peer's default document_id."""
    (root / "notebook.ipynb").write_text(json.dumps(NOTEBOOK))
    (root / "analysis.ipynb").write_text(json.dumps(NOTEBOOK))
    (root / "notes.md").write_text("# Notes\n\nA markdown file for the benchmark.\n")


@contextlib.contextmanager
def servers(specs: dict[str, JupyterProcess]) -> Iterator[dict[str, JupyterProcess]]:
    """Start every server (populated); all stopped and removed however the block or a start ends."""
    try:
        for label, server in specs.items():
            populate(server.root)
            print(f"starting {label} ...", file=sys.stderr, flush=True)
            server.__enter__()
        yield specs
    finally:
        for server in specs.values():
            if hasattr(server, "_log"):  # started (or tried to): stop it; twice is harmless
                with contextlib.suppress(Exception):
                    server.__exit__(None, None, None)
            else:  # never started: only its temp dir (made by __init__) is there
                shutil.rmtree(server._tmp, ignore_errors=True)


# -- the wire ------------------------------------------------------------------------------------------
def _http(token: str) -> Any:
    try:
        import httpx2 as httpx
    except ImportError:  # pragma: no cover - the dev environment has httpx2
        import httpx  # type: ignore[no-redef]
    return httpx.AsyncClient(headers={"Authorization": f"token {token}"}, timeout=30, trust_env=False)


class Session(RawSession):
    """A raw MCP session that also takes a server with no session id and another protocol version."""

    async def open(self) -> None:
        params = {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "bench", "version": "0"}}
        response = await self.http.post(self.url, json=self._rpc("initialize", params), headers=self.headers)
        message = self._parse(response, self.next_id)
        if "result" not in message:
            raise RuntimeError(f"initialize failed: {message}")
        self.headers = {**self.headers, "mcp-protocol-version": message["result"]["protocolVersion"]}
        if "mcp-session-id" in response.headers:
            self.headers["mcp-session-id"] = response.headers["mcp-session-id"]
        note = {"jsonrpc": "2.0", "method": "notifications/initialized"}
        (await self.http.post(self.url, json=note, headers=self.headers)).raise_for_status()

    @staticmethod
    def _parse(response: Any, request_id: int) -> dict[str, Any]:
        response.raise_for_status()
        if response.headers.get("content-type", "").startswith("application/json"):
            return dict(response.json())
        for line in response.text.splitlines():
            if line.startswith("data:") and len(line) > 6:
                message = json.loads(line[5:])
                if message.get("id") == request_id:
                    return dict(message)
        raise RuntimeError(f"no response in {response.text[:200]}")

    async def timed(self, method: str, params: Any, answered: bool = True) -> tuple[float, dict[str, Any], int]:
        """Milliseconds of one request (send to parsed answer), the answer, the HTTP body's bytes.

        ``answered``: a JSON-RPC error is a failure (else it is a measured answer too: the peer refuses
        ``ping``, which still times the floor of its handler).
        """
        body = self._rpc(method, params)
        started = time.perf_counter()
        response = await self.http.post(self.url, json=body, headers=self.headers)
        message = self._parse(response, body["id"])
        elapsed = (time.perf_counter() - started) * 1000
        if answered and ("error" in message or message["result"].get("isError")):
            raise RuntimeError(f"{method} failed: {json.dumps(message)[:300]}")
        return elapsed, message, len(response.content)


# -- measuring -----------------------------------------------------------------------------------------
def stats(samples: list[float]) -> dict[str, float]:
    ordered = sorted(samples)
    return {
        "p50": statistics.median(ordered),
        "p95": ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))],
        "mean": statistics.fmean(ordered),
        "min": ordered[0],
        "n": len(ordered),
    }


async def alternate(calls: dict[str, Any], iterations: int, warmup: int) -> dict[str, list[float]]:
    """Each call once per round, the order rotated every round; ``warmup`` rounds are not kept."""
    labels = list(calls)
    samples: dict[str, list[float]] = {label: [] for label in labels}
    for round_ in range(warmup + iterations):
        shift = round_ % len(labels)
        for label in labels[shift:] + labels[:shift]:
            elapsed = await calls[label]()
            if round_ >= warmup:
                samples[label].append(elapsed)
    return samples


async def measure(targets: dict[str, tuple[JupyterProcess, str]], args: argparse.Namespace) -> dict[str, Any]:
    """tools/list on every target and, per server kind, the cheap call; alternating call by call."""
    out: dict[str, Any] = {"tools_list": {}, "calls": {}}
    async with contextlib.AsyncExitStack() as stack:
        sessions: dict[str, Session] = {}
        for label, (server, _kind) in targets.items():
            http = await stack.enter_async_context(_http(server.token))
            sessions[label] = Session(http, f"{server.url}/mcp")
            try:
                await sessions[label].open()
            except Exception as error:
                log = server.log_text.strip().splitlines()[-8:]
                raise BenchError(
                    f"{label}: no MCP session at {server.url}/mcp ({error!r}); its log ends:", log
                ) from None

        for label, session in sessions.items():
            _, message, body = await session.timed("tools/list", {})
            result = message["result"]
            out["tools_list"][label] = {
                "tools": len(result["tools"]),
                "names": sorted(t["name"] for t in result["tools"]),
                "result_bytes": len(json.dumps(result, separators=(",", ":"), ensure_ascii=False).encode()),
                "body_bytes": body,
            }

        def call(session: Session, method: str, params: Any, answered: bool = True) -> Any:
            async def once() -> float:
                return (await session.timed(method, params, answered))[0]

            return once

        listing = {label: call(s, "tools/list", {}) for label, s in sessions.items()}
        samples = await asyncio.wait_for(alternate(listing, args.iterations, args.warmup), args.time_limit)
        for label, values in samples.items():
            out["tools_list"][label].update(stats(values))

        calls = {}
        for label, (_server, kind) in targets.items():
            name, arguments = CHEAP[kind]
            params = {"name": name, "arguments": arguments}
            _, _message, body = await sessions[label].timed("tools/call", params)
            out["calls"][f"{label}: {name}"] = {"body_bytes": body}
            calls[f"{label}: {name}"] = call(sessions[label], "tools/call", params)
            _, message, body = await sessions[label].timed("ping", {}, answered=False)
            floor = "ping" if "result" in message else "ping (refused)"
            out["calls"][f"{label}: {floor}"] = {"body_bytes": body}
            calls[f"{label}: {floor}"] = call(sessions[label], "ping", {}, answered=False)
        samples = await asyncio.wait_for(alternate(calls, args.iterations, args.warmup), args.time_limit)
        for label, values in samples.items():
            out["calls"][label].update(stats(values))
    return out


# -- reporting -----------------------------------------------------------------------------------------
def verdicts(results: dict[str, Any]) -> list[str]:
    """Each of our configurations against the peer's fastest tools/list, and against its fastest by settings."""
    listing = results["tools_list"]
    peers = {label: row["p50"] for label, row in listing.items() if label.startswith("peer")}
    fastest = min(peers, key=peers.__getitem__)
    against = [fastest] + ([PEER_BY_SETTINGS] if fastest != PEER_BY_SETTINGS and PEER_BY_SETTINGS in peers else [])
    lines = []
    for peer in against:
        role = "the peer's fastest" if peer == fastest else "the peer's fastest by its own settings"
        for ours in (label for label in listing if label.startswith("ours")):
            mine, theirs = listing[ours]["p50"], peers[peer]
            ok = mine <= theirs
            lines.append(
                f"{'PASS' if ok else 'MISS'}: {ours} tools/list p50 {mine:.2f} ms {'<=' if ok else '>'} "
                f"{peer} ({role}) {theirs:.2f} ms ({mine / theirs:.2f}x)"
            )
    return lines


def report(results: dict[str, Any]) -> None:
    print(f"\npeer {results['peer']['versions']}; ours {results['ours_version']}; {results['iterations']} rounds")
    header = f"{'tools/list':<26}{'tools':>6}{'result B':>10}{'body B':>9}{'p50 ms':>9}{'p95 ms':>9}{'mean ms':>9}"
    print(header)
    for label, row in results["tools_list"].items():
        print(
            f"{label:<26}{row['tools']:>6}{row['result_bytes']:>10}{row['body_bytes']:>9}"
            f"{row['p50']:>9.2f}{row['p95']:>9.2f}{row['mean']:>9.2f}"
        )
    print(f"\n{'call':<48}{'body B':>9}{'p50 ms':>9}{'p95 ms':>9}{'mean ms':>9}")
    for label, row in results["calls"].items():
        print(f"{label:<48}{row['body_bytes']:>9}{row['p50']:>9.2f}{row['p95']:>9.2f}{row['mean']:>9.2f}")
    print()
    for line in results["verdicts"]:
        print(line)


def configs(tool_group: str) -> dict[str, tuple[str, list[str], dict[str, Any] | None]]:
    """Label -> (server kind, command-line arguments, jupyter_server_config.json or None)."""
    return {
        "ours default": ("ours", [*OURS_ARGS], None),
        f"ours {tool_group} only": ("ours", [*OURS_ARGS, f"--JupyterPairMCP.tool_groups={tool_group}"], None),
        "peer default": ("peer", [*PEER_ARGS], None),
        "peer allowed tools empty": ("peer", [*PEER_ARGS, *PEER_FASTEST], None),
        "peer allowed empty, quiet": ("peer", [*PEER_ARGS, *PEER_FASTEST], PEER_QUIET),
    }


async def run(args: argparse.Namespace) -> dict[str, Any]:
    python, versions = ensure_peer_venv(args.peer_venv, args.install_timeout)
    from jupyter_pair_mcp import __version__

    timeout = args.startup_timeout
    specs: dict[str, tuple[JupyterProcess, str]] = {}
    for label, (kind, argv, config) in configs(args.tool_group).items():
        if kind == "ours":
            specs[label] = (JupyterProcess(*argv, startup_timeout=timeout), kind)
        else:
            specs[label] = (JupyterProcess(*argv, python=python, config=config, startup_timeout=timeout), kind)
    with servers({label: server for label, (server, _) in specs.items()}) as running:
        pids = {label: server.pid for label, server in running.items()}
        figures = await measure(specs, args)
    return {
        "peer": {"requirement": PEER_REQUIREMENT, "versions": versions, "venv": str(args.peer_venv)},
        "ours_version": __version__,
        "configs": {
            label: {"args": argv, "config": config} for label, (_, argv, config) in configs(args.tool_group).items()
        },
        "iterations": args.iterations,
        "warmup": args.warmup,
        "python": platform.python_version(),
        "machine": f"{platform.machine()}, {os.cpu_count()} CPUs",
        "pids": pids,
        **figures,
        "verdicts": verdicts(figures),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--iterations", type=int, default=200, help="measured rounds per figure (default 200)")
    parser.add_argument("--warmup", type=int, default=20, help="rounds before measuring (default 20)")
    parser.add_argument("--peer-venv", type=Path, default=Path("/tmp/jnmcp-peer-venv"), help="peer venv (cached)")
    parser.add_argument("--tool-group", default="notebook", help="our one group for like for like (notebook)")
    parser.add_argument("--install-timeout", type=float, default=1200.0, help="seconds per venv/pip step")
    parser.add_argument("--startup-timeout", type=float, default=120.0, help="seconds for each server to start")
    parser.add_argument("--time-limit", type=float, default=600.0, help="seconds allowed per measured phase")
    parser.add_argument("--json", type=Path, help="also write every figure here")
    args = parser.parse_args()
    started = time.perf_counter()
    try:
        results = asyncio.run(run(args))
    except PeerUnavailable as error:
        print(f"the peer cannot be installed or run: {error}", file=sys.stderr)
        return 2
    except BenchError as error:
        message, log = error.args
        print(message, *log, sep="\n  ", file=sys.stderr)
        return 1
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
