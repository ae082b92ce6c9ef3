"""mcp-remote (npm) reaches "Connected" through MCP authorization, with no token copied (issue 32).

``npx mcp-remote <url>`` is what Claude Desktop and other stdio-only clients run to reach an HTTP server. Here
the Python SDK's stdio client runs it (pinned in conformance/package.json, on the Node 22 pinned there) against
a real Jupyter server with a non-root ``base_url``: mcp-remote gets the 401, discovers Jupyter as the
authorization server, registers, and opens its browser on the authorization URL. Its browser is
tests/consent_browser.py (``BROWSER``, which the ``xdg-open`` that mcp-remote's ``open`` package runs uses when
there is no desktop): it logs in to Jupyter with the token, approves on the consent page with its ``_xsrf``, and
follows the redirect to mcp-remote's loopback callback. mcp-remote then exchanges the code and proxies the
calls. Its home and token store (``~/.mcp-auth``) are the test's temporary directory.
"""

from __future__ import annotations

import os
import socket
import sys
from pathlib import Path
from typing import Any

import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters, stdio_client

from .conftest import call_tool, within

ROOT = Path(__file__).resolve().parents[1]
NODE_BIN = ROOT / "conformance" / "node_modules" / ".bin"
MCP_REMOTE = ROOT / "conformance" / "node_modules" / "mcp-remote" / "dist" / "proxy.js"
BROWSER_SCRIPT = Path(__file__).with_name("consent_browser.py")
MISSING = "mcp-remote is not installed: run 'npm ci --prefix conformance'"

# Node's start, npm's module loading and the OAuth round trips take seconds on a busy machine.
pytestmark = pytest.mark.timeout(300)


@pytest.fixture
def mcp_config(tmp_path: Any) -> dict[str, Any]:
    return {"grants_only": True, "grants_path": str(tmp_path / "grants" / "pair_mcp_grants.json")}


@pytest.fixture(params=["/", "/jupyter/"])
def jp_base_url(request: pytest.FixtureRequest) -> str:
    """The README's address (``http://localhost:8888/mcp``), and a ``base_url`` as a proxy's or a hub's.

    (Not pytest-jupyter's default, ``/a%40b/``: mcp-remote sanitizes the URL it hands the browser into
    ``/a%2540b/``, a path this server does not have.)"""
    return str(request.param)


@pytest.fixture
def mcp_remote() -> Path:
    if not MCP_REMOTE.exists() or not (NODE_BIN / "node").exists():
        if os.environ.get("REQUIRE_CONFORMANCE"):
            pytest.fail(MISSING)
        pytest.skip(MISSING)
    return MCP_REMOTE


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def browser(tmp_path: Path) -> Path:
    """``BROWSER`` names one executable (Claude Code runs it without a shell): a wrapper of the script."""
    wrapper = tmp_path / "browser"
    wrapper.write_text(f'#!/bin/sh\nexec "{sys.executable}" "{BROWSER_SCRIPT}" "$@"\n')
    wrapper.chmod(0o755)
    return wrapper


async def test_mcp_remote_connects_through_consent(
    mcp_remote: Path, mcp_url: str, token: str, tmp_path: Path, extension: Any, jp_root_dir: Any
) -> None:
    (jp_root_dir / "notes.txt").write_text("hello")
    home = tmp_path / "agent-home"  # not "home": the test server's HOME (pytest-jupyter)
    home.mkdir()
    consent_log = tmp_path / "consent.log"
    env = {
        "PATH": f"{NODE_BIN}{os.pathsep}{os.environ.get('PATH', '')}",
        "HOME": str(home),
        "MCP_REMOTE_CONFIG_DIR": str(home / ".mcp-auth"),
        "BROWSER": str(browser(tmp_path)),
        "JUPYTER_TOKEN": token,  # the person's login, for the consent page only
        "CONSENT_LEVEL": "write",
        "CONSENT_LOG": str(consent_log),
        "DISPLAY": "",
        "WAYLAND_DISPLAY": "",
    }
    server = StdioServerParameters(
        command=str(NODE_BIN / "node"), args=[str(mcp_remote), mcp_url, str(free_port())], env=env, cwd=str(tmp_path)
    )

    async def use() -> None:
        async with Client(stdio_client(server, errlog=errlog), mode="legacy") as client:  # type: ignore[arg-type]
            tools = await client.list_tools()
            assert "document_exists" in {tool.name for tool in tools.tools}
            assert (await call_tool(client, "document_exists", path="notes.txt"))["exists"] is True
            await call_tool(client, "create_document", path="made.txt", content="through mcp-remote")

    with (tmp_path / "mcp-remote.log").open("w") as errlog:
        try:
            await within(use(), 60)  # mcp-remote waits for a sign-in forever: a failed one must not
        except Exception:
            errlog.flush()
            log = (tmp_path / "mcp-remote.log").read_text()[-4000:]
            steps = consent_log.read_text() if consent_log.exists() else "(the browser was never opened)"
            pytest.fail(f"mcp-remote did not connect.\nbrowser steps:\n{steps}\nmcp-remote's log:\n{log}")
    assert (jp_root_dir / "made.txt").read_text() == "through mcp-remote"
    (grant,) = extension.grants.grants.values()
    assert grant.level == "write" and grant.client_name == "MCP CLI Proxy"  # the name mcp-remote registers
    assert token not in (tmp_path / "mcp-remote.log").read_text()
    assert "POST consent -> 302" in consent_log.read_text()
