"""Headless grants (issue 32, item 6) and hashed client secrets, on a real server (token on) over HTTP.

A person mints a grant with ``POST api/mcp/grants``: its token is answered once (only its hash is kept), reaches
only ``/mcp`` and only what its level and folders allow, and cannot mint, list or revoke grants. Registered
confidential clients' secrets are kept hashed, and those clients still authenticate (``client_secret_post`` and
``client_secret_basic``).
"""

from __future__ import annotations

import asyncio
import base64
import hashlib
import json
import secrets
from pathlib import Path
from typing import Any
from urllib.parse import quote

import httpx2
import pytest
from mcp.shared.exceptions import MCPError

from jupyter_pair_mcp.request_state import fingerprint

from .conftest import TLS, call_tool, until, within
from .test_grants import REDIRECT, consent_in_browser, mcp_config, oauth_client  # noqa: F401  (fixtures)

pytestmark = pytest.mark.usefixtures("jp_serverapp")


@pytest.fixture
def api(server_root: str, jp_base_url: str) -> str:
    return f"{server_root}{jp_base_url}api/mcp/grants"


async def mint(http: httpx2.AsyncClient, api: str, auth: dict[str, str], **body: Any) -> dict[str, Any]:
    response = await within(http.post(api, json={"name": "ci-bot", **body}, headers=auth))
    assert response.status_code == 201, response.text
    assert response.headers["cache-control"] == "no-store"
    return dict(response.json())


async def test_a_minted_token_reaches_only_mcp_within_its_grant(
    http: httpx2.AsyncClient,
    api: str,
    auth: dict[str, str],
    mcp_client: Any,
    mcp_url: str,
    server_root: str,
    jp_base_url: str,
    jp_root_dir: Path,
    extension: Any,
) -> None:
    (jp_root_dir / "work").mkdir()
    (jp_root_dir / "other").mkdir()
    minted = await mint(http, api, auth, level="write", folders=["work"], expires=7 * 86400)
    token, grant = minted["token"], minted["grant"]
    assert (grant["client_name"], grant["level"], grant["folders"], grant["headless"]) == (
        "ci-bot",
        "write",
        ["work"],
        True,
    )
    assert 7 * 86400 - 60 < grant["expires"] - grant["created"] <= 7 * 86400
    assert minted["url"] == mcp_url
    commands = minted["commands"]
    assert commands["claude"] == (
        f"claude mcp add --transport http ci-bot {mcp_url} --header 'Authorization: Bearer {token}'"
    )
    remote = json.loads(commands["mcp_remote"])["mcpServers"]["ci-bot"]
    assert remote["args"][:2] == ["mcp-remote", mcp_url] and remote["env"]["AUTH_HEADER"] == f"Bearer {token}"
    assert json.loads(commands["http_json"])["mcpServers"]["ci-bot"]["headers"]["Authorization"] == f"Bearer {token}"
    # Kept as a hash only.
    stored = await asyncio.to_thread(Path(extension.grants.path).read_text, encoding="utf-8")
    assert token not in stored and hashlib.sha256(token.encode()).hexdigest() in stored
    bearer = {"Authorization": f"Bearer {token}"}
    async with mcp_client(headers=bearer) as agent:
        await call_tool(agent, "create_document", path="work/made.txt", content="by ci")
        refused = await within(agent.call_tool("create_document", {"path": "other/no.txt"}))
        assert refused.is_error and "reaches only the folders 'work'" in refused.content[0].text
    assert (jp_root_dir / "work" / "made.txt").read_text() == "by ci" and not (
        jp_root_dir / "other" / "no.txt"
    ).exists()
    base = f"{server_root}{jp_base_url}"
    http.cookies.clear()  # the person's login cookie, set by Jupyter when the server's token was used
    for path in ("api/contents", "api/kernels", "api/mcp/activity", "api/mcp/grants"):
        answer = await within(http.get(base + path, headers=bearer))
        assert answer.status_code in (401, 403), (path, answer.status_code)
    # A grant cannot mint another one (nor revoke one).
    again = await within(http.post(api, json={"level": "execute"}, headers=bearer))
    assert again.status_code in (401, 403)
    assert (await within(http.delete(f"{api}/{grant['id']}", headers=bearer))).status_code in (401, 403)
    assert len(extension.grants.grants) == 1


async def test_mint_refuses_what_it_cannot_mean(http: httpx2.AsyncClient, api: str, auth: dict[str, str]) -> None:
    for body, words in [
        ({"level": "admin"}, "'level' must be one of read, write, execute"),
        ({"folders": ["../up"]}, "is not a path inside the Jupyter root"),
        ({"folders": "work"}, "'folders' must be a list"),
        ({"expires": 60}, "'expires' must be between"),
        ({"expires": 10**9}, "'expires' must be between"),
        ({"propose_only": "yes"}, "'propose_only' must be true or false"),
    ]:
        answer = await within(http.post(api, json=body, headers=auth))
        assert answer.status_code == 400 and words in answer.json()["message"], (body, answer.text)


async def test_minting_from_a_browser_session_needs_xsrf(
    http: httpx2.AsyncClient, api: str, token: str, server_root: str, jp_base_url: str
) -> None:
    async with httpx2.AsyncClient(timeout=20, verify=TLS) as browser:
        login = await within(browser.get(f"{server_root}{jp_base_url}login?next={quote(jp_base_url)}"))
        xsrf = browser.cookies["_xsrf"]
        logged = await within(browser.post(f"{server_root}{jp_base_url}login", data={"password": token, "_xsrf": xsrf}))
        assert logged.status_code in (200, 302), (login.status_code, logged.text)
        forged = await within(browser.post(api, json={"level": "read"}))  # the cookie, but no X-XSRFToken
        assert forged.status_code == 403
        made = await within(browser.post(api, json={"level": "read"}, headers={"X-XSRFToken": xsrf}))
        assert made.status_code == 201, made.text


async def test_revoking_a_minted_grant_ends_its_session(
    http: httpx2.AsyncClient, api: str, auth: dict[str, str], mcp_client: Any, extension: Any
) -> None:
    minted = await mint(http, api, auth, level="read")
    grant_id = minted["grant"]["id"]
    async with mcp_client(headers={"Authorization": f"Bearer {minted['token']}"}) as agent:
        await within(agent.list_tools())
        principal = fingerprint(extension.principal_key, f"grant:{grant_id}")
        owners = extension.runner.manager._session_owners
        assert principal in {o["client_id"] for o in owners.values()}
        assert (await within(http.delete(f"{api}/{grant_id}", headers=auth))).json() == {"revoked": grant_id}
        await until(lambda: principal not in {o["client_id"] for o in owners.values()}, what="its session ending")
        with pytest.raises((MCPError, httpx2.HTTPStatusError)):
            await within(agent.list_tools())


async def test_a_confidential_clients_secret_is_stored_hashed_and_still_authenticates(
    oauth_client: Any,  # noqa: F811
    http: httpx2.AsyncClient,
    mcp_url: str,
    extension: Any,
) -> None:
    async with oauth_client() as (client, storage):
        await within(client.list_tools())
    assert storage.client is not None and storage.tokens is not None
    secret = storage.client.client_secret
    assert secret and storage.client.token_endpoint_auth_method == "client_secret_post"
    stored = await asyncio.to_thread(Path(extension.grants.path).read_text, encoding="utf-8")
    assert secret not in stored
    kept = json.loads(stored)["clients"][storage.client.client_id]["client_secret"]
    assert kept == "sha256:" + hashlib.sha256(secret.encode()).hexdigest()
    token_url = f"{mcp_url}/token"
    refresh = {"grant_type": "refresh_token", "refresh_token": storage.tokens.refresh_token}
    for wrong in ("", "nope", kept, kept.removeprefix("sha256:")):
        answer = await within(
            http.post(token_url, data={**refresh, "client_id": storage.client.client_id, "client_secret": wrong})
        )
        assert answer.status_code == 401, (wrong, answer.text)  # the hash is not the secret
    right = await within(
        http.post(token_url, data={**refresh, "client_id": storage.client.client_id, "client_secret": secret})
    )
    assert right.status_code == 200, right.text


async def test_a_client_secret_basic_client_authenticates(
    http: httpx2.AsyncClient, mcp_url: str, token: str, extension: Any
) -> None:
    registered = await within(
        http.post(
            f"{mcp_url}/register",
            json={
                "redirect_uris": [REDIRECT],
                "client_name": "Basic",
                "token_endpoint_auth_method": "client_secret_basic",
            },
        )
    )
    assert registered.status_code == 201, registered.text
    client_id, secret = registered.json()["client_id"], registered.json()["client_secret"]
    assert secret not in json.dumps(extension.grants.clients)
    verifier = secrets.token_urlsafe(48)
    challenge = base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest()).rstrip(b"=").decode()
    query = {
        "response_type": "code",
        "client_id": client_id,
        "redirect_uri": REDIRECT,
        "code_challenge": challenge,
        "code_challenge_method": "S256",
        "resource": mcp_url,
    }
    code = (await consent_in_browser(str(httpx2.URL(f"{mcp_url}/authorize", params=query)), token)).code
    exchange = {"grant_type": "authorization_code", "code": code, "redirect_uri": REDIRECT, "code_verifier": verifier}

    def basic(password: str) -> dict[str, str]:
        return {"Authorization": "Basic " + base64.b64encode(f"{client_id}:{password}".encode()).decode()}

    wrong = await within(http.post(f"{mcp_url}/token", data={**exchange, "client_id": client_id}, headers=basic("x")))
    assert wrong.status_code == 401, wrong.text
    right = await within(
        http.post(f"{mcp_url}/token", data={**exchange, "client_id": client_id}, headers=basic(secret))
    )
    assert right.status_code == 200, right.text
    assert secret not in await asyncio.to_thread(Path(extension.grants.path).read_text, encoding="utf-8")
