"""Review mode (docs/review.md): an agent proposes, a person accepts or rejects cell by cell over REST — against a
real server with its token, a real MCP client over HTTP, and a person typing through a real Yjs client."""

from __future__ import annotations

import asyncio
from typing import Any

import httpx2
import mcp_types
import pytest

from .conftest import ReadOnlyAuthorizer, call_tool, received, stored, tool_error, until, within

pytestmark = pytest.mark.usefixtures("jp_serverapp")

CELLS = [
    {"cell_type": "code", "source": "a = 1", "id": "c0"},
    {"cell_type": "code", "source": "b = 2", "id": "c1"},
    {"cell_type": "code", "source": "c = 3", "id": "c2"},
]


@pytest.fixture
def api(server_root: str, jp_base_url: str) -> str:
    return f"{server_root}{jp_base_url}api/mcp"


class People:
    """What a person's JupyterLab does: the suggestions REST API, with the token."""

    def __init__(self, http: httpx2.AsyncClient, api: str, auth: dict[str, str]) -> None:
        self.http, self.api, self.auth = http, api, auth

    async def listed(self, path: str) -> list[dict[str, Any]]:
        response = await within(self.http.get(f"{self.api}/suggestions", params={"path": path}, headers=self.auth))
        assert response.status_code == 200, response.text
        return list(response.json()["suggestions"])

    async def decide(self, suggestion_id: str, action: str, body: dict[str, Any] | None = None) -> httpx2.Response:
        url = f"{self.api}/suggestions/{suggestion_id}/{action}"
        return await within(self.http.post(url, json=body or {}, headers=self.auth))

    async def review(self, enabled: bool | None = None) -> dict[str, Any]:
        if enabled is None:
            response = await within(self.http.get(f"{self.api}/review", headers=self.auth))
        else:
            response = await within(self.http.put(f"{self.api}/review", json={"enabled": enabled}, headers=self.auth))
        assert response.status_code == 200, response.text
        return dict(response.json())


@pytest.fixture
def people(http: httpx2.AsyncClient, api: str, auth: dict[str, str]) -> People:
    return People(http, api, auth)


def suggestions_of(extension: Any) -> Any:
    return extension.suggestions


async def versions(client: Any, path: str) -> list[dict[str, Any]]:
    return list((await call_tool(client, "get_document_history", path=path))["versions"])


async def test_a_proposal_leaves_the_cell_and_accepting_it_is_one_version_keeping_a_persons_typing(
    mcp_client: Any, make_notebook: Any, collaborator: Any, people: People, jp_serverapp: Any, extension: Any
) -> None:
    path = make_notebook("review.ipynb", CELLS)
    notes: list[Any] = []

    async def logged(params: mcp_types.LoggingMessageNotificationParams) -> None:
        notes.append(params.data)

    async with collaborator(path) as human, mcp_client(logging_callback=logged) as client:
        await call_tool(client, "get_notebook", path=path)
        result = await call_tool(
            client,
            "batch_update_notebook_cells",
            path=path,
            propose=True,
            updates=[{"cell_id": "c1", "content": "b = 2  # checked\nprint(b)"}],
        )
        suggestion = result["suggestion"]
        assert suggestion["state"] == "pending" and result["execution_skipped"].startswith("proposed")
        (cell,) = suggestion["cells"]
        assert (cell["cell_id"], cell["change"], cell["before"]) == ("c1", "update", "b = 2")
        assert cell["after"] == "b = 2  # checked\nprint(b)"
        # the live document is untouched, for the agent and for the person
        live = await call_tool(client, "get_notebook", path=path)
        assert [c["source"] for c in live["cells"]] == ["a = 1", "b = 2", "c = 3"]
        assert human.sources() == ["a = 1", "b = 2", "c = 3"]
        listed = await people.listed(path)
        assert [s["id"] for s in listed] == [suggestion["id"]] and listed[0]["agent"]["key"]
        await stored(jp_serverapp, path)
        before = await versions(client, path)

        # the person types in the same cell (at its start) while the suggestion waits, then accepts it
        human.type_into(1, 0, "# mine\n")
        await received(jp_serverapp, human)
        accepted = await people.decide(suggestion["id"], "accept")
        assert accepted.status_code == 200, accepted.text
        assert accepted.json()["state"] == "accepted"
        await human.wait_until(lambda: "print(b)" in human.sources()[1])
        assert human.sources()[1] == "# mine\nb = 2  # checked\nprint(b)"  # every keystroke kept
        await stored(jp_serverapp, path)
        after = await versions(client, path)
        agent_after = [v for v in after if v["source"] == "agent"]
        assert len(agent_after) == len([v for v in before if v["source"] == "agent"]) + 1
        assert agent_after[0]["summary"].startswith("accepted suggestion")

        # the agent sees the outcome: get_suggestion and a notification on its session
        read = await call_tool(client, "get_suggestion", suggestion_id=suggestion["id"])
        assert read["state"] == "accepted" and read["cells"][0]["state"] == "accepted"
        await until(lambda: any(n.get("suggestion_id") == suggestion["id"] for n in notes), what="the notification")
        assert notes[-1]["state"] == "accepted"
        # accepting twice applies nothing twice
        again = await people.decide(suggestion["id"], "accept")
        assert again.status_code == 409 and "accepted already" in again.json()["message"]
        # the activity log shows the proposal and the accept, by whom
        response = await within(people.http.get(f"{people.api}/activity", params={"path": path}, headers=people.auth))
        kinds = [e["kind"] for e in response.json()["entries"]]
        assert kinds.index("propose") < kinds.index("accept")
        # the accept is the agent's edit: its undo takes it back, keeping what the person typed
        undone = await call_tool(client, "undo_agent_edits", path=path)
        assert undone["undone"][0].startswith("accepted suggestion")
        await human.wait_until(lambda: human.sources()[1] == "# mine\nb = 2")

        # a second proposal, rejected: the cell stays as it was
        second = await call_tool(
            client, "batch_insert_notebook_cells", path=path, propose=True, cells=[{"content": "d = 4"}]
        )
        third = await call_tool(
            client,
            "batch_insert_notebook_cells",
            path=path,
            propose=True,
            cells=[{"content": "# Notes", "cell_type": "markdown", "metadata": {"tags": ["agent"]}}],
            after_cell_id="c0",
        )
        rejected = await people.decide(second["suggestion"]["id"], "reject")
        assert rejected.status_code == 200 and rejected.json()["state"] == "rejected"
        assert len(human.ids()) == 3
        read = await call_tool(client, "get_suggestion", suggestion_id=second["suggestion"]["id"])
        assert read["state"] == "rejected"
        await until(lambda: notes[-1] == {**notes[-1], "state": "rejected"}, what="the rejection's notification")
        # an inserted cell lands where it was proposed, with its type and metadata
        assert (await people.decide(third["suggestion"]["id"], "accept")).status_code == 200
        await human.wait_until(lambda: len(human.ids()) == 4)
        new = human.cells()[1]
        assert (new["source"], new["cell_type"], new["metadata"]) == ("# Notes", "markdown", {"tags": ["agent"]})
        assert new["id"] == third["inserted"][0]["id"]


async def test_accepting_some_cells_applies_only_those(
    mcp_client: Any, make_notebook: Any, collaborator: Any, people: People
) -> None:
    path = make_notebook("some.ipynb", CELLS)
    async with collaborator(path) as human, mcp_client() as client:
        result = await call_tool(
            client,
            "batch_update_notebook_cells",
            path=path,
            propose=True,
            updates=[{"cell_id": "c0", "content": "a = 10"}, {"cell_id": "c2", "content": "c = 30"}],
        )
        sid = result["suggestion"]["id"]
        response = await people.decide(sid, "accept", {"cells": ["c2"]})
        assert response.status_code == 200, response.text
        states = {c["cell_id"]: c["state"] for c in response.json()["cells"]}
        assert states == {"c0": "pending", "c2": "accepted"} and response.json()["state"] == "pending"
        await human.wait_until(lambda: human.sources()[2] == "c = 30")
        assert human.sources()[0] == "a = 1"
        done = await people.decide(sid, "reject", {"cells": ["c0"]})
        assert done.json()["state"] == "accepted" and human.sources()[0] == "a = 1"


async def test_two_suggestions_on_one_cell_the_second_is_rebased_or_conflicts(
    mcp_client: Any, make_notebook: Any, collaborator: Any, people: People
) -> None:
    path = make_notebook("two.ipynb", [{"cell_type": "code", "source": "x = 1\ny = 2\nz = 3", "id": "c0"}])
    async with collaborator(path) as human, mcp_client() as client:

        async def propose(content: str) -> str:
            await call_tool(client, "get_notebook", path=path)
            done = await call_tool(
                client,
                "batch_update_notebook_cells",
                path=path,
                propose=True,
                updates=[{"cell_id": "c0", "content": content}],
            )
            return str(done["suggestion"]["id"])

        first = await propose("x = 7\ny = 2\nz = 3")
        second = await propose("x = 1\ny = 2\nz = 300")  # another line: carried onto the new text
        third = await propose("x = 9\ny = 2\nz = 3")  # the same characters: a conflict
        assert (await people.decide(first, "accept")).status_code == 200
        await human.wait_until(lambda: human.sources()[0] == "x = 7\ny = 2\nz = 3")
        listed = {s["id"]: s for s in await people.listed(path)}
        assert listed[second]["state"] == "pending"
        assert listed[second]["cells"][0]["before"] == "x = 7\ny = 2\nz = 3"
        assert listed[second]["cells"][0]["after"] == "x = 7\ny = 2\nz = 300"
        assert listed[third]["state"] == "conflict" and "changed the same text" in listed[third]["cells"][0]["reason"]
        refused = await people.decide(third, "accept")
        assert refused.status_code == 409 and "conflict" in refused.json()["message"]
        assert (await people.decide(second, "accept")).status_code == 200
        await human.wait_until(lambda: human.sources()[0] == "x = 7\ny = 2\nz = 300")
        read = await call_tool(client, "get_suggestion", suggestion_id=third)
        assert read["state"] == "conflict"
        assert (await people.decide(third, "reject")).json()["state"] == "rejected"


async def test_a_text_document_proposal(mcp_client: Any, jp_root_dir: Any, collaborator: Any, people: People) -> None:
    (jp_root_dir / "notes.md").write_text("hello world\n")
    async with collaborator("notes.md", "file") as human, mcp_client() as client:
        await call_tool(client, "get_document", path="notes.md")
        done = await call_tool(
            client,
            "batch_update_document",
            path="notes.md",
            propose=True,
            operations=[{"position": 6, "length": 5, "content": "there"}],
        )
        suggestion = done["suggestion"]
        assert suggestion["text"] == {"before": "hello world\n", "after": "hello there\n"}
        assert human.text() == "hello world\n"
        human.type_text(0, ">> ")
        await until(lambda: "hello world" in human.text())
        assert (await people.decide(suggestion["id"], "accept")).status_code == 200
        await human.wait_until(lambda: human.text() == ">> hello there\n")


class TestServerReviewMode:
    @pytest.fixture
    def mcp_config(self) -> dict[str, Any]:
        return {"review_mode": True}

    async def test_every_edit_is_a_proposal_and_tools_that_cannot_propose_are_refused(
        self, mcp_client: Any, make_notebook: Any, collaborator: Any, people: People
    ) -> None:
        path = make_notebook("trait.ipynb", CELLS)
        async with collaborator(path) as human, mcp_client() as client:
            result = await call_tool(
                client, "batch_update_notebook_cells", path=path, updates=[{"cell_id": "c0", "content": "a = 5"}]
            )
            assert result["suggestion"]["state"] == "pending"
            deleted = await call_tool(client, "batch_delete_notebook_cells", path=path, cell_ids=["c2"])
            assert deleted["suggestion"]["cells"][0]["change"] == "delete"
            assert human.sources() == ["a = 1", "b = 2", "c = 3"]
            message = await tool_error(client, "move_notebook_cell", path=path, cell_id="c0", to_index=2)
            assert "review mode is on" in message
            message = await tool_error(client, "restore_document_version", path=path, version_id="1")
            assert "review mode is on" in message
            assert (await people.review())["server"] is True
            assert (await people.decide(deleted["suggestion"]["id"], "accept")).status_code == 200
            await human.wait_until(lambda: human.ids() == ["c0", "c1"])


async def test_a_persons_switch_makes_agents_with_their_identity_propose(
    mcp_client: Any, make_notebook: Any, collaborator: Any, people: People
) -> None:
    path = make_notebook("switch.ipynb", CELLS)
    async with collaborator(path) as human, mcp_client() as client:
        assert await people.review() == {"enabled": False, "server": False}
        assert (await people.review(True))["enabled"] is True
        result = await call_tool(
            client, "batch_update_notebook_cells", path=path, updates=[{"cell_id": "c0", "content": "a = 5"}]
        )
        assert result["suggestion"]["state"] == "pending" and human.sources()[0] == "a = 1"
        assert (await people.review(False))["enabled"] is False
        result = await call_tool(
            client,
            "batch_update_notebook_cells",
            path=path,
            exec=False,
            updates=[{"cell_id": "c1", "content": "b = 5"}],
        )
        assert result.get("suggestion") is None
        await human.wait_until(lambda: human.sources()[1] == "b = 5")


class TestBounds:
    @pytest.fixture
    def mcp_config(self) -> dict[str, Any]:
        return {
            "max_suggestions_per_document": 2,
            "suggestion_share_per_document": 0,
            "max_suggestions_per_principal": 3,
            "suggestion_ttl": 100.0,
        }

    async def test_pending_suggestions_are_bounded_and_expire_and_the_agent_is_told(
        self, mcp_client: Any, make_notebook: Any, extension: Any, people: People
    ) -> None:
        path = make_notebook("bounds.ipynb", CELLS)
        service = suggestions_of(extension)
        now = [1000.0]
        service.clock = lambda: now[0]
        notes: list[Any] = []

        async def logged(params: mcp_types.LoggingMessageNotificationParams) -> None:
            notes.append(params.data)

        async with mcp_client(logging_callback=logged) as client:
            ids = []
            for i in range(2):
                done = await call_tool(
                    client, "batch_insert_notebook_cells", path=path, propose=True, cells=[{"content": f"n = {i}"}]
                )
                ids.append(done["suggestion"]["id"])
            message = await tool_error(
                client, "batch_insert_notebook_cells", path=path, propose=True, cells=[{"content": "n = 3"}]
            )
            assert "2 pending suggestions (the limit per document)" in message
            now[0] += 101
            assert sorted(await service.sweep()) == sorted(ids)
            read = await call_tool(client, "get_suggestion", suggestion_id=ids[0])
            assert read["state"] == "expired" and read["cells"][0]["state"] == "expired"
            await until(lambda: sum(n.get("state") == "expired" for n in notes) == 2, what="expiry notifications")
            refused = await people.decide(ids[0], "accept")
            assert refused.status_code == 409 and "expired" in refused.json()["message"]
            # the expired ones no longer count: new proposals are taken, up to the limit per credential
            other = make_notebook("bounds2.ipynb", CELLS)
            for where in (path, path, other):
                await call_tool(
                    client, "batch_insert_notebook_cells", path=where, propose=True, cells=[{"content": "n"}]
                )
            message = await tool_error(
                client, "batch_insert_notebook_cells", path=other, propose=True, cells=[{"content": "n"}]
            )
            assert "you already have 3 pending suggestions" in message


class TestViewer:
    @pytest.fixture
    def jp_server_config(self, jp_server_config: Any) -> Any:
        jp_server_config.ServerApp.authorizer_class = ReadOnlyAuthorizer
        return jp_server_config

    async def test_a_viewer_lists_suggestions_but_may_not_accept_or_reject(
        self, make_notebook: Any, extension: Any, people: People
    ) -> None:
        path = make_notebook("viewer.ipynb", CELLS)
        from jupyter_pair_mcp.services.actors import Actor

        agent = Actor("k" * 12, "Agent", "agent", None, "someone", "p")
        draft = await extension.suggestions.draft(path, "notebook", agent)
        (await extension.suggestions.view(draft)).delete([0])
        made = await extension.suggestions.submit(draft)
        assert [s["id"] for s in await people.listed(path)] == [made.id]
        for action in ("accept", "reject"):
            response = await people.decide(made.id, action)
            assert response.status_code == 403, response.text
        assert made.state == "pending"


async def test_accepting_a_retype_changes_the_cells_type(
    mcp_client: Any, make_notebook: Any, collaborator: Any, people: People
) -> None:
    path = make_notebook("retype.ipynb", CELLS)
    async with collaborator(path) as human, mcp_client() as client:
        update = {"cell_id": "c0", "content": "# Title", "cell_type": "markdown"}
        done = await call_tool(client, "batch_update_notebook_cells", path=path, propose=True, updates=[update])
        (cell,) = done["suggestion"]["cells"]
        assert (cell["change"], cell["cell_type"], cell["after"]) == ("update", "markdown", "# Title")
        assert human.cells()[0]["cell_type"] == "code"
        assert (await people.decide(done["suggestion"]["id"], "accept")).status_code == 200
        await human.wait_until(lambda: human.cells()[0]["cell_type"] == "markdown")
        assert human.sources()[0] == "# Title" and human.ids()[0] == "c0"


async def test_two_people_accepting_at_once_apply_it_once(
    mcp_client: Any, make_notebook: Any, collaborator: Any, people: People, jp_serverapp: Any
) -> None:
    path = make_notebook("race.ipynb", CELLS)
    async with collaborator(path) as human, mcp_client() as client:
        update = {"cell_id": "c0", "content": "a = 1\na += 1"}
        done = await call_tool(client, "batch_update_notebook_cells", path=path, propose=True, updates=[update])
        sid = done["suggestion"]["id"]
        first, second = await asyncio.gather(people.decide(sid, "accept"), people.decide(sid, "accept"))
        assert sorted([first.status_code, second.status_code]) == [200, 409]
        await human.wait_until(lambda: human.sources()[0] == "a = 1\na += 1")
        await stored(jp_serverapp, path)
        history = await versions(client, path)
        assert sum(v["summary"].startswith("accepted suggestion") for v in history) == 1


async def test_a_stateless_agent_proposes_and_reads_the_outcome(
    mcp_client: Any, make_notebook: Any, collaborator: Any, people: People
) -> None:
    path = make_notebook("stateless.ipynb", CELLS)
    async with collaborator(path) as human, mcp_client(mode="2026-07-28") as client:
        update = {"cell_id": "c2", "content": "c = 33"}
        done = await call_tool(client, "batch_update_notebook_cells", path=path, propose=True, updates=[update])
        sid = done["suggestion"]["id"]
        assert (await call_tool(client, "get_suggestion", suggestion_id=sid))["state"] == "pending"
        assert (await people.decide(sid, "reject")).status_code == 200
        assert (await call_tool(client, "get_suggestion", suggestion_id=sid))["state"] == "rejected"
        assert human.sources()[2] == "c = 3"


async def test_a_partly_applied_suggestion_stays_open_until_its_conflicting_cell_is_rejected(
    mcp_client: Any, make_notebook: Any, collaborator: Any, people: People, jp_serverapp: Any
) -> None:
    path = make_notebook("partly.ipynb", CELLS)
    async with collaborator(path) as human, mcp_client() as client:
        await call_tool(client, "get_notebook", path=path)
        updates = [{"cell_id": "c0", "content": "a = 7"}, {"cell_id": "c1", "content": "b = 8"}]
        done = await call_tool(client, "batch_update_notebook_cells", path=path, propose=True, updates=updates)
        sid = done["suggestion"]["id"]
        human.type_into(0, 4, "0")  # the person changes the very characters the suggestion changes in c0
        await received(jp_serverapp, human)
        response = await people.decide(sid, "accept")
        assert response.status_code == 200, response.text
        answer = response.json()
        assert answer["state"] == "conflict"
        assert {c["cell_id"]: c["state"] for c in answer["cells"]} == {"c0": "conflict", "c1": "accepted"}
        await human.wait_until(lambda: human.sources()[1] == "b = 8")
        assert human.sources()[0] == "a = 01"
        rejected = await people.decide(sid, "reject", {"cells": ["c0"]})
        assert rejected.json()["state"] == "accepted" and human.sources()[0] == "a = 01"
