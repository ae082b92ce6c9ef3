"""Grants in a real browser (issue 32, items 2, 5 and 6): the consent page and the panel's "Connected agents".

The Python SDK's OAuth client connects with no token: its redirect handler opens the authorization URL in the
person's logged-in browser (a tab with the JupyterLab page's cookies), the test clicks Approve on Jupyter's
consent page, the browser follows the redirect to the client's loopback callback (the test reads that request's
URL, as the client's listener would), and the client completes the exchange and calls a tool. The panel then
lists the grant; Revoke removes it and its token stops working. "New token…" mints a headless grant whose
token, shown once, works on /mcp.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlparse

import httpx2
import pytest
from mcp import Client
from mcp.client.auth import OAuthClientProvider
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.auth import AuthorizationCodeResult, OAuthClientMetadata

from ..conftest import TLS, call_tool, within
from ..test_grants import Storage, mcp_config  # noqa: F401  (fixture)
from .conftest import SEEN, OpenPage

#: The client's loopback callback: the browser's request to it is read (nothing listens there; Playwright's
#: routes do not see a redirect's target), on a port Chromium asks at all (it refuses well-known ones such as 9).
REDIRECT = "http://127.0.0.1:47999/callback"

pytestmark = pytest.mark.usefixtures("extension_built")


async def show_grants(page: Any) -> Any:
    await page.evaluate("window.jupyterapp.shell.activateById('jp-mcp-activity')")
    section = page.locator(".jp-mcp-grants")
    from playwright.async_api import expect

    await expect(section).to_be_visible(timeout=SEEN)
    return section


@contextlib.asynccontextmanager
async def consented_client(page: Any, mcp_url: str, level: str) -> AsyncIterator[tuple[Client, Storage]]:
    """An SDK OAuth client whose consent the person gives in the browser ``page`` is logged in with (a tab of
    its own with the page's cookies: Playwright gives each page of ``browser.new_page`` its own context)."""
    context = await page.context.browser.new_context()
    await context.add_cookies(await page.context.cookies())
    redirected: asyncio.Future[str] = asyncio.get_running_loop().create_future()

    def seen(request: Any) -> None:  # the browser following the consent's redirect to the client
        if request.url.startswith(REDIRECT) and not redirected.done():
            redirected.set_result(request.url)

    context.on("request", seen)
    consent = await context.new_page()

    async def redirect_handler(url: str) -> None:
        await consent.goto(url)
        await consent.locator(f"input[name='level'][value='{level}']").check()
        await consent.get_by_role("button", name="Approve").click()

    async def callback_handler() -> AuthorizationCodeResult:
        try:
            url = await within(asyncio.shield(redirected), 30)
        except TimeoutError:
            raise AssertionError(f"no redirect to the client; the consent tab shows {consent.url}") from None
        query = parse_qs(urlparse(url).query)
        return AuthorizationCodeResult(code=query["code"][0], state=query.get("state", [None])[0])

    storage = Storage()
    provider = OAuthClientProvider(
        server_url=mcp_url,
        client_metadata=OAuthClientMetadata(
            client_name="Browser Agent",
            redirect_uris=[REDIRECT],  # type: ignore[list-item]
            grant_types=["authorization_code", "refresh_token"],
            response_types=["code"],
        ),
        storage=storage,
        redirect_handler=redirect_handler,
        callback_handler=callback_handler,
    )
    try:
        async with (
            httpx2.AsyncClient(auth=provider, timeout=60, verify=TLS) as http_client,
            Client(streamable_http_client(mcp_url, http_client=http_client)) as client,  # type: ignore[arg-type]
        ):
            yield client, storage
    finally:
        await context.close()


async def test_consent_in_chromium_then_the_panel_lists_and_revokes_the_grant(
    lab_page: OpenPage,
    make_notebook: Callable[..., str],
    mcp_url: str,
    http: httpx2.AsyncClient,
    extension: Any,
    jp_root_dir: Path,
) -> None:
    from playwright.async_api import expect

    page = await lab_page(make_notebook("grants.ipynb", count=1))
    async with consented_client(page, mcp_url, "write") as (agent, storage):
        await call_tool(agent, "create_document", path="by-agent.txt", content="approved in Chromium")
    assert (jp_root_dir / "by-agent.txt").read_text() == "approved in Chromium"
    (grant,) = extension.grants.grants.values()
    assert (grant.level, grant.client_name) == ("write", "Browser Agent")
    assert storage.tokens is not None
    bearer = {"Authorization": f"Bearer {storage.tokens.access_token}", "Content-Type": "application/json"}
    section = await show_grants(page)
    item = section.locator(f".jp-mcp-grant[data-mcp-grant-id='{grant.id}']")
    await expect(item).to_be_visible(timeout=SEEN)
    await expect(item.locator(".jp-mcp-grant-name")).to_contain_text("Browser Agent")
    await expect(item.locator(".jp-mcp-grant-level")).to_have_text("write")
    await expect(item.locator(".jp-mcp-grant-folders")).to_have_text("the whole server")
    await expect(item.locator(".jp-mcp-grant-used")).not_to_have_text("never")
    # Keyboard: focus the labelled Revoke button and press Enter; confirm.
    revoke = page.get_by_role("button", name="Revoke the grant of Browser Agent")
    await revoke.focus()
    await page.keyboard.press("Enter")
    await page.locator(".jp-Dialog .jp-mod-accept").click()
    await expect(item).to_have_count(0, timeout=SEEN)
    await expect(section.locator(".jp-mcp-grants-status")).to_have_text("No agent holds a grant of yours.")
    assert extension.grants.grants == {}
    refused = await within(http.post(mcp_url, json={}, headers=bearer))
    assert refused.status_code == 401 and 'error="invalid_token"' in refused.headers["www-authenticate"]


async def test_new_token_button_shows_a_working_token_once(
    lab_page: OpenPage,
    make_notebook: Callable[..., str],
    mcp_client: Any,
    extension: Any,
    jp_root_dir: Path,
    mcp_url: str,
) -> None:
    from playwright.async_api import expect

    page = await lab_page(make_notebook("mint.ipynb", count=1))
    section = await show_grants(page)
    await section.locator(".jp-mcp-grants-mint").click()
    dialog = page.locator(".jp-Dialog")
    await dialog.get_by_label("Name people see").fill("ui-bot")
    await dialog.get_by_label("What it may do").select_option("write")
    await dialog.get_by_label("Only these folders (one per line)").fill("work")
    await dialog.get_by_role("button", name="Create token").click()
    token_box = page.locator(".jp-mcp-minted-token textarea")
    await expect(token_box).to_be_visible(timeout=SEEN)
    token = await token_box.input_value()
    assert token.startswith("jpmcp_at_")
    claude = await page.locator(".jp-mcp-minted-claude textarea").input_value()
    assert claude.endswith(f"--header 'Authorization: Bearer {token}'") and mcp_url in claude
    await page.get_by_role("button", name="Done").click()
    await expect(page.locator(".jp-mcp-minted")).to_have_count(0)  # shown once: gone with its dialog
    (grant,) = extension.grants.grants.values()
    assert (grant.client_name, grant.level, grant.folders, grant.headless) == ("ui-bot", "write", ["work"], True)
    item = section.locator(f".jp-mcp-grant[data-mcp-grant-id='{grant.id}']")
    await expect(item.locator(".jp-mcp-grant-kind")).to_have_text("token", timeout=SEEN)
    await expect(item.locator(".jp-mcp-grant-folders")).to_have_text("work")
    (jp_root_dir / "work").mkdir()
    async with mcp_client(headers={"Authorization": f"Bearer {token}"}) as agent:
        await call_tool(agent, "create_document", path="work/ci.txt", content="minted in the panel")
    assert (jp_root_dir / "work" / "ci.txt").read_text() == "minted in the panel"
