"""People by name (issue 32, item 9) and names shown cleaned (item 5), on a real server.

A person appears by their Jupyter name — or as "the server's owner" when Jupyter knows none (a token login: its
user is a random hex id, "Anonymous …") — in what a stopped agent is told, in the activity panel's entries, in
review decisions, in history (who restored) and in the grant list. Never their username as such. A name a client
or an identity provider chose reaches people cut to 64 characters, without control or bidi-override characters.
"""

from __future__ import annotations

import re
from typing import Any

import httpx2
import pytest
from jupyter_server.auth.identity import IdentityProvider, User
from mcp_types import Implementation

from .conftest import call_tool, tool_error, within
from .test_grants import oauth_client  # noqa: F401  (fixture)

pytestmark = pytest.mark.usefixtures("jp_serverapp")

CELLS = [{"cell_type": "code", "source": "a = 1", "id": "c0"}, {"cell_type": "code", "source": "b = 2", "id": "c1"}]
HEX_ID = re.compile(r"[0-9a-f]{32}")
#: A client name with a right-to-left override, an escape sequence, a bell and far too many characters.
UNRULY = "Evil\u202eAgent\x1b[31m\x07 " + "x" * 200
BIDI = re.compile("[\u200e\u200f\u061c\u202a-\u202e\u2066-\u2069]")


class NamedIdentityProvider(IdentityProvider):  # type: ignore[misc]
    """Names the token's user "alice", Alice Smith to people, with a display name a person typed carelessly."""

    def generate_anonymous_user(self, handler: Any) -> User:
        return User(username="alice", name="alice", display_name="Alice\u202e Smith\x1b")


@pytest.fixture
def mcp_config(tmp_path: Any) -> dict[str, Any]:
    return {"enable_test_fixtures": True, "grants_path": str(tmp_path / "grants" / "pair_mcp_grants.json")}


@pytest.fixture
def api(server_root: str, jp_base_url: str) -> str:
    return f"{server_root}{jp_base_url}api/mcp"


def clean(text: str) -> bool:
    return not BIDI.search(text) and not any(ord(c) < 32 or 0x7F <= ord(c) < 0xA0 for c in text)


async def shown(
    mcp_client: Any,
    make_notebook: Any,
    collaborator: Any,
    oauth_client: Any,  # noqa: F811
    http: httpx2.AsyncClient,
    api: str,
    auth: dict[str, str],
) -> dict[str, Any]:
    """A person reviews, stops, restores and grants; every text that names them, and what the agent is told."""
    path = make_notebook("names.ipynb", CELLS)

    async def rest(method: str, what: str, **kwargs: Any) -> Any:
        response = await within(http.request(method, f"{api}/{what}", headers=auth, **kwargs))
        assert response.status_code == 200, response.text
        return response.json()

    info = Implementation(name=UNRULY, version="1")
    async with collaborator(path) as human, mcp_client(client_info=info) as agent, mcp_client() as reader:
        edit = {"cell_id": "c0", "content": "a = 2"}
        await call_tool(agent, "batch_update_notebook_cells", path=path, exec=False, updates=[edit])
        presence = await human.wait_awareness(lambda: (human.agents() or [None])[0], limit=5)
        proposal = {"cell_id": "c1", "content": "b = 3"}
        result = await call_tool(agent, "batch_update_notebook_cells", path=path, propose=True, updates=[proposal])
        decided = await rest("POST", f"suggestions/{result['suggestion']['id']}/accept", json={})
        entries = (await rest("GET", "activity", params={"path": path}))["entries"]
        key = next(e["agent"]["key"] for e in entries if e["agent"])
        before = next(e for e in entries if e["kind"] == "edit")["before_version"]
        await rest("POST", f"agents/{key}/stop", json={"path": path})  # its session ends
        async with mcp_client(client_info=info) as again:
            refusal = await tool_error(again, "batch_update_notebook_cells", path=path, updates=[edit])
        agents = (await rest("GET", "agents", params={"path": path}))["agents"]
        await rest("POST", "restore", json={"path": path, "version": before})
        versions = (await call_tool(reader, "get_document_history", path=path, limit=20))["versions"]
        await rest("POST", f"agents/{key}/allow", json={"path": path})
    entries = (await rest("GET", "activity", params={"path": path}))["entries"]
    async with oauth_client(level="read") as (client, _):
        await within(client.list_tools())
    grants = (await rest("GET", "grants"))["grants"]
    return {
        "refusal": refusal,
        "decided": decided["state"],
        "entries": entries,
        "stopped_by": {a.get("stopped_by") for a in agents if a["stopped"]},
        "restored_by": {v["author"] for v in versions if "restored version" in v["summary"]},
        "granted_by": {g["granted_by"] for g in grants},
        "agent_names": {presence["user"]["display_name"], *(a["name"] for a in agents)}
        | {e["agent"]["name"] for e in entries if e["agent"]},
    }


def assert_named(seen: dict[str, Any], name: str) -> None:
    assert f"A person ({name}) stopped this agent" in seen["refusal"], seen["refusal"]
    assert seen["decided"] == "accepted"
    by_kind = {e["kind"]: e for e in seen["entries"]}
    for kind in ("accept", "stop", "restore", "allow"):
        assert by_kind[kind]["by"] == name, by_kind[kind]
    assert by_kind["stop"]["summary"] == f"stopped by {name}"
    assert by_kind["allow"]["summary"] == f"allowed again by {name}"
    assert by_kind["accept"]["summary"].endswith(f"by {name}")
    assert by_kind["restore"]["summary"].startswith(f"{name} restored version")
    assert seen["stopped_by"] == {name} and seen["restored_by"] == {name} and seen["granted_by"] == {name}
    found = HEX_ID.search(str(seen))
    assert found is None, f"a random id reached a person or an agent: {str(seen)[found.start() - 200 : found.end()]}"
    # the client's own name: cleaned and cut wherever people see it
    for agent_name in seen["agent_names"]:
        client = agent_name.removesuffix(" (AI agent)").split(" · ")[-1]
        assert clean(agent_name) and client.startswith("EvilAgent[31m x") and len(client) <= 64, agent_name


async def test_a_token_login_is_the_servers_owner(
    mcp_client: Any,
    make_notebook: Any,
    collaborator: Any,
    oauth_client: Any,  # noqa: F811
    http: httpx2.AsyncClient,
    api: str,
    auth: dict[str, str],
) -> None:
    seen = await shown(mcp_client, make_notebook, collaborator, oauth_client, http, api, auth)
    assert_named(seen, "the server's owner")


class TestNamedPerson:
    @pytest.fixture
    def jp_server_config(self, jp_server_config: Any) -> Any:
        jp_server_config.ServerApp.identity_provider_class = NamedIdentityProvider
        return jp_server_config

    async def test_a_named_person_is_shown_by_their_name_cleaned(
        self,
        mcp_client: Any,
        make_notebook: Any,
        collaborator: Any,
        oauth_client: Any,  # noqa: F811
        http: httpx2.AsyncClient,
        api: str,
        auth: dict[str, str],
    ) -> None:
        seen = await shown(mcp_client, make_notebook, collaborator, oauth_client, http, api, auth)
        assert_named(seen, "Alice Smith")
        assert all(n.startswith("Alice Smith · EvilAgent") for n in seen["agent_names"]), seen["agent_names"]
