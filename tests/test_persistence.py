"""What a tool reported as applied is on disk after a graceful stop, and ``save_notebook`` means written.

A room writes its document ``document_save_delay`` (1 s by default) after the last change; a SIGTERM
inside that window used to stop the server with the edit only in memory. These tests run a real
Jupyter server process with its default save delay, edit through the MCP endpoint over HTTP, send
SIGTERM 100 ms after the call returned, wait (bounded) for the process to exit and read the file —
safe then: nothing can still be writing it.
"""

from __future__ import annotations

import asyncio
import json
import os
import time
from pathlib import Path
from typing import Any

import httpx2
import pytest

from benchmarks.jupyter_process import JupyterProcess, RawSession
from jupyter_pair_mcp.errors import NotFound

from .conftest import call_tool, notebook_json, tool_error, within

SIGTERM_AFTER = 0.1  # seconds after the edit call returned: well inside the room's 1 s save delay


async def _edit(server: JupyterProcess, calls: list[tuple[str, dict[str, Any]]]) -> float:
    """Make the calls through the MCP endpoint; return when the last one answered (monotonic)."""
    async with httpx2.AsyncClient(headers={"Authorization": f"Bearer {server.token}"}, timeout=30) as http:
        session = RawSession(http, f"{server.url}/mcp")
        await within(session.open())
        for name, arguments in calls:
            await within(session.call(name, **arguments))
        return time.monotonic()


def sources(path: Path) -> list[str]:
    return ["".join(cell["source"]) for cell in json.loads(path.read_text())["cells"]]


def _edit_then_stop(
    server: JupyterProcess, calls: list[tuple[str, dict[str, Any]]], after: float = SIGTERM_AFTER
) -> None:
    try:
        answered = asyncio.run(_edit(server, calls))
    except Exception as exc:
        raise AssertionError(f"the MCP calls failed ({exc!r}); server log:\n{server.log_text[-3000:]}") from exc
    time.sleep(max(0.0, answered + after - time.monotonic()))  # the fault: a stop at this moment after the call
    assert server.stop(timeout=30) == 0, server.log_text[-3000:]


@pytest.mark.parametrize("after", [SIGTERM_AFTER, 1.0], ids=["in-the-save-delay", "as-the-autosave-writes"])
def test_a_notebook_edit_survives_sigterm_right_after_the_call(after: float) -> None:
    with JupyterProcess() as server:
        target = server.root / "work.ipynb"
        target.write_text(notebook_json([{"cell_type": "code", "source": "x = 1", "id": "a"}]))
        _edit_then_stop(
            server,
            [
                ("get_notebook", {"path": "work.ipynb"}),
                ("batch_insert_notebook_cells", {"path": "work.ipynb", "exec": False, "cells": [{"content": "y = 2"}]}),
                (
                    "batch_update_notebook_cells",
                    {"path": "work.ipynb", "exec": False, "updates": [{"cell_id": "a", "content": "x = 'kept'"}]},
                ),
            ],
            after,
        )
        assert sources(target) == ["x = 'kept'", "y = 2"], server.log_text[-3000:]


def test_a_text_edit_survives_sigterm_right_after_the_call() -> None:
    with JupyterProcess() as server:
        target = server.root / "notes.md"
        target.write_text("first line\n")
        _edit_then_stop(
            server,
            [("batch_update_document", {"path": "notes.md", "operations": [{"content": "added\n", "position": -1}]})],
        )
        assert target.read_text() == "first line\nadded\n", server.log_text[-3000:]


def test_a_stop_leaves_rooms_without_edits_and_their_files_alone() -> None:
    """Only rooms with unsaved changes are written at stop: a file nobody changed keeps its exact bytes."""
    with JupyterProcess() as server:
        target = server.root / "read.ipynb"
        original = notebook_json([{"cell_type": "markdown", "source": "# untouched", "id": "m"}])
        target.write_text(original)
        _edit_then_stop(server, [("get_notebook", {"path": "read.ipynb"})])
        assert target.read_text() == original


# -- save_notebook answers saved: true only when the file holds the content --------------------------------------


@pytest.mark.usefixtures("jp_serverapp")
async def test_save_notebook_refuses_when_the_file_is_gone(
    mcp_client: Any, make_notebook: Any, jp_root_dir: Path, jp_serverapp: Any
) -> None:
    ydoc = jp_serverapp.extension_manager.extension_points["jupyter_server_ydoc"].app
    ydoc.document_save_delay = 30  # no autosave gets in the way
    path = make_notebook("gone.ipynb")
    async with mcp_client() as client:
        await call_tool(client, "batch_insert_notebook_cells", path=path, exec=False, cells=[{"content": "lost?"}])
        (jp_root_dir / path).unlink()  # behind the room's back
        # The tool checks the path first; the room, still open, is asked by the adapter directly too.
        message = await tool_error(client, "save_notebook", path=path)
        assert "no notebook at" in message, message
        extension = jp_serverapp.extension_manager.extension_points["jupyter_pair_mcp"].app
        with pytest.raises(NotFound) as failure:
            await within(extension.rooms.save(path, "notebook"))
        assert "gone.ipynb" in str(failure.value) and str(jp_root_dir) not in str(failure.value)
    assert not (jp_root_dir / path).exists()


@pytest.mark.usefixtures("jp_serverapp")
async def test_save_notebook_waits_for_the_write(
    mcp_client: Any, make_notebook: Any, jp_root_dir: Path, jp_serverapp: Any
) -> None:
    ydoc = jp_serverapp.extension_manager.extension_points["jupyter_server_ydoc"].app
    ydoc.document_save_delay = 30
    path = make_notebook("now.ipynb")
    async with mcp_client() as client:
        for i in range(3):
            await call_tool(client, "batch_insert_notebook_cells", path=path, exec=False, cells=[{"content": f"n{i}"}])
            result = await call_tool(client, "save_notebook", path=path)
            assert result["saved"] is True
            assert sources(jp_root_dir / path)[-1] == f"n{i}"


@pytest.mark.usefixtures("jp_serverapp")
async def test_save_notebook_merges_a_file_changed_on_disk_and_says_so(
    mcp_client: Any, make_notebook: Any, jp_root_dir: Path, jp_serverapp: Any
) -> None:
    """jupyter-collaboration's own save reloads a file changed on disk over the room and returns as if saved;
    now the file is merged with the room's unsaved changes, the merge is written, and the agent is told."""
    ydoc = jp_serverapp.extension_manager.extension_points["jupyter_server_ydoc"].app
    ydoc.document_save_delay = 30
    ydoc.file_loaders.file_poll_interval = None  # no watcher reloads the file before the save meets it
    path = make_notebook("theirs.ipynb", [{"cell_type": "code", "source": "mine = 0", "id": "a"}])
    async with mcp_client() as client:
        await call_tool(client, "batch_insert_notebook_cells", path=path, exec=False, cells=[{"content": "agent"}])
        theirs = notebook_json([{"cell_type": "code", "source": "theirs = 1", "id": "a"}])
        (jp_root_dir / path).write_text(theirs)  # another program writes the file
        later = time.time() + 5
        os.utime(jp_root_dir / path, (later, later))
        saved = await call_tool(client, "save_notebook", path=path)
        assert saved["saved"] is True
        assert "changed on disk" in saved["notice"] and str(jp_root_dir) not in saved["notice"], saved
        # The file's change and the agent's unsaved cell, both: in the room and in the file.
        read = await call_tool(client, "get_notebook", path=path)
        assert [c["source"] for c in read["cells"]] == ["theirs = 1", "agent"]
        on_disk = ["".join(c["source"]) for c in json.loads((jp_root_dir / path).read_text())["cells"]]
        assert on_disk == ["theirs = 1", "agent"]
