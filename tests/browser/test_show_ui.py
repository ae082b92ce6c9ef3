"""show_in_jupyterlab in a real JupyterLab (issue 36 item 3): an agent moves the person's view only once the
person turned "May move my view" on for it in the panel's "Connected agents"; then the notebook opens in the
person's tab and the cell becomes the active one, scrolled into view, and the tool says so.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from ..conftest import call_tool, tool_error, until
from .conftest import SEEN, OpenPage
from .test_grants_ui import show_grants

pytestmark = pytest.mark.usefixtures("extension_built")

CURRENT_PATH = "window.jupyterapp.shell.currentWidget?.context?.path ?? null"
ACTIVE_INDEX = "window.jupyterapp.shell.currentWidget?.content?.activeCellIndex ?? null"


async def test_off_refused_and_the_view_stays_on_moves_it_to_the_cell(
    lab_page: OpenPage, make_notebook: Callable[..., str], mcp_client: Any, extension: Any
) -> None:
    from playwright.async_api import expect

    here = make_notebook("here.ipynb", count=2)
    far = make_notebook("far.ipynb", count=80)  # the cell is far below the first screen: it must be scrolled to
    page = await lab_page(here)
    grant, token = extension.grants.mint(
        name="view-bot",
        person="",
        person_name="",
        level="read",
        folders=[],
        propose_only=False,
        lifetime=3600.0,
        resource="",
    )
    async with mcp_client(headers={"Authorization": f"Bearer {token}"}) as agent:
        refused = await tool_error(agent, "show_in_jupyterlab", path=far, cell_id="cell-70")
        assert "has not let this agent move their view" in refused and "May move my view" in refused
        assert await page.evaluate(CURRENT_PATH) == here  # nothing opened
        assert await page.locator(".jp-Notebook").count() == 1

        section = await show_grants(page)
        item = section.locator(f".jp-mcp-grant[data-mcp-grant-id='{grant.id}']")
        toggle = item.get_by_label("view-bot may move my view")
        await expect(toggle).not_to_be_checked(timeout=SEEN)
        await toggle.check()
        await until(lambda: extension.grants.grants[grant.id].may_move_view, what="the setting reaches the server")
        await expect(item.get_by_label("view-bot may move my view")).to_be_checked(timeout=SEEN)

        shown = await call_tool(agent, "show_in_jupyterlab", path=far, cell_id="cell-70")
    assert shown["ok"] is True and "'cell-70' is selected and in view" in shown["detail"]
    # The tool answered after the tab said it showed it: the view is there already.
    assert await page.evaluate(CURRENT_PATH) == far
    assert await page.evaluate(ACTIVE_INDEX) == 70
    active = page.locator(".jp-NotebookPanel:visible .jp-Cell.jp-mod-active")
    await expect(active).to_have_count(1)
    await expect(active).to_be_in_viewport(timeout=SEEN)
    await expect(active.locator(".cm-content")).to_contain_text("x = 70")
