"""Who may touch the endpoint: the auth matrix, Origin, Host, credential-bound sessions, logs."""

from __future__ import annotations

import logging
from typing import Any

import httpx2
import pytest

from .conftest import INIT_PARAMS, LEGACY_VERSION, MCP_HEADERS, open_session, rpc

pytestmark = pytest.mark.usefixtures("jp_serverapp")

INIT = rpc("initialize", INIT_PARAMS)


async def assert_still_serving(http: httpx2.AsyncClient, url: str, auth: dict[str, str]) -> None:
    session = await open_session(http, url, auth)
    response = await http.post(
        url,
        json=rpc("tools/list", {}, id=2),
        headers={**MCP_HEADERS, **auth, "mcp-session-id": session, "mcp-protocol-version": LEGACY_VERSION},
    )
    assert response.status_code == 200
    assert "list_documents" in response.text


@pytest.mark.parametrize("method", ["POST", "GET", "DELETE"])
@pytest.mark.parametrize("authorization", [None, "Bearer wrong-token", "token wrong-token", "Basic Zm9vOmJhcg=="])
async def test_no_or_wrong_credentials_are_refused(
    http: httpx2.AsyncClient, mcp_url: str, auth: dict[str, str], method: str, authorization: str | None
) -> None:
    headers = dict(MCP_HEADERS)
    if authorization:
        headers["Authorization"] = authorization
    response = await http.request(method, mcp_url, json=INIT if method == "POST" else None, headers=headers)
    assert response.status_code == 401
    assert response.headers["WWW-Authenticate"].startswith("Bearer ")
    assert "Authorization: Bearer <token>" in response.json()["message"]
    assert "xsrf" not in response.text.lower()
    assert "jsonrpc" not in response.text  # refused by Jupyter before the SDK saw anything
    await assert_still_serving(http, mcp_url, auth)


@pytest.mark.parametrize("scheme", ["Bearer", "token", "bearer", "TOKEN"])
async def test_token_schemes_are_accepted(http: httpx2.AsyncClient, mcp_url: str, token: str, scheme: str) -> None:
    response = await http.post(mcp_url, json=INIT, headers={**MCP_HEADERS, "Authorization": f"{scheme} {token}"})
    assert response.status_code == 200
    assert response.headers.get("mcp-session-id")


async def test_token_in_query_is_accepted(http: httpx2.AsyncClient, mcp_url: str, token: str) -> None:
    response = await http.post(f"{mcp_url}?token={token}", json=INIT, headers=MCP_HEADERS)
    assert response.status_code == 200


async def login_cookies(http: httpx2.AsyncClient, server_root: str, base_url: str, token: str) -> httpx2.Cookies:
    """Log in the way a browser does (token once in the URL) and keep Jupyter's cookies."""
    response = await http.get(f"{server_root}{base_url}api/status", params={"token": token})
    assert response.status_code == 200
    response = await http.get(f"{server_root}{base_url}login", params={"token": token})
    return http.cookies


async def test_cookie_without_xsrf_is_refused_and_with_xsrf_accepted(
    http: httpx2.AsyncClient, mcp_url: str, server_root: str, jp_base_url: str, token: str
) -> None:
    # A browser-style login: POST the token to the login form and keep the cookies it sets.
    login = await http.get(f"{server_root}{jp_base_url}login")
    xsrf = http.cookies.get("_xsrf")
    assert xsrf, "the login page sets an _xsrf cookie"
    response = await http.post(
        f"{server_root}{jp_base_url}login",
        data={"password": token, "_xsrf": xsrf},
        follow_redirects=False,
    )
    assert response.status_code in (302, 303), login.text[:200]
    assert any(name.startswith("username-") for name in http.cookies), "login cookie set"

    refused = await http.post(mcp_url, json=INIT, headers=MCP_HEADERS)
    assert refused.status_code == 403
    assert "xsrf" in refused.text.lower()

    accepted = await http.post(mcp_url, json=INIT, headers={**MCP_HEADERS, "X-XSRFToken": xsrf})
    assert accepted.status_code == 200


async def test_session_is_bound_to_its_credential(
    http: httpx2.AsyncClient, mcp_url: str, server_root: str, jp_base_url: str, token: str, auth: dict[str, str]
) -> None:
    """A session opened with the token is unknown (404) to a cookie-authenticated browser user."""
    session = await open_session(http, mcp_url, auth)
    same = {**MCP_HEADERS, "mcp-session-id": session, "mcp-protocol-version": LEGACY_VERSION}

    # The same token in another form is the same principal.
    ok = await http.post(f"{mcp_url}?token={token}", json=rpc("ping", id=5), headers=same)
    assert ok.status_code == 200

    async with httpx2.AsyncClient(timeout=20) as browser:
        await browser.get(f"{server_root}{jp_base_url}login")
        xsrf = browser.cookies["_xsrf"]
        await browser.post(f"{server_root}{jp_base_url}login", data={"password": token, "_xsrf": xsrf})
        other = await browser.post(mcp_url, json=rpc("ping", id=6), headers={**same, "X-XSRFToken": xsrf})
        assert other.status_code == 404
        stream = await browser.get(mcp_url, headers={"Accept": "text/event-stream", "mcp-session-id": session})
        assert stream.status_code == 404
        gone = await browser.delete(mcp_url, headers={**same, "X-XSRFToken": xsrf})
        assert gone.status_code == 404

    # The owner's session survived the attempts.
    still = await http.post(mcp_url, json=rpc("ping", id=7), headers={**same, **auth})
    assert still.status_code == 200


@pytest.mark.parametrize("origin", ["http://evil.example.com", "null", "https://localhost.evil.com"])
async def test_foreign_origin_is_refused_with_403(
    http: httpx2.AsyncClient, mcp_url: str, auth: dict[str, str], origin: str
) -> None:
    response = await http.post(mcp_url, json=INIT, headers={**MCP_HEADERS, **auth, "Origin": origin})
    assert response.status_code == 403
    await assert_still_serving(http, mcp_url, auth)


async def test_same_origin_is_accepted(
    http: httpx2.AsyncClient, mcp_url: str, server_root: str, auth: dict[str, str]
) -> None:
    response = await http.post(mcp_url, json=INIT, headers={**MCP_HEADERS, **auth, "Origin": server_root})
    assert response.status_code == 200


class TestAllowedOrigin:
    @pytest.fixture
    def jp_server_config(self, jp_server_config: Any) -> Any:
        jp_server_config.ServerApp.allow_origin = "https://trusted.example.org"
        return jp_server_config

    async def test_configured_origin_is_accepted(self, http: httpx2.AsyncClient, mcp_url: str, auth: dict) -> None:
        ok = await http.post(
            mcp_url, json=INIT, headers={**MCP_HEADERS, **auth, "Origin": "https://trusted.example.org"}
        )
        assert ok.status_code == 200
        refused = await http.post(mcp_url, json=INIT, headers={**MCP_HEADERS, **auth, "Origin": "https://evil.org"})
        assert refused.status_code == 403


class TestAllowedOriginPattern:
    @pytest.fixture
    def jp_server_config(self, jp_server_config: Any) -> Any:
        jp_server_config.ServerApp.allow_origin_pat = r"https://.*\.trusted\.org"
        return jp_server_config

    async def test_pattern_origin_is_accepted(self, http: httpx2.AsyncClient, mcp_url: str, auth: dict) -> None:
        ok = await http.post(mcp_url, json=INIT, headers={**MCP_HEADERS, **auth, "Origin": "https://app.trusted.org"})
        assert ok.status_code == 200
        refused = await http.post(
            mcp_url, json=INIT, headers={**MCP_HEADERS, **auth, "Origin": "https://trusted.org.evil"}
        )
        assert refused.status_code == 403


async def test_foreign_host_is_refused(http: httpx2.AsyncClient, mcp_url: str, auth: dict[str, str]) -> None:
    """Jupyter's Host check is the DNS-rebinding guard: a non-local Host gets 403."""
    response = await http.post(mcp_url, json=INIT, headers={**MCP_HEADERS, **auth, "Host": "evil.example.com"})
    assert response.status_code == 403
    local = await http.post(mcp_url, json=INIT, headers={**MCP_HEADERS, **auth, "Host": "localhost"})
    assert local.status_code == 200


class TestRemoteAccess:
    """With remote access allowed (JupyterHub, a remote host) any Host works: the SDK's check is off."""

    @pytest.fixture
    def jp_server_config(self, jp_server_config: Any) -> Any:
        jp_server_config.ServerApp.allow_remote_access = True
        return jp_server_config

    async def test_remote_host_is_served(self, http: httpx2.AsyncClient, mcp_url: str, auth: dict) -> None:
        response = await http.post(mcp_url, json=INIT, headers={**MCP_HEADERS, **auth, "Host": "hub.example.com"})
        assert response.status_code == 200


async def test_no_token_header_or_content_reaches_the_logs(
    mcp_client: Any, token: str, jp_root_dir: Any, caplog: pytest.LogCaptureFixture
) -> None:
    secret_text = "TOP-SECRET-CELL-CONTENT"
    (jp_root_dir / "secret.md").write_text(secret_text)
    caplog.set_level(logging.DEBUG)
    async with mcp_client() as client:
        await client.call_tool("list_documents", {})
        await client.call_tool("document_exists", {"path": "secret.md"})
        await client.call_tool("document_exists", {"path": "../escape"})
    logged = "\n".join(f"{r.getMessage()} {r.args!r}" for r in caplog.records)
    assert token not in logged
    assert "Bearer" not in logged
    assert secret_text not in logged


async def test_sdk_does_not_configure_the_root_logger(extension: Any) -> None:
    assert not any(type(h).__name__ == "RichHandler" for h in logging.getLogger().handlers)
    assert logging.getLogger("mcp").getEffectiveLevel() >= logging.WARNING


class TestAuthenticationDisabled:
    """A server run without a token (and without XSRF, as such setups must) still keeps sessions.

    Jupyter hands every cookie-less request a new random anonymous user; the session must not be
    bound to that, or a client without a cookie jar could never make a second request.
    """

    @pytest.fixture
    def jp_server_config(self, jp_server_config: Any) -> Any:
        jp_server_config.ServerApp.token = ""
        jp_server_config.ServerApp.disable_check_xsrf = True
        return jp_server_config

    async def test_cookieless_client_keeps_its_session(self, mcp_url: str) -> None:
        async with httpx2.AsyncClient(timeout=20) as first:
            session = await open_session(first, mcp_url, {})
        async with httpx2.AsyncClient(timeout=20) as second:  # no cookies carried over
            headers = {**MCP_HEADERS, "mcp-session-id": session, "mcp-protocol-version": LEGACY_VERSION}
            response = await second.post(mcp_url, json=rpc("tools/list", {}, id=2), headers=headers)
        assert response.status_code == 200
        assert "list_documents" in response.text
