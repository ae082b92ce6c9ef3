"""An agent's edits through the MCP endpoint, watched in a real JupyterLab and Notebook 7 page (stock UI).

The agent is the SDK client over HTTP, as in the other tests; the person is JupyterLab in headless Chromium,
joined to the same collaboration room. Each check is on exact text in the page, so a lost, doubled or
misplaced edit fails.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from mcp.types import Implementation

from ..conftest import call_tool
from .conftest import SEEN, OpenPage, cells, source_lines

AGENT = Implementation(name="BrowserAgent", version="1")
FLAG = "BrowserAgent (AI agent)"  # the agent's display_name in the room's awareness (docs/awareness.md)


async def agent_edits(agent: Any, path: str) -> None:
    """Insert a cell after the first and rewrite the (then) fourth one, through the MCP tools."""
    await call_tool(
        agent,
        "batch_insert_notebook_cells",
        path=path,
        exec=False,
        cells=[{"content": "inserted = 'by the agent'"}],
        after_cell_id="cell-0",
    )
    await call_tool(
        agent,
        "batch_update_notebook_cells",
        path=path,
        exec=False,
        updates=[{"cell_id": "cell-2", "content": "x = 'updated'\ny = 2"}],
    )


async def shows_the_agents_edits(page: Any) -> None:
    from playwright.async_api import expect

    all_cells = cells(page)
    await expect(all_cells).to_have_count(4, timeout=SEEN)
    await expect(source_lines(page, 0)).to_have_text(["x = 0"], timeout=SEEN)
    await expect(source_lines(page, 1)).to_have_text(["inserted = 'by the agent'"], timeout=SEEN)
    await expect(source_lines(page, 2)).to_have_text(["x = 1"], timeout=SEEN)
    await expect(source_lines(page, 3)).to_have_text(["x = 'updated'", "y = 2"], timeout=SEEN)


async def test_an_agents_insert_and_update_appear_in_jupyterlab(
    lab_page: OpenPage, mcp_client: Callable[..., Any], make_notebook: Callable[..., str]
) -> None:
    from playwright.async_api import expect

    path = make_notebook("watched.ipynb", count=3)
    page = await lab_page(path)
    await expect(cells(page)).to_have_count(3, timeout=SEEN)
    async with mcp_client(client_info=AGENT) as agent:
        await agent_edits(agent, path)
        await shows_the_agents_edits(page)


async def test_the_agents_caret_and_flag_show_where_it_edited(
    lab_page: OpenPage, mcp_client: Callable[..., Any], make_notebook: Callable[..., str]
) -> None:
    """jupyter-collaboration draws a remote cursor (``.jp-remote-cursor``, in the collaborator's colour) in
    the cell's editor and a flag with the collaborator's name above it (a CodeMirror tooltip, mounted in
    the page's body)."""
    from playwright.async_api import expect

    path = make_notebook("caret.ipynb", count=3)
    page = await lab_page(path)
    async with mcp_client(client_info=AGENT) as agent:
        await agent_edits(agent, path)
        await expect(source_lines(page, 3)).to_have_text(["x = 'updated'", "y = 2"], timeout=SEEN)
        # The agent's cursor is where its last edit ended: in the cell it rewrote, and only there.
        caret = cells(page).nth(3).locator(".jp-remote-cursor")
        await expect(caret).to_have_count(1, timeout=SEEN)
        await expect(page.locator(".jp-remote-cursor")).to_have_count(1, timeout=SEEN)
        flag = page.locator(".jp-remote-userFlag")
        await expect(flag).to_have_count(1, timeout=SEEN)
        await expect(flag.locator(".jp-remote-userFlag-name")).to_have_text(FLAG, timeout=SEEN)
        # The flag is the caret's: in its colour, and drawn just above it.
        colour = await caret.evaluate("e => getComputedStyle(e).borderLeftColor")
        await expect(flag).to_have_css("border-color", colour, timeout=SEEN)
        caret_box, flag_box = await caret.bounding_box(), await flag.bounding_box()
        assert caret_box is not None and flag_box is not None
        assert flag_box["y"] + flag_box["height"] <= caret_box["y"] + 1, (flag_box, caret_box)
        assert abs(flag_box["x"] - caret_box["x"]) < 30, (flag_box, caret_box)


async def test_an_agents_insert_and_update_appear_in_notebook_7(
    notebook7_page: OpenPage, mcp_client: Callable[..., Any], make_notebook: Callable[..., str]
) -> None:
    from playwright.async_api import expect

    path = make_notebook("classic.ipynb", count=3)
    page = await notebook7_page(path)
    await expect(cells(page)).to_have_count(3, timeout=SEEN)
    async with mcp_client(client_info=AGENT) as agent:
        await agent_edits(agent, path)
        await shows_the_agents_edits(page)
        caret = cells(page).nth(3).locator(".jp-remote-cursor")
        await expect(caret).to_have_count(1, timeout=SEEN)
