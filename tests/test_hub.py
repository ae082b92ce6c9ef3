"""Our endpoint on every user's server of a real JupyterHub, through its proxy (configurable-http-proxy).

One hub serves the module (tests/hubserver.py: started here, stopped with every server it spawned): alice
and bob, alice's default server, and hub API tokens made through the hub's REST API as JupyterHub's own
``/hub/token`` page makes them. An agent reaches ``/user/alice/mcp`` with a token scoped to that server
only; bob's token is refused; progress streams through the proxy, a dropped stream resumes with
``Last-Event-ID``, and a named server serves its own endpoint.
"""

from __future__ import annotations

import contextlib
import logging
import os
from collections.abc import AsyncIterator, Iterator
from typing import Any

import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from jupyter_pair_mcp.transport.hub import hub_server

from .conftest import LEGACY_VERSION, MCP_HEADERS, call_tool, open_session, rpc, within
from .hubserver import MISSING, Hub, proxy_installed
from .test_resumability import COUNT, has_result, progress_call, progress_steps, read_events


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
    refused = await http.post(url, json=body, headers={**MCP_HEADERS, **bearer(hub.token("bob"))})
    assert refused.status_code == 403, refused.text
    assert "access:servers!server=alice/" in refused.json()["message"]
    missing = await http.post(url, json=body, headers=MCP_HEADERS)
    assert missing.status_code == 401, missing.text
    assert "/hub/token" in missing.json()["message"]
    assert "jupyter server list" not in missing.json()["message"]  # the server's own token is no use here


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


async def test_a_named_server_serves_its_own_endpoint(hub: Hub) -> None:
    assert hub.start_server("alice", "second") == "/user/alice/second/"
    token = hub.token("alice", scopes=["access:servers!server=alice/second"])
    async with connect(f"{hub.url}/user/alice/second/mcp", token) as client:
        listed = await call_tool(client, "list_documents")
    assert listed is not None
    # A token for the default server does not open the named one.
    async with httpx2.AsyncClient(timeout=30) as http:
        refused = await http.post(
            f"{hub.url}/user/alice/second/mcp",
            json=rpc("ping"),
            headers={**MCP_HEADERS, **bearer(hub.token("alice", scopes=["access:servers!server=alice/"]))},
        )
    assert refused.status_code == 403, refused.text


def test_the_startup_line_gives_the_public_url_and_the_hub_token_to_use(hub: Hub) -> None:
    lines = [line for line in hub.log().splitlines() if "MCP endpoint:" in line and "/user/alice/mcp" in line]
    assert lines, "alice's server logged no startup line"
    line = lines[0]
    assert f"MCP endpoint: {hub.url}/user/alice/mcp (" in line, line
    assert f"make one at {hub.url}/hub/token with the scope 'access:servers!server=alice/'" in line, line
    assert "jupyter server list" not in line and "127.0.0.1:" not in line.replace(hub.url, ""), line


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
