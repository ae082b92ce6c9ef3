"""A server stopped right after an agent's edit stops quietly: no traceback of ours in its log.

The agent's edit shows it in the room's awareness; the stop then removes that presence from rooms whose task
groups are already winding down, and publishing there used to log ``RuntimeError: This task group is not
active`` from ``presence._remove``.
"""

from __future__ import annotations

import logging
from typing import Any

import pytest

from benchmarks.jupyter_process import JupyterProcess

from .conftest import call_tool, document_room, notebook_json, until
from .test_persistence import _edit_then_stop, sources


def test_a_stop_right_after_an_agent_edit_logs_no_traceback() -> None:
    """The whole stop, in a real server process, its MCP session still open (so its presence too)."""
    with JupyterProcess() as server:
        target = server.root / "work.ipynb"
        target.write_text(notebook_json([{"cell_type": "code", "source": "x = 1", "id": "a"}]))
        _edit_then_stop(
            server,
            [
                (
                    "batch_update_notebook_cells",
                    {"path": "work.ipynb", "exec": False, "updates": [{"cell_id": "a", "content": "x = 2"}]},
                ),
            ],
        )
        log = server.log_text
        assert sources(target) == ["x = 2"], log[-3000:]
        assert "Traceback" not in log and "task group is not active" not in log, log[-5000:]


@pytest.mark.usefixtures("jp_serverapp")
async def test_leaving_a_room_whose_tasks_ended_is_quiet(
    mcp_client: Any, make_notebook: Any, jp_serverapp: Any, extension: Any, caplog: Any
) -> None:
    """At shutdown jupyter_server_ydoc stops its websocket server first, which ends every room's tasks while the
    rooms stay listed; presence then leaves them. That leave must not raise or log a traceback."""
    path = make_notebook("leave.ipynb", [{"cell_type": "code", "source": "x = 1", "id": "a"}])
    async with mcp_client() as client:
        await call_tool(
            client, "batch_update_notebook_cells", path=path, exec=False, updates=[{"cell_id": "a", "content": "x = 2"}]
        )
        room = document_room(jp_serverapp, path)
        assert room is not None and extension.presence._presences
        (agent_client,) = [p.client_id for p in extension.presence._presences.values()]
        group = room._task_group
        group.cancel_scope.cancel()  # what the websocket server's stop does to its rooms' tasks
        await until(lambda: not group.cancel_scope._active)  # the tasks ended: it takes no new task
        with caplog.at_level(logging.DEBUG):
            await extension.presence.close()
    ours = [r for r in caplog.records if r.name.startswith("jupyter_pair_mcp") and r.levelno >= logging.WARNING]
    assert not ours and not [r for r in caplog.records if r.exc_info], caplog.text
    assert not room.awareness.states.get(agent_client), "the agent's state stays in the room's awareness"
