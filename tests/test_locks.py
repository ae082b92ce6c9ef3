"""Cells and notebooks a person locked against agents (docs/notebooks.md, "Cells people lock"): every agent path
that would change or run a locked cell is refused naming the cell and the person, a batch touching one changes
nothing, and no agent can set or lift a lock — against a real server, a real MCP client, and a person's real Yjs
client writing the lock into the cell's metadata as JupyterLab's lock button does."""

from __future__ import annotations

from typing import Any

import pytest
from pycrdt import Array, Map

from .conftest import call_tool, document_room, received, tool_error, until, within

pytestmark = pytest.mark.usefixtures("jp_serverapp")

CELLS = [
    {"cell_type": "code", "source": "a = 1", "id": "c0"},
    {"cell_type": "code", "source": "b = 2", "id": "c1", "outputs": [], "execution_count": 3},
    {"cell_type": "code", "source": "c = 3", "id": "c2"},
]
LOCK = {"locked": {"by": "Ada Lovelace", "at": "2026-11-28T12:00:00+00:00"}}


def lock_cell(human: Any, index: int) -> None:
    """What JupyterLab's lock button does: ``cell.model.setMetadata("jupyter_pair_mcp", {...})`` on the shared model."""
    human.document.ycells[index]["metadata"]["jupyter_pair_mcp"] = LOCK


async def unlock_cell(serverapp: Any, human: Any, index: int) -> None:
    """What the button does on a locked cell (``deleteMetadata``); a deletion does not advance a state vector, so
    wait until the server's room holds the cell without the key."""
    del human.document.ycells[index]["metadata"]["jupyter_pair_mcp"]
    room = document_room(serverapp, human.path)
    assert room is not None
    cells = room.ydoc.get("cells", type=Array)
    await until(lambda: "jupyter_pair_mcp" not in cells[index]["metadata"], what="the server seeing the unlock")


def refused(message: str, cell_id: str = "c1", index: int = 1) -> None:
    assert f"cell {cell_id!r} (index {index}) is locked by Ada Lovelace" in message, message
    assert "Nothing was changed" in message and "unlock" in message


async def test_every_agent_write_to_a_locked_cell_is_refused_and_a_batch_changes_nothing(
    mcp_client: Any, make_notebook: Any, collaborator: Any, jp_serverapp: Any
) -> None:
    path = make_notebook("locked.ipynb", CELLS)
    async with collaborator(path) as human, mcp_client() as client:
        lock_cell(human, 1)
        await received(jp_serverapp, human)
        before = human.cells()

        # an update batch touching the locked cell changes nothing, not even the unlocked cell before it
        message = await tool_error(
            client,
            "batch_update_notebook_cells",
            path=path,
            exec=False,
            updates=[{"cell_id": "c0", "content": "a = 10"}, {"cell_id": "c1", "content": "b = 20"}],
        )
        refused(message)
        for name, arguments in [
            ("batch_update_notebook_cells", {"updates": [{"index": 1, "cell_type": "markdown"}], "exec": False}),
            ("batch_update_notebook_cells", {"updates": [{"cell_id": "c1", "content": "x"}], "propose": True}),
            ("batch_delete_notebook_cells", {"cell_ids": ["c2", "c1"]}),
            ("batch_delete_notebook_cells", {"start_index": 0, "end_index": 3, "propose": True}),
            ("move_notebook_cell", {"cell_id": "c1", "to_index": 0}),
            ("replace_in_notebook", {"find": " = ", "replace": "="}),
            ("clear_notebook_outputs", {}),
            ("clear_notebook_outputs", {"cell_ids": ["c1"]}),
            ("execute_notebook_cell", {"cell_id": "c1"}),
            ("batch_execute_notebook_cells", {"cell_ids": ["c0", "c1"]}),
        ]:
            refused(await tool_error(client, name, path=path, **arguments))
        assert human.cells() == before, "a refused call changed no cell"

        # agents see the lock when they read; inserting next to the cell and editing others is fine
        read = await call_tool(client, "get_notebook", path=path)
        assert [c.get("locked") for c in read["cells"]] == [None, "Ada Lovelace", None]
        outline = await call_tool(client, "get_notebook_outline", path=path)
        assert [c.get("lk") for c in outline["cells"]] == [None, "Ada Lovelace", None]
        await call_tool(
            client,
            "batch_update_notebook_cells",
            path=path,
            exec=False,
            updates=[{"cell_id": "c0", "content": "a = 10"}],
        )
        await call_tool(
            client, "batch_insert_notebook_cells", path=path, exec=False, cells=[{"content": "d"}], start_position=2
        )
        await human.wait_until(lambda: human.sources() == ["a = 10", "b = 2", "d", "c = 3"])

        # unlocked by the person, the same edit goes through
        await unlock_cell(jp_serverapp, human, 1)
        await call_tool(
            client,
            "batch_update_notebook_cells",
            path=path,
            exec=False,
            updates=[{"cell_id": "c1", "content": "b = 20"}],
        )
        await human.wait_until(lambda: human.sources()[1] == "b = 20")


async def test_no_agent_sets_or_lifts_a_lock(
    mcp_client: Any, make_notebook: Any, collaborator: Any, jp_serverapp: Any
) -> None:
    path = make_notebook("lift.ipynb", CELLS)
    async with collaborator(path) as human, mcp_client() as client:
        message = await tool_error(
            client,
            "batch_insert_notebook_cells",
            path=path,
            exec=False,
            cells=[{"content": "x", "metadata": LOCK and {"jupyter_pair_mcp": LOCK}}],
        )
        assert "'jupyter_pair_mcp' is set only by people" in message
        message = await tool_error(
            client,
            "batch_insert_notebook_cells",
            path=path,
            propose=True,
            cells=[{"content": "x", "metadata": {"jupyter_pair_mcp": {}}}],
        )
        assert "set only by people" in message

        # an agent's edit made before the lock is not undone into the locked cell, nor restored over it
        await call_tool(
            client,
            "batch_update_notebook_cells",
            path=path,
            exec=False,
            updates=[{"cell_id": "c1", "content": "b = 'agent'"}],
        )
        await human.wait_until(lambda: human.sources()[1] == "b = 'agent'")
        versions = (await call_tool(client, "get_document_history", path=path))["versions"]
        lock_cell(human, 1)
        await received(jp_serverapp, human)
        refused(await tool_error(client, "undo_agent_edits", path=path))
        oldest = versions[-1]["version_id"]
        refused(await tool_error(client, "restore_document_version", path=path, version_id=oldest))
        assert human.sources()[1] == "b = 'agent'"
        assert human.cells()[1]["metadata"]["jupyter_pair_mcp"] == LOCK

        # a fork's change to the cell, made before the person locked it, does not merge back
        await unlock_cell(jp_serverapp, human, 1)
        fork = (await call_tool(client, "fork_document", path=path, title="draft"))["fork_id"]
        await call_tool(
            client,
            "batch_update_notebook_cells",
            path=path,
            fork_id=fork,
            exec=False,
            updates=[{"cell_id": "c1", "content": "b = 'fork'"}],
        )
        lock_cell(human, 1)
        await received(jp_serverapp, human)
        refused(await tool_error(client, "merge_document_fork", path=path, fork_id=fork))
        assert human.sources()[1] == "b = 'agent'"


async def test_a_locked_notebook_refuses_every_agent_edit_and_run_but_a_person_may_accept(
    mcp_client: Any,
    make_notebook: Any,
    collaborator: Any,
    jp_serverapp: Any,
    server_root: str,
    jp_base_url: str,
    http: Any,
    auth: dict[str, str],
) -> None:
    path = make_notebook("whole.ipynb", CELLS)
    async with collaborator(path) as human, mcp_client() as client:
        proposed = await call_tool(
            client,
            "batch_update_notebook_cells",
            path=path,
            propose=True,
            updates=[{"cell_id": "c2", "content": "c = 30"}],
        )
        human.doc.get("meta", type=Map)["metadata"]["jupyter_pair_mcp"] = LOCK
        await received(jp_serverapp, human)
        for name, arguments in [
            ("batch_insert_notebook_cells", {"cells": [{"content": "x"}], "exec": False}),
            ("batch_insert_notebook_cells", {"cells": [{"content": "x"}], "propose": True}),
            ("batch_update_notebook_cells", {"updates": [{"cell_id": "c0", "content": "x"}], "exec": False}),
            ("batch_delete_notebook_cells", {"cell_ids": ["c0"]}),
            ("clear_notebook_outputs", {}),
            ("execute_notebook_cell", {"cell_id": "c0"}),
        ]:
            message = await tool_error(client, name, path=path, **arguments)
            assert f"{path} is locked by Ada Lovelace" in message, (name, message)
        info = await call_tool(client, "get_notebook", path=path)
        assert info["metadata"]["locked"] == "Ada Lovelace"
        # the person's own decision is theirs: accepting a suggestion made before the lock applies it
        api = f"{server_root}{jp_base_url}api/mcp"
        response = await within(
            http.post(f"{api}/suggestions/{proposed['suggestion']['id']}/accept", json={}, headers=auth)
        )
        assert response.status_code == 200, response.text
        await human.wait_until(lambda: human.sources()[2] == "c = 30")


async def test_a_check_reads_the_cells_a_call_touches_never_every_cell(
    mcp_client: Any, make_notebook: Any, collaborator: Any, jp_serverapp: Any, whole_reads: Any
) -> None:
    """A lock is found by reading the touched cell's metadata (through the room's cell index), or the notebook's
    metadata once: no call converts every cell to learn where the locks are."""
    cells = [{"cell_type": "code", "source": f"x = {i}", "id": f"k{i}"} for i in range(2000)]
    path = make_notebook("big.ipynb", cells)
    async with collaborator(path) as human, mcp_client() as client:
        await call_tool(client, "get_notebook_info", path=path)  # the room's index is built once
        lock_cell(human, 1500)
        await received(jp_serverapp, human)
        before = whole_reads.n
        await call_tool(
            client, "batch_update_notebook_cells", path=path, exec=False, updates=[{"cell_id": "k10", "content": "y"}]
        )
        refused(
            await tool_error(
                client,
                "batch_update_notebook_cells",
                path=path,
                exec=False,
                updates=[{"cell_id": "k1500", "content": "y"}],
            ),
            "k1500",
            1500,
        )
        refused(
            await tool_error(client, "batch_delete_notebook_cells", path=path, cell_ids=["k1499", "k1500"]),
            "k1500",
            1500,
        )
        refused(await tool_error(client, "move_notebook_cell", path=path, cell_id="k1500", to_index=0), "k1500", 1500)
        await call_tool(
            client, "batch_update_notebook_cells", path=path, exec=False, updates=[{"cell_id": "k1499", "content": "z"}]
        )
        await call_tool(client, "undo_agent_edits", path=path, count=2)
        assert whole_reads.n == before, "a lock check read every cell"


async def test_a_restart_that_would_clear_or_run_a_locked_cell_is_refused_before_it_restarts(
    mcp_client: Any, make_notebook: Any, collaborator: Any, jp_serverapp: Any
) -> None:
    """restart_notebook_kernel with clear_outputs or exec touches every code cell: with one locked, it is refused
    before the kernel restarts (its variables survive, the locked cell keeps its outputs); a plain restart is a
    kernel action and goes ahead."""
    path = make_notebook("restart-locked.ipynb", CELLS)
    async with collaborator(path) as human, mcp_client() as client:
        await call_tool(client, "execute_notebook_cell", path=path, cell_id="c0")  # a = 1 in the kernel
        await call_tool(client, "execute_code", path=path, code="kept = 41")
        lock_cell(human, 1)
        await received(jp_serverapp, human)
        before = human.cells()
        for arguments in ({"clear_outputs": True}, {"exec": True}, {"clear_outputs": True, "exec": True}):
            refused(await tool_error(client, "restart_notebook_kernel", path=path, **arguments))
        assert human.cells() == before, "a refused restart cleared or ran no cell"
        survived = await call_tool(client, "execute_code", path=path, code="print(kept + 1)")
        assert "42" in str(survived), "the kernel was not restarted"
        await call_tool(client, "restart_notebook_kernel", path=path)
        assert human.cells() == before
