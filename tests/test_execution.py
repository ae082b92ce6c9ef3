"""Execution in the notebook's real kernel, outputs streaming into the live room."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

from .conftest import call_tool, document_room, tool_error, until, within
from .test_notebook_live import autosaved_file

pytestmark = pytest.mark.usefixtures("jp_serverapp")


def code(*sources: str) -> list[dict[str, Any]]:
    return [{"cell_type": "code", "source": s, "id": f"k{i}"} for i, s in enumerate(sources)]


def disk_cells(path: Path) -> list[dict[str, Any]]:
    return list(json.loads(path.read_text())["cells"])


async def test_execute_cells_writes_outputs_live_and_to_disk(
    mcp_client: Any, make_notebook: Any, collaborator: Any, jp_root_dir: Path, jp_serverapp: Any
) -> None:
    path = make_notebook("run.ipynb", code("1 + 1", "print('hello')\n40 + 2"))
    async with collaborator(path) as human, mcp_client() as client:
        first = await call_tool(client, "execute_notebook_cell", path=path, cell_id="k0", timeout=60)
        assert first == {
            "id": "k0",
            "status": "ok",
            "execution_count": 1,
            "outputs": [{"output_type": "execute_result", "text": "2", "mime": None}],
        }
        second = await call_tool(client, "execute_notebook_cell", path=path, index=1)
        assert second["execution_count"] == 2
        assert [o["text"] for o in second["outputs"]] == ["hello\n", "42"]
        await human.wait_until(lambda: human.cells()[1].get("execution_count") == 2)
        assert human.cells()[1]["outputs"][0]["text"] == "hello\n"
    saved = (await autosaved_file(jp_serverapp, jp_root_dir, path))["cells"]
    assert saved[0]["execution_count"] == 1
    assert "".join(saved[1]["outputs"][1]["data"]["text/plain"]) == "42"


async def test_outputs_stream_while_the_call_runs(mcp_client: Any, make_notebook: Any, collaborator: Any) -> None:
    slow = "import time\nfor i in range(6):\n    print(i, flush=True)\n    time.sleep(0.4)"
    path = make_notebook("slow.ipynb", code(slow))
    progress: list[float] = []

    async def on_progress(done: float, total: float | None, message: str | None) -> None:
        progress.append(done)

    async with collaborator(path) as human, mcp_client() as client:
        call = asyncio.ensure_future(
            within(
                client.call_tool(
                    "execute_notebook_cell", {"path": path, "cell_id": "k0"}, progress_callback=on_progress
                ),
                60,
            )
        )

        def partial() -> bool:
            outputs = human.cells()[0].get("outputs") or []
            return bool(outputs) and "1\n" in str(outputs[0].get("text", ""))

        await human.wait_until(partial, limit=30)
        assert not call.done(), "outputs must arrive while the call is still running"
        assert human.execution_state(0) == "running"
        result = await call
        assert not result.is_error
        assert result.structured_content["outputs"][0]["text"] == "0\n1\n2\n3\n4\n5\n"
        await human.wait_until(lambda: human.execution_state(0) == "idle")
        outputs = human.cells()[0]["outputs"]
        assert len(outputs) == 1, "stream chunks are merged into one output"
        assert len(progress) >= 3


async def test_error_timeout_and_input(mcp_client: Any, make_notebook: Any) -> None:
    path = make_notebook("bad.ipynb", code("1/0", "import time\ntime.sleep(30)", "input('name? ')", "'after'"))
    async with mcp_client() as client:
        error = await call_tool(client, "execute_notebook_cell", path=path, cell_id="k0", timeout=60)
        assert error["status"] == "error"
        assert error["outputs"][0]["text"].startswith("ZeroDivisionError: division by zero")
        assert "\x1b" not in error["outputs"][0]["text"]
        timeout = await call_tool(client, "execute_notebook_cell", path=path, cell_id="k1", timeout=1)
        assert timeout["status"] == "timeout"
        assert "KeyboardInterrupt" in "".join(o["text"] for o in timeout["outputs"])
        stdin = await call_tool(client, "execute_notebook_cell", path=path, cell_id="k2", timeout=30)
        assert stdin["status"] == "error"
        assert "StdinNotImplementedError" in stdin["outputs"][-1]["text"]
        after = await call_tool(client, "execute_notebook_cell", path=path, cell_id="k3", timeout=30)
        assert after["status"] == "ok"
        assert after["outputs"][0]["text"] == "'after'"


async def test_batch_execution_stops_at_the_first_error(mcp_client: Any, make_notebook: Any) -> None:
    cells = [
        *code("a = 1", "b = a + 1", "raise ValueError('stop')", "c = 3"),
        {"cell_type": "markdown", "source": "# md", "id": "md"},
    ]
    path = make_notebook("batch.ipynb", cells)
    async with mcp_client() as client:
        runs = await call_tool(client, "batch_execute_notebook_cells", path=path)
        assert [(r["id"], r["status"]) for r in runs["executions"]] == [("k0", "ok"), ("k1", "ok"), ("k2", "error")]
        again = await call_tool(
            client, "batch_execute_notebook_cells", path=path, cell_ids=["k3", "k1"], stop_on_error=False
        )
        assert [r["id"] for r in again["executions"]] == ["k3", "k1"]
        markdown_only = await call_tool(client, "batch_execute_notebook_cells", path=path, start_index=4, end_index=5)
        assert markdown_only["executions"] == []
        assert "only code cells run" in await tool_error(
            client, "batch_execute_notebook_cells", path=path, cell_ids=["k0", "md"]
        )


async def test_jupyterlab_session_shares_the_kernel(
    mcp_client: Any, make_notebook: Any, http: Any, server_root: str, jp_base_url: str, auth: dict[str, str]
) -> None:
    path = make_notebook("shared.ipynb", code("import os\nos.getpid()"))
    async with mcp_client() as client:
        await call_tool(client, "execute_notebook_cell", path=path, cell_id="k0")
        info = await call_tool(client, "get_notebook_info", path=path)
    sessions = (await http.get(f"{server_root}{jp_base_url}api/sessions", headers=auth)).json()
    ours = [s for s in sessions if s["path"] == path]
    assert len(ours) == 1
    assert ours[0]["kernel"]["id"] == info["kernel"]["id"]
    assert info["kernel"]["name"] == "python3"


async def test_interrupt_and_restart(mcp_client: Any, make_notebook: Any, collaborator: Any) -> None:
    sleep = "import time\nprint('asleep', flush=True)\ntime.sleep(30)"
    path = make_notebook("restart.ipynb", code("x = 41", "x + 1", sleep))
    async with mcp_client() as client, collaborator(path) as human:
        await call_tool(client, "batch_execute_notebook_cells", path=path, cell_ids=["k0", "k1"])
        sleeper = asyncio.ensure_future(
            within(client.call_tool("execute_notebook_cell", {"path": path, "cell_id": "k2", "timeout": 60}), 60)
        )
        # the kernel is inside the cell's code (its first output is out), not still starting to run it
        await human.wait_until(lambda: bool(human.cells()[2]["outputs"]), limit=20)
        await call_tool(client, "interrupt_notebook_kernel", path=path)
        interrupted = await sleeper
        assert interrupted.structured_content["status"] == "error"
        restarted = await call_tool(
            client, "restart_notebook_kernel", path=path, clear_outputs=True, exec=True, timeout=2
        )
        assert restarted["kernel"]["name"] == "python3"
        assert [(r["id"], r["status"]) for r in restarted["executions"]][:2] == [("k0", "ok"), ("k1", "ok")]
        assert restarted["executions"][1]["outputs"][0]["text"] == "42"
        assert restarted["executions"][1]["execution_count"] == 2
        assert restarted["executions"][2]["status"] == "timeout"


async def test_restart_clears_exactly_the_code_cells_with_something_to_clear(
    mcp_client: Any, make_notebook: Any, collaborator: Any
) -> None:
    ran = {"output_type": "stream", "name": "stdout", "text": "old\n"}
    cells = [
        {"cell_type": "code", "source": "1", "id": "a", "outputs": [ran], "execution_count": 3},
        {"cell_type": "markdown", "source": "# keep", "id": "m"},
        {"cell_type": "code", "source": "2", "id": "b", "outputs": [], "execution_count": None},
        {"cell_type": "code", "source": "3", "id": "c", "outputs": [], "execution_count": 7},
        {"cell_type": "code", "source": "4", "id": "d", "outputs": [ran, ran], "execution_count": None},
    ]
    path = make_notebook("clear.ipynb", cells)
    async with mcp_client() as client, collaborator(path) as human:
        await call_tool(client, "execute_notebook_cell", path=path, cell_id="b")  # a kernel to restart
        await call_tool(client, "restart_notebook_kernel", path=path, clear_outputs=True, exec=False)
        await human.wait_until(
            lambda: all(
                not c.get("outputs") and c.get("execution_count") is None
                for c in human.cells()
                if c["cell_type"] == "code"
            )
        )
        assert human.sources() == ["1", "# keep", "2", "3", "4"]
        assert human.cells()[1]["cell_type"] == "markdown"


async def test_execution_errors_are_tool_errors(mcp_client: Any, make_notebook: Any) -> None:
    path = make_notebook("errs.ipynb", [{"cell_type": "markdown", "source": "# t", "id": "m"}, *code("1")])
    async with mcp_client() as client:
        assert "only code cells run" in await tool_error(client, "execute_notebook_cell", path=path, cell_id="m")
        assert "no cell with id" in await tool_error(client, "execute_notebook_cell", path=path, cell_id="zz")
        assert "timeout must be" in await tool_error(
            client, "execute_notebook_cell", path=path, cell_id="k0", timeout=0
        )
        assert "no kernel is running" in await tool_error(client, "interrupt_notebook_kernel", path=path)


async def test_kernel_death_is_reported_and_restart_recovers(mcp_client: Any, make_notebook: Any) -> None:
    path = make_notebook("die.ipynb", code("import os\nos._exit(1)", "1 + 2"))
    async with mcp_client() as client:
        message = await tool_error(client, "execute_notebook_cell", path=path, cell_id="k0", timeout=60)
        assert "kernel died" in message
        for _ in range(50):  # Jupyter's auto-restarter brings the kernel back
            result = await within(
                client.call_tool("execute_notebook_cell", {"path": path, "cell_id": "k1", "timeout": 30})
            )
            if not result.is_error and result.structured_content["status"] == "ok":
                break
            await asyncio.sleep(0.2)
        else:
            await call_tool(client, "restart_notebook_kernel", path=path)
            result = await within(client.call_tool("execute_notebook_cell", {"path": path, "cell_id": "k1"}))
        assert result.structured_content["outputs"][0]["text"] == "3"


async def test_exec_runs_inserted_and_updated_code_cells(mcp_client: Any, make_notebook: Any) -> None:
    path = make_notebook("exec.ipynb", code("base = 10"))
    async with mcp_client() as client:
        await call_tool(client, "execute_notebook_cell", path=path, cell_id="k0")
        inserted = await call_tool(
            client,
            "batch_insert_notebook_cells",
            path=path,
            cells=[
                {"content": "base * 2"},
                {"content": "# note", "cell_type": "markdown"},
                {"content": "1/0"},
                {"content": "'never runs'"},
            ],
        )
        runs = inserted["executions"]
        ids = [c["id"] for c in inserted["inserted"]]
        assert [(r["id"], r["status"]) for r in runs] == [(ids[0], "ok"), (ids[2], "error")]
        assert runs[0]["outputs"][0]["text"] == "20"
        updated = await call_tool(
            client, "batch_update_notebook_cells", path=path, updates=[{"cell_id": ids[3], "content": "base * 3"}]
        )
        assert updated["executions"][0]["status"] == "ok"
        assert updated["executions"][0]["outputs"][0]["text"] == "30"
        quiet = await call_tool(
            client, "batch_update_notebook_cells", path=path, updates=[{"index": 0, "content": "base"}], exec=False
        )
        assert quiet["executions"] is None


class TestExecutionGroupOff:
    @pytest.fixture
    def mcp_config(self) -> dict[str, Any]:
        return {"tool_groups": ["notebook", "document"]}

    async def test_edit_applies_and_says_execution_was_skipped(self, mcp_client: Any, make_notebook: Any) -> None:
        path = make_notebook("noexec.ipynb", code("1"))
        async with mcp_client() as client:
            names = {t.name for t in (await client.list_tools()).tools}
            assert "execute_notebook_cell" not in names
            result = await call_tool(client, "batch_insert_notebook_cells", path=path, cells=[{"content": "2 + 2"}])
            assert result["executions"] is None
            assert "switched off" in result["execution_skipped"]
            assert result["cell_count"] == 2


async def test_cancelled_call_interrupts_its_run(mcp_client: Any, make_notebook: Any, collaborator: Any) -> None:
    path = make_notebook("cancel.ipynb", code("import time\ntime.sleep(60)", "'free'"))
    async with mcp_client() as client, collaborator(path) as human:
        await call_tool(client, "execute_notebook_cell", path=path, cell_id="k1")  # kernel warm
        call = asyncio.ensure_future(
            client.call_tool("execute_notebook_cell", {"path": path, "cell_id": "k0", "timeout": 120})
        )
        await human.wait_until(lambda: human.execution_state(0) == "running", limit=20)
        call.cancel()
        with pytest.raises(asyncio.CancelledError):
            await call
        started = asyncio.get_running_loop().time()
        free = await call_tool(client, "execute_notebook_cell", path=path, cell_id="k1", timeout=30)
        assert free["status"] == "ok"
        assert asyncio.get_running_loop().time() - started < 10, "the cancelled run was interrupted, not waited out"
        await human.wait_until(lambda: human.execution_state(0) == "idle")


PNG = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=="
SHOW_PNG = (
    "import base64\nfrom IPython.display import Image, display\n"
    f"display(Image(data=base64.b64decode('{PNG}'), format='png'))"
)


async def test_images_come_back_as_image_content(mcp_client: Any, make_notebook: Any) -> None:
    path = make_notebook("img.ipynb", code(SHOW_PNG))
    async with mcp_client() as client:
        result = await within(client.call_tool("execute_notebook_cell", {"path": path, "cell_id": "k0"}), 60)
    assert not result.is_error
    images = [c for c in result.content if c.type == "image"]
    assert len(images) == 1
    assert images[0].mime_type == "image/png"
    assert images[0].data == PNG
    assert result.structured_content["outputs"][0]["mime"] == "image/png"


class TestImagesOff:
    @pytest.fixture
    def mcp_config(self) -> dict[str, Any]:
        return {"include_images": False}

    async def test_no_image_content(self, mcp_client: Any, make_notebook: Any) -> None:
        path = make_notebook("img.ipynb", code(SHOW_PNG))
        async with mcp_client() as client:
            result = await within(client.call_tool("execute_notebook_cell", {"path": path, "cell_id": "k0"}), 60)
        assert [c.type for c in result.content] == ["text"]
        assert "image/png image" in result.structured_content["outputs"][0]["text"]


def _execution_state(serverapp: Any, path: str, index: int) -> Any:
    room = document_room(serverapp, path)
    if room is None or len(room._document.ycells) <= index:  # not open, or not loaded yet
        return None
    return room._document.ycells[index].get("execution_state")


async def test_two_executions_on_one_kernel_queue_in_order(
    mcp_client: Any, make_notebook: Any, jp_serverapp: Any
) -> None:
    path = make_notebook(
        "queue.ipynb",
        code("import time\norder = []\ntime.sleep(1)\norder.append('first')", "order.append('second')\norder"),
    )
    async with mcp_client() as a, mcp_client() as b:
        first = asyncio.ensure_future(call_tool(a, "execute_notebook_cell", path=path, cell_id="k0", timeout=60))
        await until(lambda: _execution_state(jp_serverapp, path, 0) == "running", what="the first cell running")
        second = await call_tool(b, "execute_notebook_cell", path=path, cell_id="k1", timeout=60)
        assert (await first)["status"] == "ok"
    assert second["status"] == "ok"
    assert second["outputs"][0]["text"] == "['first', 'second']"


async def test_dropping_a_stateless_request_interrupts_its_run(
    http: Any, mcp_url: str, auth: dict[str, str], make_notebook: Any, mcp_client: Any
) -> None:
    """In the 2026-07-28 era a request's response stream is its lifetime: closing it cancels the call."""
    path = make_notebook("drop.ipynb", code("import time\ntime.sleep(60)", "'free'"))
    async with mcp_client() as client:
        await call_tool(client, "execute_notebook_cell", path=path, cell_id="k1")  # kernel warm
        body = {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "tools/call",
            "params": {
                "name": "execute_notebook_cell",
                "arguments": {"path": path, "cell_id": "k0", "timeout": 120},
                "_meta": {
                    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
                    "io.modelcontextprotocol/clientCapabilities": {},
                },
            },
        }
        headers = {
            **auth,
            "Accept": "application/json, text/event-stream",
            "Content-Type": "application/json",
            "MCP-Protocol-Version": "2026-07-28",
            "Mcp-Method": "tools/call",
            "Mcp-Name": "execute_notebook_cell",
        }
        with pytest.raises(TimeoutError):  # still running after 2 s: the client goes away mid-run
            await asyncio.wait_for(http.post(mcp_url, json=body, headers=headers), 2.0)
        started = asyncio.get_running_loop().time()
        free = await call_tool(client, "execute_notebook_cell", path=path, cell_id="k1", timeout=60)
        assert free["status"] == "ok"
        assert asyncio.get_running_loop().time() - started < 15, "the dropped run was interrupted, not waited out"
