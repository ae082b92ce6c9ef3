"""Issue 36 item 4 in a real JupyterLab: a person locks a cell with the lock button of its cell toolbar, the cell
shows the lock (a mark with an accessible name saying who locked it), and an agent's edit of that cell is refused
naming the cell and that person; unlocked with the same button, the agent's edit goes through. The notebook's
own lock button locks every cell. Selectors: ``.jp-mcp-locked-cell`` cells with their ``.jp-mcp-lock-mark``."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import pytest
from mcp.types import Implementation

from ..conftest import call_tool, tool_error, until
from .conftest import SEEN, OpenPage, cells, source_lines

AGENT = Implementation(name="LockedOutAgent", version="1")
CELL_BUTTON = ".jp-cell-toolbar [data-command='jupyter-pair-mcp:toggle-cell-lock']"
NOTEBOOK_BUTTON = ".jp-NotebookPanel-toolbar [data-command='jupyter-pair-mcp:toggle-notebook-lock']"

pytestmark = pytest.mark.usefixtures("extension_built")


def update(cell_id: str, content: str) -> dict[str, Any]:
    return {"exec": False, "updates": [{"cell_id": cell_id, "content": content}]}


async def test_a_cell_locked_from_its_toolbar_refuses_an_agent_and_shows_the_lock(
    lab_page: OpenPage, mcp_client: Callable[..., Any], make_notebook: Callable[..., str]
) -> None:
    from playwright.async_api import expect

    path = make_notebook("locks.ipynb", count=3)
    page = await lab_page(path)
    cell = cells(page).nth(1)
    await source_lines(page, 1).first.click()  # the active cell shows its toolbar
    button = cell.locator(CELL_BUTTON)
    await expect(button).to_be_visible(timeout=SEEN)
    await expect(button).to_have_attribute("aria-label", re.compile("^Lock this cell"))
    await button.click()
    await expect(button).to_have_attribute("aria-label", re.compile("^Locked against AI agents by"), timeout=SEEN)
    await expect(button).to_have_class(re.compile(r"\bjp-mcp-lock-on\b"))
    mark = cell.locator(".jp-mcp-lock-mark")
    await expect(mark).to_be_visible(timeout=SEEN)
    await expect(cell).to_have_class(re.compile(r"\bjp-mcp-locked-cell\b"))
    person = await mark.get_attribute("data-locked-by")
    assert person, "the lock names the person who set it"
    await expect(mark).to_have_attribute("aria-label", f"Locked against AI agents by \u2068{person}\u2069")
    await expect(cells(page).nth(0).locator(".jp-mcp-lock-mark")).to_have_count(0)

    async with mcp_client(client_info=AGENT) as agent:

        async def read() -> dict[str, Any]:
            return dict(await call_tool(agent, "get_notebook", path=path))

        # the agent sees the lock once the person's edit reached the room, and its edit there is refused
        await until(lambda: locked_by(read, 1), what="the server seeing the person's lock")
        assert (await read())["cells"][1]["locked"] == person
        message = await tool_error(agent, "batch_update_notebook_cells", path=path, **update("cell-1", "y = 1"))
        assert f"cell 'cell-1' (index 1) is locked by {person}" in message, message
        await expect(source_lines(page, 1)).to_have_text(["x = 1"])

        # unlocked with the same button: the mark goes, and the agent's edit lands
        await button.click()
        await expect(button).to_have_attribute("aria-label", re.compile("^Lock this cell"), timeout=SEEN)
        await expect(mark).to_have_count(0, timeout=SEEN)
        await until(lambda: unlocked(read, 1), what="the server seeing the unlock")
        await call_tool(agent, "batch_update_notebook_cells", path=path, **update("cell-1", "y = 2"))
        await expect(source_lines(page, 1)).to_have_text(["y = 2"], timeout=SEEN)

        # the notebook's lock button locks every cell of it
        whole = page.locator(NOTEBOOK_BUTTON).first
        await whole.click()
        await expect(whole).to_have_attribute(
            "aria-label", re.compile("^Notebook locked against AI agents by"), timeout=SEEN
        )
        await expect(page.locator(".jp-mcp-locked-notebook")).to_have_count(1)
        await until(lambda: notebook_locked(read), what="the server seeing the notebook's lock")
        message = await tool_error(agent, "batch_update_notebook_cells", path=path, **update("cell-2", "z"))
        assert f"{path} is locked by {person}" in message, message


async def locked_by(read: Callable[[], Any], index: int) -> bool:
    return bool((await read())["cells"][index].get("locked"))


async def unlocked(read: Callable[[], Any], index: int) -> bool:
    return not (await read())["cells"][index].get("locked")


async def notebook_locked(read: Callable[[], Any]) -> bool:
    return bool((await read())["metadata"].get("locked"))


async def test_notebook_7_has_the_same_lock_button_and_mark(
    notebook7_page: OpenPage, mcp_client: Callable[..., Any], make_notebook: Callable[..., str]
) -> None:
    from playwright.async_api import expect

    path = make_notebook("locks7.ipynb", count=2)
    page = await notebook7_page(path)
    await source_lines(page, 0).first.click()
    button = cells(page).nth(0).locator(CELL_BUTTON)
    await button.click()
    await expect(cells(page).nth(0).locator(".jp-mcp-lock-mark")).to_be_visible(timeout=SEEN)
    async with mcp_client(client_info=AGENT) as agent:

        async def locked() -> bool:
            return bool((await call_tool(agent, "get_notebook", path=path))["cells"][0].get("locked"))

        await until(locked, what="the server seeing the person's lock")
        message = await tool_error(agent, "execute_notebook_cell", path=path, cell_id="cell-0")
        assert "cell 'cell-0' (index 0) is locked by" in message and "may not run it" in message, message
