"""Issue 34 items 3 and 4 in a real JupyterLab: the activity panel's buttons do what their labels say after
every action. "Restore before" takes back the agents' changes since that version and keeps what a person (a
real second collaborator on the room's websocket) typed after it, and can be undone from the panel; the Undo
button moves to the edit the next undo takes back once an undo is done."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from mcp.types import Implementation

from ..conftest import call_tool, received, stored
from .conftest import SEEN, OpenPage, source_lines

pytestmark = pytest.mark.usefixtures("extension_built")

AGENT = Implementation(name="PanelAgent", version="1")
UNDO = "button.jp-mcp-activity-undo"  # (an undo entry's <li> has the class too)


async def edit(agent: Any, path: str, cell_id: str, content: str) -> None:
    await call_tool(
        agent, "batch_update_notebook_cells", path=path, exec=False, updates=[{"cell_id": cell_id, "content": content}]
    )


def entry_of(page: Any, kind: str, cell_id: str) -> Any:
    """The panel's newest entry of ``kind`` naming ``cell_id``."""
    return (
        page.locator(f".jp-mcp-activity-entry[data-mcp-kind='{kind}']")
        .filter(has=page.locator(f".jp-mcp-activity-cell[data-cell-id='{cell_id}']"))
        .first
    )


async def confirm(page: Any) -> None:
    from playwright.async_api import expect

    accept = page.locator(".jp-Dialog .jp-mod-accept")
    await expect(accept).to_be_visible(timeout=SEEN)
    await accept.click()
    await expect(accept).to_have_count(0, timeout=SEEN)


async def test_restore_before_keeps_what_a_person_typed_after_the_version_and_is_undoable(
    lab_page: OpenPage,
    mcp_client: Callable[..., Any],
    make_notebook: Callable[..., str],
    collaborator: Callable[..., Any],
    jp_serverapp: Any,
) -> None:
    from playwright.async_api import expect

    path = make_notebook("restore.ipynb", count=3)
    page = await lab_page(path)
    async with mcp_client(client_info=AGENT) as agent, collaborator(path) as person:
        await edit(agent, path, "cell-0", "x = 'agent 0'")
        await edit(agent, path, "cell-1", "x = 'agent 1'")
        await person.wait_until(lambda: person.sources()[:2] == ["x = 'agent 0'", "x = 'agent 1'"])
        # After the agent's edits, the person types in the agent's cell and in a cell of their own.
        person.type_into(0, 0, "# typed\n")
        person.type_into(2, 0, "# mine\n")
        await received(jp_serverapp, person)
        await stored(jp_serverapp, path)
        await page.locator(".jp-mcp-activity-open").first.click()
        await entry_of(page, "edit", "cell-0").locator(".jp-mcp-activity-restore").click(timeout=SEEN)
        await confirm(page)
        # The agents' changes since are gone; everything the person typed after the version stays.
        await expect(source_lines(page, 0)).to_have_text(["# typed", "x = 0"], timeout=SEEN)
        await expect(source_lines(page, 1)).to_have_text(["x = 1"], timeout=SEEN)
        await expect(source_lines(page, 2)).to_have_text(["# mine", "x = 2"], timeout=SEEN)
        # And the panel takes the restore back.
        undo = page.locator(".jp-mcp-activity-entry[data-mcp-kind='restore'] .jp-mcp-activity-undo-restore")
        await undo.click(timeout=SEEN)
        await confirm(page)
        await expect(source_lines(page, 0)).to_have_text(["# typed", "x = 'agent 0'"], timeout=SEEN)
        await expect(source_lines(page, 1)).to_have_text(["x = 'agent 1'"], timeout=SEEN)
        await expect(source_lines(page, 2)).to_have_text(["# mine", "x = 2"], timeout=SEEN)


async def test_the_undo_button_moves_to_the_next_undoable_edit_after_an_undo(
    lab_page: OpenPage, mcp_client: Callable[..., Any], make_notebook: Callable[..., str]
) -> None:
    from playwright.async_api import expect

    path = make_notebook("undo.ipynb", count=3)
    page = await lab_page(path)
    async with mcp_client(client_info=AGENT) as agent:
        await edit(agent, path, "cell-0", "x = 'first'")
        await edit(agent, path, "cell-1", "x = 'second'")
        await page.locator(".jp-mcp-activity-open").first.click()
        buttons = page.locator(UNDO)
        await expect(entry_of(page, "edit", "cell-1").locator(UNDO)).to_have_count(1, timeout=SEEN)
        await expect(buttons).to_have_count(1)
        await buttons.click()
        await confirm(page)
        await expect(source_lines(page, 1)).to_have_text(["x = 1"], timeout=SEEN)
        # The button now sits on the edit the next undo takes back, and says so by where it is.
        await expect(entry_of(page, "edit", "cell-0").locator(UNDO)).to_have_count(1, timeout=SEEN)
        await expect(entry_of(page, "edit", "cell-1").locator(UNDO)).to_have_count(0)
        await expect(buttons).to_have_count(1)
        await buttons.click()
        await confirm(page)
        await expect(source_lines(page, 0)).to_have_text(["x = 0"], timeout=SEEN)
        await expect(source_lines(page, 1)).to_have_text(["x = 1"], timeout=SEEN)
        await expect(buttons).to_have_count(0, timeout=SEEN)


async def propose(agent: Any, path: str, cell_id: str, content: str) -> str:
    result = await call_tool(
        agent,
        "batch_update_notebook_cells",
        path=path,
        propose=True,
        updates=[{"cell_id": cell_id, "content": content}],
    )
    return str(result["suggestion"]["id"])


async def test_a_suggestion_in_conflict_stays_shown_with_reject(
    lab_page: OpenPage, mcp_client: Callable[..., Any], make_notebook: Callable[..., str]
) -> None:
    """Two proposals change the same text; accepting one turns the other into a conflict, which stays on its
    cell with the reason and Reject (docs/review.md), until the person rejects it."""
    from playwright.async_api import expect

    path = make_notebook("conflict.ipynb", count=3)
    page = await lab_page(path)
    async with mcp_client(client_info=AGENT) as agent:
        first = await propose(agent, path, "cell-1", "x = 'first'")
        second = await propose(agent, path, "cell-1", "x = 'second'")
        block = page.locator(f".jp-mcp-suggestion[data-mcp-suggestion-id='{first}']")
        other = page.locator(f".jp-mcp-suggestion[data-mcp-suggestion-id='{second}']")
        await expect(other).to_be_visible(timeout=SEEN)
        await block.locator(".jp-mcp-suggestion-accept").first.click()
        await expect(source_lines(page, 1)).to_have_text(["x = 'first'"], timeout=SEEN)
        state = (await call_tool(agent, "get_suggestion", suggestion_id=second))["state"]
        assert state == "conflict", state
        await expect(other).to_have_attribute("data-mcp-state", "conflict", timeout=SEEN)
        await expect(other.locator(".jp-mcp-suggestion-accept")).to_have_count(0)
        await other.locator(".jp-mcp-suggestion-reject").first.click()
        await expect(other).to_have_count(0, timeout=SEEN)
        assert (await call_tool(agent, "get_suggestion", suggestion_id=second))["state"] == "rejected"
        await expect(source_lines(page, 1)).to_have_text(["x = 'first'"])
