"""MCP authorization (issue 32): a real SDK OAuth client connects with no token copied, through Jupyter's consent.

The browser step is driven over HTTP with httpx2: the authorization URL the client opens is followed to the
consent page, fetched with the person's Jupyter token in the URL (Jupyter's own login: it sets the login and
XSRF cookies), and the form is posted with the cookie and its ``_xsrf`` field, as a browser posts it.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import json
import os
import re
import stat
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlparse

import httpx2
import pytest
from mcp import Client
from mcp.client.auth import OAuthClientProvider
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.auth import AuthorizationCodeResult, OAuthClientInformationFull, OAuthClientMetadata, OAuthToken

from .conftest import TLS, call_tool, within

REDIRECT = "http://127.0.0.1:9/callback"  # never reached: the test reads the redirect's Location


@pytest.fixture
def mcp_config(tmp_path: Any) -> dict[str, Any]:
    return {"grants_path": str(tmp_path / "grants" / "pair_mcp_grants.json")}


class Storage:
    """The client's token storage, in memory."""

    def __init__(self) -> None:
        self.tokens: OAuthToken | None = None
        self.client: OAuthClientInformationFull | None = None

    async def get_tokens(self) -> OAuthToken | None:
        return self.tokens

    async def set_tokens(self, tokens: OAuthToken) -> None:
        self.tokens = tokens

    async def get_client_info(self) -> OAuthClientInformationFull | None:
        return self.client

    async def set_client_info(self, client_info: OAuthClientInformationFull) -> None:
        self.client = client_info


async def consent_in_browser(
    url: str, token: str, *, level: str = "read", folders: str = "", deny: bool = False, propose: bool = False
) -> AuthorizationCodeResult:
    """What the person does: open the authorization URL, log in to Jupyter, pick, approve (or deny)."""
    async with httpx2.AsyncClient(timeout=20, verify=TLS) as browser:
        first = await within(browser.get(url))
        assert first.status_code == 302, first.text
        page_url = first.headers["location"]
        assert "/mcp/consent?request=" in page_url
        page = await within(browser.get(f"{page_url}&token={token}"))
        assert page.status_code == 200, page.text
        xsrf = re.search(r'name="_xsrf" value="([^"]+)"', page.text)
        request = re.search(r'name="request" value="([^"]+)"', page.text)
        assert xsrf is not None and request is not None
        form = {
            "_xsrf": xsrf[1],
            "request": request[1],
            "decision": "deny" if deny else "approve",
            "level": level,
            "where": "folders" if folders else "all",
            "folders": folders,
            "expires": "86400",
            **({"propose_only": "on"} if propose else {}),
        }
        done = await within(browser.post(page_url.split("?")[0], data=form))
        assert done.status_code == 302, done.text
        location = done.headers["location"]
    assert location.startswith(REDIRECT), location
    query = parse_qs(urlparse(location).query)
    if deny:
        assert query["error"] == ["access_denied"]
    return AuthorizationCodeResult(code=query.get("code", [""])[0], state=query.get("state", [None])[0])


@contextlib.asynccontextmanager
async def oauth_connect(
    mcp_url: str,
    token: str,
    *,
    level: str = "read",
    folders: str = "",
    name: str = "Test Agent",
    mode: str = "legacy",
    propose: bool = False,
) -> AsyncIterator[tuple[Client, Storage]]:
    """An SDK client whose only credential is what it gets through MCP authorization (the person consents with
    the server's ``token`` as their Jupyter login)."""
    storage = Storage()
    result: asyncio.Future[AuthorizationCodeResult] = asyncio.get_running_loop().create_future()

    async def redirect_handler(url: str) -> None:
        result.set_result(await consent_in_browser(url, token, level=level, folders=folders, propose=propose))

    async def callback_handler() -> AuthorizationCodeResult:
        return await result

    provider = OAuthClientProvider(
        server_url=mcp_url,
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
    async with httpx2.AsyncClient(auth=provider, timeout=30, verify=TLS) as http_client:
        transport = streamable_http_client(mcp_url, http_client=http_client)
        async with Client(transport, mode=mode) as client:  # type: ignore[arg-type]
            yield client, storage


@pytest.fixture
def oauth_client(mcp_url: str, token: str) -> Callable[..., contextlib.AbstractAsyncContextManager[Any]]:
    """Factory: :func:`oauth_connect` to the test's server."""
    return functools.partial(oauth_connect, mcp_url, token)


async def test_no_token_flow_discovery_registration_consent_tools(
    oauth_client: Any, jp_root_dir: Any, extension: Any, http: httpx2.AsyncClient, mcp_url: str
) -> None:
    (jp_root_dir / "notes.txt").write_text("hello")
    async with oauth_client(level="write", name="Evil\u202e Agent\x07 " + "x" * 100) as (client, storage):
        tools = await within(client.list_tools())
        assert "create_document" in {tool.name for tool in tools.tools}
        assert (await call_tool(client, "document_exists", path="notes.txt"))["exists"] is True
        await call_tool(client, "create_document", path="made.txt", content="by a grant")
        (actor,) = extension.actors.live
        assert actor.name.endswith("Evil Agent x" + "x" * 52) and "\u202e" not in actor.name
    assert (jp_root_dir / "made.txt").read_text() == "by a grant"
    assert storage.tokens is not None and storage.tokens.refresh_token
    (grant,) = extension.grants.grants.values()
    assert grant.level == "write" and grant.folders == [""]
    assert grant.client_name.startswith("Evil Agent x") and len(grant.client_name) == 64  # no bidi, no BEL
    assert grant.person  # the Jupyter user who approved it
    # Stored hashed, owner-only.
    path = extension.grants.path
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    stored = await asyncio.to_thread(Path(path).read_text, encoding="utf-8")
    assert storage.tokens.access_token not in stored and storage.tokens.refresh_token not in stored
    assert json.loads(stored)["grants"][0]["level"] == "write"


async def test_unauthenticated_401_points_to_metadata(http: httpx2.AsyncClient, mcp_url: str) -> None:
    response = await within(http.post(mcp_url, json={}, headers={"Content-Type": "application/json"}))
    assert response.status_code == 401
    header = response.headers["www-authenticate"]
    metadata_url = re.search(r'resource_metadata="([^"]+)"', header)
    assert metadata_url is not None and "error=" not in header  # no credentials: no error code (RFC 6750)
    metadata = (await within(http.get(metadata_url[1]))).json()
    assert metadata["resource"] == mcp_url
    (issuer,) = metadata["authorization_servers"]
    parsed = urlparse(issuer)
    # RFC 8414 §3.1, at the host's root (Jupyter's extension adds it there for a non-root base_url).
    as_url = f"{parsed.scheme}://{parsed.netloc}/.well-known/oauth-authorization-server{parsed.path}"
    as_metadata = (await within(http.get(as_url))).json()
    assert as_metadata["issuer"] == issuer
    assert as_metadata["code_challenge_methods_supported"] == ["S256"]
    assert as_metadata["registration_endpoint"] == f"{issuer}/register"
    # The RFC 9728 path form at the host's root, too.
    root_pr = f"{parsed.scheme}://{parsed.netloc}/.well-known/oauth-protected-resource{parsed.path}"
    assert (await within(http.get(root_pr))).json()["resource"] == mcp_url
    # The address the client used, not a forwarded one Jupyter does not trust (trust_xheaders is off).
    as_localhost = await within(http.get(metadata_url[1], headers={"Host": f"localhost:{parsed.port}"}))
    assert as_localhost.json()["resource"] == mcp_url.replace("127.0.0.1", "localhost")
    forwarded = await within(http.get(metadata_url[1], headers={"X-Forwarded-Host": "evil.example"}))
    assert forwarded.json()["resource"] == mcp_url


@pytest.mark.parametrize("mcp_config", [{"enable_grants": False}])
async def test_without_grants_no_oauth(http: httpx2.AsyncClient, mcp_url: str) -> None:
    response = await within(http.post(mcp_url, json={}, headers={"Content-Type": "application/json"}))
    assert response.status_code == 401 and "resource_metadata" not in response.headers["www-authenticate"]
    assert (await within(http.get(f"{mcp_url}/.well-known/oauth-protected-resource"))).status_code == 404


async def test_refresh_rotates_and_revocation_ends_access(
    oauth_client: Any, mcp_client: Any, http: httpx2.AsyncClient, mcp_url: str, extension: Any
) -> None:
    async with oauth_client() as (client, storage):
        await within(client.list_tools())
    assert storage.tokens is not None and storage.client is not None
    token_url, revoke_url = f"{mcp_url}/token", f"{mcp_url}/revoke"
    secret = {"client_id": storage.client.client_id, "client_secret": storage.client.client_secret or ""}
    old_refresh = storage.tokens.refresh_token
    refreshed = await within(
        http.post(token_url, data={"grant_type": "refresh_token", "refresh_token": old_refresh, **secret})
    )
    assert refreshed.status_code == 200, refreshed.text
    fresh = refreshed.json()
    assert fresh["refresh_token"] != old_refresh and fresh["access_token"] != storage.tokens.access_token
    again = await within(
        http.post(token_url, data={"grant_type": "refresh_token", "refresh_token": old_refresh, **secret})
    )
    assert again.status_code == 400 and again.json()["error"] == "invalid_grant"  # each refresh token works once
    bearer = {"Authorization": f"Bearer {fresh['access_token']}"}
    async with mcp_client(headers=bearer) as client:
        assert (await within(client.list_tools())).tools
    revoked = await within(http.post(revoke_url, data={"token": fresh["access_token"], **secret}))
    assert revoked.status_code == 200, revoked.text
    assert extension.grants.grants == {}
    after = await within(http.post(mcp_url, json={}, headers={**bearer, "Content-Type": "application/json"}))
    assert after.status_code == 401
    assert 'error="invalid_token"' in after.headers["www-authenticate"]


async def test_stateless_era_with_a_grant(oauth_client: Any, extension: Any) -> None:
    async with oauth_client(level="read", mode="2026-07-28") as (client, _):
        assert (await call_tool(client, "document_exists", path="nothing.txt"))["exists"] is False
    (grant,) = extension.grants.grants.values()
    assert grant.last_used > grant.created


async def test_read_grant_cannot_write(oauth_client: Any, jp_root_dir: Any) -> None:
    async with oauth_client(level="read") as (client, _):
        assert (await call_tool(client, "document_exists", path="nothing.txt"))["exists"] is False
        result = await within(client.call_tool("create_document", {"path": "no.txt"}))
        assert result.is_error
        assert "level 'read'" in result.content[0].text and "'write'" in result.content[0].text
    assert not (jp_root_dir / "no.txt").exists()


async def test_folder_grant_stays_in_its_folders(oauth_client: Any, jp_root_dir: Any) -> None:
    for folder in ("mine", "other"):
        (jp_root_dir / folder).mkdir()
        (jp_root_dir / folder / "a.txt").write_text(folder)
    (jp_root_dir / "mine" / "link").symlink_to(jp_root_dir / "other")
    async with oauth_client(level="write", folders="mine\n") as (client, _):
        assert (await call_tool(client, "document_exists", path="mine/a.txt"))["exists"] is True
        await call_tool(client, "list_documents", path_filter="mine/")
        for name, args in [
            ("document_exists", {"path": "other/a.txt"}),
            ("document_exists", {"path": "mine/../other/a.txt"}),
            ("document_exists", {"path": "mine/link/a.txt"}),
            ("delete_document", {"path": "mine/link/a.txt"}),
            ("list_documents", {}),
            ("list_documents", {"path_filter": "**/*.txt"}),
            ("copy_document", {"path": "mine/a.txt", "copy_path": "other/b.txt"}),
            ("delete_document", {"path": "other/a.txt"}),
        ]:
            result = await within(client.call_tool(name, args))
            assert result.is_error, (name, args)
            assert "reaches only the folders 'mine'" in result.content[0].text, result.content[0].text
    assert (jp_root_dir / "other" / "a.txt").exists() and not (jp_root_dir / "other" / "b.txt").exists()


async def test_grant_tokens_are_not_jupyter_tokens(
    oauth_client: Any, mcp_client: Any, http: httpx2.AsyncClient, server_root: str, jp_base_url: str
) -> None:
    async with oauth_client(level="execute") as (client, storage):
        await within(client.list_tools())
    assert storage.tokens is not None
    grant = storage.tokens.access_token
    base = f"{server_root}{jp_base_url}"
    for path in ("api/contents", "api/kernels", "api/sessions", "api/terminals", "api/mcp/review", "api/mcp/activity"):
        by_header = await within(http.get(base + path, headers={"Authorization": f"Bearer {grant}"}))
        by_query = await within(http.get(base + path, params={"token": grant}))
        assert by_header.status_code in (401, 403), (path, by_header.status_code)
        assert by_query.status_code in (401, 403), (path, by_query.status_code)
    bearer = {"Authorization": f"Bearer {grant}"}
    for method, path, body in [
        ("PUT", "api/mcp/review", {"enabled": False}),
        ("POST", "api/mcp/agents/0123456789ab/allow", {"path": "a.ipynb"}),
        ("POST", "api/mcp/suggestions/0123456789ab/accept", {}),
        ("POST", "api/mcp/restore", {"path": "a.ipynb", "version": "v"}),
        ("POST", "api/contents", {"type": "file"}),
        ("POST", "api/kernels", {}),
    ]:
        answer = await within(http.request(method, base + path, json=body, headers=bearer))
        assert answer.status_code in (401, 403), (method, path, answer.status_code)
    # ... and the MCP endpoint does take it.
    async with mcp_client(headers={"Authorization": f"Bearer {grant}"}) as client:
        assert (await within(client.list_tools())).tools


async def test_consent_needs_xsrf_and_a_login(oauth_client: Any, mcp_url: str, token: str) -> None:
    storage = Storage()
    seen: list[str] = []

    async def redirect_handler(url: str) -> None:
        seen.append(url)

    async def callback_handler() -> AuthorizationCodeResult:
        raise RuntimeError("the test drives the consent page itself")

    provider = OAuthClientProvider(
        server_url=mcp_url,
        client_metadata=OAuthClientMetadata(client_name="x", redirect_uris=[REDIRECT]),  # type: ignore[list-item]
        storage=storage,
        redirect_handler=redirect_handler,
        callback_handler=callback_handler,
    )
    async with httpx2.AsyncClient(auth=provider, timeout=30, verify=TLS) as http_client:
        with pytest.raises(RuntimeError, match="drives the consent page itself"):
            await within(http_client.post(mcp_url, json={}, headers={"Content-Type": "application/json"}))
    assert seen
    async with httpx2.AsyncClient(timeout=20, verify=TLS) as browser:
        page_url = (await within(browser.get(seen[0]))).headers["location"]
        anonymous = await within(browser.get(page_url))
        assert anonymous.status_code == 302 and "/login" in anonymous.headers["location"]  # Jupyter's login first
        page = await within(browser.get(f"{page_url}&token={token}"))
        request = re.search(r'name="request" value="([^"]+)"', page.text)
        assert request is not None
        form = {"request": request[1], "decision": "approve", "level": "execute", "where": "all", "expires": "86400"}
        forged = await within(browser.post(page_url.split("?")[0], data=form))  # the cookie, but no _xsrf
        assert forged.status_code == 403


async def test_deny_and_registration_limits(http: httpx2.AsyncClient, mcp_url: str, token: str, extension: Any) -> None:
    refused = await within(http.post(f"{mcp_url}/register", json={"redirect_uris": ["http://evil.example/cb"]}))
    assert refused.status_code == 400 and refused.json()["error"] == "invalid_redirect_uri"
    huge = await within(http.post(f"{mcp_url}/register", content=b"{" + b" " * 100_000 + b"}"))
    assert huge.status_code == 413
    registered = await within(http.post(f"{mcp_url}/register", json={"redirect_uris": [REDIRECT], "client_name": "A"}))
    assert registered.status_code == 201, registered.text
    client_id = registered.json()["client_id"]
    query = {
        "response_type": "code",
        "client_id": client_id,
        "redirect_uri": REDIRECT,
        "code_challenge": "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM",
        "code_challenge_method": "S256",
        "state": "st",
        "resource": mcp_url,
    }
    url = str(httpx2.URL(f"{mcp_url}/authorize", params=query))
    assert (await consent_in_browser(url, token, deny=True)).state == "st"
    assert extension.grants.grants == {}
    wrong = {**query, "resource": "http://127.0.0.1:1/other/mcp"}
    elsewhere = await within(http.get(f"{mcp_url}/authorize", params=wrong))
    assert elsewhere.status_code == 302 and "error=invalid_target" in elsewhere.headers["location"]


async def test_propose_only_grant_proposes(oauth_client: Any, make_notebook: Any, extension: Any) -> None:
    path = make_notebook("p.ipynb", [{"cell_type": "code", "source": "a = 1", "id": "c0"}])
    async with oauth_client(level="write", propose=True) as (client, _):
        await call_tool(client, "get_notebook", path=path)
        result = await call_tool(
            client, "batch_update_notebook_cells", path=path, updates=[{"cell_id": "c0", "content": "a = 2"}]
        )
        assert result["suggestion"]["state"] == "pending"
        live = await call_tool(client, "get_notebook", path=path)
        assert [c["source"] for c in live["cells"]] == ["a = 1"]


async def test_people_list_and_revoke_their_grants(
    oauth_client: Any, http: httpx2.AsyncClient, server_root: str, jp_base_url: str, auth: dict[str, str]
) -> None:
    async with oauth_client(level="read", folders="work") as (client, storage):
        await within(client.list_tools())
    assert storage.tokens is not None
    api = f"{server_root}{jp_base_url}api/mcp/grants"
    grant_auth = {"Authorization": f"Bearer {storage.tokens.access_token}"}
    assert (await within(http.get(api, headers=grant_auth))).status_code in (401, 403)  # never a grant's business
    listed = (await within(http.get(api, headers=auth))).json()["grants"]
    (grant,) = listed
    assert (grant["client_name"], grant["level"], grant["folders"]) == ("Test Agent", "read", ["work"])
    assert "access" not in grant and "refresh" not in grant
    assert (await within(http.delete(f"{api}/{grant['id']}", headers=grant_auth))).status_code in (401, 403)
    assert (await within(http.delete(f"{api}/{grant['id']}", headers=auth))).json() == {"revoked": grant["id"]}
    assert (await within(http.get(api, headers=auth))).json()["grants"] == []
    assert (await within(http.delete(f"{api}/{grant['id']}", headers=auth))).status_code == 404
