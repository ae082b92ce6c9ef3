"""Execution in the notebook's real kernel, outputs streaming into the live room."""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest

from .conftest import WholeReads, call_tool, document_room, tool_error, until, within
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


async def test_outputs_stream_while_the_call_runs(
    mcp_client: Any, make_notebook: Any, collaborator: Any, jp_root_dir: Path
) -> None:
    # Each line is printed once the test saw the one before in the room: the run is still going on
    # while its outputs arrive, and each line is a batch of its own, however slow the machine.
    slow = (
        "import os, time\nfor i in range(6):\n    while not os.path.exists(f'go{i}'):\n        time.sleep(0.01)\n"
        "    print(i, flush=True)"
    )
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
                90,
            )
        )
        try:
            for i in range(6):
                (jp_root_dir / f"go{i}").write_text("")
                expected = "".join(f"{n}\n" for n in range(i + 1))
                await human.wait_until(lambda text=expected: _stream_text(human) == text, limit=60)  # type: ignore[misc]
                if i < 5:
                    assert not call.done(), "outputs must arrive while the call is still running"
                    assert human.execution_state(0) == "running"
        finally:
            for i in range(6):
                (jp_root_dir / f"go{i}").write_text("")
        result = await call
        assert not result.is_error
        assert result.structured_content["outputs"][0]["text"] == "0\n1\n2\n3\n4\n5\n"
        await human.wait_until(lambda: human.execution_state(0) == "idle")
        outputs = human.cells()[0]["outputs"]
        assert len(outputs) == 1, "stream chunks are merged into one output"
        assert len(progress) >= 3


def _stream_text(human: Any) -> str:
    outputs = human.cells()[0].get("outputs") or []
    return str(outputs[0].get("text", "")) if outputs else ""


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
    mcp_client: Any, make_notebook: Any, collaborator: Any, whole_reads: WholeReads
) -> None:
    """...in edits of bounded cost, as clear_notebook_outputs does (finding what to clear is a scan, off the
    loop for a big notebook): the notebook's cells are never read whole on the loop."""
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
        before = whole_reads.n
        await call_tool(client, "restart_notebook_kernel", path=path, clear_outputs=True, exec=False)
        assert whole_reads.n == before, "the restart read every cell on the loop"
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
    path = make_notebook("cancel.ipynb", code(FOREVER, "'free'"))
    async with mcp_client() as client, collaborator(path) as human:
        await call_tool(client, "execute_notebook_cell", path=path, cell_id="k1", timeout=60)  # kernel warm
        call = asyncio.ensure_future(
            client.call_tool("execute_notebook_cell", {"path": path, "cell_id": "k0", "timeout": 600})
        )
        await human.wait_until(lambda: human.execution_state(0) == "running", limit=60)
        call.cancel()
        with pytest.raises(asyncio.CancelledError):
            await call
        # The endless run ends only by an interrupt: the next run is served.
        free = await within(client.call_tool("execute_notebook_cell", {"path": path, "cell_id": "k1"}), 60)
        assert free.structured_content["outputs"][0]["text"] == "'free'"
        await human.wait_until(lambda: human.execution_state(0) == "idle", limit=60)


FOREVER = "import time\nwhile True:\n    time.sleep(0.01)"  # ends only when interrupted
WAIT_FOR_RELEASE = "import os, time\nwhile not os.path.exists('release'):\n    time.sleep(0.01)\n'released'"


@contextlib.asynccontextmanager
async def a_person_running(jp_serverapp: Any, extension: Any, path: str) -> AsyncIterator[Callable[[], Any]]:
    """Another frontend (a person's browser) runs a cell on the notebook's kernel until the test releases it:
    runs of ours sent meanwhile queue behind it in the kernel. Yields ``release``, which ends the person's run
    and returns its reply."""
    kernel_id = (await extension.execution.kernel(path)).id
    person = jp_serverapp.kernel_manager.get_kernel(kernel_id).client()
    person.start_channels()
    release = Path(jp_serverapp.root_dir, "release")
    try:
        theirs = person.execute(WAIT_FOR_RELEASE, stop_on_error=False)
        await within(_iopub(person, theirs, "execute_input"), 60)  # the person's run is running

        async def released() -> dict[str, Any]:
            release.write_text("")
            return await within(_shell_reply(person, theirs), 60)

        yield released
    finally:
        release.write_text("")
        person.stop_channels()


async def _iopub(client: Any, msg_id: str, msg_type: str) -> dict[str, Any]:
    while True:
        msg = await client.get_iopub_msg()
        if msg["parent_header"].get("msg_id") == msg_id and msg["msg_type"] == msg_type:
            return dict(msg)


async def _shell_reply(client: Any, msg_id: str) -> dict[str, Any]:
    while True:
        msg = await client.get_shell_msg()
        if msg["parent_header"].get("msg_id") == msg_id:
            return dict(msg["content"])


def _spy(monkeypatch: pytest.MonkeyPatch, owner: Any, name: str) -> asyncio.Event:
    """An event set when the coroutine method ``owner.name`` is entered."""
    entered, method = asyncio.Event(), getattr(owner, name)

    async def spy(*args: Any, **kwargs: Any) -> Any:
        entered.set()
        return await method(*args, **kwargs)

    monkeypatch.setattr(owner, name, spy)
    return entered


async def test_a_call_cancelled_before_its_run_began_interrupts_its_run_not_another(
    mcp_client: Any,
    make_notebook: Any,
    collaborator: Any,
    jp_serverapp: Any,
    extension: Any,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """ipykernel ignores an interrupt between requests: one sent after our request left but before the kernel
    began it (in flight, or queued behind a person's run as here) would be lost, or stop the person's run, and
    ours would go on. The cancelled call interrupts its own run once the kernel begins it."""
    path = make_notebook("queued.ipynb", code(FOREVER, "'free'"))
    sent = _spy(monkeypatch, extension.kernels, "_follow")  # called right after our request is sent
    abandoning = _spy(monkeypatch, extension.kernels, "_abandon")  # the server took the cancellation
    async with mcp_client() as client, collaborator(path) as human:
        await call_tool(client, "execute_notebook_cell", path=path, cell_id="k1", timeout=60)  # kernel warm
        sent.clear()
        async with a_person_running(jp_serverapp, extension, path) as release:
            call = asyncio.ensure_future(
                client.call_tool("execute_notebook_cell", {"path": path, "cell_id": "k0", "timeout": 600})
            )
            await within(sent.wait(), 60)
            call.cancel()
            await within(abandoning.wait(), 60)
            assert (await release())["status"] == "ok", "the person's run was interrupted"
            with pytest.raises(asyncio.CancelledError):
                await call
        free = await within(client.call_tool("execute_notebook_cell", {"path": path, "cell_id": "k1"}), 60)
        assert free.structured_content["outputs"][0]["text"] == "'free'"  # the endless run was interrupted
        await human.wait_until(lambda: human.execution_state(0) == "idle", limit=60)


async def test_a_run_timing_out_before_it_began_is_interrupted_once_it_begins(
    mcp_client: Any,
    make_notebook: Any,
    jp_serverapp: Any,
    extension: Any,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """The same for a timeout: it passes while our run waits behind a person's; ours is interrupted when it
    begins, the person's run is left alone."""
    path = make_notebook("late.ipynb", code(FOREVER, "'free'"))
    async with mcp_client() as client:
        await call_tool(client, "execute_notebook_cell", path=path, cell_id="k1", timeout=60)  # kernel warm
        async with a_person_running(jp_serverapp, extension, path) as release:
            with caplog.at_level(logging.INFO, "jupyter_pair_mcp.adapters.kernels.adapter"):
                call = asyncio.ensure_future(
                    within(client.call_tool("execute_notebook_cell", {"path": path, "cell_id": "k0", "timeout": 1}), 90)
                )
                await until(lambda: "timed out" in caplog.text, 60, "the run timing out")
            assert (await release())["status"] == "ok", "the person's run was interrupted"
            result = (await call).structured_content
        assert result["status"] == "timeout"
        assert "KeyboardInterrupt" in "".join(o["text"] for o in result["outputs"])
        free = await within(client.call_tool("execute_notebook_cell", {"path": path, "cell_id": "k1"}), 60)
        assert free.structured_content["outputs"][0]["text"] == "'free'"


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
    http: Any, mcp_url: str, auth: dict[str, str], make_notebook: Any, mcp_client: Any, jp_serverapp: Any
) -> None:
    """In the 2026-07-28 era a request's response stream is its lifetime: closing it cancels the call."""
    path = make_notebook("drop.ipynb", code(FOREVER, "'free'"))
    async with mcp_client() as client:
        await call_tool(client, "execute_notebook_cell", path=path, cell_id="k1", timeout=60)  # kernel warm
        body = {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "tools/call",
            "params": {
                "name": "execute_notebook_cell",
                "arguments": {"path": path, "cell_id": "k0", "timeout": 600},
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
        post = asyncio.ensure_future(http.post(mcp_url, json=body, headers=headers))
        await until(lambda: _execution_state(jp_serverapp, path, 0) == "running", 60, "the cell running")
        post.cancel()  # the client goes away mid-run
        with pytest.raises(asyncio.CancelledError):
            await post
        # The endless run ends only by an interrupt: the next run is served.
        free = await within(client.call_tool("execute_notebook_cell", {"path": path, "cell_id": "k1"}), 60)
        assert free.structured_content["outputs"][0]["text"] == "'free'"
