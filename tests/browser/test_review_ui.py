"""Issue 21 in a real JupyterLab: an agent's proposal shows on its cell with its diff, and the person's Accept
or Reject decides it; the live cell changes only on Accept, keeps what the person typed meanwhile, and the
agent reads each outcome with ``get_suggestion``. Selectors: ``.jp-mcp-suggestion[data-mcp-suggestion-id]
[data-cell-id]`` blocks with their ``.jp-mcp-diff-add`` / ``.jp-mcp-diff-del`` lines and buttons."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from mcp.types import Implementation

from ..conftest import call_tool
from .conftest import SEEN, OpenPage, source_lines

AGENT = Implementation(name="ReviewAgent", version="1")


pytestmark = pytest.mark.usefixtures("extension_built")


async def propose(agent: Any, path: str, cell_id: str, content: str, **extra: Any) -> str:
    result = await call_tool(
        agent, "batch_update_notebook_cells", path=path, updates=[{"cell_id": cell_id, "content": content}], **extra
    )
    assert result["suggestion"]["state"] == "pending"
    return str(result["suggestion"]["id"])


async def state_of(agent: Any, suggestion_id: str) -> str:
    return str((await call_tool(agent, "get_suggestion", suggestion_id=suggestion_id))["state"])


async def test_a_proposal_shows_its_diff_and_accept_applies_it_keeping_the_persons_typing(
    lab_page: OpenPage, mcp_client: Callable[..., Any], make_notebook: Callable[..., str]
) -> None:
    from playwright.async_api import expect

    path = make_notebook("review.ipynb", count=3)
    page = await lab_page(path)
    async with mcp_client(client_info=AGENT) as agent:
        sid = await propose(agent, path, "cell-1", "y = 1", propose=True)
        block = page.locator(f".jp-mcp-suggestion[data-mcp-suggestion-id='{sid}'][data-cell-id='cell-1']")
        await expect(block).to_be_visible(timeout=SEEN)
        await expect(block.locator(".jp-mcp-diff-del")).to_have_text(["x = 1"])
        await expect(block.locator(".jp-mcp-diff-add")).to_have_text(["y = 1"])
        await expect(source_lines(page, 1)).to_have_text(["x = 1"])  # the live cell is untouched
        # The person types in that very cell before accepting: every keystroke stays.
        await source_lines(page, 1).first.click()
        await page.keyboard.press("End")
        await page.keyboard.type(" + 41")
        await expect(source_lines(page, 1)).to_have_text(["x = 1 + 41"])
        await block.locator(".jp-mcp-suggestion-accept").first.click()
        await expect(source_lines(page, 1)).to_have_text(["y = 1 + 41"], timeout=SEEN)
        await expect(block).to_have_count(0, timeout=SEEN)
        assert await state_of(agent, sid) == "accepted"


async def test_reject_leaves_the_cell_as_it_was_and_the_agent_is_told(
    lab_page: OpenPage, mcp_client: Callable[..., Any], make_notebook: Callable[..., str]
) -> None:
    from playwright.async_api import expect

    path = make_notebook("reject.ipynb", count=3)
    page = await lab_page(path)
    async with mcp_client(client_info=AGENT) as agent:
        sid = await propose(agent, path, "cell-2", "x = 'no thanks'", propose=True)
        block = page.locator(f".jp-mcp-suggestion[data-mcp-suggestion-id='{sid}']")
        await expect(block).to_be_visible(timeout=SEEN)
        await block.locator(".jp-mcp-suggestion-reject").first.click()
        await expect(block).to_have_count(0, timeout=SEEN)
        assert await state_of(agent, sid) == "rejected"
        await expect(source_lines(page, 2)).to_have_text(["x = 2"])


class TestWithTheServersReviewMode:
    @pytest.fixture
    def mcp_config(self) -> dict[str, Any]:
        return {"review_mode": True}

    async def test_a_plain_edit_is_a_proposal_and_accept_all_applies_it(
        self, lab_page: OpenPage, mcp_client: Callable[..., Any], make_notebook: Callable[..., str]
    ) -> None:
        from playwright.async_api import expect

        path = make_notebook("trait.ipynb", count=3)
        page = await lab_page(path)
        async with mcp_client(client_info=AGENT) as agent:
            sid = await propose(agent, path, "cell-0", "x = 'reviewed'", exec=False)
            block = page.locator(f".jp-mcp-suggestion[data-mcp-suggestion-id='{sid}'][data-cell-id='cell-0']")
            await expect(block).to_be_visible(timeout=SEEN)
            await expect(source_lines(page, 0)).to_have_text(["x = 0"])
            await block.locator(".jp-mcp-suggestion-accept-all").first.click()
            await expect(source_lines(page, 0)).to_have_text(["x = 'reviewed'"], timeout=SEEN)
            assert await state_of(agent, sid) == "accepted"
