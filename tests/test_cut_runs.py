"""Runs cut off before their end: the call is a tool error that says how far the run got, and the agent goes on.

A kernel restart while agents run cells: three real MCP clients on one notebook, two run long cells (one in the
kernel, one queued behind it), the third restarts the kernel; their runs end with an error naming who restarted
it, and their sessions live. A restart from JupyterLab (the kernels REST API) ends a run the same way, and a
kernel that dies mid-run says what stayed in the cell. (A kernel gateway going away mid-run: tests/test_gateway.py.)
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import httpx2
import pytest
from mcp_types import Implementation

from .conftest import call_tool, until, within

pytestmark = pytest.mark.usefixtures("jp_serverapp")

# Prints as it goes (the test waits for its first line in the room) and runs far longer than any test.
LONG = "import time\nfor i in range(6000):\n    print(i, flush=True)\n    time.sleep(0.05)"
CELLS = [
    {"cell_type": "code", "source": LONG, "id": "a"},
    {"cell_type": "code", "source": LONG, "id": "b"},
    {"cell_type": "code", "source": "x = 1\nx + 1", "id": "c"},
]


def agent(name: str) -> Implementation:
    return Implementation(name=name.lower(), title=name, version="1")


def running(extension: Any) -> int:
    """Executions in flight on the server (all agents share the test's credential)."""
    return sum(extension.execution._running.values())


def first_output(human: Any, index: int) -> bool:
    return bool(human.cells()[index].get("outputs"))


@pytest.mark.parametrize("mode", ["legacy", "2026-07-28"])
async def test_restart_by_an_agent_ends_the_runs_of_others_and_their_sessions_live(
    mode: str, mcp_client: Any, make_notebook: Any, collaborator: Any, extension: Any
) -> None:
    path = make_notebook("restart_runs.ipynb", CELLS)
    async with (
        collaborator(path) as human,
        mcp_client(mode=mode, client_info=agent("Runner A")) as a,
        mcp_client(mode=mode, client_info=agent("Runner B")) as b,
        mcp_client(mode=mode, client_info=agent("Restarter")) as r,
    ):
        await call_tool(r, "execute_notebook_cell", path=path, cell_id="c", timeout=60)  # the kernel is up
        run_a = asyncio.ensure_future(a.call_tool("execute_notebook_cell", {"path": path, "cell_id": "a"}))
        await human.wait_until(lambda: first_output(human, 0), limit=60)  # a's cell runs in the kernel
        run_b = asyncio.ensure_future(b.call_tool("execute_notebook_cell", {"path": path, "cell_id": "b"}))
        await until(lambda: running(extension) == 2, 30, "b's call queued")  # b's call waits behind a's run
        restarted = await call_tool(r, "restart_notebook_kernel", path=path)
        assert restarted["kernel"]["name"] == "python3"
        for run in (run_a, run_b):
            result = await within(run, 60)
            assert result.is_error, result.structured_content
            message = result.content[0].text
            assert "the kernel was restarted by Restarter" in message, message
        # Both sessions live on: their next calls are served (no 404, no closed connection).
        for client in (a, b):
            again = await call_tool(client, "execute_notebook_cell", path=path, cell_id="c", timeout=60)
            assert again["outputs"][0]["text"] == "2"
        # What a's run printed before the restart stays in its cell; b's cell never began.
        assert first_output(human, 0)
        assert not first_output(human, 1)
        await human.wait_until(lambda: human.execution_state(0) == "idle", limit=30)


async def test_a_restart_from_jupyterlab_ends_a_run_with_an_error_that_says_so(
    mcp_client: Any,
    make_notebook: Any,
    collaborator: Any,
    extension: Any,
    server_root: str,
    jp_base_url: str,
    auth: dict[str, str],
    http: httpx2.AsyncClient,
) -> None:
    path = make_notebook("restart_lab.ipynb", CELLS)
    async with collaborator(path) as human, mcp_client(client_info=agent("Runner A")) as a:
        await call_tool(a, "execute_notebook_cell", path=path, cell_id="c", timeout=60)
        kernel_id = (await extension.execution.kernel(path)).id
        run = asyncio.ensure_future(a.call_tool("execute_notebook_cell", {"path": path, "cell_id": "a"}))
        await human.wait_until(lambda: first_output(human, 0), limit=60)
        response = await http.post(f"{server_root}{jp_base_url}api/kernels/{kernel_id}/restart", headers=auth)
        assert response.status_code == 200, response.text
        result = await within(run, 60)
        assert result.is_error, result.structured_content
        message = result.content[0].text
        assert "the kernel was restarted" in message and "JupyterLab" in message, message
        again = await call_tool(a, "execute_notebook_cell", path=path, cell_id="c", timeout=60)
        assert again["outputs"][0]["text"] == "2"


async def test_a_kernel_dying_mid_run_says_the_run_was_cut_off_and_what_stayed(
    mcp_client: Any, make_notebook: Any, collaborator: Any, jp_root_dir: Path
) -> None:
    # Six iterations print; the kernel exits once the test saw them in the room (a print just before os._exit
    # could die in the kernel's socket).
    dies = (
        "import os, time\nfor i in range(30):\n    print(i, flush=True)\n    time.sleep(0.01)\n    if i == 5:\n"
        "        while not os.path.exists('die'):\n            time.sleep(0.01)\n        os._exit(1)"
    )
    path = make_notebook("dies.ipynb", [{"cell_type": "code", "source": dies, "id": "d"}])
    async with collaborator(path) as human, mcp_client() as client:
        run = asyncio.ensure_future(client.call_tool("execute_notebook_cell", {"path": path, "cell_id": "d"}))
        printed = "".join(f"{i}\n" for i in range(6))
        await human.wait_until(lambda: _text(human) == printed, limit=60)
        (jp_root_dir / "die").write_text("")
        result = await within(run, 60)
        assert result.is_error, result.structured_content
        message = result.content[0].text
        assert "the kernel died while running the cell" in message, message
        assert "the run was cut off after it began" in message, message
        assert "The 6 outputs it sent until then stayed in the cell (the last line: '5')" in message, message
        assert "not run" not in message, message
        await human.wait_until(lambda: human.execution_state(0) == "idle", limit=30)
        assert _text(human) == printed


def _text(human: Any) -> str:
    outputs = human.cells()[0].get("outputs") or []
    return str(outputs[0].get("text", "")) if outputs else ""


@pytest.mark.parametrize("mode", ["legacy", "2026-07-28"])
async def test_a_cancellation_from_inside_the_server_is_a_tool_error_and_the_session_lives(
    mode: str, mcp_client: Any, extension: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A CancelledError that is not the call's own cancellation (a future someone else cancelled, as closing a
    kernel client's sockets under a run did) must not escape a tool: the SDK would end the agent's session."""

    async def cancelled_inside() -> Any:
        future = asyncio.get_running_loop().create_future()
        future.cancel()
        return await future

    async with mcp_client(mode=mode) as client:
        monkeypatch.setattr(extension.kernels, "running", cancelled_inside)
        result = await within(client.call_tool("list_kernels", {}))
        assert result.is_error, result.structured_content
        assert "internal error in list_kernels" in result.content[0].text
        monkeypatch.undo()
        assert (await call_tool(client, "list_kernels"))["kernels"] == []
