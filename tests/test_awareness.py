"""The agent as a visible collaborator: awareness seen from a real websocket collaborator, and back."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from .conftest import call_tool, tool_error, until, within

pytestmark = pytest.mark.usefixtures("jp_serverapp")

CELLS = [
    {"cell_type": "code", "source": "a = 1", "id": "c0"},
    {"cell_type": "code", "source": "x = 10\nyy = 22", "id": "c1"},
    {"cell_type": "markdown", "source": "", "id": "c2"},
]
ALICE = {
    "username": "alice",
    "name": "Alice",
    "display_name": "Alice Liddell",
    "initials": "AL",
    "color": "#ff0000",
    "avatar_url": None,
}


def agent_state(human: Any) -> Any:
    agents = human.agents()
    return agents[0] if agents else None


async def test_agent_appears_with_its_cursor_and_leaves_with_its_session(
    mcp_client: Any, make_notebook: Any, collaborator: Any
) -> None:
    path = make_notebook("aware.ipynb", CELLS)
    async with collaborator(path) as human:
        async with mcp_client() as client:
            await call_tool(
                client, "update_cursor_position", document_path=path, cell_id="c1", position={"line": 2, "column": 3}
            )
            state = await human.wait_awareness(lambda: agent_state(human), limit=2)
            user = state["user"]
            assert user["username"].startswith("mcp-agent-")
            assert user["display_name"].endswith("(AI agent)")
            assert user["color"].startswith("#")
            assert user["initials"]
            assert user["avatar_url"] is None
            assert state["agent"]["status"] == "online"
            assert state["autosave"] is True
            [cursor] = state["cursors"]
            assert cursor["primary"] is True
            assert cursor["empty"] is True
            assert set(cursor["anchor"]) == {"type", "tname", "item", "assoc"}  # Yjs needs all four
            # line 2, column 3 of "x = 10\nyy = 22" is character 7 + 2 = 9, in cell index 1
            assert human.locate(cursor["head"]) == (1, 9)
            assert human.locate(cursor["anchor"]) == (1, 9)

            # a selection: anchor at the start, caret at its end
            await call_tool(
                client,
                "update_cursor_position",
                document_path=path,
                cell_id="c0",
                position={"line": 1, "column": 6},
                selection={"start": {"line": 1, "column": 1}, "end": {"line": 1, "column": 6}},
            )

            def selected() -> Any:
                s = agent_state(human)
                return s if s and not s["cursors"][0]["empty"] else None

            cursor = (await human.wait_awareness(selected, limit=2))["cursors"][0]
            assert human.locate(cursor["anchor"]) == (0, 0)
            assert human.locate(cursor["head"]) == (0, 5)  # the end of "a = 1"
        # the MCP client exited: its session ended, so its presence left the room
        await human.wait_awareness(lambda: not human.agents(), limit=3)


async def test_agent_edits_move_its_cursor_and_are_logged(
    mcp_client: Any, make_notebook: Any, collaborator: Any
) -> None:
    path = make_notebook("edits.ipynb", CELLS)
    async with collaborator(path) as human, mcp_client() as client:
        await call_tool(
            client,
            "batch_update_notebook_cells",
            path=path,
            exec=False,
            updates=[{"cell_id": "c2", "content": "# Title"}],
        )

        def in_c2() -> Any:
            s = agent_state(human)
            return s if s and s.get("cursors") and human.locate(s["cursors"][0]["head"])[0] == 2 else None

        state = await human.wait_awareness(in_c2, limit=2)
        assert human.locate(state["cursors"][0]["head"]) == (2, len("# Title"))
        activity = await call_tool(client, "get_user_activity", document_path=path)
        assert activity["activities"][0]["type"] == "edit"
        assert activity["activities"][0]["user_id"] == state["user"]["username"]


async def test_agent_reads_a_collaborators_cursor(mcp_client: Any, make_notebook: Any, collaborator: Any) -> None:
    path = make_notebook("cursors.ipynb", CELLS)
    async with collaborator(path) as human, mcp_client() as client:

        async def alice_at(index: int, anchor: int, head: int, column: int) -> dict[str, Any]:
            await human.set_awareness(
                {
                    "user": ALICE,
                    "cursors": [
                        {
                            "anchor": human.relative(index, anchor),
                            "head": human.relative(index, head),
                            "primary": True,
                            "empty": anchor == head,
                        }
                    ],
                }
            )
            mine: list[dict[str, Any]] = []

            async def shown() -> bool:
                found = await call_tool(client, "get_user_cursors", document_path=path)
                mine[:] = [c for c in found["cursors"] if c["user_id"] == "alice"]
                return bool(mine) and mine[0]["cell_id"] == CELLS[index]["id"] and mine[0]["column"] == column

            await until(shown, limit=5, what=f"alice's cursor at {CELLS[index]['id']}:{column}")
            return dict(mine[0])

        cursor = await alice_at(0, 2, 4, 5)  # "a = 1": selected "= " with the caret before "1"
        assert cursor["name"] == "Alice Liddell"
        assert cursor["is_agent"] is False
        assert (cursor["line"], cursor["column"]) == (1, 5)
        assert cursor["selection"] == {"start": {"line": 1, "column": 3}, "end": {"line": 1, "column": 5}}
        # the end of a cell (a position sticking to the last character) and a second line
        cursor = await alice_at(1, 14, 14, 8)
        assert (cursor["cell_id"], cursor["line"], cursor["column"], cursor["selection"]) == ("c1", 2, 8, None)
        # an empty cell: the position names the cell's text type, not a character
        cursor = await alice_at(2, 0, 0, 1)
        assert (cursor["cell_id"], cursor["line"], cursor["column"]) == ("c2", 1, 1)


async def test_cursors_in_a_text_file_count_characters(mcp_client: Any, jp_root_dir: Path, collaborator: Any) -> None:
    (jp_root_dir / "notes.md").write_text("héllo 😀 wörld\nsecond line\n", encoding="utf-8")
    async with collaborator("notes.md", "file") as human, mcp_client() as client:
        await call_tool(client, "update_cursor_position", document_path="notes.md", position={"line": 1, "column": 9})
        state = await human.wait_awareness(lambda: agent_state(human), limit=2)
        assert human.locate(state["cursors"][0]["head"]) == (None, 8)  # after "héllo 😀 "
        await human.set_awareness(
            {"user": ALICE, "cursors": [{"anchor": human.relative(None, 10), "head": human.relative(None, 10)}]}
        )
        found: dict[str, Any] = {}

        async def alice_shown() -> bool:
            found.update(await call_tool(client, "get_user_cursors", document_path="notes.md"))
            return any(c["user_id"] == "alice" for c in found["cursors"])

        await until(alice_shown, limit=5, what="alice's cursor")
        alice = [c for c in found["cursors"] if c["user_id"] == "alice"]
        assert (alice[0]["cell_id"], alice[0]["line"], alice[0]["column"]) == (None, 1, 11)
        agent = [c for c in found["cursors"] if c["is_agent"]]
        assert (agent[0]["line"], agent[0]["column"]) == (1, 9)
        error = await tool_error(
            client, "update_cursor_position", document_path="notes.md", position={"line": 1, "column": 1}, cell_id="x"
        )
        assert "leave cell_id out" in error


async def test_online_users_sessions_join_and_leave(mcp_client: Any, make_notebook: Any, collaborator: Any) -> None:
    path = make_notebook("together.ipynb", CELLS)
    async with collaborator(path) as human, mcp_client() as client:
        await human.set_awareness({"user": ALICE, "autosave": False})
        users: list[dict[str, Any]] = []

        async def alice_online() -> bool:
            users[:] = (await call_tool(client, "get_online_users"))["users"]
            return any(u["user_id"] == "alice" for u in users)

        await until(alice_online, limit=5, what="alice online")
        [alice] = [u for u in users if u["user_id"] == "alice"]
        assert alice == {**alice, "display_name": "Alice Liddell", "documents": [path], "is_agent": False}
        assert alice["color"] == "#ff0000"

        sessions = (await call_tool(client, "get_active_sessions", document_path=path))["sessions"]
        [session] = sessions
        assert session["session_id"] == human.room_id
        assert session["document_path"] == path
        assert {"user_id": "alice", "name": "Alice Liddell", "is_agent": False} in session["participants"]

        presence = await call_tool(client, "get_user_presence", user_id="alice")
        assert (presence["status"], presence["current_document"]) == ("online", path)
        assert presence["last_activity"]

        joined = await call_tool(client, "join_session", session_id=human.room_id)
        assert joined["document_path"] == path
        assert any(p["is_agent"] for p in joined["participants"])
        state = await human.wait_awareness(lambda: agent_state(human), limit=2)
        assert state["autosave"] is False  # copied from the people in the room, or the room would autosave
        me = (await call_tool(client, "get_online_users", document_path=path))["users"]
        assert [u["is_you"] for u in me if u["is_agent"]] == [True]

        await call_tool(client, "set_user_presence", status="busy", message="refactoring")
        state = await human.wait_awareness(
            lambda: (s := agent_state(human)) and s["agent"]["status"] == "busy" and s, limit=2
        )
        assert state["agent"]["message"] == "refactoring"
        mine = await call_tool(client, "get_user_presence", user_id=state["user"]["username"], document_path=path)
        assert (mine["status"], mine["message"], mine["is_agent"]) == ("busy", "refactoring", True)
        assert mine["current_document"] == path

        left = await call_tool(client, "leave_session", session_id=human.room_id)
        assert left["ok"] is True
        await human.wait_awareness(lambda: not human.agents(), limit=2)
        again = await call_tool(client, "leave_session", session_id=human.room_id)
        assert again["detail"] == "this agent was not in that session"


async def test_bad_inputs_are_tool_errors(mcp_client: Any, make_notebook: Any) -> None:
    path = make_notebook("bad.ipynb", CELLS)
    async with mcp_client() as client:
        error = await tool_error(
            client, "update_cursor_position", document_path=path, cell_id="nope", position={"line": 1, "column": 1}
        )
        assert "no cell with id 'nope'" in error
        error = await tool_error(
            client, "update_cursor_position", document_path=path, cell_id="c1", position={"line": 3, "column": 1}
        )
        assert "line 3 out of range: cell 'c1' has 2 line(s) (1-2)" in error
        error = await tool_error(
            client, "update_cursor_position", document_path=path, cell_id="c0", position={"line": 1, "column": 7}
        )
        assert "column 7 out of range" in error and "columns 1-6" in error
        error = await tool_error(
            client, "update_cursor_position", document_path=path, position={"line": 1, "column": 1}
        )
        assert "cell_id is required for notebooks" in error
        error = await tool_error(client, "join_session", session_id="json:notebook:nope")
        assert "no open collaboration session" in error and "get_active_sessions" in error
        error = await tool_error(client, "leave_session", session_id="nope")
        assert "no open collaboration session" in error
        error = await tool_error(client, "set_user_presence", status="asleep")
        assert "not one of online, away, busy, offline" in error
        error = await tool_error(client, "get_user_cursors", document_path="missing.ipynb")
        assert "no notebook or text file at 'missing.ipynb'" in error
        error = await tool_error(client, "get_user_presence", user_id="nobody")
        assert "not in any open document" in error
        error = await tool_error(client, "broadcast_user_activity", activity_type="", description="x")
        assert "activity_type" in error


class TestBoundsAndTimeouts:
    @pytest.fixture
    def mcp_config(self) -> dict[str, Any]:
        return {"max_activity_entries": 5, "presence_timeout": 1.5}

    async def test_activity_log_is_bounded_and_broadcasts_reach_people(
        self, mcp_client: Any, make_notebook: Any, collaborator: Any
    ) -> None:
        path = make_notebook("log.ipynb", CELLS)
        async with collaborator(path) as human, mcp_client() as client:
            for i in range(7):
                await call_tool(client, "broadcast_user_activity", activity_type="analyzing", description=f"step {i}")
            await call_tool(
                client,
                "broadcast_user_activity",
                activity_type="reviewing",
                description="reading cell c1",
                document_path=path,
                metadata={"cell_id": "c1"},
            )
            log = (await call_tool(client, "get_user_activity", limit=100))["activities"]
            assert [a["description"] for a in log] == ["reading cell c1", "step 6", "step 5", "step 4", "step 3"]
            assert log[0]["metadata"] == {"cell_id": "c1"}
            assert log[0]["document_path"] == path
            only = (await call_tool(client, "get_user_activity", document_path=path))["activities"]
            assert [a["type"] for a in only] == ["reviewing"]
            state = await human.wait_awareness(lambda: agent_state(human), limit=2)
            assert state["agent"]["activity"]["description"] == "reading cell c1"

    async def test_presence_times_out_without_calls_and_late_joiners_see_it(
        self, mcp_client: Any, make_notebook: Any, collaborator: Any, extension: Any
    ) -> None:
        """Presence ages on the service's clock, moved here by hand: on a busy machine a call can take longer
        than the timeout, and a test racing real time would see the agent leave between two calls."""
        now = [0.0]
        extension.presence.clock = lambda: now[0]
        path = make_notebook("idle.ipynb", CELLS)
        async with collaborator(path) as first, mcp_client() as client:
            await call_tool(
                client, "update_cursor_position", document_path=path, cell_id="c0", position={"line": 1, "column": 1}
            )
            await first.wait_awareness(lambda: agent_state(first), limit=2)
            # someone joining later gets the agent's state at the next renewal tick, not after 10+ s
            async with collaborator(path) as late:
                await late.wait_awareness(lambda: agent_state(late), limit=3)
            # any call keeps the agent present, reads included: 10 s pass, a call every second
            for _ in range(10):
                now[0] += 1.0
                await call_tool(client, "get_notebook_info", path=path)
            extension.presence.sweep()
            assert agent_state(first)
            # no call for presence_timeout: the agent leaves although its session is still open
            now[0] += 2.0
            await first.wait_awareness(lambda: not first.agents(), limit=20)
            await call_tool(
                client, "update_cursor_position", document_path=path, cell_id="c0", position={"line": 1, "column": 2}
            )
            await within(first.wait_awareness(lambda: agent_state(first), limit=2))


async def test_two_sessions_in_one_room_are_two_collaborators(
    mcp_client: Any, make_notebook: Any, collaborator: Any
) -> None:
    path = make_notebook("pair.ipynb", CELLS)
    async with collaborator(path) as human, mcp_client() as first:
        async with mcp_client() as second:
            for client, cell in ((first, "c0"), (second, "c1")):
                await call_tool(
                    client,
                    "update_cursor_position",
                    document_path=path,
                    cell_id=cell,
                    position={"line": 1, "column": 1},
                )
            agents = await human.wait_awareness(lambda: len(human.agents()) == 2 and human.agents(), limit=2)
            assert len({a["user"]["username"] for a in agents}) == 2
            assert sorted(human.locate(a["cursors"][0]["head"])[0] for a in agents) == [0, 1]
        # only the session that ended leaves
        await human.wait_awareness(lambda: len(human.agents()) == 1, limit=3)
