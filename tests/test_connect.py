"""``jupyter pair-mcp connect`` (issue 36, item 1): a stdio MCP client reaches the running server, no token given.

The SDK's stdio client launches the command as an MCP client's configuration would, in a folder under the test
server's root, with the test server's runtime directory (as a ``jupyter lab`` of the person's writes it) and a
temporary Jupyter data directory. The command mints a headless grant with the server's own token, caches it
(mode 0600) and bridges stdio to ``/mcp``: the agent's edit lands and the server lists it as a grant agent; the
next launch reuses the grant, and one revoked is replaced by a new one.
"""

from __future__ import annotations

import asyncio
import json
import os
import stat
import sys
from pathlib import Path
from typing import Any

import httpx2
import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters, stdio_client

from .conftest import TLS, call_tool, notebook_json, within
from .test_grant_cli import SOURCE, runtime  # noqa: F401  (fixture)
from .test_grants import mcp_config  # noqa: F401  (fixture)

pytestmark = pytest.mark.timeout(240)


def launch(runtime_dir: Path, data: Path, cwd: Path, *args: str) -> StdioServerParameters:
    env = {
        **os.environ,
        "JUPYTER_RUNTIME_DIR": str(runtime_dir),
        "JUPYTER_DATA_DIR": str(data),
        "PYTHONPATH": SOURCE,
    }
    env.pop("JUPYTER_TOKEN", None)
    return StdioServerParameters(
        command=sys.executable, args=["-m", "jupyter_pair_mcp.cli", "connect", *args], env=env, cwd=str(cwd)
    )


async def grants(server_root: str, jp_base_url: str, auth: dict[str, str]) -> list[dict[str, Any]]:
    async with httpx2.AsyncClient(timeout=30, verify=TLS) as http:
        answer = await within(http.get(f"{server_root}{jp_base_url}api/mcp/grants", headers=auth))
    assert answer.status_code == 200, answer.text
    return list(answer.json()["grants"])


async def test_a_stdio_client_edits_a_notebook_as_a_grant_agent(
    runtime: Path,  # noqa: F811
    jp_root_dir: Path,
    tmp_path: Path,
    server_root: str,
    jp_base_url: str,
    auth: dict[str, str],
    token: str,
) -> None:
    work = jp_root_dir / "work"
    work.mkdir()
    (work / "nb.ipynb").write_text(notebook_json([{"cell_type": "code", "source": "x = 1"}]))
    data = tmp_path / "agent-data"
    errlog_path = tmp_path / "connect.log"

    async def session(*args: str, mode: str = "legacy", cwd: Path = work) -> None:
        with errlog_path.open("a") as errlog:
            transport = stdio_client(launch(runtime, data, cwd, *args), errlog=errlog)
            async with Client(transport, mode=mode) as client:  # type: ignore[arg-type]
                assert client.protocol_version >= ("2026" if mode == "auto" else "2025"), client.protocol_version
                names = {tool.name for tool in (await within(client.list_tools())).tools}
                assert "batch_insert_notebook_cells" in names
                await call_tool(
                    client,
                    "batch_insert_notebook_cells",
                    path="work/nb.ipynb",
                    exec=False,
                    cells=[{"content": "y = 2"}],
                )

    await within(session("--name", "claude-desktop"), 120)
    (grant,) = await grants(server_root, jp_base_url, auth)
    assert (grant["client_name"], grant["level"], grant["headless"]) == ("claude-desktop", "write", True)
    assert grant["last_used"] > 0  # the calls came with the grant's token, not the server's
    (cached,) = (data / "jupyter_pair_mcp" / "connect").glob("*.json")
    assert stat.S_IMODE(cached.stat().st_mode) == 0o600 and not cached.is_relative_to(jp_root_dir)
    assert json.loads(cached.read_text())["id"] == grant["id"]

    await within(session("--name", "claude-desktop", mode="auto"), 120)  # the next launch: the same grant
    # (and a client that negotiates the 2026-07-28 era over stdio gets it through the bridge too)
    assert [g["id"] for g in await grants(server_root, jp_base_url, auth)] == [grant["id"]]

    async with httpx2.AsyncClient(timeout=30, verify=TLS) as http:
        url = f"{server_root}{jp_base_url}api/mcp/grants/{grant['id']}"
        assert (await within(http.delete(url, headers=auth))).status_code == 200
    await within(session("--name", "claude-desktop"), 120)  # revoked: a new one
    (renewed,) = await grants(server_root, jp_base_url, auth)
    assert renewed["id"] != grant["id"] and renewed["client_name"] == "claude-desktop"

    await within(session("--name", "claude-desktop", cwd=tmp_path), 120)  # started outside the root: the one server
    assert [g["id"] for g in await grants(server_root, jp_base_url, auth)] == [renewed["id"]]

    log = errlog_path.read_text()
    assert token not in log and json.loads(cached.read_text())["token"] not in log


async def test_no_running_server_is_a_clear_error_and_stdout_stays_clean(tmp_path: Path) -> None:
    empty = tmp_path / "runtime"
    empty.mkdir()
    params = launch(empty, tmp_path / "data", tmp_path)
    process = await asyncio.create_subprocess_exec(
        params.command,
        *params.args,
        cwd=params.cwd,
        env=params.env,
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    out, err = await within(process.communicate(b""), 120)
    assert process.returncode == 1 and out == b"", (out, err)
    assert b"no running Jupyter server found" in err


def test_the_bridge_stamps_the_routing_headers_a_client_session_would() -> None:
    from mcp.shared.message import SessionMessage
    from mcp_types import JSONRPCRequest, JSONRPCResponse

    from jupyter_pair_mcp.transport.stdio_bridge import Stamp

    stamp = Stamp()
    initialize = SessionMessage(JSONRPCRequest(jsonrpc="2.0", id=1, method="initialize", params={}))
    assert stamp.outgoing(initialize) is initialize
    stamp.incoming(SessionMessage(JSONRPCResponse(jsonrpc="2.0", id=1, result={"protocolVersion": "2025-11-25"})))
    listed = stamp.outgoing(SessionMessage(JSONRPCRequest(jsonrpc="2.0", id=2, method="tools/list")))
    assert listed.metadata.headers == {"mcp-protocol-version": "2025-11-25"}
    meta = {"io.modelcontextprotocol/protocolVersion": "2026-07-28"}
    call = JSONRPCRequest(jsonrpc="2.0", id=3, method="tools/call", params={"name": "get_notebook", "_meta": meta})
    headers = stamp.outgoing(SessionMessage(call)).metadata.headers
    assert headers == {"mcp-protocol-version": "2026-07-28", "mcp-method": "tools/call", "mcp-name": "get_notebook"}
