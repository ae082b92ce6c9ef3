"""MCP authorization on a JupyterHub's single-user servers (issue 32, item 8): consent behind the hub's login.

A real hub (tests/hubserver.py) with its proxy; the MCP SDK's OAuth client is pointed at the public
``/user/alice/mcp`` and has no token: it discovers the server's metadata through the proxy (which routes only
``/user/alice/…`` to the server), registers, and sends the person's browser to the consent page. The browser
is driven over HTTP as tests/test_hub.py's is: the hub's login form, the server's OAuth with the hub (its
cookie), then the consent form with its ``_xsrf``.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
import time
from collections.abc import AsyncIterator, Iterator
from typing import Any
from urllib.parse import parse_qs, urlparse

import httpx2
import pytest
from mcp import Client
from mcp.client.auth import OAuthClientProvider
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.auth import AuthorizationCodeResult, OAuthClientMetadata

from jupyter_pair_mcp.services.grant_records import Pending
from jupyter_pair_mcp.transport.hub import browser_protocol, hub_server

from .conftest import MCP_HEADERS, call_tool, rpc, within
from .hubserver import MISSING, Hub, proxy_installed
from .test_grants import REDIRECT, Storage, mcp_config  # noqa: F401 (a fixture: grants in the test's directory)
from .test_hub import HUB_ENV, _form_values, connect

pytestmark = pytest.mark.timeout(300)

SERVER = "/user/alice/"


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


@contextlib.asynccontextmanager
async def logged_in(hub: Hub, user: str | None) -> AsyncIterator[httpx2.AsyncClient]:
    """A person's browser, logged in to the hub as ``user`` (None: not logged in)."""
    async with httpx2.AsyncClient(base_url=hub.url, timeout=60) as client:
        if user is not None:
            page = await client.get("/hub/login")
            form = _form_values(page.text, "_xsrf")
            done = await client.post("/hub/login", data={**form, "username": [user], "password": ["x"]})
            assert done.status_code == 302, done.text
        yield client


async def open_consent(browser: httpx2.AsyncClient, authorize_url: str) -> httpx2.Response:
    """Follow the client's authorization URL to the consent page: the server's OAuth with the hub on the way
    (a non-owner confirms the hub's page as is, as tests/test_hub.py's browser does)."""
    first = await browser.get(authorize_url)
    assert first.status_code == 302, first.text
    assert first.headers["location"].startswith(f"{str(browser.base_url).rstrip('/')}{SERVER}mcp/consent?request=")
    page = await browser.get(first.headers["location"], follow_redirects=True)
    if "/oauth2/authorize" in str(page.url):
        page = await browser.post(str(page.url), data=_form_values(page.text, "_xsrf", "scopes"), follow_redirects=True)
    return page


async def approve(browser: httpx2.AsyncClient, page: httpx2.Response, level: str = "write") -> httpx2.Response:
    xsrf = re.search(r'name="_xsrf" value="([^"]+)"', page.text)
    request = re.search(r'name="request" value="([^"]+)"', page.text)
    assert xsrf is not None and request is not None, page.text
    form = {"_xsrf": xsrf[1], "request": request[1], "decision": "approve", "level": level, "where": "all"}
    return await browser.post(str(page.url).split("?")[0], data={**form, "expires": "86400"})


def code_of(location: str) -> AuthorizationCodeResult:
    assert location.startswith(REDIRECT), location
    query = parse_qs(urlparse(location).query)
    return AuthorizationCodeResult(code=query["code"][0], state=query.get("state", [None])[0])


@contextlib.asynccontextmanager
async def oauth_client(url: str, consent: Any, name: str = "Hub Agent") -> AsyncIterator[tuple[Client, Storage]]:
    """The SDK's OAuth client at ``url``; ``consent(authorize_url)`` plays the person and returns the code."""
    storage = Storage()
    result: asyncio.Future[AuthorizationCodeResult] = asyncio.get_running_loop().create_future()

    async def redirect_handler(authorize_url: str) -> None:
        result.set_result(await consent(authorize_url))

    async def callback_handler() -> AuthorizationCodeResult:
        return await result

    provider = OAuthClientProvider(
        server_url=url,
        client_metadata=OAuthClientMetadata(
            client_name=name,
            redirect_uris=[REDIRECT],  # type: ignore[list-item]
            grant_types=["authorization_code", "refresh_token"],
            response_types=["code"],
        ),
        storage=storage,
        redirect_handler=redirect_handler,
        callback_handler=callback_handler,
    )
    async with httpx2.AsyncClient(auth=provider, timeout=60) as http_client:
        transport = streamable_http_client(url, http_client=http_client)
        async with Client(transport, mode="legacy") as client:  # type: ignore[arg-type]
            yield client, storage


async def test_the_sdks_oauth_client_connects_to_a_single_user_server_through_the_hub(hub: Hub) -> None:
    url = f"{hub.url}{SERVER}mcp"

    async def alice_approves(authorize_url: str) -> AuthorizationCodeResult:
        async with logged_in(hub, "alice") as browser:
            page = await open_consent(browser, authorize_url)
            assert page.status_code == 200 and "Hub Agent" in page.text, page.text
            done = await approve(browser, page)
            assert done.status_code == 302, done.text
            return code_of(done.headers["location"])

    async with oauth_client(url, alice_approves) as (client, storage):
        created = await call_tool(client, "create_document", path="by-grant.txt", content="through the hub")
        assert created["path"] == "by-grant.txt"
    assert (hub.dir / "home" / "alice" / "by-grant.txt").read_text() == "through the hub"
    assert storage.tokens is not None
    token = storage.tokens.access_token
    async with httpx2.AsyncClient(timeout=30) as http:
        # The grant's token reaches the MCP endpoint and nothing else of the server's.
        auth = {"Authorization": f"Bearer {token}"}
        ping = await http.post(url, json=rpc("initialize", {}), headers={**MCP_HEADERS, **auth})
        assert ping.status_code in (200, 400), ping.text  # authenticated (the body is the SDK's business)
        for path in ("api/contents", "api/kernels", "api/mcp/grants"):
            refused = await http.get(f"{hub.url}{SERVER}{path}", headers=auth)
            assert refused.status_code in (401, 403), (path, refused.status_code)
        # Revoked by its client (RFC 7009): refused at once.
        assert storage.client is not None
        secret = {"client_id": storage.client.client_id, "client_secret": storage.client.client_secret or ""}
        revoked = await http.post(f"{url}/revoke", data={"token": token, **secret})
        assert revoked.status_code == 200, revoked.text
        after = await http.post(url, json=rpc("ping"), headers={**MCP_HEADERS, **auth})
        assert after.status_code == 401, after.text


async def test_discovery_through_the_proxy_names_the_public_address(hub: Hub) -> None:
    url = f"{hub.url}{SERVER}mcp"
    async with httpx2.AsyncClient(timeout=30) as http:
        refused = await http.post(url, json=rpc("ping"), headers=MCP_HEADERS)
        assert refused.status_code == 401
        found = re.search(r'resource_metadata="([^"]+)"', refused.headers["www-authenticate"])
        assert found is not None and found[1].startswith(f"{hub.url}{SERVER}"), refused.headers
        metadata = (await http.get(found[1])).json()
        assert metadata["resource"] == url
        (issuer,) = metadata["authorization_servers"]
        assert issuer.startswith(f"{hub.url}{SERVER}")
        as_metadata = (await http.get(f"{issuer}/.well-known/openid-configuration")).json()
        assert as_metadata["issuer"] == issuer
        assert as_metadata["authorization_endpoint"].startswith(f"{hub.url}{SERVER}")
        # A proxy in front of the hub that ends TLS: the address the browser used (its first X-Forwarded-Proto).
        tls = await http.get(found[1], headers={"X-Forwarded-Proto": "https"})
        assert tls.json()["resource"] == url.replace("http://", "https://")


async def test_only_the_servers_owner_approves_and_a_person_not_logged_in_goes_to_the_hubs_login(hub: Hub) -> None:
    """bob may do everything on alice's server (a share with custom:mcp:execute), yet not approve a client
    there: the grant would outlive the share, and the hub could not take it back."""
    url = f"{hub.url}{SERVER}mcp"
    await hub.ashare("alice", "bob", ["access:servers", "custom:mcp:execute"])

    async def bob_tries(authorize_url: str) -> AuthorizationCodeResult:
        async with logged_in(hub, None) as browser:  # alice's browser, not logged in yet
            first = await browser.get(authorize_url)
            consent = first.headers["location"]
            login = await browser.get(consent, follow_redirects=True)
            assert str(login.url).startswith(f"{hub.url}/hub/login?next="), login.url  # the hub's login first
            request = re.search(r"request=([^&]+)", consent)
            assert request is not None

            async with logged_in(hub, "bob") as other:
                page = await open_consent(other, authorize_url)
                assert page.status_code == 403, page.text
                assert "only alice, whose server this is," in page.text and "custom:mcp:" in page.text, page.text
                xsrf = other.cookies.get("_xsrf", path=SERVER) or ""
                form = {"_xsrf": xsrf, "request": request[1], "level": "read", "where": "all", "expires": "86400"}
                for decision in ("approve", "deny"):  # nor may he answer alice's request (a deny would end it)
                    done = await other.post(f"{SERVER}mcp/consent", data={**form, "decision": decision})
                    assert done.status_code == 403 and "only alice" in done.text, done.text

            # alice logs in on the hub's page she was sent to, and is back on the consent page of her request.
            credentials = {**_form_values(login.text, "_xsrf"), "username": ["alice"], "password": ["x"]}
            page = await browser.post(str(login.url), data=credentials, follow_redirects=True)
            assert str(page.url) == consent and page.status_code == 200, (page.url, page.text)
            done = await approve(browser, page, level="read")
            assert done.status_code == 302, done.text
            return code_of(done.headers["location"])

    async with oauth_client(url, bob_tries, name="Bob's Agent") as (client, _):
        assert (await call_tool(client, "document_exists", path="nothing.txt"))["exists"] is False


async def test_the_owner_revokes_a_grant_through_the_hub(hub: Hub) -> None:
    url = f"{hub.url}{SERVER}mcp"

    async def alice_approves(authorize_url: str) -> AuthorizationCodeResult:
        async with logged_in(hub, "alice") as browser:
            done = await approve(browser, await open_consent(browser, authorize_url), level="read")
            return code_of(done.headers["location"])

    async with oauth_client(url, alice_approves, name="Revoked Agent") as (client, storage):
        await within(client.list_tools())
        assert storage.tokens is not None
        auth = {"Authorization": f"Bearer {await hub.atoken('alice', ['access:servers!server=alice/'])}"}
        async with httpx2.AsyncClient(base_url=f"{hub.url}{SERVER}", timeout=30) as http:
            listed = (await http.get("api/mcp/grants", headers=auth)).json()["grants"]
            (grant,) = [g for g in listed if g["client_name"] == "Revoked Agent"]
            assert grant["person"] == "alice" and grant["resource"] == url
            assert (await http.delete(f"api/mcp/grants/{grant['id']}", headers=auth)).status_code == 200
            grant_auth = {**MCP_HEADERS, "Authorization": f"Bearer {storage.tokens.access_token}"}
            after = await http.post("mcp", json=rpc("ping"), headers=grant_auth)
            assert after.status_code == 401, after.text


async def test_a_headless_grant_is_minted_by_the_owner_only(hub: Hub) -> None:
    """api/mcp/grants' mint (a token for CI) follows the consent page's rule: olga, who may do everything on
    alice's server through a share, may not leave a token behind there."""
    await hub.acreate_users("olga")
    await hub.ashare("alice", "olga", ["access:servers", "custom:mcp:execute"])
    scopes = ["access:servers!server=alice/", "custom:mcp:execute!server=alice/"]
    body = {"level": "read", "name": "ci-bot", "expires": 86400}
    async with httpx2.AsyncClient(base_url=f"{hub.url}{SERVER}", timeout=30) as http:
        olga = {"Authorization": f"Bearer {await hub.atoken('olga', scopes)}"}
        refused = await http.post("api/mcp/grants", json=body, headers=olga)
        assert refused.status_code == 403 and "only alice" in refused.text, refused.text
        alice = {"Authorization": f"Bearer {await hub.atoken('alice', scopes[:1])}"}
        minted = await http.post("api/mcp/grants", json=body, headers=alice)
        assert minted.status_code == 201, minted.text
        assert minted.json()["url"] == f"{hub.url}{SERVER}mcp"
    async with connect(f"{hub.url}{SERVER}mcp", minted.json()["token"]) as agent:
        assert (await call_tool(agent, "document_exists", path="nothing.txt"))["exists"] is False


async def test_a_grant_for_another_servers_endpoint_is_refused(
    extension: Any, http: httpx2.AsyncClient, mcp_url: str
) -> None:
    """A grants file shared by two servers (grants_path set alike for a user's servers): a grant is for one
    server's endpoint (RFC 8707), whichever name the client reaches it by."""
    store = extension.grants

    def token_for(resource: str) -> str:
        pending = Pending(
            id=resource,
            client_id="c",
            client_name="Agent",
            redirect_uri=REDIRECT,
            redirect_uri_explicit=True,
            state=None,
            code_challenge="x",
            resource=resource,
            created=time.time(),
        )
        store.begin(pending)
        _, code = store.approve(
            pending.id, person="p", person_name="", level="read", folders=[""], propose_only=False, lifetime=3600
        )
        return str(store.redeem(code)[1])

    body = rpc("initialize", {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "x"}})
    path = urlparse(mcp_url).path
    for resource, status in [
        (f"https://hub.example.org/user/alice/second{path}", 401),  # another server's
        (mcp_url, 200),
        (mcp_url.replace("127.0.0.1", "localhost"), 200),  # this one, by another name
    ]:
        headers = {**MCP_HEADERS, "Authorization": f"Bearer {token_for(resource)}"}
        answered = await within(http.post(mcp_url, json=body, headers=headers))
        assert answered.status_code == status, (resource, answered.text)


def test_each_of_a_users_servers_keeps_its_own_grants_file() -> None:
    files = {
        name: hub.own_file("pair_mcp_grants.json")
        for name in ("", "gpu", "a b", "a_b", "../x")
        if (hub := hub_server({**HUB_ENV, "JUPYTERHUB_SERVER_NAME": name})) is not None
    }
    assert files[""] == "pair_mcp_grants.json" and files["gpu"] == "pair_mcp_grants-gpu.json"
    assert len(set(files.values())) == 5 and all(os.sep not in f for f in files.values()), files


def test_the_browsers_scheme_is_the_first_of_the_proxies_chain() -> None:
    assert browser_protocol({"X-Forwarded-Proto": "https,http"}, "http") == "https"
    assert browser_protocol({"Forwarded": "for=1.2.3.4;proto=https, proto=http"}, "http") == "https"
    assert browser_protocol({"X-Forwarded-Proto": "gopher"}, "http") == "http"
    assert browser_protocol({}, "https") == "https"
