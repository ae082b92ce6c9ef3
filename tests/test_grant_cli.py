"""``jupyter pair-mcp grant`` (issue 32, item 6) against a real running server, as a subprocess.

The command finds the test's server through its runtime file (``JUPYTER_RUNTIME_DIR``), as it finds a
``jupyter lab`` of the person's, and uses its token over REST: minted, listed, revoked; the minted token works
on ``/mcp`` and stops working when revoked. With no server running it says so and fails.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
from pathlib import Path
from typing import Any

import pytest

import jupyter_pair_mcp
from jupyter_pair_mcp.cli import CommandError, choose_server, seconds

from .conftest import within
from .test_grants import mcp_config  # noqa: F401  (fixture)

#: The worktree's package first, whatever is installed.
SOURCE = str(Path(jupyter_pair_mcp.__file__).parent.parent)


async def cli(runtime: Path, cwd: Path, *args: str) -> tuple[int, str, str]:
    env = {**os.environ, "JUPYTER_RUNTIME_DIR": str(runtime), "PYTHONPATH": SOURCE}
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "jupyter_pair_mcp.cli",
        *args,
        cwd=cwd,
        env=env,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    out, err = await within(process.communicate(), 120)
    assert process.returncode is not None
    return process.returncode, out.decode(), err.decode()


@pytest.fixture
def runtime(jp_serverapp: Any, server_root: str, tmp_path: Path) -> Path:
    """The test server's runtime file, as a running ``jupyter server`` writes it."""
    jp_serverapp.write_server_info_file()
    info = json.loads(Path(jp_serverapp.info_file).read_text())
    port = server_root.rsplit(":", 1)[1]
    assert f":{port}/" in info["url"], info["url"]
    return Path(jp_serverapp.runtime_dir)


async def test_mint_list_revoke_through_the_running_server(
    runtime: Path, jp_root_dir: Path, mcp_client: Any, extension: Any
) -> None:
    (jp_root_dir / "work").mkdir()
    code, out, err = await cli(
        runtime,
        jp_root_dir / "work",
        "grant",
        "--level",
        "write",
        "--folder",
        "work",
        "--expires",
        "30d",
        "--name",
        "ci-bot",
        "--json",
    )
    assert code == 0, err
    minted = json.loads(out)
    grant, token = minted["grant"], minted["token"]
    assert (grant["client_name"], grant["level"], grant["folders"], grant["headless"]) == (
        "ci-bot",
        "write",
        ["work"],
        True,
    )
    assert round((grant["expires"] - grant["created"]) / 86400) == 30
    assert extension.grants.grants[grant["id"]].headless
    bearer = {"Authorization": f"Bearer {token}"}
    async with mcp_client(headers=bearer) as agent:
        assert (await within(agent.list_tools())).tools
    code, out, err = await cli(runtime, jp_root_dir, "grant", "list")
    assert code == 0, err
    assert grant["id"] in out and "ci-bot (headless)" in out and "write, work" in out and token not in out
    code, out, err = await cli(runtime, jp_root_dir, "grant", "revoke", grant["id"])
    assert (code, out.strip()) == (0, f"revoked {grant['id']}"), err
    assert extension.grants.grants == {}
    code, out, err = await cli(runtime, jp_root_dir, "grant", "revoke", grant["id"])
    assert code == 1 and "HTTP 404" in err, (out, err)


async def test_text_output_shows_the_token_once_with_command_lines(runtime: Path, jp_root_dir: Path) -> None:
    code, out, err = await cli(runtime, jp_root_dir, "grant", "--name", "script")
    assert code == 0, err
    assert "shown this once" in out and "claude mcp add --transport http script " in out and "mcp-remote" in out


async def test_no_running_server_is_an_error(tmp_path: Path) -> None:
    empty = tmp_path / "runtime"
    empty.mkdir()
    code, out, err = await cli(empty, tmp_path, "grant", "list")
    assert code == 1 and "no running Jupyter server found" in err, (out, err)


def test_choosing_a_server_and_reading_expiry(tmp_path: Path) -> None:
    outer, inner = tmp_path, tmp_path / "project"
    inner.mkdir()
    servers = [
        {"url": "http://localhost:8888/", "root_dir": str(outer)},
        {"url": "http://localhost:9999/", "root_dir": str(inner)},
    ]
    assert choose_server(servers, "", str(inner / "x"))["url"] == "http://localhost:9999/"  # the deepest root
    assert choose_server(servers, "", str(outer))["url"] == "http://localhost:8888/"
    assert choose_server(servers, "http://localhost:8888", "/elsewhere")["url"] == "http://localhost:8888/"
    with pytest.raises(CommandError, match="choose one with --url"):
        choose_server(servers, "", "/elsewhere")
    with pytest.raises(CommandError, match="no running Jupyter server at"):
        choose_server(servers, "http://localhost:1", "/")
    assert (seconds("30d"), seconds("12h"), seconds("90m"), seconds("3600")) == (2592000, 43200, 5400, 3600)
    with pytest.raises(CommandError):
        seconds("soon")
