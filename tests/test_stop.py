"""A busy server stops within its shutdown budget and still writes every unsaved room (issue 23, item 7).

A real Jupyter server process, as a service manager or JupyterHub stops it: an MCP session with a
standalone SSE stream, a call in flight on a POST stream (a cell sleeping 60 s), a 10,000-cell notebook
room with an agent's edit its autosave has not written yet; then SIGTERM. The process must exit within
``JupyterPairMCP.shutdown_timeout`` (plus the kernel's own shutdown wait and the interpreter's exit),
and the file — read once the process is gone, so nothing can still be writing it — must hold the edit.
The stop used to read a big room on the loop with ``YNotebook.get()`` (seconds per room, rooms one after
the other) and wait for every session; tests/test_stop_snapshot.py holds the linear read structurally.
"""

from __future__ import annotations

import asyncio
import json
import signal
import time
from pathlib import Path
from typing import Any

import httpx2
import pytest

from benchmarks.jupyter_process import JupyterProcess, RawSession
from jupyter_pair_mcp.adapters.rooms import persist

from .conftest import call_tool, notebook_json, until, within
from .patience import patient

BUDGET = 10.0  # JupyterPairMCP.shutdown_timeout in this test
KERNEL_WAIT = 3.0  # KernelManager.shutdown_wait_time: jupyter_server shuts kernels down after the extensions
EXIT_SLACK = 5.0  # the interpreter's exit: threads joined (times the suite's patience: a loaded machine)
CELLS = 10_000


def big_notebook() -> str:
    return notebook_json(
        [
            {
                "cell_type": "code",
                "id": f"c{i}",
                "source": f"x = {i}\nfor j in range(3):\n    print(j, x)",
                "execution_count": i + 1,
                "metadata": {"tags": ["t"]},
                "outputs": [{"output_type": "stream", "name": "stdout", "text": "0 1\n1 1\n2 1\n"}],
            }
            for i in range(CELLS)
        ]
    )


async def _busy_then_stop(server: JupyterProcess) -> float:
    """Open everything the stop must end or write, send SIGTERM; return seconds until the process exited."""
    async with httpx2.AsyncClient(headers={"Authorization": f"Bearer {server.token}"}, timeout=120) as http:
        session = RawSession(http, f"{server.url}/mcp")
        await within(session.open())
        stream_open = asyncio.Event()

        async def standalone_stream() -> None:
            headers = {**session.headers, "Accept": "text/event-stream"}
            async with http.stream("GET", session.url, headers=headers) as response:
                assert response.status_code == 200
                stream_open.set()
                async for _ in response.aiter_lines():
                    pass

        held = [asyncio.ensure_future(standalone_stream())]
        await within(stream_open.wait())
        held.append(
            asyncio.ensure_future(session.call("execute_notebook_cell", path="run.ipynb", index=0, timeout=120))
        )

        async def kernel_busy() -> bool:
            kernels = (await http.get(f"{server.url}/api/kernels")).json()
            return bool(kernels) and kernels[0]["execution_state"] == "busy"

        await until(kernel_busy, limit=60, what="the cell's run")
        update = {"cell_id": "c5000", "content": "x = 'the agent was here'"}
        await within(session.call("batch_update_notebook_cells", path="big.ipynb", exec=False, updates=[update]), 120)
        await within(session.call("save_notebook", path="run.ipynb"))  # a call that ends: the session is live
        update = {"cell_id": "c9999", "content": "x = 'last, unsaved'"}
        await within(session.call("batch_update_notebook_cells", path="big.ipynb", exec=False, updates=[update]))
        assert not any(task.done() for task in held), "the stream and the run are still open at the stop"
        started = time.monotonic()
        assert server._process is not None
        server._process.send_signal(signal.SIGTERM)  # once: a second signal runs jupyter_server's stop again
        await asyncio.to_thread(server._process.wait, BUDGET + KERNEL_WAIT + patient(EXIT_SLACK) + 30)
        took = time.monotonic() - started
        for task in held:
            task.cancel()
        await asyncio.gather(*held, return_exceptions=True)
        return took


def test_a_busy_server_stops_within_its_budget_and_writes_the_big_room() -> None:
    with JupyterProcess(
        f"--JupyterPairMCP.shutdown_timeout={BUDGET}",
        f"--KernelManager.shutdown_wait_time={KERNEL_WAIT}",
        "--YDocExtension.document_save_delay=30",  # the agent's edits are on disk only if the stop writes them
        startup_timeout=120,
    ) as server:
        (server.root / "big.ipynb").write_text(big_notebook())
        slow = "import time\nprint('running', flush=True)\ntime.sleep(60)"
        (server.root / "run.ipynb").write_text(notebook_json([{"cell_type": "code", "source": slow, "id": "s"}]))
        took = asyncio.run(_busy_then_stop(server))
        log = server.log_text
        assert server._process is not None and server._process.returncode == 0, log[-3000:]
        assert took < BUDGET + KERNEL_WAIT + patient(EXIT_SLACK), f"the stop took {took:.1f} s\n{log[-3000:]}"
        saved: dict[str, Any] = json.loads((server.root / "big.ipynb").read_text())
        assert len(saved["cells"]) == CELLS
        source = ["".join(cell["source"]) for cell in saved["cells"]]
        assert source[5000] == "x = 'the agent was here'" and source[9999] == "x = 'last, unsaved'", log[-3000:]
        assert source[1] == "x = 1\nfor j in range(3):\n    print(j, x)" and saved["cells"][1]["id"] == "c1"
        assert "".join(saved["cells"][1]["outputs"][0]["text"]) == "0 1\n1 1\n2 1\n"
        assert saved["nbformat"] == 4 and saved["metadata"]["kernelspec"]["name"] == "python3"
        assert "Could not save" not in log and "Traceback" not in log, log[-5000:]
        assert "MCP endpoint stopped in" in log, log[-3000:]


@pytest.mark.usefixtures("jp_serverapp")
async def test_a_second_stop_waits_for_the_first(
    mcp_client: Any, make_notebook: Any, jp_root_dir: Path, jp_serverapp: Any, extension: Any, monkeypatch: Any
) -> None:
    """A second signal (Ctrl+C twice; a hub's SIGTERM after its SIGINT) runs jupyter_server's cleanup again,
    alongside the first: it must not start a second stop (which would note the rooms again, write them
    twice, and end the loop while the first still writes)."""
    ydoc = jp_serverapp.extension_manager.extension_points["jupyter_server_ydoc"].app
    ydoc.document_save_delay = 30
    path = make_notebook("twice.ipynb", [{"cell_type": "code", "source": "x = 1", "id": "a"}])
    writes: list[str] = []
    original = persist.write_room

    async def counted(room: Any, name: str) -> None:
        writes.append(name)
        await original(room, name)

    monkeypatch.setattr(persist, "write_room", counted)
    async with mcp_client() as client:
        update = {"cell_id": "a", "content": "x = 'once'"}
        await call_tool(client, "batch_update_notebook_cells", path=path, exec=False, updates=[update])
        await within(asyncio.gather(extension.stop_extension(), extension.stop_extension()), 30)
    assert writes == [path]
    assert ["".join(c["source"]) for c in json.loads((jp_root_dir / path).read_text())["cells"]] == ["x = 'once'"]
