"""The panel's REST API (api/mcp/...): a document's activity, stopping and allowing an agent, undo and restore,
behind Jupyter's authentication and the tools' authorization — over real HTTP against a real server."""

from __future__ import annotations

import asyncio
import logging
from typing import Any

import httpx2
import pytest
from mcp.shared.exceptions import MCPError
from mcp_types import Implementation

from jupyter_pair_mcp.transport.requestbody import MAX_DEPTH

from .conftest import ReadOnlyAuthorizer, call_tool, document_room, received, stored, tool_error, until, within

pytestmark = pytest.mark.usefixtures("jp_serverapp")

CELLS = [
    {"cell_type": "code", "source": "a = 1", "id": "c0"},
    {"cell_type": "code", "source": "b = 2", "id": "c1"},
    {"cell_type": "code", "source": "c = 3", "id": "c2"},
]
STOPPED = "stopped this agent in"


@pytest.fixture
def api(server_root: str, jp_base_url: str) -> str:
    return f"{server_root}{jp_base_url}api/mcp"


class Panel:
    """The panel's side: the REST calls a person's JupyterLab makes (here with the token)."""

    def __init__(self, http: httpx2.AsyncClient, api: str, auth: dict[str, str]) -> None:
        self.http, self.api, self.auth = http, api, auth

    async def get(self, what: str, **params: Any) -> httpx2.Response:
        return await within(self.http.get(f"{self.api}/{what}", params=params, headers=self.auth))

    async def post(self, what: str, body: dict[str, Any]) -> httpx2.Response:
        return await within(self.http.post(f"{self.api}/{what}", json=body, headers=self.auth))

    async def activity(self, path: str, **params: Any) -> dict[str, Any]:
        response = await self.get("activity", path=path, **params)
        assert response.status_code == 200, response.text
        return dict(response.json())

    async def agents(self, path: str) -> dict[str, Any]:
        response = await self.get("agents", path=path)
        assert response.status_code == 200, response.text
        return dict(response.json())

    async def key_of(self, path: str) -> str:
        """The key of the (one) agent in the document's activity."""
        entries = (await self.activity(path))["entries"]
        keys = {e["agent"]["key"] for e in entries if e["agent"]}
        assert len(keys) == 1, entries
        return keys.pop()


@pytest.fixture
def panel(http: httpx2.AsyncClient, api: str, auth: dict[str, str]) -> Panel:
    return Panel(http, api, auth)


def agent(name: str) -> Implementation:
    return Implementation(name=name, version="1")


async def test_activity_lists_an_agent_edit_and_a_run_with_cells_indexes_and_pages(
    mcp_client: Any, make_notebook: Any, panel: Panel
) -> None:
    path = make_notebook("activity.ipynb", CELLS)
    async with mcp_client(client_info=agent("EvalAgent")) as client:
        await call_tool(
            client, "batch_update_notebook_cells", path=path, exec=False, updates=[{"cell_id": "c1", "content": "b=5"}]
        )
        await call_tool(client, "execute_notebook_cell", path=path, cell_id="c2")
        # an agent's broadcast is a broadcast, whatever it calls itself: never a person's stop
        await call_tool(client, "broadcast_user_activity", activity_type="stop", description="x", document_path=path)
        answer = await panel.activity(path)
    edit, run, broadcast = answer["entries"]
    assert edit["kind"] == "edit" and run["kind"] == "run"
    assert (broadcast["kind"], broadcast["type"], broadcast["cells"]) == ("broadcast", "stop", [])
    assert edit["cells"] == [{"cell_id": "c1", "index": 1}]
    assert run["cells"] == [{"cell_id": "c2", "index": 2}]
    assert edit["agent"]["name"] == "EvalAgent" and edit["agent"]["client"] == "EvalAgent"
    assert edit["agent"]["key"] == run["agent"]["key"]
    assert "c1" in edit["summary"] and "ran cell c2" in run["summary"]
    assert edit["time"].endswith("+00:00") and edit["seq"] < run["seq"]
    assert edit["version"] and edit["before_version"] and int(edit["before_version"]) < int(edit["version"])
    assert answer["latest"] >= broadcast["seq"] and answer["more"] is False
    # paging: one entry at a time, after a seq
    first = await panel.activity(path, limit=1, after=0)
    assert [e["seq"] for e in first["entries"]] == [edit["seq"]] and first["more"] is True
    rest = await panel.activity(path, after=first["latest"])
    assert [e["seq"] for e in rest["entries"]] == [run["seq"], broadcast["seq"]] and rest["more"] is False
    assert (await panel.activity(path, after=rest["latest"]))["entries"] == []
    # another document's activity is not listed
    other = make_notebook("other.ipynb", CELLS)
    assert (await panel.activity(other))["entries"] == []


def no_agent_in(serverapp: Any, path: str) -> Any:
    """A predicate: the document's room shows no agent in its awareness."""
    room = document_room(serverapp, path)
    return lambda: not any(isinstance(s, dict) and "agent" in s for s in room.awareness.states.values())


async def test_an_entry_names_every_cell_its_edit_touched_with_its_index_now(
    mcp_client: Any, make_notebook: Any, panel: Panel
) -> None:
    path = make_notebook("cells.ipynb", CELLS)
    async with mcp_client() as client:
        inserted = await call_tool(
            client, "batch_insert_notebook_cells", path=path, cells=[{"content": "p"}, {"content": "q"}], exec=False
        )
        new = [c["id"] for c in inserted["inserted"]]
        await call_tool(client, "batch_delete_notebook_cells", path=path, cell_ids=["c2"])
    insert, delete = (await panel.activity(path))["entries"]
    # inserted at 3 and 4; the delete of c2 (index 2) moved them up: each index is where the cell is now
    assert insert["cells"] == [{"cell_id": new[0], "index": 2}, {"cell_id": new[1], "index": 3}]
    assert delete["cells"] == [{"cell_id": "c2", "index": None}]  # gone


async def test_stop_ends_the_session_refuses_the_agent_there_until_allowed(
    mcp_client: Any, make_notebook: Any, panel: Panel, extension: Any, jp_serverapp: Any
) -> None:
    path = make_notebook("stopped.ipynb", CELLS)
    elsewhere = make_notebook("elsewhere.ipynb", CELLS)
    update = {"cell_id": "c0", "content": "a = 2"}
    async with mcp_client(client_info=agent("Runaway")) as client:
        await call_tool(client, "batch_update_notebook_cells", path=path, exec=False, updates=[update])
        key = await panel.key_of(path)
        present = (await panel.agents(path))["agents"]
        assert [(a["key"], a["stopped"]) for a in present] == [(key, False)]
        stopped = await panel.post(f"agents/{key}/stop", {"path": path})
        assert stopped.status_code == 200, stopped.text
        assert stopped.json() == {"stopped": True, "ended_sessions": 1, "interrupted": 0}
        assert not any(a.key == key for a in extension.actors.live)  # its session ended
        await until(no_agent_in(jp_serverapp, path), what="the agent leaving the room")
        with pytest.raises(MCPError, match="Session not found"):  # its session is gone
            await within(client.call_tool("get_notebook", {"path": path}))
    [listed] = (await panel.agents(path))["agents"]
    assert (listed["key"], listed["stopped"], listed["color"]) == (key, True, present[0]["color"])
    # the same agent (credential and client name) in a new session: refused in that document only
    async with mcp_client(client_info=agent("Runaway")) as again:
        message = await tool_error(again, "batch_update_notebook_cells", path=path, exec=False, updates=[update])
        assert STOPPED in message and repr(path) in message and "allow it again" in message
        assert "/" not in message.split(repr(path))[0]  # no server path
        with pytest.raises(MCPError, match=STOPPED):  # its reads of the document as resources too
            await within(again.read_resource(f"notebook://{path}"))
        room = extension.rooms.room_id(path, "notebook", create_id=False)
        assert STOPPED in await tool_error(again, "join_session", session_id=room)  # nor joins its room by id
        await call_tool(again, "get_notebook", path=elsewhere)
        # another agent is not affected
        async with mcp_client(client_info=agent("Helper")) as helper:
            await call_tool(helper, "get_notebook", path=path)
        entries = (await panel.activity(path))["entries"]
        assert [e["kind"] for e in entries][-2:] == ["stop", "refused"]
        renewed = entries[-1]["agent"]["key"]  # its new session's key: allowing by it lifts the stop too
        assert renewed != key
        allowed = await panel.post(f"agents/{renewed}/allow", {"path": path})
        assert allowed.status_code == 200 and allowed.json() == {"stopped": False}
        await call_tool(again, "batch_update_notebook_cells", path=path, exec=False, updates=[update])
    entries = (await panel.activity(path))["entries"]
    assert [e["kind"] for e in entries][-3:] == ["refused", "allow", "edit"]
    assert entries[-2]["by"] == entries[-4]["by"]  # the same person stopped and allowed
    assert not [a for a in (await panel.agents(path))["agents"] if a["stopped"]]


@pytest.mark.parametrize("mode", ["legacy", "2026-07-28"])
async def test_a_stop_interrupts_the_agents_run_in_the_document(
    mcp_client: Any, make_notebook: Any, panel: Panel, jp_serverapp: Any, mode: str
) -> None:
    """Stateful or stateless (then known by its key alone), the agent's run stops with the stop's message and
    the kernel is free."""
    path = make_notebook(
        "running.ipynb",
        [
            {"cell_type": "code", "source": "import time\nprint('started', flush=True)\ntime.sleep(600)", "id": "slow"},
            {"cell_type": "code", "source": "1 + 1", "id": "quick"},
        ],
    )
    async with mcp_client(mode=mode, client_info=agent("Other")) as other:
        async with mcp_client(mode=mode, client_info=agent("Looper")) as looper:
            slow = {"path": path, "cell_id": "slow", "timeout": 900}
            running = asyncio.ensure_future(within(looper.call_tool("execute_notebook_cell", slow), 120))

            async def started() -> bool:
                cells = (await call_tool(other, "get_notebook", path=path))["cells"]
                return any("started" in str(o) for o in cells[0].get("outputs") or [])

            await until(started, limit=60, what="the slow cell starting")
            key = next(a["key"] for a in (await panel.agents(path))["agents"] if a["name"] == "Looper")
            stopped = await panel.post(f"agents/{key}/stop", {"path": path})
            assert stopped.status_code == 200, stopped.text
            ended = 1 if mode == "legacy" else 0
            assert stopped.json() == {"stopped": True, "ended_sessions": ended, "interrupted": 1}
            await until(no_agent_in(jp_serverapp, path), what="the agent leaving the room")
            # Either era, the call itself says why (a stateful session ends once that answer is sent).
            result = await running
            assert result.is_error and STOPPED in result.content[0].text, result
            # And the cell says its run was stopped, and by whom, to the people looking at it.
            outputs = (await call_tool(other, "get_notebook", path=path))["cells"][0]["outputs"]
            assert "stopped Looper" in str(outputs) and "started" in str(outputs), outputs
        # the kernel is free again: another agent's run answers within its 30 s timeout (the sleep was 600 s)
        quick = await call_tool(other, "execute_notebook_cell", path=path, cell_id="quick")
        assert quick["status"] == "ok"
        async with mcp_client(mode=mode, client_info=agent("Looper")) as looper:
            assert STOPPED in await tool_error(looper, "execute_notebook_cell", path=path, cell_id="quick")
            assert (await panel.post(f"agents/{key}/allow", {"path": path})).status_code == 200
            assert (await call_tool(looper, "execute_notebook_cell", path=path, cell_id="quick"))["status"] == "ok"


async def test_undo_and_restore_from_the_panel(mcp_client: Any, make_notebook: Any, panel: Panel) -> None:
    path = make_notebook("undo.ipynb", CELLS)
    async with mcp_client(client_info=agent("Writer")) as client:
        await call_tool(
            client, "batch_update_notebook_cells", path=path, exec=False, updates=[{"cell_id": "c0", "content": "x"}]
        )
        await call_tool(
            client, "batch_update_notebook_cells", path=path, exec=False, updates=[{"cell_id": "c1", "content": "y"}]
        )
        key = await panel.key_of(path)
        # stopped first: the undo still finds its edits
        assert (await panel.post(f"agents/{key}/stop", {"path": path})).status_code == 200
    undone = await panel.post("undo", {"path": path, "agent": key})
    assert undone.status_code == 200, undone.text
    assert len(undone.json()["undone"]) == 1 and undone.json()["remaining"] == 1
    async with mcp_client(client_info=agent("Reader")) as reader:
        sources = [c["source"] for c in (await call_tool(reader, "get_notebook", path=path))["cells"]]
        assert sources == ["x", "b = 2", "c = 3"]
        # the panel restores the version before the agent's first edit, named by its activity entry
        first = next(e for e in (await panel.activity(path))["entries"] if e["kind"] == "edit")
        loaded = first["before_version"]
        restored = await panel.post("restore", {"path": path, "version": loaded})
        assert restored.status_code == 200, restored.text
        assert restored.json()["restored_from"] == loaded and restored.json()["changes"]
        sources = [c["source"] for c in (await call_tool(reader, "get_notebook", path=path))["cells"]]
        assert sources == ["a = 1", "b = 2", "c = 3"]
    entries = (await panel.activity(path))["entries"]
    assert [e["kind"] for e in entries][-3:] == ["stop", "undo", "restore"]
    assert entries[-1]["version"] == restored.json()["version_id"] and entries[-1]["agent"] is None
    nothing = await panel.post("undo", {"path": path, "agent": key, "count": 5})
    assert nothing.status_code == 200 and nothing.json()["remaining"] == 0


async def test_the_activity_names_what_each_undo_takes_back_and_restore_keeps_peoples_typing(
    mcp_client: Any, make_notebook: Any, panel: Panel, collaborator: Any, jp_serverapp: Any
) -> None:
    """``undoable`` moves with each undo; ``keep_people_edits`` takes back only the agents' changes since the
    version (a person's typing after it stays), and the person's ``undo`` with ``restore`` takes that back."""
    path = make_notebook("keep.ipynb", CELLS)
    async with mcp_client(client_info=agent("Writer")) as client, collaborator(path) as person:
        for cell, text in (("c0", "x"), ("c1", "y")):
            update = [{"cell_id": cell, "content": text}]
            await call_tool(client, "batch_update_notebook_cells", path=path, exec=False, updates=update)
        edits = [e for e in (await panel.activity(path))["entries"] if e["kind"] == "edit"]
        assert (await panel.activity(path))["undoable"] == [edits[1]["seq"]]
        key = edits[0]["agent"]["key"]
        assert (await panel.post("undo", {"path": path, "agent": key})).status_code == 200
        assert (await panel.activity(path))["undoable"] == [edits[0]["seq"]]  # the next undo's, not the undone
        await person.wait_until(lambda: person.sources()[:2] == ["x", "b = 2"])
        person.type_into(0, 1, " + people")
        person.type_into(2, 0, "# mine\n")
        await received(jp_serverapp, person)
        await stored(jp_serverapp, path)
        bad = await panel.post("restore", {"path": path, "version": edits[0]["before_version"], "keep_people_edits": 1})
        assert bad.status_code == 400, bad.text
        body = {"path": path, "version": edits[0]["before_version"], "keep_people_edits": True}
        restored = await panel.post("restore", body)
        assert restored.status_code == 200 and restored.json()["user_edits_reverted"] == [], restored.text
        sources = [c["source"] for c in (await call_tool(client, "get_notebook", path=path))["cells"]]
        assert sources == ["a = 1 + people", "b = 2", "# mine\nc = 3"]
        entries = (await panel.activity(path))["entries"]
        assert entries[-1]["kind"] == "restore" and (await panel.activity(path))["undoable"][-1] == entries[-1]["seq"]
        undone = await panel.post("undo", {"path": path, "restore": True})
        assert undone.status_code == 200, undone.text
        sources = [c["source"] for c in (await call_tool(client, "get_notebook", path=path))["cells"]]
        assert sources == ["x + people", "b = 2", "# mine\nc = 3"]
        again = await panel.post("undo", {"path": path, "restore": True})
        assert again.status_code == 400 and "no restore" in again.json()["message"]


async def test_bad_requests_are_json_errors(mcp_client: Any, make_notebook: Any, panel: Panel) -> None:
    path = make_notebook("errors.ipynb", CELLS)
    unknown = await panel.post("agents/0123456789ab/stop", {"path": path})
    assert unknown.status_code == 404 and "no agent" in unknown.json()["message"]
    missing = await panel.get("activity", path="nowhere.ipynb")
    assert missing.status_code == 404 and "nowhere.ipynb" in missing.json()["message"]
    for response, status in [
        (await panel.get("activity", path=path, limit=0), 400),
        (await panel.get("activity", path=path, after="x"), 400),
        (await panel.get("activity", path="/etc/passwd"), 400),
        (await panel.post("agents/0123456789ab/stop", {}), 400),
        (await panel.post("restore", {"path": path}), 400),
        (await panel.post("restore", {"path": path, "version": "999999"}), 404),
        (await panel.post("undo", {"path": path, "agent": "0123456789ab", "count": "1"}), 400),
    ]:
        assert response.status_code == status, response.text
        assert set(response.json()) == {"message"}
    garbled = await within(panel.http.post(f"{panel.api}/undo", content=b"{nope", headers=panel.auth))
    assert garbled.status_code == 400 and "not JSON" in garbled.json()["message"]
    body = b'{"path": "other.ipynb", "path": "%s", "agent": "0123456789ab"}' % path.encode()
    twice = await within(panel.http.post(f"{panel.api}/undo", content=body, headers=panel.auth))
    assert twice.status_code == 400 and "'path' appears more than once" in twice.json()["message"]


#: Every route of the panel's REST API that reads a JSON body (docs/rest.md), with its method.
BODY_ROUTES = [
    ("POST", "agents/0123456789ab/stop"),
    ("POST", "agents/0123456789ab/allow"),
    ("POST", "undo"),
    ("POST", "restore"),
    ("POST", "suggestions/0123456789ab/accept"),
    ("POST", "suggestions/0123456789ab/reject"),
    ("PUT", "review"),
]


async def test_a_body_nested_too_deep_is_refused_naming_the_limit_and_logs_no_crash(
    panel: Panel, jp_serverapp: Any, caplog: pytest.LogCaptureFixture
) -> None:
    """~1 000 levels in 2 KB: Python's parser gives up with a RecursionError, which was a 500 and a 20-line
    traceback in the log per request (a lever to flood it). Now a 400 naming the limit, like /mcp."""
    caplog.set_level(logging.DEBUG)
    deep = b'{"path": ' + b"[" * 1000 + b"]" * 1000 + b"}"
    for method, route in BODY_ROUTES:
        response = await within(panel.http.request(method, f"{panel.api}/{route}", content=deep, headers=panel.auth))
        assert response.status_code == 400, (route, response.text)
        assert f"more than {MAX_DEPTH} levels deep (the limit)" in response.json()["message"], route
    crashes = [r for r in caplog.records if r.exc_info or r.levelno >= logging.ERROR or "Traceback" in r.getMessage()]
    assert not crashes, [r.getMessage() for r in crashes]


async def test_credentials_and_xsrf_are_required(
    http: httpx2.AsyncClient, api: str, server_root: str, jp_base_url: str, token: str, make_notebook: Any
) -> None:
    path = make_notebook("guarded.ipynb", CELLS)
    assert (await within(http.get(f"{api}/activity", params={"path": path}))).status_code == 403
    assert (await within(http.post(f"{api}/agents/0123456789ab/stop", json={"path": path}))).status_code == 403
    # a browser's cookie login: its POST needs the XSRF token too
    browser = httpx2.AsyncClient(timeout=20)
    async with browser:
        login = await within(browser.get(f"{server_root}{jp_base_url}api/status", params={"token": token}))
        assert login.status_code == 200
        assert browser.cookies, "the token login set no cookie"
        read = await within(browser.get(f"{api}/activity", params={"path": path}))
        assert read.status_code == 200, read.text
        refused = await within(browser.post(f"{api}/agents/0123456789ab/stop", json={"path": path}))
        assert refused.status_code == 403 and "xsrf" in refused.text.lower()
        xsrf = "6d6370746573742d78737266"  # JupyterLab sends its _xsrf cookie back as this header
        browser.cookies.set("_xsrf", xsrf)
        passed = await within(
            browser.post(f"{api}/agents/0123456789ab/stop", json={"path": path}, headers={"X-XSRFToken": xsrf})
        )
        assert passed.status_code == 404  # through the checks: the agent is unknown


class TestViewer:
    @pytest.fixture
    def jp_server_config(self, jp_server_config: Any) -> Any:
        jp_server_config.ServerApp.authorizer_class = ReadOnlyAuthorizer
        return jp_server_config

    async def test_a_viewer_reads_activity_but_may_not_stop_undo_or_restore(
        self, make_notebook: Any, panel: Panel
    ) -> None:
        path = make_notebook("viewed.ipynb", CELLS)
        assert (await panel.activity(path))["entries"] == []
        assert (await panel.agents(path))["can_stop"] is False
        for what, body in [
            ("agents/0123456789ab/stop", {"path": path}),
            ("agents/0123456789ab/allow", {"path": path}),
            ("undo", {"path": path, "agent": "0123456789ab"}),
            ("restore", {"path": path, "version": "1"}),
        ]:
            response = await panel.post(what, body)
            assert response.status_code == 403, (what, response.text)
            assert "write" in response.json()["message"]


class TestStopList:
    @pytest.fixture
    def mcp_config(self, mcp_config: dict[str, Any]) -> dict[str, Any]:
        return {**mcp_config, "stop_agents_users": ["somebody-else"]}

    async def test_only_the_listed_users_may_stop_agents(self, make_notebook: Any, panel: Panel) -> None:
        path = make_notebook("listed.ipynb", CELLS)
        assert (await panel.agents(path))["can_stop"] is False
        response = await panel.post("agents/0123456789ab/stop", {"path": path})
        assert response.status_code == 403 and "stop_agents_users" in response.json()["message"]
