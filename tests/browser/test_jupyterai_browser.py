"""Issue 33's browser scenario: a person asks a Jupyter AI persona in JupyterLab's chat, sees it in our indicator
named for the chat, stops it from our panel, and the chat shows that its turn ended.

A real ``jupyter lab`` process with jupyter-ai 3 and this package (tests/jupyterai_server.py: the extensions the
environment enables, nothing about MCP configured), the fake ACP agent (tests/fake_acp_agent.py) as its persona
"Fakebot", and the page in Debian's headless Chromium. The page gets this package's JupyterLab extension build.
Like tests/test_jupyterai.py it needs jupyter-ai, which cannot be installed in one pip command with this
package's test extra: it skips without it, and scripts/test.sh runs it in ``.venv-jupyterai``
(docs/jupyter-ai.md, "Testing"), where ``REQUIRE_BROWSER=1`` makes a missing browser or build a failure.
"""

from __future__ import annotations

import importlib.util
import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import quote

import pytest

from ..jupyterai_server import JupyterAIServer
from .conftest import CONSOLES, LABEXTENSION, PAGE_LOAD, SEEN, user_settings

if TYPE_CHECKING:
    from playwright.async_api import Browser, Page

pytestmark = [
    pytest.mark.skipif(
        importlib.util.find_spec("jupyter_ai_persona_manager") is None, reason="jupyter-ai is not installed here"
    ),
    pytest.mark.usefixtures("extension_built"),
]

# Whose message the agent answers: a token login is no one Jupyter can name (services/actors.py person_name), so
# the agent is named for its persona alone, as any agent of a token login is named for its client alone (a named
# person's would be "Fakebot (Jupyter AI) · Alice (AI agent)"); the person who stops it is the server's owner.
AGENT_NAME = "Fakebot (Jupyter AI) (AI agent)"


@pytest.fixture
def lab(tmp_path: Path) -> Iterator[JupyterAIServer]:
    """``jupyter lab`` as a person runs it with jupyter-ai and this package, serving this package's extension
    build ahead of any copy installed in the environment."""
    extensions = tmp_path / "labextensions"
    name = json.loads((LABEXTENSION / "package.json").read_text())["name"]
    (extensions / name).parent.mkdir(parents=True, exist_ok=True)
    (extensions / name).symlink_to(LABEXTENSION, target_is_directory=True)
    server = JupyterAIServer(
        tmp_path,
        args=(
            f"--LabApp.extra_labextensions_path={extensions}",
            f"--LabApp.user_settings_dir={user_settings(tmp_path / 'user-settings')}",
            "--LabApp.expose_app_in_browser=True",  # the test opens the chat next to the notebook through it
            # No traffic leaves the machine: no news feed, no update check, no extension catalogue.
            "--LabApp.news_url=",
            "--LabApp.check_for_updates_class=jupyterlab.handlers.announcements.NeverCheckForUpdate",
            "--LabApp.extension_manager=readonly",
        ),
    )
    server.start()
    try:
        yield server
    finally:
        server.stop()


async def open_lab(browser: Browser, lab: JupyterAIServer, path: str) -> Page:
    """JupyterLab with ``path`` open, its toolbar showing our indicator (the page joined the notebook's room)."""
    from playwright.async_api import expect

    page = await browser.new_page(viewport={"width": 1600, "height": 900})
    console = CONSOLES[page] = []
    page.on("console", lambda message: console.append(f"{message.type}: {message.text}"))
    page.on("pageerror", lambda error: console.append(f"page error: {error}"))
    page.set_default_timeout(SEEN)
    # Under load jupyter-collaboration asks after 5 s whether to keep waiting for the document.
    await page.add_locator_handler(page.get_by_role("button", name="Continue waiting"), lambda button: button.click())
    # The notebook names no kernel, so JupyterLab asks for one; the agent's edits need none.
    no_kernel = page.locator(".jp-Dialog", has_text="Select Kernel").get_by_role("button", name="No Kernel")
    await page.add_locator_handler(no_kernel, lambda button: button.click())
    await page.goto(f"{lab.url}/lab/tree/{quote(path)}?token={quote(lab.token)}", timeout=PAGE_LOAD)
    await expect(page.locator(".jp-NotebookPanel .jp-mcp-indicator")).to_be_visible(timeout=PAGE_LOAD)
    return page


async def test_a_person_asks_in_the_chat_sees_the_agent_stops_it_from_our_panel_and_the_chat_says_its_turn_ended(
    lab: JupyterAIServer, browser: Browser
) -> None:
    from playwright.async_api import expect

    page = await open_lab(browser, lab, "note.ipynb")
    # The chat beside the notebook, as a person drags its tab to the right.
    # (Nothing comes back: the command's result, the chat widget, is a graph Playwright would take long to copy.)
    await page.evaluate(
        """async () => {
            await window.jupyterapp.commands.execute(
                'docmanager:open', {path: 'talk.chat', options: {mode: 'split-right'}}
            );
        }"""
    )
    chat = page.locator(".jp-chat-input-container")
    # Jupyter AI's persona picker: Fakebot is the chat's only persona, so its messages go to Fakebot.
    await expect(chat.locator(".jp-jai-personaControls-persona")).to_have_text("Fakebot", timeout=PAGE_LOAD)
    # Jupyter's chat drops messages that arrive before the server loaded the chat (its Y state "dirty" is set
    # until then, jupyterlab_chat's YChat): a person gets to type once the chat's state says it is loaded.
    await page.wait_for_function(
        """path => {
            for (const widget of window.jupyterapp.shell.widgets('main')) {
                if (widget.context?.path === path) {
                    return widget.context.model.sharedModel.getState('dirty') === false;
                }
            }
            return false;
        }""",
        arg="talk.chat",
        timeout=PAGE_LOAD,
    )
    message = chat.get_by_role("combobox")
    await message.fill("wait note.ipynb hello-from-the-chat")
    await chat.get_by_role("button", name="Send message").click()
    await expect(page.locator(".jp-chat-message", has_text="hello-from-the-chat")).to_have_count(1)

    # The agent's edit reaches the notebook on the page, and the agent is in our indicator, named for the chat.
    notebook = page.locator(".jp-NotebookPanel")
    await expect(notebook.locator(".jp-Cell", has_text="hello-from-the-chat")).to_have_count(1, timeout=PAGE_LOAD)
    agent = notebook.locator(".jp-mcp-indicator .jp-mcp-agent").first
    await expect(agent.locator(".jp-mcp-avatar")).to_have_attribute(
        # The name as the server keeps it, isolated against right-to-left overrides, "AI agent" said once.
        "aria-label",
        re.compile(rf"^\u2068{re.escape(AGENT_NAME)}\u2069(?!.*AI agent)"),
    )
    key = await agent.get_attribute("data-mcp-agent-key")
    # The chat's turn is running: its stop button is live.
    chat_stop = chat.locator(".jp-jai-stopButton")
    await expect(chat_stop).to_be_enabled()

    # Stopped from our panel (after a confirmation, if the extension asks for one).
    await notebook.locator(f".jp-mcp-stop[data-mcp-agent-key='{key}']").click()
    stopped = notebook.locator(f".jp-mcp-stopped[data-mcp-agent-key='{key}']")
    confirm = page.locator(".jp-Dialog .jp-mod-accept")
    await expect(stopped.or_(confirm)).to_be_visible()
    if await confirm.is_visible():
        await confirm.click()
    await expect(stopped).to_have_count(1)

    # The chat shows the turn ended: the persona says who stopped it where, and the chat's stop is idle again.
    note = page.locator(".jp-chat-message", has_text="stopped me in note.ipynb from Jupyter's agent panel")
    await expect(note).to_have_count(1, timeout=PAGE_LOAD)
    await expect(note).to_contain_text("the server's owner stopped me")
    await expect(chat_stop).to_be_disabled()
    assert [e for e in lab.agent_events() if e.get("event") == "cancel"], "the agent was never sent session/cancel"
