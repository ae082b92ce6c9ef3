"""Shapes of the seed designs (jupyter-collaboration-mcp, jupyterlab-rtc-mcp) accepted where their meaning is
unambiguous (issue 36 item 6): 0-based cursor positions, a notebook cursor without cell_id, ``exec`` on a
delete, ``search``/``offset``/``sort_desc`` on the history listing; the rest refused with what to send instead."""

from __future__ import annotations

from typing import Any

import pytest

from .conftest import call_tool, notebook_json, tool_error

pytestmark = pytest.mark.usefixtures("jp_serverapp")

CELLS = [
    {"cell_type": "code", "source": "a = 1", "id": "c0"},
    {"cell_type": "code", "source": "x = 10\nyy = 22", "id": "c1"},
    {"cell_type": "markdown", "source": "", "id": "c2"},
]


def cursor_of(human: Any) -> Any:
    agents = human.agents()
    return agents[0]["cursors"][0] if agents and agents[0].get("cursors") else None


async def test_a_zero_anywhere_reads_the_call_as_0_based(
    mcp_client: Any, make_notebook: Any, collaborator: Any
) -> None:
    path = make_notebook("zero.ipynb", CELLS)
    async with collaborator(path) as human, mcp_client() as client:
        # The seed's own example: a selection ending at column 0.
        await call_tool(
            client,
            "update_cursor_position",
            document_path=path,
            cell_id="c1",
            position={"line": 1, "column": 0},
            selection={"start": {"line": 0, "column": 2}, "end": {"line": 1, "column": 0}},
        )

        def selected() -> Any:
            found = cursor_of(human)
            return found if found and not found["empty"] else None

        cursor = await human.wait_awareness(selected, limit=2)
        assert human.locate(cursor["anchor"]) == (1, 2)  # line 0, column 2: after "x "
        assert human.locate(cursor["head"]) == (1, 7)  # line 1, column 0: the start of "yy = 22"
        # Without a 0 a position cannot be told apart: it is 1-based, as listed.
        await call_tool(
            client, "update_cursor_position", document_path=path, cell_id="c1", position={"line": 2, "column": 1}
        )
        cursor = await human.wait_awareness(lambda: (c := cursor_of(human)) and c["empty"] and c, limit=2)
        assert human.locate(cursor["head"]) == (1, 7)
        error = await tool_error(
            client, "update_cursor_position", document_path=path, cell_id="c1", position={"line": 2, "column": 0}
        )
        assert "line 2 out of range: cell 'c1' has 2 line(s) (0-1) (read as 0-based" in error


async def test_a_notebook_cursor_without_cell_id_stays_in_the_agents_cell(
    mcp_client: Any, make_notebook: Any, collaborator: Any
) -> None:
    path = make_notebook("nocell.ipynb", CELLS)
    async with collaborator(path) as human, mcp_client() as client:
        # Before the agent has a cursor there, only a one-cell notebook says which cell.
        error = await tool_error(
            client, "update_cursor_position", document_path=path, position={"line": 1, "column": 1}
        )
        assert (
            "cell_id is required for notebooks" in error and "no cursor in 'nocell.ipynb' yet (it has 3 cells)" in error
        )
        await call_tool(
            client, "update_cursor_position", document_path=path, cell_id="c1", position={"line": 1, "column": 1}
        )
        await call_tool(client, "update_cursor_position", document_path=path, position={"line": 2, "column": 3})
        cursor = await human.wait_awareness(lambda: (c := cursor_of(human)) and human.locate(c["head"]) == (1, 9) and c)
        assert human.locate(cursor["anchor"]) == (1, 9)
        # An edit moves the agent's cursor (people see it there): the next cursor without cell_id is in that cell.
        await call_tool(
            client,
            "batch_update_notebook_cells",
            path=path,
            exec=False,
            updates=[{"cell_id": "c0", "content": "b = 2"}],
        )
        await call_tool(client, "update_cursor_position", document_path=path, position={"line": 1, "column": 2})
        await human.wait_awareness(lambda: (c := cursor_of(human)) and human.locate(c["head"]) == (0, 1))
        # The cell deleted since: no cursor to stay in, so cell_id is asked for again.
        await call_tool(client, "batch_delete_notebook_cells", path=path, cell_ids=["c0"])
        error = await tool_error(
            client, "update_cursor_position", document_path=path, position={"line": 1, "column": 1}
        )
        assert "cell_id is required for notebooks" in error


async def test_a_one_cell_notebook_needs_no_cell_id(mcp_client: Any, jp_root_dir: Any, collaborator: Any) -> None:
    (jp_root_dir / "one.ipynb").write_text(notebook_json([{"cell_type": "code", "source": "abc", "id": "only"}]))
    async with collaborator("one.ipynb") as human, mcp_client() as client:
        await call_tool(client, "update_cursor_position", document_path="one.ipynb", position={"line": 0, "column": 3})
        await human.wait_awareness(lambda: (c := cursor_of(human)) and human.locate(c["head"]) == (0, 3))


async def test_exec_on_delete_is_false_or_refused(mcp_client: Any, make_notebook: Any) -> None:
    path = make_notebook("delete.ipynb", CELLS)
    async with mcp_client() as client:
        error = await tool_error(client, "batch_delete_notebook_cells", path=path, cell_ids=["c0"], exec=True)
        assert error == (
            "batch_delete_notebook_cells: argument 'exec' can only be false here, not True: deleting never runs "
            "cells; to run them first call batch_execute_notebook_cells, then delete (exec false or left out); "
            "nothing was done"
        )
        error = await tool_error(client, "batch_delete_notebook_cells", path=path, cell_ids=["c0"], exec="false")
        assert "argument 'exec' can only be false here, not 'false'" in error
        assert (await call_tool(client, "get_notebook_info", path=path))["cell_count"] == 3  # nothing deleted
        deleted = await call_tool(client, "batch_delete_notebook_cells", path=path, cell_ids=["c0"], exec=False)
        assert [c["id"] for c in deleted["deleted"]] == ["c0"]
        tools = {tool.name: tool for tool in (await client.list_tools()).tools}
    assert "exec" not in tools["batch_delete_notebook_cells"].input_schema["properties"]  # unlisted


async def test_history_takes_search_offset_and_sort_desc(mcp_client: Any, make_notebook: Any) -> None:
    path = make_notebook("hist.ipynb", CELLS)
    async with mcp_client() as client:
        for cell_id, content in (("c0", "a = 2"), ("c1", "x = 3"), ("c0", "a = 4")):
            await call_tool(
                client,
                "batch_update_notebook_cells",
                path=path,
                exec=False,
                updates=[{"cell_id": cell_id, "content": content}],
            )
        everything = await call_tool(client, "get_document_history", path=path, limit=1000)
        newest = [v["version_id"] for v in everything["versions"]]
        assert everything["next_offset"] is None and everything["matched"] is None
        found = await call_tool(client, "get_document_history", path=path, search="CELL C0")
        assert [v["summary"] for v in found["versions"]] == ["updated cell c0", "updated cell c0"]
        assert found["matched"] == 2 and found["total"] == len(newest)
        paged, offset = [], 0
        while offset is not None:
            page = await call_tool(client, "get_document_history", path=path, limit=2, offset=offset)
            paged += [v["version_id"] for v in page["versions"]]
            offset = page["next_offset"]
        assert paged == newest
        oldest = await call_tool(client, "get_document_history", path=path, limit=1000, sort_desc=False)
        assert [v["version_id"] for v in oldest["versions"]] == newest[::-1]
        beyond = await call_tool(client, "get_document_history", path=path, offset=10**6)
        assert beyond["versions"] == [] and beyond["next_offset"] is None
        assert "offset must not be negative" in await tool_error(client, "get_document_history", path=path, offset=-1)
        message = await tool_error(client, "get_document_history", path=path, search="")
        assert "search must have 1 to 1000 characters" in message
