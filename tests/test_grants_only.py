"""``grants_only`` (issue 32 item 7): grants are the only way in for agents.

With it on, ``{base_url}mcp`` refuses the person's own keys (the server's token by header or ``?token=``, a
login cookie) with a 401 whose ``WWW-Authenticate`` points at the resource metadata, so an OAuth-capable
client starts the grant flow; a grant still works, and the person keeps the browser and ``api/mcp/*``.
"""

from __future__ import annotations

import logging
import re
from typing import Any

import httpx2
import pytest

from .conftest import INIT_PARAMS, MCP_HEADERS, TLS, call_tool, rpc, within
from .test_grants import oauth_client

__all__ = ["oauth_client"]  # the fixture, used here as in test_grants.py


@pytest.fixture
def mcp_config(tmp_path: Any) -> dict[str, Any]:
    return {"grants_only": True, "grants_path": str(tmp_path / "grants" / "pair_mcp_grants.json")}


def challenge_points_at_metadata(response: httpx2.Response) -> str:
    assert response.status_code == 401, response.text
    header = response.headers["www-authenticate"]
    found = re.search(r'resource_metadata="([^"]+)"', header)
    assert found is not None, header
    assert "only grants" in response.json()["message"]
    return found[1]


async def test_the_server_token_is_refused_with_the_way_to_a_grant(
    http: httpx2.AsyncClient, mcp_url: str, token: str
) -> None:
    initialize = rpc("initialize", INIT_PARAMS)
    by_header = await within(
        http.post(mcp_url, json=initialize, headers={**MCP_HEADERS, "Authorization": f"Bearer {token}"})
    )
    metadata_url = challenge_points_at_metadata(by_header)
    assert 'error="invalid_token"' in by_header.headers["www-authenticate"]  # credentials were sent (RFC 6750)
    assert (await within(http.get(metadata_url))).json()["resource"] == mcp_url
    by_query = await within(http.post(f"{mcp_url}?token={token}", json=initialize, headers=MCP_HEADERS))
    challenge_points_at_metadata(by_query)
    for verb in ("GET", "DELETE"):  # every verb of the endpoint
        answer = await within(http.request(verb, mcp_url, headers={"Authorization": f"token {token}"}))
        challenge_points_at_metadata(answer)


async def test_the_login_cookie_is_refused_on_mcp_but_the_person_keeps_the_rest(
    jp_base_url: str, server_root: str, mcp_url: str, token: str
) -> None:
    async with httpx2.AsyncClient(timeout=20, verify=TLS) as browser:
        # Jupyter's own login (the token in a page's URL, as a browser follows it) sets the login cookie.
        page = await within(browser.get(f"{server_root}{jp_base_url}api/mcp/review?token={token}"))
        assert page.status_code == 200, page.text
        assert browser.cookies, "Jupyter set no login cookie"
        xsrf = {"X-XSRFToken": browser.cookies.get("_xsrf", "")} if browser.cookies.get("_xsrf") else {}
        refused = await within(
            browser.post(mcp_url, json=rpc("initialize", INIT_PARAMS), headers={**MCP_HEADERS, **xsrf})
        )
        challenge_points_at_metadata(refused)
        assert "error=" not in refused.headers["www-authenticate"]  # no Authorization header was sent
        # The person's browser session still reaches this package's REST.
        review = await within(browser.get(f"{server_root}{jp_base_url}api/mcp/review"))
        assert review.status_code == 200, review.text
        grants = await within(browser.get(f"{server_root}{jp_base_url}api/mcp/grants"))
        assert grants.status_code == 200, grants.text


async def test_the_rest_api_still_takes_the_server_token(
    http: httpx2.AsyncClient, jp_base_url: str, server_root: str, auth: dict[str, str]
) -> None:
    for route in ("review", "grants"):
        answer = await within(http.get(f"{server_root}{jp_base_url}api/mcp/{route}", headers=auth))
        assert answer.status_code == 200, answer.text


async def test_a_grant_gets_in(oauth_client: Any, jp_root_dir: Any, extension: Any) -> None:
    (jp_root_dir / "notes.txt").write_text("hello")
    async with oauth_client(level="write", name="Granted Agent") as (client, _):
        assert (await call_tool(client, "document_exists", path="notes.txt"))["exists"] is True
        await call_tool(client, "create_document", path="made.txt", content="by a grant")
    assert (jp_root_dir / "made.txt").read_text() == "by a grant"


async def test_the_start_line_leads_with_the_no_token_flow_and_names_no_token(
    extension: Any, jp_serverapp: Any, token: str, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO)
    await extension._start_jupyter_server_extension(jp_serverapp)
    (line,) = [r.getMessage() for r in caplog.records if r.getMessage().startswith("MCP endpoint:")]
    assert "with just this URL" in line and "only grants" in line
    assert "Authorization: Bearer" not in line and token not in line


class TestWithoutGrants:
    """``grants_only`` without ``enable_grants`` would let nobody in: the endpoint is not served, and the log says
    why (Jupyter, ``reraise_server_extension_failures`` off, loads the other extensions anyway)."""

    @pytest.fixture
    def mcp_config(self) -> dict[str, Any]:
        return {"grants_only": True, "enable_grants": False}

    @pytest.fixture
    def jp_server_config(self, jp_server_config: Any, capfd: pytest.CaptureFixture[str]) -> Any:
        jp_server_config.ServerApp.reraise_server_extension_failures = False
        return jp_server_config

    @pytest.mark.usefixtures("jp_serverapp")
    async def test_not_served(
        self, http: httpx2.AsyncClient, mcp_url: str, auth: dict[str, str], capfd: pytest.CaptureFixture[str]
    ) -> None:
        response = await http.post(mcp_url, json=rpc("initialize", INIT_PARAMS), headers={**MCP_HEADERS, **auth})
        assert response.status_code == 404
        log = capfd.readouterr().err
        assert "MCP endpoint not served: grants_only needs enable_grants" in log


class TestByDefault:
    """Without ``grants_only`` the token still works, and the start line names it second, after the no-token way."""

    @pytest.fixture
    def mcp_config(self, tmp_path: Any) -> dict[str, Any]:
        return {"grants_path": str(tmp_path / "grants" / "pair_mcp_grants.json")}

    async def test_the_start_line_leads_with_the_no_token_flow(
        self, extension: Any, jp_serverapp: Any, token: str, caplog: pytest.LogCaptureFixture
    ) -> None:
        caplog.set_level(logging.INFO)
        await extension._start_jupyter_server_extension(jp_serverapp)
        (line,) = [r.getMessage() for r in caplog.records if r.getMessage().startswith("MCP endpoint:")]
        assert 0 < line.index("with just this URL") < line.index("Authorization: Bearer") and token not in line

    async def test_the_server_token_still_works(self, mcp_client: Any) -> None:
        async with mcp_client() as client:
            assert (await within(client.list_tools())).tools
