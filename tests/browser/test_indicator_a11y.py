"""Issue 34 item 5 in a real JupyterLab: the toolbar indicator keeps its place and its controls work for
everyone - at any name length and direction, by keyboard alone, and with no accessibility violation axe-core
finds in the extension's DOM (axe-core comes from the package's dev dependencies: node_modules/axe-core)."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from mcp.types import Implementation

from ..conftest import call_tool
from .conftest import SEEN, OpenPage, source_lines

pytestmark = pytest.mark.usefixtures("extension_built")

AXE = Path(__file__).parents[2] / "node_modules" / "axe-core" / "axe.min.js"
LONG = "L" + "ong agent name " * 20  # 301 characters
# The extension's DOM: the toolbar indicator, the activity panel, cell marks, point labels, lock marks and buttons.
OURS = (
    ".jp-mcp-indicator, #jp-mcp-activity, .jp-mcp-gutter, .jp-mcp-point-label, .jp-mcp-lock-mark, "
    "[data-command^='jupyter-pair-mcp:toggle-']"
)
RTL = "\u202eevil \u0648\u0643\u064a\u0644"  # a right-to-left override, then Arabic ("agent")


async def edit(agent: Any, path: str, cell_id: str, content: str) -> None:
    await call_tool(
        agent, "batch_update_notebook_cells", path=path, exec=False, updates=[{"cell_id": cell_id, "content": content}]
    )


async def me(agent: Any) -> dict[str, Any]:
    users = (await call_tool(agent, "get_online_users"))["users"]
    [mine] = [user for user in users if user["is_you"]]
    return dict(mine)


async def agent_key(agent: Any) -> str:
    return str((await me(agent))["user_id"]).removeprefix("mcp-agent-")


async def key_to(page: Any, selector: str, presses: int = 40) -> None:
    """Move keyboard focus to the element matching ``selector`` as a keyboard-only person does: into the
    notebook toolbar (its first control, where Tab enters it), then along it with the arrow keys, as in every
    JupyterLab toolbar."""
    await page.locator(".jp-NotebookPanel-toolbar jp-button").first.focus()
    for _ in range(presses):
        if await page.evaluate("(s) => !!document.activeElement && document.activeElement.matches(s)", selector):
            return
        await page.keyboard.press("ArrowRight")
    raise AssertionError(f"{selector} was not reached with the arrow keys in {presses} presses")


async def test_long_and_right_to_left_names_keep_the_indicator_and_its_stop_buttons_in_the_toolbar(
    lab_page: OpenPage, mcp_client: Callable[..., Any], make_notebook: Callable[..., str]
) -> None:
    from playwright.async_api import expect

    path = make_notebook("names.ipynb", count=3)
    page = await lab_page(path)
    long_client = Implementation(name=LONG, version="1")
    rtl_client = Implementation(name=RTL, version="1")
    async with mcp_client(client_info=long_client) as long_agent, mcp_client(client_info=rtl_client) as rtl_agent:
        await edit(long_agent, path, "cell-0", "x = 'long'")
        await edit(rtl_agent, path, "cell-1", "x = 'rtl'")
        await call_tool(long_agent, "point_at", path=path, cell_id="cell-2", message="M" * 200)
        keys = [await agent_key(long_agent), await agent_key(rtl_agent)]
        indicator = page.locator(".jp-NotebookPanel-toolbar .jp-mcp-indicator").first
        for key in keys:
            await expect(indicator.locator(f".jp-mcp-stop[data-mcp-agent-key='{key}']")).to_be_visible(timeout=SEEN)
        # Not moved into the toolbar's "..." overflow, and every stop button inside the indicator's box.
        await expect(page.locator(".jp-Toolbar-responsive-popup .jp-mcp-indicator")).to_have_count(0)
        box = await indicator.bounding_box()
        assert box is not None
        for key in keys:
            stop = await indicator.locator(f".jp-mcp-stop[data-mcp-agent-key='{key}']").bounding_box()
            assert stop is not None and stop["x"] + stop["width"] <= box["x"] + box["width"] + 0.5, (stop, box)
        # The full names, as the server keeps them, on hover and for assistive technology.
        names = [str((await me(long_agent))["name"]), str((await me(rtl_agent))["name"])]
        for key, name in zip(keys, names, strict=True):
            avatar = indicator.locator(f".jp-mcp-participant[data-mcp-agent-key='{key}'] .jp-mcp-avatar")
            label = await avatar.get_attribute("aria-label")
            assert label is not None and f"\u2068{name}\u2069" in label, label
            assert label.count("AI agent") == 1, label
        # The pointed message on screen: isolated and cut with an ellipsis.
        text = indicator.locator(".jp-mcp-point-notice bdi.jp-mcp-point-text")
        await expect(text).to_have_css("text-overflow", "ellipsis")


async def test_stop_by_keyboard_alone_keeps_focus_and_follow_keeps_focus(
    lab_page: OpenPage, mcp_client: Callable[..., Any], make_notebook: Callable[..., str]
) -> None:
    from playwright.async_api import expect

    path = make_notebook("keys.ipynb", count=3)
    page = await lab_page(path)
    async with mcp_client(client_info=Implementation(name="KeyAgent", version="1")) as agent:
        await edit(agent, path, "cell-1", "x = 'here'")
        key = await agent_key(agent)
        follow = page.locator(f".jp-mcp-follow[data-mcp-agent-key='{key}']").first
        await expect(follow).to_be_visible(timeout=SEEN)
        await key_to(page, f".jp-mcp-follow[data-mcp-agent-key='{key}']")
        await page.keyboard.press("Space")
        await expect(follow).to_have_attribute("aria-pressed", "true", timeout=SEEN)
        await expect(follow).to_be_focused()
        stop = page.locator(f".jp-mcp-stop[data-mcp-agent-key='{key}']").first
        # A labelled control: its name says what it does to whom, and a word is on it, not only a symbol.
        await expect(stop).to_have_accessible_name("Stop \u2068KeyAgent (AI agent)\u2069 in this document")
        await expect(stop).to_contain_text("Stop")
        await key_to(page, f".jp-mcp-stop[data-mcp-agent-key='{key}']")
        await page.keyboard.press("Enter")
        allow = page.locator(f".jp-mcp-allow[data-mcp-agent-key='{key}']").first
        await expect(allow).to_be_visible(timeout=SEEN)
        await expect(allow).to_be_focused(timeout=SEEN)


async def test_axe_finds_no_violation_in_the_extensions_dom(
    lab_page: OpenPage, mcp_client: Callable[..., Any], make_notebook: Callable[..., str]
) -> None:
    from playwright.async_api import expect

    if not AXE.is_file():
        pytest.skip("axe-core is not installed: npm install (it is a dev dependency)")
    path = make_notebook("axe.ipynb", count=3)
    page = await lab_page(path)
    async with mcp_client(client_info=Implementation(name="AxeAgent", version="1")) as agent:
        await edit(agent, path, "cell-0", "x = 'axe'")
        await call_tool(agent, "point_at", path=path, cell_id="cell-2", message="Look here")
        await source_lines(page, 1).first.click()  # a cell locked from its toolbar shows its lock mark
        await page.locator(".jp-cell-toolbar [data-command='jupyter-pair-mcp:toggle-cell-lock']").first.click()
        await expect(page.locator(".jp-mcp-lock-mark")).to_have_count(1, timeout=SEEN)
        key = await agent_key(agent)
        await expect(page.locator(f".jp-mcp-stop[data-mcp-agent-key='{key}']").first).to_be_visible(timeout=SEEN)
        await page.locator(".jp-mcp-activity-open").first.click()
        await expect(page.locator(".jp-mcp-activity-entry").first).to_be_visible(timeout=SEEN)
        # The "AI" tag is readable: larger than the 8 px it was.
        await expect(page.locator(".jp-mcp-agent-badge").first).to_have_css("font-size", "10px")
        await page.add_script_tag(path=str(AXE))
        # The whole page, as axe runs by default (page-level rules such as "region" need it); the violations
        # kept are those of the extension's own elements.
        result = await page.evaluate(
            """async (ours) => {
                const found = await axe.run(document, {resultTypes: ['violations']});
                return found.violations.map(v => ({
                    id: v.id,
                    help: v.help,
                    nodes: v.nodes
                        .filter(n => n.target.some(t => {
                            const element = typeof t === 'string' ? document.querySelector(t) : null;
                            return element !== null && element.closest(ours) !== null;
                        }))
                        .map(n => n.html.slice(0, 200))
                })).filter(v => v.nodes.length);
            }""",
            OURS,
        )
        violations = result
        assert not violations, json.dumps(violations, indent=1, ensure_ascii=False)
