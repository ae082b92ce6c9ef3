"""show_in_jupyterlab's refusals on a real server (token on) over HTTP (issue 36 item 3; the browser test
tests/browser/test_show_ui.py shows the view moving): an agent moves a person's view only with a grant whose
person turned "May move my view" on, which only the person can (an agent's token is refused on api/mcp/grants);
requests are claimed and answered only by the person's tab that claimed them.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import httpx2
import pytest
from tornado.httpclient import HTTPRequest
from tornado.websocket import websocket_connect

from jupyter_pair_mcp.adapters.rooms import awareness as aw
from jupyter_pair_mcp.services.global_presence import GLOBAL_ROOM
from jupyter_pair_mcp.services.grants import GrantStore
from jupyter_pair_mcp.services.show import SCHEMA_ID, ShowRequests

from .conftest import tool_error, until, within
from .test_grants import mcp_config  # noqa: F401  (fixture: grants kept in the test's folder)
from .test_headless_grants import api, mint  # noqa: F401  (fixture)

pytestmark = pytest.mark.usefixtures("jp_serverapp")


def bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


async def test_refused_without_a_grant_and_while_the_person_has_not_allowed_it(
    http: httpx2.AsyncClient,
    api: str,  # noqa: F811
    auth: dict[str, str],
    mcp_client: Any,
    make_notebook: Any,
    extension: Any,
) -> None:
    path = make_notebook("n.ipynb", count=2)
    async with mcp_client() as own:  # the server's own token: no grant, nothing to attach the setting to
        refused = await tool_error(own, "show_in_jupyterlab", path=path, cell_id="cell-1")
    assert "only an agent connected with a grant" in refused and "May move my view" in refused
    minted = await mint(http, api, auth, level="read")
    async with mcp_client(headers=bearer(minted["token"])) as agent:
        refused = await tool_error(agent, "show_in_jupyterlab", path=path, cell_id="cell-1")
        assert refused.removeprefix("Error executing tool show_in_jupyterlab: ").startswith(
            "the server's owner has not let this agent move their view: ask the server's owner"
        )
        assert "'May move my view' for it in JupyterLab's MCP panel (Connected agents)" in refused
        # The agent's own token cannot turn it on: api/mcp/grants is a person's route.
        url = f"{api}/{minted['grant']['id']}"
        flipped = await within(http.patch(url, json={"may_move_view": True}, headers=bearer(minted["token"])))
        assert flipped.status_code in (401, 403), flipped.text
        assert extension.grants.grants[minted["grant"]["id"]].may_move_view is False
        assert "has not let this agent" in await tool_error(agent, "show_in_jupyterlab", path=path)
        # The person can; the grant keeps it (a restart reads it back).
        allowed = await within(http.patch(url, json={"may_move_view": True}, headers=auth))
        assert allowed.status_code == 200 and allowed.json()["may_move_view"] is True
        assert GrantStore(extension.grants.path).grants[minted["grant"]["id"]].may_move_view is True
        bad = await within(http.patch(url, json={"may_move_view": "yes"}, headers=auth))
        assert bad.status_code == 400 and "true or false" in bad.json()["message"]
        # Allowed, but no JupyterLab is open: said so, nothing claimed to be shown.
        nobody = await tool_error(agent, "show_in_jupyterlab", path=path, cell_id="cell-1")
        assert nobody.endswith(
            "the server's owner has no JupyterLab open now: nothing was shown (point_at leaves a mark to find)"
        )
        # The path and cell are checked as every tool checks them.
        assert "no notebook or text file" in await tool_error(agent, "show_in_jupyterlab", path="missing.ipynb")
        assert "leaves the Jupyter root" in await tool_error(agent, "show_in_jupyterlab", path="../n.ipynb")
        assert "cell-9" in await tool_error(agent, "show_in_jupyterlab", path=path, cell_id="cell-9")
    listed = await within(http.get(api, headers=auth))
    assert [g["may_move_view"] for g in listed.json()["grants"]] == [True]


async def test_a_folder_grant_cannot_show_outside_its_folders(
    http: httpx2.AsyncClient,
    api: str,  # noqa: F811
    auth: dict[str, str],
    mcp_client: Any,
    make_notebook: Any,
    jp_root_dir: Path,
) -> None:
    (jp_root_dir / "work").mkdir()
    outside = make_notebook("other.ipynb", count=1)
    minted = await mint(http, api, auth, level="read", folders=["work"])
    await within(http.patch(f"{api}/{minted['grant']['id']}", json={"may_move_view": True}, headers=auth))
    async with mcp_client(headers=bearer(minted["token"])) as agent:
        refused = await tool_error(agent, "show_in_jupyterlab", path=outside)
    assert "reaches only the folders 'work'" in refused


async def test_a_request_is_claimed_once_and_answered_only_with_its_ticket(
    http: httpx2.AsyncClient,
    api: str,  # noqa: F811
    server_root: str,
    jp_base_url: str,
    auth: dict[str, str],
    extension: Any,
) -> None:
    base = f"{server_root}{jp_base_url}api/mcp/show"
    agent_token = (await mint(http, api, auth, level="read"))["token"]
    request = extension.show.open("", "n.ipynb", "c1", "ci-bot")
    try:
        # An agent's token is no Jupyter credential here: it can neither take nor answer a request.
        taken = await within(http.post(f"{base}/{request.id}/claim", headers=bearer(agent_token)))
        assert taken.status_code in (401, 403) and not request.claimed.is_set()
        claimed = await within(http.post(f"{base}/{request.id}/claim", headers=auth))
        assert claimed.status_code == 200
        body = claimed.json()
        assert (body["path"], body["cell_id"]) == ("n.ipynb", "c1")
        again = await within(http.post(f"{base}/{request.id}/claim", headers=auth))  # another tab
        assert again.status_code == 404 and "another tab took it" in again.json()["message"]
        wrong = await within(http.post(f"{base}/{request.id}/done", json={"ticket": "t", "ok": True}, headers=auth))
        assert wrong.status_code == 404 and not request.answered.is_set()
        done = {"ticket": body["ticket"], "ok": False, "message": "\u202ebroken\n" + "m" * 1000}
        answered = await within(http.post(f"{base}/{request.id}/done", content=json.dumps(done), headers=auth))
        assert answered.status_code == 200 and await extension.show.wait(request) == "refused"
        assert request.message.startswith("broken m") and len(request.message) <= 300  # no bidi, no newline
    finally:
        extension.show.close(request)
    unknown = await within(http.post(f"{base}/{request.id}/claim", headers=auth))
    assert unknown.status_code == 404


class Recorder:
    """The event bus, as the service sees it (pure logic: routing by person)."""

    def __init__(self) -> None:
        self.events: list[dict[str, Any]] = []

    def register_event_schema(self, path: Any) -> None:
        pass

    def emit(self, schema_id: str, data: dict[str, Any]) -> None:
        self.events.append(data)


def test_on_a_server_of_many_people_only_the_addressee_claims_and_answers() -> None:
    bus = Recorder()
    show = ShowRequests(bus, None, single_user=False)
    request = show.open("alice", "n.ipynb", None, "alice · bot")
    assert request is not None and bus.events == [{"request": request.id, "to": "alice"}]  # no path, no cell
    assert show.claim(request.id, "bob") is None
    assert show.claim(request.id, "alice") is request
    assert not show.answer(request.id, "bob", request.ticket, True, "")
    assert show.answer(request.id, "alice", request.ticket, True, "")
    assert not show.answer(request.id, "alice", request.ticket, False, "twice")
    room = type("Room", (), {"awareness": type("A", (), {"states": {1: {"user": {"username": "bob"}}}})()})()
    assert not show.has_tab(room, "alice") and show.has_tab(room, "bob")
    agent = type(
        "Room", (), {"awareness": type("A", (), {"states": {1: {"user": {"username": "alice"}, "agent": {}}}})()}
    )()
    assert not show.has_tab(agent, "alice")  # an agent's state is not the person's tab


async def test_a_tab_that_takes_the_request_decides_the_answer(
    http: httpx2.AsyncClient,
    api: str,  # noqa: F811
    auth: dict[str, str],
    mcp_client: Any,
    make_notebook: Any,
    extension: Any,
    collaborator: Any,
    server_root: str,
    jp_base_url: str,
    token: str,
) -> None:
    """A JupyterLab tab without the browser: in the global awareness room, on the event bus, claiming over REST."""
    path = make_notebook("n.ipynb", count=2)
    minted = await mint(http, api, auth, level="read")
    await within(http.patch(f"{api}/{minted['grant']['id']}", json={"may_move_view": True}, headers=auth))
    base = f"{server_root}{jp_base_url}api/mcp/show"
    ws_url = f"{server_root.replace('http://', 'ws://')}{jp_base_url}api/events/subscribe"
    events = await within(websocket_connect(HTTPRequest(ws_url, headers={"Authorization": f"token {token}"})))

    async def announced() -> str:
        while True:
            message = json.loads(await within(events.read_message()))
            if message.get("schema_id") == SCHEMA_ID:
                assert set(message) == {"schema_id", "request", "to"}  # never the path or the cell
                return str(message["request"])

    try:
        async with collaborator("", "global") as tab, mcp_client(headers=bearer(minted["token"])) as agent:
            await tab.set_awareness({"user": {"username": "person", "name": "Person"}})
            await until(lambda: extension.show.has_tab(aw.room(extension.rooms, GLOBAL_ROOM), ""), what="the tab")
            for ok, expected in ((False, "could not show it: the tab is busy"), (True, "'cell-1' is selected")):
                call = asyncio.ensure_future(agent.call_tool("show_in_jupyterlab", {"path": path, "cell_id": "cell-1"}))
                request = await announced()
                claimed = (await within(http.post(f"{base}/{request}/claim", headers=auth))).json()
                assert (claimed["path"], claimed["cell_id"]) == (path, "cell-1")
                done = {"ticket": claimed["ticket"], "ok": ok, "message": "the tab is busy"}
                assert (await within(http.post(f"{base}/{request}/done", json=done, headers=auth))).status_code == 200
                result = await within(call)
                assert result.is_error is not ok and expected in result.content[0].text
            # Nobody takes it, or the tab that took it never says: the agent is told, within the bounds.
            extension.show.claim_wait = extension.show.show_wait = 0.5
            unclaimed = await tool_error(agent, "show_in_jupyterlab", path=path)
            assert "no JupyterLab tab of the server's owner took the request" in unclaimed
            assert "nothing was shown" in unclaimed
            await announced()  # that request's announcement, which no tab took
            call = asyncio.ensure_future(agent.call_tool("show_in_jupyterlab", {"path": path}))
            request = await announced()
            assert (await within(http.post(f"{base}/{request}/claim", headers=auth))).status_code == 200
            result = await within(call)
            assert result.is_error and "took the request but did not say it showed it" in result.content[0].text
    finally:
        events.close()
