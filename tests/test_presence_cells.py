"""Which cell an agent works in, for people: ``agent.cell_id`` in its awareness state, seen by a collaborator.

A frontend marks that cell (a gutter mark, "follow") without resolving Yjs relative positions: the id of the
cell the agent last edited, put its cursor in or ran; null in a text file.
"""

from __future__ import annotations

import contextlib
from pathlib import Path
from typing import Any

import pytest

from .conftest import call_tool, tool_error, within

pytestmark = pytest.mark.usefixtures("jp_serverapp")

CELLS = [
    {"cell_type": "code", "source": "a = 1", "id": "c0"},
    {"cell_type": "code", "source": "b = 2", "id": "c1"},
    {"cell_type": "markdown", "source": "# notes", "id": "c2"},
]


def cell_of(human: Any) -> Any:
    """The agent's ``agent.cell_id`` as the collaborator sees it (a missing key is not None: it fails)."""
    agents = human.agents()
    return agents[0]["agent"].get("cell_id", "missing") if agents else "no agent"


async def test_the_agents_cell_follows_its_cursor_edits_and_runs(
    mcp_client: Any, make_notebook: Any, collaborator: Any
) -> None:
    path = make_notebook("where.ipynb", CELLS)
    async with collaborator(path) as human, mcp_client() as client:
        await call_tool(
            client, "update_cursor_position", document_path=path, cell_id="c1", position={"line": 1, "column": 1}
        )
        await within(human.wait_awareness(lambda: cell_of(human) == "c1", limit=3))
        await call_tool(
            client, "batch_update_notebook_cells", path=path, exec=False, updates=[{"cell_id": "c2", "content": "# x"}]
        )
        await within(human.wait_awareness(lambda: cell_of(human) == "c2", limit=3))
        await call_tool(client, "execute_notebook_cell", path=path, cell_id="c0", timeout=60)
        await within(human.wait_awareness(lambda: cell_of(human) == "c0", limit=3))


async def test_in_a_text_file_the_cell_is_null(mcp_client: Any, jp_root_dir: Path, collaborator: Any) -> None:
    (jp_root_dir / "notes.md").write_text("one\ntwo\n", encoding="utf-8")
    async with collaborator("notes.md", "file") as human, mcp_client() as client:
        await call_tool(client, "update_cursor_position", document_path="notes.md", position={"line": 2, "column": 1})
        await within(human.wait_awareness(lambda: cell_of(human) is None, limit=3))


async def test_agents_are_in_jupyterlabs_global_awareness_while_in_a_document(
    mcp_client: Any, make_notebook: Any, jp_root_dir: Path, collaborator: Any
) -> None:
    """The Collaborators panel lists the global room's states: user, ``current`` and ``documents``."""
    path = make_notebook("lab.ipynb", CELLS)
    stack = contextlib.AsyncExitStack()
    (jp_root_dir / "notes.md").write_text("one\n", encoding="utf-8")
    async with collaborator("", "global") as lab, collaborator(path) as human:
        client = await stack.enter_async_context(mcp_client())
        await lab.set_awareness({"user": {"username": "alice", "name": "Alice"}, "current": None, "documents": []})
        await call_tool(
            client, "update_cursor_position", document_path=path, cell_id="c1", position={"line": 1, "column": 1}
        )
        [doc_state] = await within(human.wait_awareness(lambda: human.agents(), limit=3))
        [state] = await within(lab.wait_awareness(lambda: lab.agents(), limit=3))
        assert state["user"] == doc_state["user"]
        assert state["agent"] == {"client": doc_state["agent"]["client"], "status": "online", "message": None}
        assert (state["current"], state["documents"]) == (f"notebook:{path}", [path])

        await call_tool(client, "update_cursor_position", document_path="notes.md", position={"line": 1, "column": 1})
        state = await within(
            lab.wait_awareness(lambda: (a := lab.agents()) and a[0]["current"] == "editor:notes.md" and a[0], limit=3)
        )
        assert state["documents"] == [path, "notes.md"]

        # someone opening JupyterLab later sees the agent at once (a renewal on the room's new client)
        async with collaborator("", "global") as late:
            await within(late.wait_awareness(lambda: late.agents(), limit=3))

        await call_tool(client, "leave_session", document_path="notes.md")
        await within(lab.wait_awareness(lambda: (a := lab.agents()) and a[0]["documents"] == [path], limit=3))
        await call_tool(client, "leave_session", document_path=path)
        await within(lab.wait_awareness(lambda: not lab.agents(), limit=3))  # in no document: out of the panel
        await call_tool(
            client, "update_cursor_position", document_path=path, cell_id="c0", position={"line": 1, "column": 1}
        )
        await within(lab.wait_awareness(lambda: lab.agents(), limit=3))
        await stack.aclose()  # its session ends: it leaves the global room at once
        await within(lab.wait_awareness(lambda: not lab.agents(), limit=3))


async def test_an_agent_points_people_at_a_cell(mcp_client: Any, make_notebook: Any, collaborator: Any) -> None:
    path = make_notebook("point.ipynb", CELLS)
    async with collaborator(path) as human, mcp_client() as client:
        await call_tool(
            client, "update_cursor_position", document_path=path, cell_id="c0", position={"line": 1, "column": 1}
        )
        await call_tool(client, "point_at", path=path, cell_id="c2", message="the notes explain b")

        def point() -> Any:
            agents = human.agents()
            return agents[0]["agent"].get("point") if agents else None

        first = await within(human.wait_awareness(point, limit=3))
        assert (first["cell_id"], first["message"]) == ("c2", "the notes explain b")
        assert isinstance(first["at"], int) and first["at"] > 1_700_000_000_000  # epoch milliseconds
        assert human.agents()[0]["agent"]["cell_id"] == "c0"  # pointing moves nothing, its own cell included

        await call_tool(client, "point_at", path=path, cell_id="c1", message="look here")
        second = await within(human.wait_awareness(lambda: (p := point()) and p["cell_id"] == "c1" and p, limit=3))
        assert second["message"] == "look here" and second["at"] >= first["at"]  # replaced, not added
        await call_tool(client, "point_at", path=path)  # no cell: stop pointing
        await within(human.wait_awareness(lambda: human.agents() and point() is None, limit=3))

        error = await tool_error(client, "point_at", path=path, cell_id="nope", message="x")
        assert "no cell with id 'nope'" in error
        error = await tool_error(client, "point_at", path=path, cell_id="c1", message="x" * 201)
        assert "at most 200" in error
        error = await tool_error(client, "point_at", path="missing.ipynb", cell_id="c1")
        assert "missing.ipynb" in error
