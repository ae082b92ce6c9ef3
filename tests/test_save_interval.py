"""A document edited without pause still reaches disk, within ``max_save_interval`` of its first unsaved change.

jupyter-collaboration saves a room ``document_save_delay`` after its *last* change: while an agent keeps editing
(every 0.1 s here, faster than the delay) it never writes, and a server killed then loses every edit answered
OK. Now each room's write comes at most ``max_save_interval`` after its first unsaved change.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
from pathlib import Path
from typing import Any

import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from benchmarks.jupyter_process import JupyterProcess

from .conftest import TLS, call_tool, notebook_json

EDIT_PACE = 0.1  # seconds between an agent's edits: faster than the save delay, so upstream never saves
MAX_EDITS = 600  # the bound of a run (a minute of edits) that waits for the file to be written


@pytest.fixture
def mcp_config() -> dict[str, Any]:
    return {"enable_test_fixtures": True, "max_save_interval": 1.0}


@pytest.fixture
def jp_server_config(jp_server_config: Any) -> Any:
    jp_server_config.YDocExtension.document_save_delay = 5.0  # longer than the pause between edits
    return jp_server_config


def written(path: Path) -> int:
    return os.stat(path).st_mtime_ns  # the file's time only: never read a file Jupyter may be writing


async def edit_until_written(client: Any, path: str, target: Path, times: int) -> int:
    """Edit one cell every EDIT_PACE seconds until the file was written ``times`` times meanwhile; the edits made."""
    seen, writes = written(target), 0
    for step in range(1, MAX_EDITS + 1):
        await call_tool(
            client,
            "batch_update_notebook_cells",
            path=path,
            exec=False,
            updates=[{"cell_id": "a", "content": f"step = {step}"}],
        )
        if (now := written(target)) != seen:
            seen, writes = now, writes + 1
            if writes >= times:
                return step
        await asyncio.sleep(EDIT_PACE)
    raise AssertionError(f"{MAX_EDITS} edits {EDIT_PACE} s apart, and the file was written {writes} times")


async def test_a_document_edited_without_pause_is_written_every_interval(
    mcp_client: Any, jp_root_dir: Path, jp_serverapp: Any
) -> None:
    path = "busy.ipynb"
    (jp_root_dir / path).write_text(notebook_json([{"cell_type": "code", "source": "step = 0", "id": "a"}]))
    async with mcp_client() as client:
        await call_tool(client, "get_notebook_info", path=path)
        steps = await edit_until_written(client, path, jp_root_dir / path, 3)
    # Three writes while edits kept coming: at most ~max_save_interval apart (plus the write), not never.
    assert steps < MAX_EDITS


def test_sigkill_during_continuous_edits_loses_at_most_the_window() -> None:
    args = ("--YDocExtension.document_save_delay=5", "--JupyterPairMCP.max_save_interval=1")
    with JupyterProcess(*args) as server:
        target = server.root / "killed.ipynb"
        target.write_text(notebook_json([{"cell_type": "code", "source": "step = 0", "id": "a"}]))

        async def edit() -> int:
            headers = {"Authorization": f"Bearer {server.token}"}
            async with httpx2.AsyncClient(headers=headers, timeout=30, verify=TLS) as http:
                transport = streamable_http_client(f"{server.url}/mcp", http_client=http)
                async with Client(transport, mode="legacy") as client:  # type: ignore[arg-type]
                    return await edit_until_written(client, "killed.ipynb", target, 3)

        steps = asyncio.run(edit())
        os.kill(server.pid, signal.SIGKILL)
        server._process.wait(10)  # type: ignore[union-attr]
        on_disk = "".join(json.loads(target.read_text())["cells"][0]["source"])
    # Upstream never wrote the file while the edits went on: "step = 0" after all of them.
    assert on_disk != "step = 0"
    assert int(on_disk.removeprefix("step = ")) <= steps
