"""The official MCP conformance suite against a live server with our extension.

The suite (an npm package, pinned in conformance/package.json with the Node 22 it runs on) only
takes a URL, so it talks to the server through a loopback proxy that adds the token header. Known
failures live in conformance/baseline.yml with their reasons; the suite fails on anything else,
and on baseline entries that have started to pass.
"""

from __future__ import annotations

import asyncio
import os
from pathlib import Path
from typing import Any

import pytest

from .auth_proxy import AuthProxy

HERE = Path(__file__).resolve().parents[1] / "conformance"
NODE = HERE / "node_modules" / ".bin" / "node"
CLI = HERE / "node_modules" / "@modelcontextprotocol" / "conformance" / "dist" / "index.js"
BASELINE = HERE / "baseline.yml"

SCENARIOS = [
    "server-initialize",
    "ping",
    "logging-set-level",
    "tools-list",
    "server-session-lifecycle",
    "server-stateless",
    "server-sse-multiple-streams",
    "server-sse-polling",
    "dns-rebinding-protection",
    "http-header-validation",
    "http-custom-header-server-validation",
]


@pytest.fixture
def conformance_cli() -> Path:
    if not CLI.exists() or not NODE.exists():
        if os.environ.get("REQUIRE_CONFORMANCE"):
            pytest.fail("conformance suite not installed: run 'npm ci --prefix conformance'")
        pytest.skip("conformance suite not installed: run 'npm ci --prefix conformance'")
    return CLI


@pytest.mark.parametrize("scenario", SCENARIOS)
async def test_conformance_scenario(
    conformance_cli: Path,
    jp_serverapp: Any,
    server_root: str,
    jp_base_url: str,
    token: str,
    tmp_path: Path,
    scenario: str,
) -> None:
    proxy = AuthProxy(server_root, token)
    try:
        process = await asyncio.create_subprocess_exec(
            str(NODE),
            str(conformance_cli),
            "server",
            "--url",
            proxy.url(f"{jp_base_url}mcp"),
            "--scenario",
            scenario,
            "--expected-failures",
            str(BASELINE),
            "--output-dir",
            str(tmp_path / "results"),
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.STDOUT,
            env={**os.environ, "NO_COLOR": "1"},
        )
        try:
            # under the per-test timeout (120 s), so a hung scenario fails here and its process is ended
            output, _ = await asyncio.wait_for(process.communicate(), 100)
        finally:
            if process.returncode is None:
                process.kill()
                await process.wait()
    finally:
        await proxy.close()
    text = output.decode(errors="replace")
    assert process.returncode == 0, f"conformance {scenario} failed:\n{text[-6000:]}"
