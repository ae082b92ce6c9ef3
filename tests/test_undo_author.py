"""A person's own undo (Ctrl+Z in JupyterLab) is theirs in history, named like their typing.

Undoing typing sends a delete-only Yjs update: no structs, so no client id in its header, only a delete set
(the clients and clocks of the items it deletes). History named nobody for it.
"""

from __future__ import annotations

from typing import Any

import pytest

from .conftest import document_room, until
from .test_history import THREE, history, in_history, update_cell

pytestmark = pytest.mark.usefixtures("jp_serverapp")


async def test_a_persons_undo_names_the_person(
    mcp_client: Any, make_notebook: Any, collaborator: Any, jp_serverapp: Any
) -> None:
    path = make_notebook("undo.ipynb", THREE)
    async with collaborator(path) as human, mcp_client() as client:
        await human.set_awareness({"user": {"username": "alice", "display_name": "Alice Doe"}, "autosave": True})
        room = document_room(jp_serverapp, path)
        assert room is not None
        await until(
            lambda: any((s or {}).get("user", {}).get("username") == "alice" for s in room.awareness.states.values())
        )
        human.type_into(2, 4, "40 + ")
        await in_history(jp_serverapp, human)
        await update_cell(client, path, "c0", "x = 'agent'")  # between the two: they stay two versions
        await human.wait_until(lambda: human.sources()[0] == "x = 'agent'")
        source = human.document.ycells[2]["source"]
        del source[4:9]  # what JupyterLab's undo of that typing sends: a delete of the person's own items
        versions: list[dict[str, Any]] = []

        async def listed() -> bool:  # a pure deletion advances no state vector: wait for its version instead
            versions[:] = await history(client, path)
            return len(versions) >= 4

        await until(listed, what="the undo in history")
        assert [(v["source"], v["author"]) for v in versions[:3]] == [
            ("user", "Alice Doe"),
            ("agent", versions[1]["author"]),
            ("user", "Alice Doe"),
        ]
        assert versions[0]["summary"] == "1 change by Alice Doe"

        # deleting the agent's text: the items are the server's, so the one person in the room sent it
        await update_cell(client, path, "c1", "y = 'agent'")
        await human.wait_until(lambda: human.sources()[1] == "y = 'agent'")
        agents = human.document.ycells[0]["source"]
        del agents[4:11]
        count = len(versions)

        async def more() -> bool:
            versions[:] = await history(client, path)
            return len(versions) >= count + 2

        await until(more, what="the deletion in history")
        assert [(v["source"], v["author"]) for v in versions[:2]] == [
            ("user", "Alice Doe"),
            ("agent", versions[1]["author"]),
        ]
