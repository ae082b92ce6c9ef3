"""An agent is named by whose credential it uses and by its client: "alice · Claude Code", on a real server.

Presence (a real collaborator's view of the room's awareness), document history and the activity log (the
agent's own tool and the panel's REST API) all show that name. With Jupyter's default identity provider a
token names no one (a random hex id, "Anonymous …"): the agent is then named by its client alone.
"""

from __future__ import annotations

from typing import Any

import httpx2
import pytest
from jupyter_server.auth.identity import IdentityProvider, User
from mcp_types import Implementation

from .conftest import call_tool

pytestmark = pytest.mark.usefixtures("jp_serverapp")

CELLS = [{"cell_type": "code", "source": "a = 1", "id": "c0"}, {"cell_type": "code", "source": "b = 2", "id": "c1"}]
CLAUDE = Implementation(name="claude-code", title="Claude Code", version="1")


class NamedIdentityProvider(IdentityProvider):  # type: ignore[misc]
    """Names the token's user "alice", as JupyterHub's identity provider names a hub user's token."""

    def generate_anonymous_user(self, handler: Any) -> User:
        return User(username="alice")


async def names_seen(
    mcp_client: Any, make_notebook: Any, collaborator: Any, http: httpx2.AsyncClient, api: str, auth: Any
) -> dict[str, Any]:
    """Edit and run as the Claude Code client; what people see of it in presence, history and activity."""
    path = make_notebook("named.ipynb", CELLS)
    async with collaborator(path) as human, mcp_client(client_info=CLAUDE) as client:
        await call_tool(
            client, "batch_update_notebook_cells", path=path, exec=False, updates=[{"cell_id": "c0", "content": "a=2"}]
        )
        state = await human.wait_awareness(lambda: (human.agents() or [None])[0], limit=5)
        await call_tool(client, "execute_notebook_cell", path=path, cell_id="c1")
        versions = (await call_tool(client, "get_document_history", path=path, limit=10))["versions"]
        activity = (await call_tool(client, "get_user_activity", document_path=path))["activities"]
    panel = await http.get(f"{api}/activity", params={"path": path}, headers=auth)
    assert panel.status_code == 200, panel.text
    return {
        "presence": state["user"],
        "authors": {v["author"] for v in versions if v["source"] == "agent"},
        "activity": {a["name"] for a in activity},
        "panel": {e["agent"]["name"] for e in panel.json()["entries"] if e["agent"]},
    }


@pytest.fixture
def api(server_root: str, jp_base_url: str) -> str:
    return f"{server_root}{jp_base_url}api/mcp"


@pytest.fixture
def seen(mcp_client: Any, make_notebook: Any, collaborator: Any, http: httpx2.AsyncClient, api: str, auth: Any) -> Any:
    return lambda: names_seen(mcp_client, make_notebook, collaborator, http, api, auth)


class TestNamedUser:
    @pytest.fixture
    def jp_server_config(self, jp_server_config: Any) -> Any:
        jp_server_config.ServerApp.identity_provider_class = NamedIdentityProvider
        return jp_server_config

    async def test_presence_history_and_activity_name_the_user_and_the_client(self, seen: Any) -> None:
        names = await seen()
        assert names["presence"]["display_name"] == "alice · Claude Code (AI agent)"
        assert names["presence"]["initials"] == "CC"  # the client's, not "A·"
        assert names["authors"] == {"alice · Claude Code"}
        assert names["activity"] == {"alice · Claude Code (AI agent)"}
        assert names["panel"] == {"alice · Claude Code"}


class TestAgentName(TestNamedUser):
    @pytest.fixture
    def mcp_config(self, mcp_config: dict[str, Any]) -> dict[str, Any]:
        return {**mcp_config, "agent_name": "Team bot"}

    async def test_presence_history_and_activity_name_the_user_and_the_client(self, seen: Any) -> None:
        names = await seen()
        assert names["presence"]["display_name"] == "alice · Team bot (AI agent)"
        assert names["presence"]["initials"] == "TB"
        assert names["authors"] == {"alice · Team bot"}
        assert names["panel"] == {"alice · Team bot"}


async def test_a_token_naming_no_one_leaves_just_the_client(seen: Any) -> None:
    names = await seen()
    assert names["presence"]["display_name"] == "Claude Code (AI agent)"  # no hex id, no "Anonymous …"
    assert names["authors"] == {"Claude Code"}
    assert names["panel"] == {"Claude Code"}
