"""Conveniences clients of the published designs rely on: save-as, sessions by document path, sessions by directory."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from .conftest import autosaved, call_tool, document_room, received, tool_error

pytestmark = pytest.mark.usefixtures("jp_serverapp")

CELLS = [
    {"cell_type": "markdown", "source": "# Draft", "id": "title"},
    {"cell_type": "code", "source": "x = 1", "id": "code"},
]


def files(root: Path) -> set[str]:
    return {str(p.relative_to(root)) for p in root.rglob("*") if not p.name.startswith(".")}


def disk_cells(path: Path) -> list[tuple[str, str, str]]:
    return [(c["id"], c["cell_type"], "".join(c["source"])) for c in json.loads(path.read_text())["cells"]]


class TestSaveAs:
    @pytest.fixture
    def jp_server_config(self, jp_server_config: Any) -> Any:
        # No autosave during the test: the collaborator's edit stays unsaved until save_notebook writes it.
        jp_server_config.YDocExtension.document_save_delay = 3600
        return jp_server_config

    async def test_save_as_writes_the_live_content_to_a_new_file_and_keeps_the_original_open_and_saved(
        self, mcp_client: Any, make_notebook: Any, collaborator: Any, jp_root_dir: Path, jp_serverapp: Any
    ) -> None:
        path = make_notebook("draft.ipynb", CELLS)
        (jp_root_dir / "final").mkdir()
        async with collaborator(path) as human, mcp_client() as client:
            human.type_into(1, 5, "\ny = 2")  # unsaved: the room holds it, the file does not
            await received(jp_serverapp, human)
            assert disk_cells(jp_root_dir / path)[1][2] == "x = 1"

            result = await call_tool(client, "save_notebook", path=path, new_path="final/report.ipynb")
            assert (result["path"], result["new_path"], result["saved"]) == (path, "final/report.ipynb", True)
            assert result["last_modified"] and result["new_last_modified"]

            live = [(c["id"], c["cell_type"], str(c["source"])) for c in human.cells()]
            assert live[1][2] == "x = 1\ny = 2"
            assert disk_cells(jp_root_dir / "final" / "report.ipynb") == live
            # the original stays open, and saved with the same content
            assert document_room(jp_serverapp, path) is not None
            await autosaved(jp_serverapp, path)
            assert disk_cells(jp_root_dir / path) == live
            # the copy is a notebook of its own: the agent can read it
            read = await call_tool(client, "get_notebook", path="final/report.ipynb")
            assert [c["source"] for c in read["cells"]] == ["# Draft", "x = 1\ny = 2"]

    async def test_save_as_refuses_an_existing_target_and_a_missing_directory_creating_nothing(
        self, mcp_client: Any, make_notebook: Any, collaborator: Any, jp_root_dir: Path, jp_serverapp: Any
    ) -> None:
        path = make_notebook("draft.ipynb", CELLS)
        other = make_notebook("taken.ipynb", [{"cell_type": "code", "source": "keep me", "id": "k"}])
        before = (jp_root_dir / other).read_bytes()
        async with collaborator(path) as human, mcp_client() as client:
            human.type_into(1, 0, "# unsaved\n")
            await received(jp_serverapp, human)
            listing = files(jp_root_dir)

            error = await tool_error(client, "save_notebook", path=path, new_path=other)
            assert "'taken.ipynb' already exists" in error and "never overwrites" in error
            error = await tool_error(client, "save_notebook", path=path, new_path=path)
            assert "already exists" in error
            error = await tool_error(client, "save_notebook", path=path, new_path="nowhere/copy.ipynb")
            assert "directory 'nowhere' does not exist" in error
            error = await tool_error(client, "save_notebook", path=path, new_path="taken.ipynb/copy.ipynb")
            assert "'taken.ipynb' is a notebook, not a directory" in error
            error = await tool_error(client, "save_notebook", path=path, new_path="copy.txt")
            assert "must end in .ipynb" in error
            error = await tool_error(client, "save_notebook", path=path, new_path="../out.ipynb")
            assert "leaves the Jupyter root" in error

            assert files(jp_root_dir) == listing
            assert (jp_root_dir / other).read_bytes() == before
            # nothing was saved either: the refused calls wrote no file, the original's included
            assert disk_cells(jp_root_dir / path)[1][2] == "x = 1"


def agent_in(human: Any) -> bool:
    return bool(human.agents())


async def test_join_and_leave_a_session_by_document_path(
    mcp_client: Any, make_notebook: Any, collaborator: Any, jp_root_dir: Path
) -> None:
    path = make_notebook("shared.ipynb", CELLS)
    (jp_root_dir / "notes.md").write_text("hello\n")
    async with collaborator(path) as human, mcp_client() as client:
        joined = await call_tool(client, "join_session", document_path=path)
        assert (joined["session_id"], joined["document_path"]) == (human.room_id, path)
        assert any(p["is_agent"] for p in joined["participants"])
        await human.wait_awareness(lambda: agent_in(human), limit=3)

        left = await call_tool(client, "leave_session", document_path=path)
        assert left == {**left, "ok": True, "detail": None}
        await human.wait_awareness(lambda: not agent_in(human), limit=3)
        again = await call_tool(client, "leave_session", document_path=path)
        assert again["detail"] == "this agent was not in that document's session"

        # by path, a document nobody has open gets its room opened, and the agent is in it
        joined = await call_tool(client, "join_session", document_path="notes.md")
        sessions = (await call_tool(client, "get_active_sessions", document_path="notes.md"))["sessions"]
        assert [s["session_id"] for s in sessions] == [joined["session_id"]]
        assert [p["is_agent"] for p in sessions[0]["participants"]] == [True]
        # and session_id keeps working
        await call_tool(client, "leave_session", session_id=joined["session_id"])

        error = await tool_error(client, "join_session")
        assert "give either session_id" in error and "neither" in error
        error = await tool_error(client, "join_session", session_id=human.room_id, document_path=path)
        assert "not both" in error
        error = await tool_error(client, "leave_session", document_path="missing.ipynb")
        assert "no notebook or text file at 'missing.ipynb'" in error


async def test_active_sessions_under_a_directory(mcp_client: Any, make_notebook: Any) -> None:
    paths = ["top.ipynb", "proj/a.ipynb", "proj/sub/b.ipynb", "project2/c.ipynb"]
    for path in paths:
        make_notebook(path, CELLS)
    async with mcp_client() as client:
        for path in paths:
            await call_tool(client, "create_notebook_session", path=path)

        async def listed(**arguments: Any) -> set[str]:
            result = await call_tool(client, "get_active_sessions", **arguments)
            return {s["document_path"] for s in result["sessions"]}

        assert await listed(directory="proj") == {"proj/a.ipynb", "proj/sub/b.ipynb"}  # not project2/
        assert await listed(directory="proj/sub/") == {"proj/sub/b.ipynb"}
        assert await listed(directory="") == set(paths)
        assert await listed(directory="proj", document_path="proj/a.ipynb") == {"proj/a.ipynb"}
        assert await listed(directory="proj", document_path="top.ipynb") == set()

        error = await tool_error(client, "get_active_sessions", directory="missing")
        assert "directory 'missing' does not exist" in error
        error = await tool_error(client, "get_active_sessions", directory="top.ipynb")
        assert "directory 'top.ipynb' is a notebook" in error
        error = await tool_error(client, "get_active_sessions", directory="../up")
        assert "leaves the Jupyter root" in error
