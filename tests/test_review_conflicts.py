"""A person's accept that turns another agent's pending suggestion into a conflict is told to that agent: on its
next call (a notice, in both eras) and, on a session with a stream, in the notification of the new state; both
name the cell and why. Accepting the conflicting suggestion then answers 409 naming the conflict. Against a real
server with its token, real MCP clients over HTTP, and a person's Yjs client."""

from __future__ import annotations

from typing import Any

import mcp_types
import pytest
from mcp_types import Implementation

from .conftest import call_tool, received, until
from .test_review import People, api  # noqa: F401  (the fixture)

pytestmark = pytest.mark.usefixtures("jp_serverapp")


@pytest.fixture
def people(http: Any, api: str, auth: dict[str, str]) -> People:  # noqa: F811
    return People(http, api, auth)


FIRST = Implementation(name="first-agent", version="1")
SECOND = Implementation(name="second-agent", version="1")
THIRD = Implementation(name="third-agent", version="1")


async def propose(client: Any, path: str, content: str) -> str:
    await call_tool(client, "get_notebook", path=path)
    done = await call_tool(
        client, "batch_update_notebook_cells", path=path, propose=True, updates=[{"cell_id": "c0", "content": content}]
    )
    return str(done["suggestion"]["id"])


def notice_of(result: Any) -> str:
    return str((result.structured_content or {}).get("notice", ""))


async def test_an_accept_that_makes_another_agents_suggestion_conflict_is_told_to_that_agent(
    mcp_client: Any, make_notebook: Any, collaborator: Any, people: People
) -> None:
    path = make_notebook("conflicts.ipynb", [{"cell_type": "code", "source": "x = 1\ny = 2", "id": "c0"}])
    notes: list[Any] = []

    async def logged(params: mcp_types.LoggingMessageNotificationParams) -> None:
        notes.append(params.data)

    async with (
        collaborator(path) as human,
        mcp_client(client_info=FIRST) as first,
        mcp_client(mode="2026-07-28", client_info=SECOND) as second,
        mcp_client(client_info=THIRD, logging_callback=logged) as third,
    ):
        accepted = await propose(first, path, "x = 7\ny = 2")
        stateless = await propose(second, path, "x = 9\ny = 2")  # the same characters: they will conflict
        stateful = await propose(third, path, "x = 5\ny = 2")
        assert (await people.decide(accepted, "accept")).status_code == 200
        await human.wait_until(lambda: human.sources()[0] == "x = 7\ny = 2")

        # the stateless agent's next call (any tool) says so, naming the suggestion, the cell and why
        result = await second.call_tool("list_notebooks", {})
        assert not result.is_error
        notice = notice_of(result)
        assert stateless in notice and "conflict" in notice and "c0" in notice, notice
        assert accepted[:8] in notice and path in notice
        assert stateless in result.content[0].text
        # once: the call after it carries no such notice
        assert stateless not in notice_of(await second.call_tool("list_notebooks", {}))
        assert (await call_tool(second, "get_suggestion", suggestion_id=stateless))["state"] == "conflict"

        # the session with a stream gets the new state in a notification that names the cell, and the notice too
        await until(lambda: any(n.get("suggestion_id") == stateful for n in notes), what="the notification")
        (note,) = [n for n in notes if n.get("suggestion_id") == stateful]
        assert note["state"] == "conflict" and note["cells"] == [
            {"cell_id": "c0", "state": "conflict", "reason": f"accepting suggestion {accepted[:8]} changed the same "
             "text of the cell"}
        ]  # fmt: skip
        assert stateful in notice_of(await third.call_tool("list_notebooks", {}))
        # the first agent, whose suggestion was accepted, is told of no conflict
        assert "conflict" not in notice_of(await first.call_tool("list_notebooks", {}))

        # accepting the conflicting suggestion answers 409 naming the conflict and its cell
        refused = await people.decide(stateless, "accept")
        assert refused.status_code == 409
        assert "conflict" in refused.json()["message"] and "c0" in refused.json()["message"]
        assert human.sources()[0] == "x = 7\ny = 2"


async def test_an_accept_that_conflicts_with_a_persons_typing_is_told_to_the_agent(
    mcp_client: Any, make_notebook: Any, collaborator: Any, people: People, jp_serverapp: Any
) -> None:
    path = make_notebook("typed.ipynb", [{"cell_type": "code", "source": "a = 1", "id": "c0"}])
    async with collaborator(path) as human, mcp_client(mode="2026-07-28", client_info=SECOND) as agent:
        sid = await propose(agent, path, "a = 7")
        human.type_into(0, 4, "0")  # the person changes the very characters the suggestion changes
        await received(jp_serverapp, human)
        refused = await people.decide(sid, "accept")
        assert refused.status_code == 409 and "c0" in refused.json()["message"]
        notice = notice_of(await agent.call_tool("list_notebooks", {}))
        assert sid in notice and "conflict" in notice and "c0" in notice, notice
        assert human.sources()[0] == "a = 01"
