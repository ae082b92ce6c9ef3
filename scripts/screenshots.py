"""Screenshots of what a person sees while an agent works in their notebook, for docs/images/ (not a test).

Starts this environment's ``jupyter lab`` (with the MCP endpoint) on a free port, token on, with a fresh root,
config and runtime directory; opens a notebook in Debian's headless Chromium (scripts/install_browser.sh
installs it), in JupyterLab and in Notebook 7; has an agent (the MCP SDK client over HTTP) insert a cell, run
it and rewrite another; saves a PNG of each view. When the companion JupyterLab extension is loaded, its
views are shot too: the toolbar indicator, a cell the agent points at, the Collaborators panel listing the
agent, the activity panel, suggestions under review (review mode) and one an accept turned into a conflict, the
indicator with a second agent of a long name, and the agent stopped by the person. Pictures of one part of the
page are cropped to it (each PNG stays small).

Usage: python scripts/screenshots.py [--out docs/images]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import logging
import os
import secrets
import socket
import subprocess
import sys
import tempfile
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any
from urllib.parse import quote

import httpx2
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.types import Implementation

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
import jupyter_pair_mcp  # noqa: E402  (the repository root is on the path only from here)
from tests.browser import chromium  # noqa: E402

log = logging.getLogger("screenshots")
NOTEBOOK = "analysis.ipynb"
AGENT = Implementation(name="Data assistant", version="1")
#: A second agent whose name is longer than a toolbar has room for (the server keeps 64 characters of it).
LONG_NAMED = Implementation(
    name="Quarterly sales forecasting assistant for the northern region planning team", version="1"
)
WAIT = 60_000  # ms: every wait ends as soon as its condition holds
CELLS = [
    ("markdown", "# Monthly sales\nAn agent and a person work in this notebook together."),
    ("code", "sales = [120, 135, 128, 160, 171, 158]"),
    ("code", "average = sum(sales) / len(sales)\naverage"),
]


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def write_notebook(path: Path) -> None:
    cells = []
    for number, (kind, source) in enumerate(CELLS):
        cell: dict[str, Any] = {"id": f"cell-{number}", "cell_type": kind, "metadata": {}, "source": source}
        if kind == "code":
            cell.update(outputs=[], execution_count=None)
        cells.append(cell)
    kernelspec = {"name": "python3", "display_name": "Python 3 (ipykernel)", "language": "python"}
    path.write_text(
        json.dumps({"cells": cells, "metadata": {"kernelspec": kernelspec}, "nbformat": 4, "nbformat_minor": 5})
    )


def write_settings(directory: Path) -> None:
    """A person who already answered JupyterLab's "get notified about Jupyter news?" toast (with no)."""
    target = directory / "@jupyterlab" / "apputils-extension" / "notification.jupyterlab-settings"
    target.parent.mkdir(parents=True)
    target.write_text(json.dumps({"fetchNews": "false"}))


@contextlib.contextmanager
def jupyter_lab(home: Path, port: int, token: str) -> Any:
    """``jupyter lab`` in its own directories; ended (SIGTERM, then SIGKILL) on leaving."""
    root = home / "root"
    root.mkdir()
    write_settings(home / "settings")
    write_notebook(root / NOTEBOOK)
    # This repository's code, whatever the environment has installed, with its server extension enabled.
    config = home / "config"
    config.mkdir()
    extensions = {jupyter_pair_mcp.__name__: True, "jupyter_server_ydoc": True, "jupyter_server_fileid": True}
    (config / "jupyter_server_config.json").write_text(json.dumps({"ServerApp": {"jpserver_extensions": extensions}}))
    path = os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))
    # This repository's build of the JupyterLab extension too, ahead of any copy the environment has installed
    # (JupyterLab finds an extension as <directory>/<its package name>/package.json).
    built = ROOT / "jupyter_pair_mcp" / "labextension"
    labextensions: list[str] = []
    if (built / "package.json").is_file():
        name = json.loads((built / "package.json").read_text())["name"]
        (home / "labextensions" / name).parent.mkdir(parents=True, exist_ok=True)
        (home / "labextensions" / name).symlink_to(built, target_is_directory=True)
        labextensions = [f"--LabApp.extra_labextensions_path={home / 'labextensions'}"]
    env = {
        **os.environ,
        "PYTHONPATH": path,
        "JUPYTER_CONFIG_DIR": str(config),
        "JUPYTER_RUNTIME_DIR": str(home / "runtime"),
    }
    command = [
        sys.executable,
        "-m",
        "jupyterlab",
        "--no-browser",
        "--allow-root",
        "--ip=127.0.0.1",
        f"--port={port}",
        "--ServerApp.port_retries=0",
        f"--IdentityProvider.token={token}",
        f"--ServerApp.root_dir={root}",
        f"--BaseFileIdManager.db_path={home / 'file_id.db'}",
        f"--LabApp.user_settings_dir={home / 'settings'}",
        f"--LabApp.workspaces_dir={home / 'workspaces'}",
        "--LabApp.news_url=",
        "--LabApp.check_for_updates_class=jupyterlab.handlers.announcements.NeverCheckForUpdate",
        "--LabApp.extension_manager=readonly",
        # window.jupyterapp: the script waits for the kernel through it; nothing a person sees changes.
        "--LabApp.expose_app_in_browser=True",
        "--JupyterNotebookApp.expose_app_in_browser=True",
        *labextensions,
    ]
    with (home / "server.log").open("w") as server_log:
        process = subprocess.Popen(command, cwd=home, env=env, stdout=server_log, stderr=subprocess.STDOUT)
        try:
            yield process
        finally:
            process.terminate()
            try:
                process.wait(30)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()


async def until_ready(server_log: Path, process: subprocess.Popen[bytes]) -> None:
    """Wait (bounded) until the server logs its ``MCP endpoint:`` line: Jupyter answers requests before
    the endpoint is mounted."""
    for _ in range(600):
        text = await asyncio.to_thread(server_log.read_text)
        if "MCP endpoint:" in text:
            return
        if process.poll() is not None:
            raise RuntimeError(f"jupyter lab exited:\n{text[-3000:]}")
        await asyncio.sleep(0.2)
    raise RuntimeError(f"jupyter lab did not serve the endpoint within 120 s:\n{text[-3000:]}")


@contextlib.asynccontextmanager
async def agent(base: str, token: str, info: Implementation = AGENT) -> AsyncIterator[Client]:
    http = httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}, timeout=60)
    transport = streamable_http_client(f"{base}mcp", http_client=http)
    async with http, Client(transport, client_info=info) as client:
        yield client


async def call(client: Client, tool: str, **arguments: Any) -> Any:
    result = await asyncio.wait_for(client.call_tool(tool, arguments), 120)
    if result.is_error:
        raise RuntimeError(f"{tool}: {getattr(result.content[0], 'text', '') if result.content else result}")
    return result.structured_content


async def open_notebook(browser: Any, url: str, first_line: str) -> Any:
    from playwright.async_api import expect

    page = await browser.new_page(viewport={"width": 1280, "height": 760})
    await page.add_locator_handler(page.get_by_role("button", name="Continue waiting"), lambda b: b.click())
    await page.goto(url, timeout=WAIT)
    first = page.locator(".jp-Notebook .jp-Cell").first
    await expect(first).to_contain_text(first_line, timeout=WAIT)
    # A kernel is attached and idle, so the picture shows a settled notebook.
    await page.wait_for_function(
        "() => { const w = window.jupyterapp?.shell?.currentWidget;"
        " return w?.sessionContext?.session?.kernel?.status === 'idle'; }",
        timeout=WAIT,
    )
    return page


async def shoot(page: Any, path: Path) -> None:
    await page.screenshot(path=path)
    log.info("wrote %s", path.relative_to(ROOT) if path.is_relative_to(ROOT) else path)


async def show_flag(page: Any) -> None:
    """Point at the agent's caret: its name flag shows (it fades 2 s after the agent's last move)."""
    from playwright.async_api import expect

    caret = page.locator(".jp-remote-cursor").first
    await expect(caret).to_have_count(1, timeout=WAIT)
    box = await caret.bounding_box()
    if box is not None:
        await page.mouse.move(box["x"] + 1, box["y"] + box["height"] / 2)
    await expect(page.locator(".jp-remote-userFlag:not(.jp-mod-idle)").first).to_be_visible(timeout=WAIT)


async def review_views(lab: Any, client: Client, out: Path) -> None:
    """Review mode (docs/review.md): the agent proposes a change and a new cell; the person sees them on the
    cells with their diffs and buttons, then accepts one and rejects the other. Skipped, saying so, on a
    server without review mode."""
    from playwright.async_api import expect

    await lab.evaluate("window.jupyterapp.shell.collapseRight()")
    await call(client, "point_at", path=NOTEBOOK)  # the earlier point's label would cover the cells
    try:
        update = await call(
            client,
            "batch_update_notebook_cells",
            path=NOTEBOOK,
            exec=False,
            propose=True,
            updates=[{"cell_id": "cell-2", "content": "average = sum(sales) / len(sales)\nround(average, 1)"}],
        )
        insert = await call(
            client,
            "batch_insert_notebook_cells",
            path=NOTEBOOK,
            exec=False,
            propose=True,
            after_cell_id="cell-1",
            cells=[{"content": "Sales rose in the last months.", "cell_type": "markdown"}],
        )
    except RuntimeError as error:
        log.info("review mode not shot (this server has none: %s)", error)
        return
    changed = lab.locator(f".jp-mcp-suggestion[data-mcp-suggestion-id='{update['suggestion']['id']}']")
    added = lab.locator(f".jp-mcp-suggestion[data-mcp-suggestion-id='{insert['suggestion']['id']}']")
    await expect(changed).to_be_visible(timeout=WAIT)
    await expect(added).to_be_visible(timeout=WAIT)
    await changed.scroll_into_view_if_needed()
    await shoot(lab, out / "lab-review.png")
    await changed.locator(".jp-mcp-suggestion-accept").click()
    await added.locator(".jp-mcp-suggestion-reject").click()
    await expect(lab.locator(".jp-mcp-suggestion")).to_have_count(0, timeout=WAIT)
    await expect(lab.locator(".jp-Cell").nth(2)).to_contain_text("round(average, 1)", timeout=WAIT)
    await conflict_view(lab, client, out)


async def conflict_view(lab: Any, client: Client, out: Path) -> None:
    """Two suggestions change the same number of one cell; the person accepts one: the other stays shown, in
    conflict, with the server's reason and only Reject (the agent is told on its next call)."""
    from playwright.async_api import expect

    async def propose(last: str) -> str:
        done = await call(
            client,
            "batch_update_notebook_cells",
            path=NOTEBOOK,
            exec=False,
            propose=True,
            updates=[{"cell_id": "cell-1", "content": f"sales = [120, 135, 128, 160, 171, 158, {last}]"}],
        )
        return str(done["suggestion"]["id"])

    accepted, conflicting = await propose("152"), await propose("147")
    block = lab.locator(f".jp-mcp-suggestion[data-mcp-suggestion-id='{accepted}']")
    await expect(block).to_be_visible(timeout=WAIT)
    await block.locator(".jp-mcp-suggestion-accept").click()
    conflict = lab.locator(f".jp-mcp-suggestion-conflict[data-mcp-suggestion-id='{conflicting}']")
    await expect(conflict).to_be_visible(timeout=WAIT)
    await expect(lab.locator(".jp-Cell").nth(1)).to_contain_text("158, 152]", timeout=WAIT)
    await conflict.scroll_into_view_if_needed()
    await lab.locator(".jp-Cell").nth(1).screenshot(path=out / "lab-review-conflict.png")
    log.info("wrote %s", out / "lab-review-conflict.png")
    await conflict.locator(".jp-mcp-suggestion-reject").click()
    await expect(lab.locator(".jp-mcp-suggestion")).to_have_count(0, timeout=WAIT)


async def long_name_view(lab: Any, base: str, token: str, out: Path) -> None:
    """A second agent with a name longer than the toolbar's room points at a cell with a long message: the
    indicator shows both agents and the point's notice, its name and message cut with an ellipsis, and stays in
    the toolbar (not in its "⋯" overflow) with every stop button."""
    from playwright.async_api import expect

    agents = lab.locator(".jp-NotebookPanel-toolbar .jp-mcp-indicator .jp-mcp-participant[data-mcp-kind=agent]")
    async with agent(base, token, LONG_NAMED) as second:
        message = "Should next quarter's forecast use this seven-month average or the median of the last year?"
        await call(second, "point_at", path=NOTEBOOK, cell_id="cell-2", message=message)
        await expect(agents).to_have_count(2, timeout=WAIT)
        await expect(lab.locator(".jp-NotebookPanel-toolbar .jp-mcp-point-notice").first).to_be_visible(timeout=WAIT)
        await expect(lab.locator(".jp-Toolbar-responsive-popup .jp-mcp-indicator")).to_have_count(0)
        await lab.locator(".jp-NotebookPanel-toolbar").first.screenshot(path=out / "lab-indicator-long-name.png")
        log.info("wrote %s", out / "lab-indicator-long-name.png")
    await expect(agents).not_to_have_count(2, timeout=WAIT)  # its session ended: it left


async def run(out: Path) -> None:
    from playwright.async_api import async_playwright, expect

    executable = chromium.executable()
    if executable is None:
        raise SystemExit(f"headless Chromium not found: {chromium.INSTALL_HINT}")
    token, port = secrets.token_hex(24), free_port()
    base = f"http://127.0.0.1:{port}/"
    with tempfile.TemporaryDirectory() as tmp, jupyter_lab(Path(tmp), port, token) as server:
        await until_ready(Path(tmp) / "server.log", server)
        async with async_playwright() as driver, agent(base, token) as client:
            browser = await driver.chromium.launch(executable_path=executable, args=chromium.FLAGS)
            lab = await open_notebook(browser, f"{base}lab/tree/{quote(NOTEBOOK)}?token={token}", "Monthly sales")
            await call(client, "batch_execute_notebook_cells", path=NOTEBOOK)
            await call(
                client,
                "batch_insert_notebook_cells",
                path=NOTEBOOK,
                after_cell_id="cell-2",
                cells=[{"content": "best = max(sales)\nprint(f'best month: {best}, average: {average:.1f}')"}],
            )
            await call(
                client,
                "batch_update_notebook_cells",
                path=NOTEBOOK,
                exec=False,
                updates=[{"cell_id": "cell-1", "content": "sales = [120, 135, 128, 160, 171, 158, 149]"}],
            )
            inserted = lab.locator(".jp-Cell").nth(3)
            await expect(inserted.locator(".jp-OutputArea-output")).to_contain_text("best month: 171", timeout=WAIT)
            await expect(lab.locator(".jp-Cell").nth(1)).to_contain_text("158, 149]", timeout=WAIT)
            await show_flag(lab)
            await shoot(lab, out / "lab-agent-edit.png")

            extension = bool(await lab.locator(".jp-mcp-indicator").count())
            if extension:
                # Who is here: the toolbar's indicator (the agent's badge, follow, stop; the person).
                await expect(lab.locator(".jp-mcp-participant[data-mcp-kind=agent]").first).to_be_visible(timeout=WAIT)
                await lab.locator(".jp-NotebookPanel-toolbar").first.screenshot(path=out / "lab-indicator.png")
                log.info("wrote %s", out / "lab-indicator.png")
                await long_name_view(lab, base, token, out)
                # Where the agent points: a labelled outline on the cell; the view does not move.
                await call(client, "point_at", path=NOTEBOOK, cell_id="cell-2", message="This average now has 7 months")
                await expect(lab.locator(".jp-mcp-point-label").first).to_be_visible(timeout=WAIT)
                await shoot(lab, out / "lab-point.png")
                # JupyterLab's Collaborators panel lists the agent (global awareness).
                await lab.evaluate("window.jupyterapp.shell.activateById('jp-collaboration-panel')")
                panel = lab.locator(".jp-CollaboratorsPanel .jp-Collaborator", has_text="Data assistant")
                await expect(panel.first).to_be_visible(timeout=WAIT)
                await shoot(lab, out / "lab-collaborators.png")
                await lab.evaluate("window.jupyterapp.shell.activateById('filebrowser')")
                # What the agent did: the activity panel.
                await lab.locator(".jp-mcp-activity-open").first.click()
                await expect(lab.locator(".jp-mcp-activity-entry").first).to_be_visible(timeout=WAIT)
                await shoot(lab, out / "lab-activity.png")
                await review_views(lab, client, out)

            classic = await open_notebook(browser, f"{base}notebooks/{quote(NOTEBOOK)}?token={token}", "Monthly sales")
            await call(
                client,
                "batch_update_notebook_cells",
                path=NOTEBOOK,
                exec=False,
                updates=[{"cell_id": "cell-2", "content": "average = round(sum(sales) / len(sales), 1)\naverage"}],
            )
            await expect(classic.locator(".jp-Cell").nth(2)).to_contain_text("round(", timeout=WAIT)
            await show_flag(classic)
            await shoot(classic, out / "notebook7-agent-edit.png")
            if extension:
                # Stop: the person ends the agent's work in this notebook; it stays listed, greyed, to allow again.
                # (The open activity panel narrows the toolbar and moves the indicator into its overflow menu.)
                await lab.bring_to_front()
                await lab.evaluate("window.jupyterapp.shell.collapseRight()")
                await lab.locator(".jp-mcp-stop:visible").first.click()
                await expect(lab.locator(".jp-mcp-stopped").first).to_be_visible(timeout=WAIT)
                await shoot(lab, out / "lab-stopped.png")
            await browser.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=ROOT / "docs" / "images", help="where the PNGs go")
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    out = parser.parse_args().out.resolve()
    out.mkdir(parents=True, exist_ok=True)
    asyncio.run(run(out))


if __name__ == "__main__":
    main()
