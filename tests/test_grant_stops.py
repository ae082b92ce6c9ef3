"""People's controls hold against a grant (issue 32, items 3 and 5), on a real server with real SDK clients.

A revoked grant ends what it was doing at once: the run of its call in flight answers with the revocation, its
session is gone. A stop is the grant's, not its client name's: the agent reconnecting under another name or in
the other era is refused, through every path to the same file (a symbolic or a hard link), and its running
``execute_code`` task ends with an error instead of running on for it to read.
"""

from __future__ import annotations

import asyncio
import os
from pathlib import Path
from typing import Any

import httpx2
import pytest
from mcp.shared.exceptions import MCPError
from mcp_types import Implementation

from jupyter_pair_mcp.request_state import fingerprint
from jupyter_pair_mcp.services.actors import grant_key

from .conftest import call_tool, tool_error, until, within
from .test_grants import mcp_config, oauth_client  # noqa: F401  (fixtures)
from .test_tasks import Legacy

pytestmark = pytest.mark.usefixtures("jp_serverapp")

STOPPED = "stopped this agent in"
SLOW = "import time\nprint('started', flush=True)\ntime.sleep(600)"
#: Scratch code that says it began (a file) and then runs until interrupted.
FOREVER = "open('began', 'w').close()\nimport time\nwhile True:\n    time.sleep(0.01)"


@pytest.fixture
def api(server_root: str, jp_base_url: str) -> str:
    return f"{server_root}{jp_base_url}api/mcp"


async def grant_token(oauth_client: Any, level: str = "execute") -> str:  # noqa: F811
    """A person approves an SDK OAuth client; the grant's access token."""
    return (await grant_client(oauth_client, level))[0]


async def grant_client(oauth_client: Any, level: str = "execute") -> tuple[str, Any]:  # noqa: F811
    """A person approves an SDK OAuth client; the grant's access token and the client's storage."""
    async with oauth_client(level=level, name="Grant Agent") as (client, storage):
        await within(client.list_tools())
    assert storage.tokens is not None and storage.client is not None
    return str(storage.tokens.access_token), storage


def only_grant(extension: Any) -> str:
    (grant_id,) = extension.grants.grants
    return str(grant_id)


async def stop(http: httpx2.AsyncClient, api: str, auth: dict[str, str], key: str, path: str) -> dict[str, Any]:
    response = await within(http.post(f"{api}/agents/{key}/stop", json={"path": path}, headers=auth))
    assert response.status_code == 200, response.text
    return dict(response.json())


@pytest.mark.parametrize(("mode", "how"), [("legacy", "person"), ("2026-07-28", "person"), ("legacy", "client")])
async def test_revoking_a_grant_ends_its_run_and_its_session_at_once(
    oauth_client: Any,  # noqa: F811
    mcp_client: Any,
    make_notebook: Any,
    http: httpx2.AsyncClient,
    api: str,
    auth: dict[str, str],
    extension: Any,
    mcp_url: str,
    mode: str,
    how: str,
) -> None:
    """Revoked by the person (REST) or by its client (RFC 7009), in either era."""
    path = make_notebook("slow.ipynb", [{"cell_type": "code", "source": SLOW, "id": "slow"}])
    token, storage = await grant_client(oauth_client)
    bearer = {"Authorization": f"Bearer {token}"}
    grant_id = only_grant(extension)
    async with mcp_client() as person, mcp_client(mode=mode, headers=bearer) as agent:
        slow = {"path": path, "cell_id": "slow", "timeout": 900}
        running = asyncio.ensure_future(within(agent.call_tool("execute_notebook_cell", slow), 120))

        async def started() -> bool:
            cells = (await call_tool(person, "get_notebook", path=path))["cells"]
            return any("started" in str(o) for o in cells[0].get("outputs") or [])

        await until(started, limit=60, what="the slow cell starting")
        if how == "person":
            revoked = await within(http.delete(f"{api}/grants/{grant_id}", headers=auth))
        else:
            secret = {"client_id": storage.client.client_id, "client_secret": storage.client.client_secret or ""}
            revoked = await within(http.post(f"{mcp_url}/revoke", data={"token": token, **secret}))
        assert revoked.status_code == 200, revoked.text
        result = await running  # at once, not in 600 s: the run was interrupted
        by = "the server's owner" if how == "person" else "its client"
        assert result.is_error and f"the grant was revoked by {by}" in result.content[0].text, result
        with pytest.raises((MCPError, httpx2.HTTPStatusError)):  # its next call: the token is gone
            await within(agent.list_tools())
        principal = fingerprint(extension.principal_key, f"grant:{grant_id}")
        owners = extension.runner.manager._session_owners
        await until(lambda: principal not in {o["client_id"] for o in owners.values()}, what="its session ending")
        # the kernel is free again
        assert (await call_tool(person, "execute_code", path=path, code="1 + 1"))["status"] == "ok"


@pytest.mark.parametrize("mode", ["legacy", "2026-07-28"])
async def test_a_stopped_grant_agent_renamed_or_in_the_other_era_is_refused(
    oauth_client: Any,  # noqa: F811
    mcp_client: Any,
    make_notebook: Any,
    http: httpx2.AsyncClient,
    api: str,
    auth: dict[str, str],
    extension: Any,
    mode: str,
) -> None:
    path = make_notebook("held.ipynb", [{"cell_type": "code", "source": "a = 1", "id": "c0"}])
    bearer = {"Authorization": f"Bearer {await grant_token(oauth_client, 'write')}"}
    key = grant_key(only_grant(extension))
    first = "2026-07-28" if mode == "legacy" else "legacy"
    async with mcp_client(mode=first, headers=bearer, client_info=Implementation(name="AgentA", version="1")) as a:
        await call_tool(a, "get_notebook", path=path)
        assert (await stop(http, api, auth, key, path))["stopped"] is True
    for name in ("AgentA ", "agenta", "Somebody Else"):
        info = Implementation(name=name, title=f"{name} title", version="2")
        async with mcp_client(mode=mode, headers=bearer, client_info=info) as again:
            edit = {"cell_id": "c0", "content": "a = 2"}
            assert STOPPED in await tool_error(again, "batch_update_notebook_cells", path=path, updates=[edit])


async def test_a_stop_holds_for_every_path_to_the_same_file(
    oauth_client: Any,  # noqa: F811
    mcp_client: Any,
    make_notebook: Any,
    jp_root_dir: Path,
    http: httpx2.AsyncClient,
    api: str,
    auth: dict[str, str],
    extension: Any,
) -> None:
    path = make_notebook("real.ipynb", [{"cell_type": "code", "source": "a = 1", "id": "c0"}])
    os.symlink(jp_root_dir / path, jp_root_dir / "soft.ipynb")
    os.link(jp_root_dir / path, jp_root_dir / "hard.ipynb")
    bearer = {"Authorization": f"Bearer {await grant_token(oauth_client, 'write')}"}
    key = grant_key(only_grant(extension))
    async with mcp_client(mode="2026-07-28", headers=bearer) as agent:
        await call_tool(agent, "get_notebook", path="soft.ipynb")
        assert (await stop(http, api, auth, key, "soft.ipynb"))["stopped"] is True  # stopped through the link
        edit = {"cell_id": "c0", "content": "a = 2"}
        for other in (path, "hard.ipynb", "./soft.ipynb"):
            assert STOPPED in await tool_error(agent, "batch_update_notebook_cells", path=other, updates=[edit])
            assert STOPPED in await tool_error(agent, "get_notebook", path=other)


async def test_a_stop_ends_the_agents_running_execute_code_task(
    oauth_client: Any,  # noqa: F811
    mcp_url: str,
    make_notebook: Any,
    jp_root_dir: Path,
    http: httpx2.AsyncClient,
    api: str,
    auth: dict[str, str],
    extension: Any,
) -> None:
    path = make_notebook("scratch.ipynb", [{"cell_type": "code", "source": "a = 1", "id": "c0"}])
    bearer = {"Authorization": f"Bearer {await grant_token(oauth_client)}"}
    key = grant_key(only_grant(extension))
    first = await Legacy(mcp_url, bearer).open()
    try:
        call = {"name": "execute_code", "arguments": {"path": path, "code": FOREVER, "timeout": 600}, "task": {}}
        task_id = (await first.request("tools/call", call))["result"]["task"]["taskId"]
        await until((jp_root_dir / "began").exists, limit=60, what="the scratch code running")
        assert (await stop(http, api, auth, key, path))["interrupted"] == 1
    finally:
        await first.close()
    second = await Legacy(mcp_url, bearer).open()  # the stopped agent comes back for its result
    try:

        async def ended() -> bool:
            polled = (await second.request("tasks/get", {"taskId": task_id}))["result"]
            return bool(polled["status"] != "working")

        await until(ended, limit=60, what="the task ending")
        result = (await second.request("tasks/result", {"taskId": task_id}))["result"]
        assert result["isError"] is True and STOPPED in result["content"][0]["text"], result
    finally:
        await second.close()


async def test_a_stop_ends_the_agents_subscriptions_there_and_a_revocation_its_listen_streams(
    oauth_client: Any,  # noqa: F811
    mcp_client: Any,
    make_notebook: Any,
    http: httpx2.AsyncClient,
    api: str,
    auth: dict[str, str],
    extension: Any,
) -> None:
    held = make_notebook("held.ipynb", [{"cell_type": "code", "source": "a = 1", "id": "c0"}])
    other = make_notebook("other.ipynb", [{"cell_type": "code", "source": "b = 1", "id": "c0"}])
    bearer = {"Authorization": f"Bearer {await grant_token(oauth_client, 'read')}"}
    grant_id = only_grant(extension)
    subscriptions = extension.subscriptions
    async with (
        mcp_client(mode="2026-07-28", headers=bearer) as agent,
        agent.listen(resource_subscriptions=[f"notebook://{held}", f"notebook://{other}"]) as stream,
    ):
        await call_tool(agent, "get_notebook", path=held)
        assert subscriptions.subscription_count == 2
        await stop(http, api, auth, grant_key(grant_id), held)
        assert subscriptions.subscription_count == 1  # what it watched in the other document goes on
        assert (await within(http.delete(f"{api}/grants/{grant_id}", headers=auth))).status_code == 200
        with pytest.raises(StopAsyncIteration):  # the server ended its stream
            await within(stream.__anext__())
        assert subscriptions.stream_count == 0 and subscriptions.subscription_count == 0
