"""No ghosts: an agent leaves people's awareness soon after its last call, and every view of who is there agrees.

A stateless (2026-era) client has no session whose end says it left: it leaves ``stateless_presence_timeout``
(10 s) after its last call ended, while a call still running keeps it. A session-bound agent stays while its
session is open and leaves the moment the session ends. A client that keeps no cookie gets a new random
Jupyter user on every request; it is still one agent. A collaborator on the room websocket watches; presence
ages on the service's clock, moved here by hand, so no test waits for real time to pass.
"""

from __future__ import annotations

from typing import Any

import httpx2
import pytest

from .conftest import MCP_HEADERS, call_tool, document_room, until, within

pytestmark = pytest.mark.usefixtures("jp_serverapp")

MODERN = "2026-07-28"
CELLS = [{"cell_type": "code", "source": "a = 1", "id": "c0"}, {"cell_type": "code", "source": "b = 2", "id": "c1"}]
ALICE = {"username": "alice", "name": "Alice", "display_name": "Alice Liddell", "initials": "AL", "color": "#f00"}
CURSOR = {"cell_id": "c0", "position": {"line": 1, "column": 2}}


class Clock:
    """The presence service's clock, moved by hand."""

    def __init__(self, extension: Any) -> None:
        self.now = 1000.0
        self.presence = extension.presence
        self.presence.clock = lambda: self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


async def views(client: Any, path: str) -> tuple[list[str], list[str]]:
    """Who is in the document, as get_notebook's collaboration.users and as get_online_users say it."""
    notebook = await call_tool(client, "get_notebook", path=path, include_outputs=False)
    online = await call_tool(client, "get_online_users", document_path=path)
    return (
        sorted(u["username"] for u in notebook["collaboration"]["users"]),
        sorted(u["user_id"] for u in online["users"]),
    )


@pytest.mark.parametrize("mode", ["legacy", MODERN])
async def test_an_agent_leaves_soon_after_its_last_call_or_at_once_with_its_session(
    mcp_client: Any, make_notebook: Any, collaborator: Any, extension: Any, mode: str
) -> None:
    clock = Clock(extension)
    path = make_notebook("ghost.ipynb", CELLS)
    async with collaborator(path) as human:
        async with mcp_client(mode=mode) as client:
            await call_tool(client, "update_cursor_position", document_path=path, **CURSOR)
            [state] = await within(human.wait_awareness(lambda: human.agents(), limit=3))
            agent = state["user"]["username"]
            notebook, online = await views(client, path)
            assert notebook == online == [agent]

            clock.advance(9.9)  # just under the bound: still there
            extension.presence.sweep()
            assert [a["user"]["username"] for a in human.agents()] == [agent]
            clock.advance(0.1)  # 10 s after the last call ended
            if mode == MODERN:
                await within(human.wait_awareness(lambda: not human.agents(), limit=3))
                assert extension.presence.agent(agent) is None  # forgotten, not merely hidden
            else:  # its session is open: it stays (presence_timeout, 60 s) until the session ends
                extension.presence.sweep()
                assert [a["user"]["username"] for a in human.agents()] == [agent]
        if mode == "legacy":  # the session ended: at once, with no clock moved
            await within(human.wait_awareness(lambda: not human.agents(), limit=3))
        async with mcp_client(mode="legacy") as observer:
            assert await views(observer, path) == ([], [])  # the observer only reads: it is in no room


async def test_a_running_call_keeps_a_stateless_agent_and_its_end_starts_the_count(
    mcp_client: Any, make_notebook: Any, collaborator: Any, extension: Any
) -> None:
    clock = Clock(extension)
    path = make_notebook("long.ipynb", CELLS)
    seen: list[int] = []
    async with collaborator(path) as human, mcp_client(mode=MODERN) as client:
        await call_tool(client, "update_cursor_position", document_path=path, **CURSOR)
        await within(human.wait_awareness(lambda: human.agents(), limit=3))

        async def progress(step: float, total: float | None, message: str | None) -> None:
            if step == 2:  # the call runs on, a minute later on the service's clock
                clock.advance(61)
                extension.presence.sweep()
                seen.append(len(human.agents()))

        result = await within(
            client.call_tool("test_progress_stream", {"count": 3, "interval": 0.05}, progress_callback=progress)
        )
        assert not result.is_error
        assert seen == [1]
        clock.advance(9.9)  # counted from the call's end, not its start
        extension.presence.sweep()
        assert len(human.agents()) == 1
        clock.advance(0.1)
        await within(human.wait_awareness(lambda: not human.agents(), limit=3))


async def test_a_client_without_cookies_is_one_agent_and_every_view_agrees(
    mcp_url: str, auth: dict[str, str], make_notebook: Any, collaborator: Any, extension: Any, jp_serverapp: Any
) -> None:
    """Each request below comes from a fresh HTTP client, so Jupyter makes up a new anonymous user for each."""
    clock = Clock(extension)
    path = make_notebook("cookies.ipynb", CELLS)

    async def call(name: str, arguments: dict[str, Any]) -> Any:
        meta = {
            "io.modelcontextprotocol/protocolVersion": MODERN,
            "io.modelcontextprotocol/clientCapabilities": {},
            "io.modelcontextprotocol/clientInfo": {"name": "curl-agent", "version": "1"},
        }
        headers = {**MCP_HEADERS, **auth, "MCP-Protocol-Version": MODERN, "Mcp-Method": "tools/call", "Mcp-Name": name}
        body = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": name, "arguments": arguments}}
        body["params"]["_meta"] = meta
        async with httpx2.AsyncClient(timeout=20) as http:
            response = await http.post(mcp_url, json=body, headers=headers)
        assert response.status_code == 200, response.text
        result = response.json()["result"]
        assert not result["isError"], result
        return result["structuredContent"]

    async with collaborator(path) as human, collaborator(path) as second_tab:
        for tab in (human, second_tab):  # one person in two tabs: one user in every view
            await tab.set_awareness({"user": ALICE})
        room = document_room(jp_serverapp, path)
        await until(lambda: sum(s.get("user") == ALICE for s in room.awareness.states.values()) == 2)
        await call("update_cursor_position", {"document_path": path, **CURSOR})
        await call(
            "batch_update_notebook_cells",
            {"path": path, "exec": False, "updates": [{"cell_id": "c1", "content": "b = 3"}]},
        )
        await within(human.wait_awareness(lambda: human.agents(), limit=3))
        notebook = await call("get_notebook", {"path": path, "include_outputs": False})
        online = await call("get_online_users", {"document_path": path})
        agents = [a["user"]["username"] for a in human.agents()]
        assert len(agents) == 1, agents  # one agent, not one per request
        assert sorted(u["username"] for u in notebook["collaboration"]["users"]) == sorted(["alice", *agents])
        assert sorted(u["user_id"] for u in online["users"]) == sorted(["alice", *agents])
        assert [u["is_you"] for u in online["users"] if u["is_agent"]] == [True]
        clock.advance(10)
        await within(human.wait_awareness(lambda: not human.agents(), limit=3))
