"""Our endpoint on every user's server of a real JupyterHub, through its proxy (configurable-http-proxy).

One hub serves the module (tests/hubserver.py: started here, stopped with every server it spawned): alice
and bob, alice's default server, and hub API tokens made through the hub's REST API as JupyterHub's own
``/hub/token`` page makes them. An agent reaches ``/user/alice/mcp`` with a token scoped to that server
only; bob's token is refused; progress streams through the proxy, a dropped stream resumes with
``Last-Event-ID``, and a named server serves its own endpoint.
"""

from __future__ import annotations

import asyncio
import contextlib
import html
import logging
import os
import re
from collections.abc import AsyncIterator, Iterator
from typing import Any

import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from jupyter_pair_mcp.transport.hub import hub_server
from jupyter_pair_mcp.transport.hubscopes import is_owner, token_actions, unknown_levels

from .conftest import (
    INIT_PARAMS,
    LEGACY_VERSION,
    MCP_HEADERS,
    call_tool,
    notebook_json,
    open_session,
    rpc,
    tool_error,
    until,
    within,
)
from .hubserver import MISSING, Hub, proxy_installed
from .test_resumability import COUNT, has_result, progress_call, progress_steps, read_events

# Spawning a server takes 3 s on an idle machine and over 10 s on a busy one; the first test also waits for the hub.
pytestmark = pytest.mark.timeout(300)


@pytest.fixture(scope="module")
def hub(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Hub]:
    if not proxy_installed():
        if os.environ.get("REQUIRE_CONFORMANCE"):
            pytest.fail(MISSING)
        pytest.skip(MISSING)
    running = Hub(tmp_path_factory.mktemp("hub"))
    try:
        running.start()
        running.create_users("alice", "bob")
        running.start_server("alice")
        yield running
    finally:
        running.stop()


def bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


@contextlib.asynccontextmanager
async def connect(url: str, token: str) -> AsyncIterator[Client]:
    """The MCP SDK client over HTTP, with a hub token in the Authorization header."""
    http_client = httpx2.AsyncClient(headers=bearer(token), timeout=30)
    transport = streamable_http_client(url, http_client=http_client)
    async with http_client, Client(transport, mode="legacy") as client:  # type: ignore[arg-type]
        yield client


@pytest.fixture(scope="module")
def alice_token(hub: Hub) -> str:
    """The least a token needs to reach alice's default server (what /hub/token can be narrowed to)."""
    return hub.token("alice", scopes=["access:servers!server=alice/"])


async def test_a_hub_token_scoped_to_the_server_reaches_its_endpoint_through_the_proxy(
    hub: Hub, alice_token: str
) -> None:
    async with connect(f"{hub.url}/user/alice/mcp", alice_token) as client:
        tools = await within(client.list_tools())
        assert {"get_notebook", "batch_update_notebook_cells", "test_progress_stream"} <= {t.name for t in tools.tools}
        created = await call_tool(client, "create_document", path="hub.ipynb")
        assert created["path"] == "hub.ipynb"
        read = await call_tool(client, "get_notebook", path="hub.ipynb")
        assert read["path"] == "hub.ipynb"
    assert (hub.dir / "home" / "alice" / "hub.ipynb").is_file()  # the server runs in alice's home


async def test_another_users_token_is_refused_and_told_why(hub: Hub, http: httpx2.AsyncClient) -> None:
    url = f"{hub.url}/user/alice/mcp"
    body = rpc("initialize", {"protocolVersion": LEGACY_VERSION, "capabilities": {}, "clientInfo": {"name": "x"}})
    refused = await http.post(url, json=body, headers={**MCP_HEADERS, **bearer(await hub.atoken("bob"))})
    assert refused.status_code == 403, refused.text
    assert "access:servers!server=alice/" in refused.json()["message"]
    missing = await http.post(url, json=body, headers=MCP_HEADERS)
    assert missing.status_code == 401, missing.text
    assert "/hub/token" in missing.json()["message"]
    assert "jupyter server list" not in missing.json()["message"]  # the server's own token is no use here
    # Headers only: JupyterHub 5+ ignores a token in the URL (docs/jupyterhub.md), and takes "token <token>" too.
    alice = await hub.atoken("alice", scopes=["access:servers!server=alice/"])
    in_url = await http.post(f"{url}?token={alice}", json=body, headers=MCP_HEADERS)
    assert in_url.status_code == 401, in_url.text
    other_scheme = await http.post(url, json=body, headers={**MCP_HEADERS, "Authorization": f"token {alice}"})
    assert other_scheme.status_code == 200, other_scheme.text


async def test_progress_notifications_stream_through_the_proxy(hub: Hub, alice_token: str) -> None:
    received: list[float] = []

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        received.append(progress)

    async with connect(f"{hub.url}/user/alice/mcp", alice_token) as client:
        result = await within(
            client.call_tool("test_progress_stream", {"count": 4, "interval": 0.05}, progress_callback=on_progress)
        )
    assert not result.is_error
    assert received == [1, 2, 3, 4]


async def test_a_dropped_stream_resumes_through_the_proxy(hub: Hub, alice_token: str, http: httpx2.AsyncClient) -> None:
    url = f"{hub.url}/user/alice/mcp"
    session = await open_session(http, url, bearer(alice_token))
    headers = {**MCP_HEADERS, **bearer(alice_token), "mcp-session-id": session, "mcp-protocol-version": LEGACY_VERSION}
    async with http.stream("POST", url, json=progress_call(11), headers=headers) as response:
        assert response.status_code == 200
        first = await read_events(response, lambda ev: len(progress_steps(ev)) >= 2)
    seen = progress_steps(first)
    assert seen == [1, 2], "the events came through the proxy as they were sent, not buffered to the end"
    last_id = [eid for eid, msg in first if eid][-1]
    resume = {**headers, "Accept": "text/event-stream", "Last-Event-ID": last_id}
    async with http.stream("GET", url, headers=resume) as response:
        assert response.status_code == 200
        rest = await read_events(response, has_result(11))
    assert seen + progress_steps(rest) == list(range(1, COUNT + 1)), "every progress event exactly once, in order"


@pytest.fixture(scope="module")
def second(hub: Hub) -> str:
    """alice's named server "second": the same user, so the same home, in a process of its own."""
    return hub.start_server("alice", "second")


async def test_a_named_server_serves_its_own_endpoint(hub: Hub, second: str) -> None:
    assert second == "/user/alice/second/"
    token = await hub.atoken("alice", scopes=["access:servers!server=alice/second"])
    async with connect(f"{hub.url}/user/alice/second/mcp", token) as client:
        listed = await call_tool(client, "list_documents")
    assert listed is not None
    # A token for the default server does not open the named one.
    async with httpx2.AsyncClient(timeout=30) as http:
        refused = await http.post(
            f"{hub.url}/user/alice/second/mcp",
            json=rpc("ping"),
            headers={**MCP_HEADERS, **bearer(await hub.atoken("alice", scopes=["access:servers!server=alice/"]))},
        )
    assert refused.status_code == 403, refused.text


def test_the_startup_line_gives_the_public_url_and_the_hub_token_to_use(hub: Hub) -> None:
    lines = [line for line in hub.log().splitlines() if "MCP endpoint:" in line and "/user/alice/mcp" in line]
    assert lines, "alice's server logged no startup line"
    line = lines[0]
    assert f"MCP endpoint: {hub.url}/user/alice/mcp (" in line, line
    assert f"make one at {hub.url}/hub/token with the scope 'access:servers!server=alice/'" in line, line
    assert "jupyter server list" not in line and "127.0.0.1:" not in line.replace(hub.url, ""), line
    assert line.endswith("a client that supports MCP authorization needs no header: alice approves it in a browser")


HUB_ENV = {
    "JUPYTERHUB_API_URL": "http://127.0.0.1:8081/hub/api",
    "JUPYTERHUB_USER": "alice",
    "JUPYTERHUB_SERVER_NAME": "",
    "JUPYTERHUB_SERVICE_PREFIX": "/user/alice/",
    "JUPYTERHUB_BASE_URL": "/",
    "JUPYTERHUB_PUBLIC_URL": "",
    "JUPYTERHUB_PUBLIC_HUB_URL": "",
}


def test_without_a_public_url_the_line_gives_the_path_on_the_hubs_address() -> None:
    assert hub_server({}) is None  # not spawned by a hub: the usual line
    hub = hub_server({**HUB_ENV, "JUPYTERHUB_SERVER_NAME": "gpu", "JUPYTERHUB_SERVICE_PREFIX": "/user/alice/gpu/"})
    assert hub is not None
    line = hub.startup_line(53)
    assert line.startswith("MCP endpoint: /user/alice/gpu/mcp on your JupyterHub's address ("), line
    assert "make one at /hub/token with the scope 'access:servers!server=alice/gpu'" in line, line


async def test_under_a_hub_the_server_logs_the_public_url(
    extension: Any, jp_serverapp: Any, token: str, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    public = {"JUPYTERHUB_PUBLIC_URL": "https://hub.example.org/user/alice/"}
    for name, value in {**HUB_ENV, **public, "JUPYTERHUB_PUBLIC_HUB_URL": "https://hub.example.org/hub/"}.items():
        monkeypatch.setenv(name, value)
    caplog.set_level(logging.INFO)
    await extension._start_jupyter_server_extension(jp_serverapp)
    [line] = [r.getMessage() for r in caplog.records if r.getMessage().startswith("MCP endpoint:")]
    assert line.startswith("MCP endpoint: https://hub.example.org/user/alice/mcp ("), line
    assert "https://hub.example.org/hub/token" in line and "'access:servers!server=alice/'" in line, line
    assert token not in line and "jupyter server list" not in line


def two_cells(a: str, b: str) -> str:
    return notebook_json([{"cell_type": "code", "source": a, "id": "a"}, {"cell_type": "code", "source": b, "id": "b"}])


async def test_two_servers_of_one_user_meet_only_in_the_file_and_an_agent_is_told(hub: Hub, second: str) -> None:
    """Each server has its own collaboration room for the notebook; the file on disk is all they share.

    An edit saved by one server reaches the other only as a file changed on disk: the other merges it into
    its room, and its agent's next edit goes through beside it, told of the change, never answered OK and then lost.
    """
    path = "shared.ipynb"
    (hub.dir / "home" / "alice" / path).write_text(two_cells("a = 0", "b = 0"))  # before any room opens it
    token_one = await hub.atoken("alice", scopes=["access:servers!server=alice/"])
    token_two = await hub.atoken("alice", scopes=["access:servers!server=alice/second"])
    update = {"path": path, "exec": False}
    async with (
        connect(f"{hub.url}/user/alice/mcp", token_one) as one,
        connect(f"{hub.url}{second}mcp", token_two) as two,
    ):
        for agent in (one, two):  # each server opens its own room on the file
            assert [c["source"] for c in (await call_tool(agent, "get_notebook", path=path))["cells"]] == [
                "a = 0",
                "b = 0",
            ]
        await call_tool(one, "batch_update_notebook_cells", **update, updates=[{"cell_id": "a", "content": "a = 1"}])
        assert (await call_tool(one, "save_notebook", path=path))["saved"] is True

        # The other server's room still holds the file as it was: the file is merged in first, then the edit.
        edited = await call_tool(
            two, "batch_update_notebook_cells", **update, updates=[{"cell_id": "b", "content": "b = 2"}]
        )
        assert "changed on disk" in edited["notice"] and "merged" in edited["notice"], edited
        read = await call_tool(two, "get_notebook", path=path)
        assert [c["source"] for c in read["cells"]] == ["a = 1", "b = 2"], "merged with the file"
        assert (await call_tool(two, "save_notebook", path=path))["saved"] is True

        # And back: the first server's agent is told on its next call, and sees both edits.
        read = await within(one.call_tool("get_notebook", {"path": path}))
        assert not read.is_error
        content = read.structured_content
        assert content is not None and "changed on disk" in content.get("notice", ""), content
        assert [c["source"] for c in content["cells"]] == ["a = 1", "b = 2"]


async def test_a_named_server_in_a_directory_of_its_own_opens_no_file_of_another_server(hub: Hub) -> None:
    """The setting docs/jupyterhub.md gives against the hazard above: each named server its own directory."""
    path = await hub.astart_server("alice", "apart")
    (hub.dir / "home" / "alice" / "servers" / "apart" / "own.ipynb").write_text(two_cells("x = 0", "y = 0"))
    (hub.dir / "home" / "alice" / "in-home.ipynb").write_text(two_cells("x = 0", "y = 0"))
    async with connect(
        f"{hub.url}{path}mcp", await hub.atoken("alice", ["access:servers!server=alice/apart"])
    ) as agent:
        listed = await call_tool(agent, "list_documents")
        assert "in-home.ipynb" not in str(listed) and "own.ipynb" in str(listed), listed


async def test_a_command_line_option_from_the_hub_turns_the_extension_off(hub: Hub, http: httpx2.AsyncClient) -> None:
    """docs/jupyterhub.md's "off for everyone": Spawner.args beat every configuration file (the package's own)."""
    await hub.acreate_users("carol")
    path = await hub.astart_server("carol")
    auth = bearer(await hub.atoken("carol", scopes=["access:servers!server=carol/"]))
    assert (await http.get(f"{hub.url}{path}api/status", headers=auth)).status_code == 200  # the server runs
    refused = await http.post(f"{hub.url}{path}mcp", json=rpc("ping"), headers={**MCP_HEADERS, **auth})
    assert refused.status_code == 404
    log = await hub.alog()
    assert "MCP endpoint: http://127.0.0.1:" in log and f"MCP endpoint: {hub.url}/user/carol/" not in log


async def test_a_stopped_server_is_answered_by_the_hub_and_a_restarted_one_needs_a_new_session(
    hub: Hub, http: httpx2.AsyncClient
) -> None:
    """What docs/jupyterhub.md tells people a client sees when the server is stopped, and after it restarts."""
    path = await hub.astart_server("bob")
    url = f"{hub.url}{path}mcp"
    auth = bearer(await hub.atoken("bob", scopes=["access:servers!server=bob/"]))
    session = await open_session(http, url, auth)
    headers = {**MCP_HEADERS, **auth, "mcp-session-id": session, "mcp-protocol-version": LEGACY_VERSION}
    assert (await http.post(url, json=rpc("ping"), headers=headers)).status_code == 200
    await hub.astop_server("bob")

    # The proxy now routes the path to the hub itself: it refuses a POST (no _xsrf: it is no API of the hub's)
    # with an HTML page, and redirects a GET to its "server not running" page.
    stopped = await http.post(url, json=rpc("ping"), headers=headers)
    assert stopped.status_code == 403 and stopped.headers["content-type"].startswith("text/html")
    stream = await http.get(url, headers={**headers, "Accept": "text/event-stream"})
    assert stream.status_code == 302 and stream.headers["location"].endswith(f"/hub{path}mcp"), stream.headers

    await hub.astart_server("bob")
    gone = await http.post(url, json=rpc("ping"), headers=headers)
    assert gone.status_code == 404, gone.text  # the session died with the server: initialize again
    assert await open_session(http, url, auth)


async def test_a_stopped_named_server_is_answered_by_the_users_default_server(
    hub: Hub, http: httpx2.AsyncClient
) -> None:
    """The proxy's route for /user/alice/ (her running default server) then matches /user/alice/later/ too."""
    path = await hub.astart_server("alice", "later")
    auth = bearer(await hub.atoken("alice", scopes=["access:servers!server=alice/later"]))
    session = await open_session(http, f"{hub.url}{path}mcp", auth)
    await hub.astop_server("alice", "later")
    headers = {**MCP_HEADERS, **auth, "mcp-session-id": session, "mcp-protocol-version": LEGACY_VERSION}
    stopped = await http.post(f"{hub.url}{path}mcp", json=rpc("ping"), headers=headers)
    assert stopped.status_code == 404 and stopped.headers["content-type"].startswith("text/html")


async def test_custom_mcp_scopes_limit_a_token_to_reading_writing_or_running_code(
    hub: Hub, http: httpx2.AsyncClient
) -> None:
    """docs/jupyterhub.md's worked configuration: the hub defines custom:mcp:read|write|execute and gives every
    user execute on their own servers; a token made with less is limited, on the MCP endpoint and on Jupyter's
    own API alike (HubScopesAuthorizer); a token with none of them is not."""
    path = "scoped.ipynb"
    (hub.dir / "home" / "alice" / path).write_text(two_cells("a = 0", "b = 0"))
    url = f"{hub.url}/user/alice/mcp"
    edit = {"path": path, "exec": False, "updates": [{"cell_id": "a", "content": "a = 1"}]}
    run = {"path": path, "code": "print(6 * 7)"}

    async def token(scope: str) -> str:
        return await hub.atoken("alice", ["access:servers!server=alice/", scope])

    reader = await token("custom:mcp:read!user=alice")
    async with connect(url, reader) as agent:
        read = await call_tool(agent, "get_notebook", path=path)
        assert [c["source"] for c in read["cells"]] == ["a = 0", "b = 0"]
        assert "not authorized to write" in await tool_error(agent, "batch_update_notebook_cells", **edit)
        assert "not authorized to execute" in await tool_error(agent, "execute_code", **run)
    written = await http.put(
        f"{hub.url}/user/alice/api/contents/other.txt",
        json={"type": "file", "format": "text", "content": "x"},
        headers=bearer(reader),
    )
    assert written.status_code == 403, "a read-only token cannot write through Jupyter's own API either"

    async with connect(url, await token("custom:mcp:write!server=alice/")) as agent:
        await call_tool(agent, "batch_update_notebook_cells", **edit)
        assert "not authorized to execute" in await tool_error(agent, "execute_code", **run)

    async with connect(url, await token("custom:mcp:execute!user=alice")) as agent:
        ran = await within(agent.call_tool("execute_code", run), 90)
        assert not ran.is_error, ran.content
        assert "42" in str(ran.structured_content)

    # Scoped to another server only: nothing here. No custom:mcp scope at all: not limited (alice_token's tests).
    body = rpc("initialize", {"protocolVersion": LEGACY_VERSION, "capabilities": {}, "clientInfo": {"name": "x"}})
    elsewhere = bearer(await token("custom:mcp:execute!server=alice/second"))
    assert (await http.post(url, json=body, headers={**MCP_HEADERS, **elsewhere})).status_code == 403


def test_which_custom_mcp_scopes_count_on_this_server() -> None:
    env = {**HUB_ENV, "JUPYTERHUB_SERVER_NAME": "gpu", "JUPYTERHUB_SERVICE_PREFIX": "/user/alice/gpu/"}
    owner = {"owner": True, "environ": env}
    assert token_actions(["access:servers!server=alice/gpu", "read:users"], **owner) is None  # not limited
    assert token_actions(["custom:mcp:read"], **owner) == {"read"}
    assert token_actions(["custom:mcp:read", "custom:mcp:write!server=alice/gpu"], **owner) == {"read", "write"}
    assert token_actions(["custom:mcp:execute!user=alice"], **owner) == {"read", "write", "execute"}
    assert token_actions(["custom:mcp:execute!server=alice/", "custom:mcp:write!user=bob"], **owner) == set()
    assert token_actions(["custom:mcpx:read"], **owner) is None  # not ours
    assert token_actions(["custom:mcp:everything", "custom:mcp:readx!server=alice/gpu"], **owner) == set()
    # Anyone else: only what a level for this server allows; reaching it allows nothing.
    other = {"owner": False, "environ": env}
    assert token_actions(["access:servers!server=alice/gpu"], **other) == set()
    assert token_actions(["custom:mcp:read!server=alice/gpu"], **other) == {"read"}
    assert token_actions(["custom:mcp:execute!user=bob", "custom:mcp:readx"], **other) == set()
    assert unknown_levels(["custom:mcp:readx!server=alice/", "custom:mcp:read", "custom:mcpx:a"]) == [
        "custom:mcp:readx!server=alice/"
    ]
    assert is_owner({"kind": "user", "name": "alice", "scopes": []}, hub_server(env))
    assert not is_owner({"kind": "service", "name": "alice"}, hub_server(env))
    assert not is_owner({"kind": "user", "name": "bob"}, hub_server(env))


# Fails closed (issue 32): with HubScopesAuthorizer, someone who is not the server's owner may do only what a
# custom:mcp scope for the server allows; reaching it (access:servers, a share's default) allows nothing.


async def initialize(http: httpx2.AsyncClient, url: str, token: str) -> httpx2.Response:
    return await http.post(url, json=rpc("initialize", INIT_PARAMS), headers={**MCP_HEADERS, **bearer(token)})


async def jupyter_actions(http: httpx2.AsyncClient, hub: Hub, token: str) -> dict[str, int]:
    """What Jupyter's own REST API and ours (api/mcp) answer this token on alice's server: read, write, run."""
    base, auth = f"{hub.url}/user/alice/", bearer(token)
    file = {"type": "file", "format": "text", "content": "x"}
    return {
        "read": (await http.get(f"{base}api/contents", headers=auth)).status_code,
        "write": (await http.put(f"{base}api/contents/by-{token[:6]}.txt", json=file, headers=auth)).status_code,
        "kernel": (await http.post(f"{base}api/kernels", json={}, headers=auth)).status_code,
        "restore": (
            await http.post(f"{base}api/mcp/restore", json={"path": "x", "version": "1"}, headers=auth)
        ).status_code,
    }


async def test_a_share_without_a_custom_mcp_scope_allows_nothing_and_the_403_names_the_scope(
    hub: Hub, http: httpx2.AsyncClient, alice_token: str
) -> None:
    """On main the recipient of a plain share edited alice's notebook and ran code in her kernel through /mcp."""
    await hub.acreate_users("dave")
    await hub.ashare("alice", "dave")  # the hub's default scopes: access:servers!server=alice/ only
    url = f"{hub.url}/user/alice/mcp"
    for token in (await hub.atoken("dave", ["access:servers!server=alice/"]), await hub.atoken("dave")):
        refused = await initialize(http, url, token)
        assert refused.status_code == 403, refused.text
        message = refused.json()["message"]
        assert "'custom:mcp:read!server=alice/'" in message and "no custom:mcp level" in message, message
        assert token not in message
        assert await jupyter_actions(http, hub, token) == {"read": 403, "write": 403, "kernel": 403, "restore": 403}

    # The owner is not limited by it: her token without custom:mcp scopes may do everything, as before.
    assert await open_session(http, url, bearer(alice_token))
    owner = await jupyter_actions(http, hub, alice_token)
    assert owner["read"] == 200 and owner["write"] in (200, 201) and owner["kernel"] == 201, owner
    assert owner["restore"] not in (401, 403), owner  # authorized: refused only for the made-up version


async def test_a_read_share_reads_and_its_edits_and_runs_are_refused_naming_the_level(
    hub: Hub, http: httpx2.AsyncClient
) -> None:
    path = "shared-read.ipynb"
    (hub.dir / "home" / "alice" / path).write_text(two_cells("a = 0", "b = 0"))
    await hub.acreate_users("erin")
    await hub.ashare("alice", "erin", ["access:servers", "custom:mcp:read"])  # the hub filters both to alice/
    token = await hub.atoken("erin", ["access:servers!server=alice/", "custom:mcp:read!server=alice/"])
    async with connect(f"{hub.url}/user/alice/mcp", token) as agent:
        read = await call_tool(agent, "get_notebook", path=path)
        assert [c["source"] for c in read["cells"]] == ["a = 0", "b = 0"]
        edit = {"path": path, "exec": False, "updates": [{"cell_id": "a", "content": "a = 1"}]}
        message = await tool_error(agent, "batch_update_notebook_cells", **edit)
        assert "level here is 'read'" in message and "'custom:mcp:write!server=alice/'" in message, message
        message = await tool_error(agent, "execute_code", path=path, code="print(1)")
        assert "level here is 'read'" in message and "'custom:mcp:execute!server=alice/'" in message, message
    assert await jupyter_actions(http, hub, token) == {"read": 200, "write": 403, "kernel": 403, "restore": 403}
    assert "a = 0" in (hub.dir / "home" / "alice" / path).read_text()


async def test_a_misspelt_level_allows_nothing_and_is_logged_once_without_the_token(
    hub: Hub, http: httpx2.AsyncClient
) -> None:
    """On main custom:mcp:readx was no scope of ours, so the token was not limited at all."""
    await hub.acreate_users("frank")
    await hub.ashare("alice", "frank", ["access:servers", "custom:mcp:readx"])
    token = await hub.atoken("frank", ["access:servers!server=alice/", "custom:mcp:readx!server=alice/"])
    url = f"{hub.url}/user/alice/mcp"
    for _ in range(2):
        refused = await initialize(http, url, token)
        assert refused.status_code == 403, refused.text
        assert "'custom:mcp:readx!server=alice/' names no level" in refused.json()["message"]
    assert await jupyter_actions(http, hub, token) == {"read": 403, "write": 403, "kernel": 403, "restore": 403}
    log = await hub.alog()
    told = [line for line in log.splitlines() if "holds 'custom:mcp:readx!server=alice/'" in line]
    assert len(told) == 1 and "of frank" in told[0] and "allows nothing" in told[0], told
    assert token not in log
    # The owner's token with only a misspelt level allows nothing either (test_which_custom_mcp_scopes_count_...).


def _form_values(page: str, *names: str) -> dict[str, list[str]]:
    """A hub page's hidden form inputs with these names (the login and OAuth confirmation forms)."""
    values: dict[str, list[str]] = {}
    for name, value in re.findall(r'<input type="hidden" name="([^"]+)" value="([^"]*)"', page):
        if name in names:
            values.setdefault(name, []).append(html.unescape(value))
    return values


@contextlib.asynccontextmanager
async def browser(hub: Hub, user: str, server: str = "/user/alice/") -> AsyncIterator[httpx2.AsyncClient]:
    """``user``'s browser session on a server of alice's: the hub's login form, then the server's OAuth with
    the hub (the confirmation page a non-owner is shown, submitted as is), as a person's browser does it."""
    async with httpx2.AsyncClient(base_url=hub.url, timeout=60, follow_redirects=True) as client:
        page = await client.get("/hub/login")
        form = _form_values(page.text, "_xsrf")
        logged_in = await client.post("/hub/login", data={**form, "username": [user], "password": ["x"]})
        assert logged_in.status_code == 200, logged_in.text
        landed = await client.get(f"{server}lab")
        if "/oauth2/authorize" in str(landed.url):  # a non-owner confirms what the server may do for them
            landed = await client.post(str(landed.url), data=_form_values(landed.text, "_xsrf", "scopes"))
        assert landed.status_code == 200 and str(landed.url).startswith(f"{hub.url}{server}"), landed.url
        client.headers["X-XSRFToken"] = client.cookies.get("_xsrf", path=server) or ""
        yield client


async def session_actions(session: httpx2.AsyncClient, server: str, name: str) -> dict[str, int]:
    """What Jupyter's REST API answers a browser session: list files, write one, start a kernel."""
    write = await session.put(
        f"{server}api/contents/{name}.txt", json={"type": "file", "format": "text", "content": "x"}
    )
    assert "xsrf" not in write.text.lower(), write.text  # refused for its scopes, not for the form token
    return {
        "read": (await session.get(f"{server}api/contents")).status_code,
        "write": write.status_code,
        "kernel": (await session.post(f"{server}api/kernels", json={})).status_code,
    }


NOTHING = {"read": 403, "write": 403, "kernel": 403}
EVERYTHING = {"read": 200, "write": 201, "kernel": 201}


async def test_a_recipients_browser_session_without_a_level_may_do_nothing(hub: Hub) -> None:
    """On main a share's recipient's browser session, whose OAuth token carries no custom scope (a hub without
    Spawner.oauth_client_allowed_scopes, as for alice's server "plain" here), wrote files and started kernels."""
    plain = await hub.astart_server("alice", "plain")
    await hub.acreate_users("ivan")
    await hub.ashare("alice", "ivan", server="plain")  # the hub's default: access:servers only
    async with browser(hub, "ivan", plain) as session:
        assert await session_actions(session, plain, "ivan") == NOTHING
    async with browser(hub, "alice", plain) as session:  # the owner's session: everything, as before
        assert await session_actions(session, plain, "alice-plain") == EVERYTHING


async def test_a_recipients_browser_session_gets_the_level_of_a_role_and_no_more(hub: Hub) -> None:
    """With Spawner.oauth_client_allowed_scopes a session carries the level a role gives for the server:
    JupyterHub 6.1's OAuth intersects what the server asks for with the user's roles only, so a share's
    custom scopes never reach a browser session (they do reach tokens)."""
    await hub.acreate_users("gina", "hank")
    await hub.ashare("alice", "gina", ["access:servers", "custom:mcp:read"])
    await hub.ashare("alice", "hank")  # the hub's default: access:servers only
    server = "/user/alice/"
    async with browser(hub, "hank") as session:
        assert await session_actions(session, server, "hank") == NOTHING
    async with browser(hub, "gina") as session:  # the share's custom:mcp:read is not in the session's token
        assert await session_actions(session, server, "gina") == NOTHING
    await hub.ajoin("alice-readers", "gina")  # a role with custom:mcp:read!server=alice/
    async with browser(hub, "gina") as session:
        assert await session_actions(session, server, "gina") == {"read": 200, "write": 403, "kernel": 403}
    async with browser(hub, "alice") as session:  # the owner's session: everything, as before
        assert await session_actions(session, server, "alice-browser") == EVERYTHING


async def test_a_revoked_token_works_until_the_servers_cache_forgets_it(hub: Hub, http: httpx2.AsyncClient) -> None:
    """docs/jupyterhub.md: a server caches the hub's answer about a token for HubOAuth.cache_max_age (300 s):
    on alice's default server a revoked token still works; on one started with 2 s it stops working."""
    fresh = await hub.astart_server("alice", "fresh")

    async def made(scope: str) -> dict[str, Any]:
        body = {"scopes": [scope], "expires_in": 3600}
        return dict(await asyncio.to_thread(hub.api, "POST", "/users/alice/tokens", json=body))

    async def revoke(token: dict[str, Any]) -> None:
        await asyncio.to_thread(hub.api, "DELETE", f"/users/alice/tokens/{token['id']}")

    cached, short = await made("access:servers!server=alice/"), await made("access:servers!server=alice/fresh")
    status = {
        "cached": lambda: http.get(f"{hub.url}/user/alice/api/status", headers=bearer(cached["token"])),
        "short": lambda: http.get(f"{hub.url}{fresh}api/status", headers=bearer(short["token"])),
    }
    for name in status:
        assert (await status[name]()).status_code == 200
    await revoke(cached)
    await revoke(short)
    assert (await status["cached"]()).status_code == 200, "the server still has the hub's answer of before"

    async def refused() -> bool:
        return (await status["short"]()).status_code in (401, 403)

    await until(refused, 30, "the revoked token refused once the server's 2-s cache forgot it")
