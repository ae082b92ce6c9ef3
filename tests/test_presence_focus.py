"""What people are looking at: get_online_users' ``focused_document`` (JupyterLab's global awareness) and, per
document, the cell a person is in and whether they typed there just now; ``notebook://current``."""

from __future__ import annotations

from typing import Any

import pytest
from mcp.shared.exceptions import MCPError

from jupyter_pair_mcp.services.presence_focus import focus_of, focused_notebook

from .conftest import call_tool, until, within

pytestmark = pytest.mark.usefixtures("jp_serverapp")

CELLS = [
    {"cell_type": "code", "source": "a = 1", "id": "c0"},
    {"cell_type": "code", "source": "b = 2", "id": "c1"},
    {"cell_type": "markdown", "source": "# notes", "id": "c2"},
]
ALICE = {"username": "alice", "name": "Alice", "display_name": "Alice L", "color": "#ff0000"}
WINDOW = 0.3  # seconds a keystroke counts as typing, here


@pytest.fixture
def mcp_config(mcp_config: dict[str, Any]) -> dict[str, Any]:
    return {**mcp_config, "typing_window": WINDOW}


async def alice(client: Any, path: str | None = None) -> dict[str, Any] | None:
    users = (await call_tool(client, "get_online_users", **({"document_path": path} if path else {})))["users"]
    return next((u for u in users if u["user_id"] == "alice"), None)


def cursor_at(human: Any, index: int, position: int) -> dict[str, Any]:
    relative = human.relative(index, position)
    return {"anchor": relative, "head": relative, "primary": True, "empty": True}


async def test_a_persons_cell_and_typing_are_reported(mcp_client: Any, make_notebook: Any, collaborator: Any) -> None:
    path = make_notebook("focus.ipynb", CELLS)
    async with collaborator(path) as human, mcp_client() as client:
        await human.set_awareness({"user": ALICE, "cursors": [cursor_at(human, 1, 2)]})
        found: dict[str, Any] = {}

        async def placed(cell_id: str) -> bool:
            found["user"] = user = await alice(client, path)
            return bool(user and user["positions"] and user["positions"][0]["cell_id"] == cell_id)

        await until(lambda: placed("c1"), what="alice's cursor in c1")
        assert found["user"]["positions"] == [{"path": path, "cell_id": "c1", "index": 1, "typing": False}]
        assert found["user"]["documents"] == [path]

        # she moves to the last cell, then a cell is inserted above it: the index follows, from the cell index
        await human.set_awareness({"user": ALICE, "cursors": [cursor_at(human, 2, 3)]})
        await until(lambda: placed("c2"), what="alice's cursor in c2")
        human.insert_cell(0, "first")

        async def moved() -> bool:
            return await placed("c2") and found["user"]["positions"][0]["index"] == 3

        await until(moved, what="c2's index after an insert")

        # a frontend that publishes the active cell (activeCellId) is read without decoding cursors
        await human.set_awareness({"user": ALICE, "activeCellId": "c0"})
        await until(lambda: placed("c0"), what="alice's active cell c0")
        assert found["user"]["positions"][0]["index"] == 1

        async def typing() -> bool:
            human.type_into(1, 0, "x")  # a keystroke on each look: seen however slow the look is
            user = await alice(client, path)
            return bool(user and user["positions"][0]["typing"])

        await until(typing, what="alice typing")

        async def stopped() -> bool:
            user = await alice(client, path)
            return bool(user and not user["positions"][0]["typing"])

        await until(stopped, what="alice's typing flag clearing after the window")


async def test_typing_is_per_person(mcp_client: Any, make_notebook: Any, collaborator: Any) -> None:
    """Bob's keystrokes do not make Alice typing: attribution is by the Yjs client id of the update."""
    path = make_notebook("two.ipynb", CELLS)
    bob = {**ALICE, "username": "bob", "name": "Bob"}
    async with collaborator(path) as a, collaborator(path) as b, mcp_client() as client:
        await a.set_awareness({"user": ALICE})
        await b.set_awareness({"user": bob})
        seen: dict[str, Any] = {}

        async def bob_typing() -> bool:
            b.type_into(0, 0, "y")
            users = (await call_tool(client, "get_online_users", document_path=path))["users"]
            seen.update({u["user_id"]: u["positions"][0]["typing"] for u in users if u["positions"]})
            return bool(seen.get("bob"))

        await until(bob_typing, what="bob typing")
        assert seen["alice"] is False


async def test_focused_document_and_notebook_current(mcp_client: Any, make_notebook: Any, collaborator: Any) -> None:
    path = make_notebook("seen.ipynb", CELLS)
    other = make_notebook("other.ipynb", CELLS)
    async with collaborator("", "global") as lab, collaborator(path) as human, mcp_client() as client:
        with pytest.raises(MCPError) as failure:  # nobody has focused a notebook yet
            await within(client.read_resource("notebook://current"))
        assert "no notebook is focused in JupyterLab" in str(failure.value)

        await human.set_awareness({"user": ALICE})
        await lab.set_awareness({"user": ALICE, "current": f"notebook:{other}", "documents": [path, other]})
        await until(lambda: _focused(client, other), what="alice's focused document from the global awareness")
        # notebook://current reads the focused notebook as notebook://{path} does
        read = (await within(client.read_resource("notebook://current"))).contents[0]
        assert "a = 1" in read.text and read.meta["path"] == other
        templates = {t.uri_template for t in (await within(client.list_resource_templates())).resource_templates}
        assert "notebook://current" in templates

        await lab.set_awareness({"user": ALICE, "current": "launcher:launcher-0", "documents": [path]})
        await until(lambda: _focused(client, None), what="no document focused")
        with pytest.raises(MCPError) as failure:
            await within(client.read_resource("notebook://current"))
        assert "no notebook is focused in JupyterLab" in str(failure.value)


async def _focused(client: Any, expected: str | None) -> bool:
    user = await alice(client)
    return bool(user and user["focused_document"] == expected)


class _Room:
    """A global awareness room's states and meta, for the pure-logic choice of the focused notebook."""

    def __init__(self, states: dict[int, dict[str, Any]], updated: dict[int, int]) -> None:
        self.awareness = type("A", (), {"states": states, "meta": {c: {"lastUpdated": t} for c, t in updated.items()}})


def test_the_focused_notebook_is_the_users_latest_tab_and_never_an_agents() -> None:
    room = _Room(
        {
            1: {"user": {"username": "alice"}, "current": "notebook:old.ipynb"},
            2: {"user": {"username": "alice"}, "current": "notebook:new.ipynb"},
            3: {"user": {"username": "bob"}, "current": "notebook:bob.ipynb"},
            4: {"user": {"username": "mcp-agent-x"}, "agent": {}, "current": "notebook:agent.ipynb"},
            5: {"user": {"username": "alice"}, "current": "editor:notes.md"},
        },
        {1: 100, 2: 200, 3: 300, 4: 400, 5: 50},
    )
    assert focused_notebook(room, "alice") == "new.ipynb"
    assert focused_notebook(room, "carol") is None
    assert focused_notebook(room, "carol", anyone=True) == "bob.ipynb"  # single-user server: any person's tab
    assert focused_notebook(None, "alice") is None
    assert focus_of("notebook:a/b:c.ipynb") == ("notebook", "a/b:c.ipynb")
    assert focus_of("launcher:launcher-0") is None and focus_of(None) is None and focus_of("x" * 5000) is None


def test_a_cursor_in_a_big_notebook_is_found_by_bounded_searches() -> None:
    """Past FULL_SEARCH cells a look tries the cells near where the cursor was and one chunk more, never all."""
    from jupyter_ydoc import YNotebook
    from pycrdt import Assoc, Doc, StickyIndex

    from jupyter_pair_mcp.services import presence_focus as pf

    doc = Doc()
    notebook = YNotebook(doc)
    count = pf.FULL_SEARCH + 100
    notebook.set(
        {
            "cells": [{"cell_type": "code", "source": f"x = {i}", "metadata": {}, "id": f"c{i}"} for i in range(count)],
            "metadata": {},
            "nbformat": 4,
            "nbformat_minor": 5,
        }
    )
    room = type("Room", (), {"ydoc": doc})()
    target = count - 10
    head = StickyIndex.new(notebook.ycells[target]["source"], 2, Assoc.AFTER).to_json()
    start, looks = 0, 0
    while True:
        looks += 1
        found, start_next = pf.find_cell(room, head, None, start)
        if found is not None:
            break
        assert start_next == start + pf.CHUNK  # one chunk further each look
        start = start_next
    assert (found, looks) == (f"c{target}", target // pf.CHUNK + 1)
    near = StickyIndex.new(notebook.ycells[target - 5]["source"], 1, Assoc.AFTER).to_json()
    assert pf.find_cell(room, near, target, 0) == (f"c{target - 5}", None)  # near the last cell: the first look
    small = type("Room", (), {"ydoc": Doc()})()
    assert pf.find_cell(small, head, None) == (None, None)  # no such cell, nothing left to search
