"""Issue 20's browser scenarios against the companion JupyterLab extension.

Selectors follow what the extension exposes: classes prefixed ``jp-mcp-``, ``data-mcp-agent-key`` (an
agent's key: its awareness username without ``mcp-agent-``) and ``data-cell-id``. The fixtures serve the
extension's build, ``jupyter_pair_mcp/labextension``, to the page (tests/browser/conftest.py). Without that
build every test skips, saying so - and fails where browser tests are required (``REQUIRE_BROWSER``, set by
.ci/run), since scripts/test.sh builds it.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import pytest
from mcp.types import Implementation

from ..conftest import call_tool, tool_error
from .conftest import SEEN, OpenPage, cells, source_lines

pytestmark = pytest.mark.usefixtures("extension_built")


AGENT = Implementation(name="PanelAgent", version="1")


async def agent_key(agent: Any) -> str:
    """The calling agent's key, as the extension writes it into ``data-mcp-agent-key``."""
    users = (await call_tool(agent, "get_online_users"))["users"]
    [me] = [user for user in users if user["is_you"]]
    return str(me["user_id"]).removeprefix("mcp-agent-")


async def edit(agent: Any, path: str, cell_id: str, content: str) -> None:
    await call_tool(
        agent, "batch_update_notebook_cells", path=path, exec=False, updates=[{"cell_id": cell_id, "content": content}]
    )


async def test_the_agent_is_in_the_collaborators_panel_and_the_toolbar_indicator(
    lab_page: OpenPage, mcp_client: Callable[..., Any], make_notebook: Callable[..., str]
) -> None:
    from playwright.async_api import expect

    path = make_notebook("who.ipynb", count=2)
    page = await lab_page(path)
    async with mcp_client(client_info=AGENT) as agent:
        await edit(agent, path, "cell-1", "x = 'here'")
        key = await agent_key(agent)
        entry = page.locator(f".jp-mcp-indicator [data-mcp-agent-key='{key}']").first
        await expect(entry).to_be_visible(timeout=SEEN)
        # Full name and client on hover, for assistive technology too.
        # Names isolated (U+2068 ... U+2069) against right-to-left overrides.
        label = re.compile("^\u2068PanelAgent \\(AI agent\\)\u2069.*client: \u2068PanelAgent")
        await expect(entry.locator(".jp-mcp-avatar")).to_have_attribute("aria-label", label, timeout=SEEN)
        await page.evaluate("window.jupyterapp.shell.activateById('jp-collaboration-panel')")
        collaborator = page.locator(".jp-CollaboratorsPanel .jp-Collaborator", has_text="PanelAgent (AI agent)")
        await expect(collaborator).to_have_count(1, timeout=SEEN)


async def test_the_gutter_mark_follows_the_agents_edits(
    lab_page: OpenPage, mcp_client: Callable[..., Any], make_notebook: Callable[..., str]
) -> None:
    from playwright.async_api import expect

    path = make_notebook("gutter.ipynb", count=3)
    page = await lab_page(path)
    async with mcp_client(client_info=AGENT) as agent:
        key = None
        for index in (0, 2):
            await edit(agent, path, f"cell-{index}", f"x = 'edited {index}'")
            key = key or await agent_key(agent)
            mark = page.locator(f".jp-mcp-gutter-mark[data-mcp-agent-key='{key}']")
            await expect(mark).to_have_count(1, timeout=SEEN)
            await expect(cells(page).nth(index).locator(".jp-mcp-gutter-mark")).to_have_count(1, timeout=SEEN)
            await expect(page.locator(".jp-mcp-gutter")).to_have_attribute("data-cell-id", f"cell-{index}")


async def test_the_activity_panel_lists_an_edit_and_a_run_and_jumps_to_them(
    lab_page: OpenPage, mcp_client: Callable[..., Any], make_notebook: Callable[..., str]
) -> None:
    from playwright.async_api import expect

    path = make_notebook("activity.ipynb", count=30)
    page = await lab_page(path)
    async with mcp_client(client_info=AGENT) as agent:
        await edit(agent, path, "cell-25", "x = 'edited'")
        await call_tool(agent, "execute_notebook_cell", path=path, cell_id="cell-28")
        await page.locator(".jp-mcp-activity-open").first.click()
        entries = page.locator(".jp-mcp-activity-entry")
        edit_entry = entries.filter(has=page.locator(".jp-mcp-activity-cell[data-cell-id='cell-25']")).first
        run_entry = entries.filter(has=page.locator(".jp-mcp-activity-cell[data-cell-id='cell-28']")).first
        await expect(edit_entry).to_be_visible(timeout=SEEN)
        await expect(run_entry).to_be_visible(timeout=SEEN)
        await run_entry.locator(".jp-mcp-activity-cell").click()
        await expect(cells(page).nth(28)).to_be_in_viewport(timeout=SEEN)
        await edit_entry.locator(".jp-mcp-activity-cell").click()
        await expect(cells(page).nth(25)).to_be_in_viewport(timeout=SEEN)


async def test_stop_ends_the_agents_session_and_refuses_its_next_edit(
    lab_page: OpenPage, mcp_client: Callable[..., Any], make_notebook: Callable[..., str]
) -> None:
    from playwright.async_api import expect

    path = make_notebook("stop.ipynb", count=2)
    page = await lab_page(path)
    async with mcp_client(client_info=AGENT) as agent:
        await edit(agent, path, "cell-0", "x = 'before the stop'")
        key = await agent_key(agent)
        await page.locator(f".jp-mcp-stop[data-mcp-agent-key='{key}']").click(timeout=SEEN)
        # Stopped, after a confirmation if the extension asks for one.
        stopped = page.locator(f".jp-mcp-stopped[data-mcp-agent-key='{key}']")
        confirm = page.locator(".jp-Dialog .jp-mod-accept")
        await expect(stopped.or_(confirm)).to_be_visible(timeout=SEEN)
        if await confirm.is_visible():
            await confirm.click()
        await expect(stopped).to_have_count(1, timeout=SEEN)
    async with mcp_client(client_info=AGENT) as again:
        refused = await tool_error(
            again,
            "batch_update_notebook_cells",
            path=path,
            exec=False,
            updates=[{"cell_id": "cell-0", "content": "no"}],
        )
        assert "stop" in refused.lower(), refused
    await expect(source_lines(page, 0)).to_have_text(["x = 'before the stop'"], timeout=SEEN)


async def test_the_indicator_works_in_notebook_7(
    notebook7_page: OpenPage, mcp_client: Callable[..., Any], make_notebook: Callable[..., str]
) -> None:
    from playwright.async_api import expect

    path = make_notebook("nb7.ipynb", count=2)
    page = await notebook7_page(path)
    async with mcp_client(client_info=AGENT) as agent:
        await edit(agent, path, "cell-1", "x = 'in notebook 7'")
        key = await agent_key(agent)
        await expect(page.locator(f".jp-mcp-indicator [data-mcp-agent-key='{key}']").first).to_be_visible(timeout=SEEN)


async def test_clicking_the_agent_scrolls_to_its_cell_and_follow_keeps_it_in_view(
    lab_page: OpenPage, mcp_client: Callable[..., Any], make_notebook: Callable[..., str]
) -> None:
    from playwright.async_api import expect

    path = make_notebook("follow.ipynb", count=40)
    page = await lab_page(path)
    async with mcp_client(client_info=AGENT) as agent:
        await edit(agent, path, "cell-36", "x = 'far below'")
        key = await agent_key(agent)
        await expect(page.locator(f".jp-mcp-gutter-mark[data-mcp-agent-key='{key}']")).to_have_count(1, timeout=SEEN)
        await expect(cells(page).nth(36)).not_to_be_in_viewport()
        await page.locator(f".jp-mcp-participant[data-mcp-agent-key='{key}'] .jp-mcp-avatar").first.click()
        await expect(cells(page).nth(36)).to_be_in_viewport(timeout=SEEN)
        # Follow: back at the top, the view goes wherever the agent works next, and only then.
        follow = page.locator(f".jp-mcp-follow[data-mcp-agent-key='{key}']").first
        await follow.click()
        await expect(follow).to_have_attribute("aria-pressed", "true")
        await cells(page).nth(0).scroll_into_view_if_needed()
        await expect(cells(page).nth(36)).not_to_be_in_viewport()
        await edit(agent, path, "cell-20", "x = 'followed'")
        await expect(cells(page).nth(20)).to_be_in_viewport(timeout=SEEN)
        await expect(source_lines(page, 20)).to_have_text(["x = 'followed'"], timeout=SEEN)


async def test_point_at_labels_the_cell_and_never_moves_the_view(
    lab_page: OpenPage, mcp_client: Callable[..., Any], make_notebook: Callable[..., str]
) -> None:
    from playwright.async_api import expect

    path = make_notebook("point.ipynb", count=40)
    page = await lab_page(path)
    async with mcp_client(client_info=AGENT) as agent:
        await edit(agent, path, "cell-1", "x = 'near the top'")
        await call_tool(agent, "point_at", path=path, cell_id="cell-37", message="Look at this total")
        key = await agent_key(agent)
        label = page.locator(f".jp-mcp-point-label[data-mcp-agent-key='{key}'][data-cell-id='cell-37']")
        await expect(label).to_have_count(1, timeout=SEEN)
        await expect(label.locator(".jp-mcp-point-message")).to_have_text("Look at this total")
        notice = page.locator(f".jp-mcp-point-notice[data-mcp-agent-key='{key}']").first
        await expect(notice).to_be_visible(timeout=SEEN)
        await expect(cells(page).nth(37)).not_to_be_in_viewport()  # nothing scrolled by itself
        await notice.click()  # the person goes there
        await expect(cells(page).nth(37)).to_be_in_viewport(timeout=SEEN)
