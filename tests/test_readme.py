"""The README and the install page show what the server really prints and what a newcomer really needs.

The startup line is read from a real server's log, so a new tool (the count) or a reworded message fails
here instead of leaving the docs showing a line nobody will see.
"""

from __future__ import annotations

import logging
import re
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
INSTALL = ROOT / "docs" / "install.md"
ENDPOINT = re.compile(r"https?://\S+/mcp\b")


@pytest.fixture
def mcp_config() -> dict[str, Any]:
    """The server as installed: without the test-only tools, so the count is the one people see."""
    return {}


async def test_the_docs_show_the_startup_line_the_server_logs(
    extension: Any, jp_serverapp: Any, caplog: pytest.LogCaptureFixture
) -> None:
    # The test server is not started through ServerApp.start(), so its start hook is run here: the line
    # is the one `jupyter lab` prints once the endpoint is ready.
    caplog.set_level(logging.INFO)
    await extension._start_jupyter_server_extension(jp_serverapp)
    [message] = [r.getMessage() for r in caplog.records if r.getMessage().startswith("MCP endpoint:")]
    assert f"({len(extension.tool_names)} tools)" in message
    # The docs show the default address; the test server's host, port and base_url differ.
    shown = ENDPOINT.sub("http://localhost:8888/mcp", message)
    for page in (README, INSTALL):
        assert shown in page.read_text(), f"{page.name} does not show the startup line:\n{shown}"


def test_the_readme_run_line_names_the_options_a_newcomer_needs() -> None:
    readme = README.read_text()
    for option in ("--port", "--no-browser", "--allow-root"):
        assert option in readme, option


def test_claude_desktop_runs_mcp_remote_without_a_prompt() -> None:
    # Without -y, npx asks before installing and fails wherever npm has yes=false.
    assert '"args": ["-y", "mcp-remote"' in README.read_text()


def test_the_troubleshooting_page_is_linked() -> None:
    assert (ROOT / "docs" / "troubleshooting.md").is_file()
    assert "(docs/troubleshooting.md)" in README.read_text()
    assert "(troubleshooting.md)" in INSTALL.read_text()
