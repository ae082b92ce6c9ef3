"""Fixtures for the browser tests: a real JupyterLab (and Notebook 7) page watching an agent's edits.

The server is the suite's usual one (tests/conftest.py: pytest-jupyter's ServerApp on the test's event loop,
token on), with JupyterLab's and Notebook 7's server extensions loaded next to ours, so the page, the
collaboration rooms and the MCP endpoint share one server, as under ``jupyter lab``, and the loop monitor
watches all of it. pytest-jupyter points Jupyter's data paths at empty temporary directories; JupyterLab's
application directory and the installed prebuilt extensions (jupyter-collaboration's frontend among them)
are taken from the environment as ``jupyter lab`` would find them.

The browser is Debian's ``chromium-headless-shell`` (scripts/install_browser.sh installs it), driven by
Playwright's async API on the same loop; Playwright never downloads a browser here. Without the browser
or Playwright the tests skip, saying why; with ``REQUIRE_BROWSER=1`` (CI) they fail instead.
"""

from __future__ import annotations

import asyncio
import importlib.util
import json
import os
import weakref
from collections.abc import Awaitable, Callable, Generator, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

import pytest
from jupyter_core.paths import jupyter_path
from jupyterlab.commands import get_app_dir  # type: ignore[import-untyped]
from traitlets.config import Config

import jupyter_pair_mcp

from .chromium import FLAGS, INSTALL_HINT, executable

if TYPE_CHECKING:
    from playwright.async_api import Browser, Locator, Page, Response

# Where `jupyter lab` finds its assets, read before pytest-jupyter patches Jupyter's paths (at import time).
LAB_APP_DIR = get_app_dir()
LABEXTENSIONS = jupyter_path("labextensions")
NOTEBOOK_7 = importlib.util.find_spec("notebook") is not None
# The companion JupyterLab extension's build, when there is one: the page gets this one (the code under test),
# ahead of any copy installed in the environment.
LABEXTENSION = Path(jupyter_pair_mcp.__file__).parent / "labextension"

# Bounds, in milliseconds (Playwright's unit). Generous: a loaded 2-core machine takes seconds to load
# JupyterLab's bundles and start a kernel; every wait ends as soon as its condition holds.
PAGE_LOAD = 90_000
SEEN = 20_000


HERE = Path(__file__).parent
# JupyterLab's own server code holds the loop longer than ours may: serving a page, jupyterlab_server's
# settings API reads and validates every settings schema in one step (100-115 ms CPU measured on a loaded
# 2-core machine). The bound stays low enough to catch a real stall; the rest of the suite keeps the
# endpoint's own steps to the strict default.
LOOP_BOUND = pytest.mark.loop_bound(
    0.3, reason="JupyterLab's settings API (jupyterlab_server) validates every schema in one step on the loop"
)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Every test under tests/browser/ is a browser test (``-m browser`` selects them, ``-m "not browser"``
    leaves them out), with the loop bound JupyterLab's own handlers need."""
    for item in items:
        if item.path.is_relative_to(HERE):
            item.add_marker(pytest.mark.browser)
            item.add_marker(LOOP_BOUND)


def unavailable(reason: str) -> None:
    """Skip, or fail when the run requires the browser tests (``REQUIRE_BROWSER=1``, set by .ci/run)."""
    if os.environ.get("REQUIRE_BROWSER"):
        pytest.fail(f"browser tests required (REQUIRE_BROWSER=1): {reason}")
    pytest.skip(reason)


@pytest.fixture
def chromium() -> str:
    try:
        import playwright.async_api  # noqa: F401
    except ImportError:
        unavailable("Playwright is not installed: pip install -e '.[test]'")
    path = executable()
    if path is None:
        unavailable(f"headless Chromium not found: {INSTALL_HINT} or set CHROMIUM_HEADLESS_SHELL")
    assert path is not None
    return path


def user_settings(directory: Path) -> Path:
    """JupyterLab settings of a person who answered the "get notified about Jupyter news?" toast: it would
    otherwise cover the bottom right corner of every page."""
    target = directory / "@jupyterlab" / "apputils-extension" / "notification.jupyterlab-settings"
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(json.dumps({"fetchNews": "false"}))
    return directory


@pytest.fixture(scope="session")
def labextensions(tmp_path_factory: pytest.TempPathFactory) -> list[str]:
    """Where the page's prebuilt extensions come from: the environment's, after this package's own build if
    there is one. One directory for the whole session: Jupyter's static file handler caches each file's
    location for the process, so a file served from a per-test directory would be refused in the next test."""
    found = list(LABEXTENSIONS)
    if (LABEXTENSION / "package.json").is_file():
        # JupyterLab finds an extension as <directory>/<its package name>/package.json.
        name = json.loads((LABEXTENSION / "package.json").read_text())["name"]
        ours = tmp_path_factory.mktemp("labextensions")
        (ours / name).parent.mkdir(parents=True, exist_ok=True)
        (ours / name).symlink_to(LABEXTENSION, target_is_directory=True)
        found.insert(0, str(ours))
    return found


@pytest.fixture
def jp_server_config(jp_server_config: Config, tmp_path: Path, labextensions: list[str]) -> Config:
    """The suite's server, plus JupyterLab and Notebook 7 as `jupyter lab` loads them."""
    config = Config(jp_server_config)
    config.ServerApp.jpserver_extensions = {
        **config.ServerApp.jpserver_extensions,
        "jupyterlab": True,
        "notebook": NOTEBOOK_7,
    }
    frontend = {
        "extra_labextensions_path": labextensions,
        # Tests read the application's models (window.jupyterapp); nothing a person sees changes.
        "expose_app_in_browser": True,
    }
    config.LabApp = Config(
        {
            **frontend,
            "app_dir": LAB_APP_DIR,
            # No traffic leaves the machine: no news feed, no update check, no extension catalogue.
            "news_url": None,
            "check_for_updates_class": "jupyterlab.handlers.announcements.NeverCheckForUpdate",
            "extension_manager": "readonly",
            "user_settings_dir": str(user_settings(tmp_path / "user-settings")),
        }
    )
    config.JupyterNotebookApp = Config(frontend)
    return config


KEEP_PAGES = pytest.StashKey[Callable[[], str]]()
# What each page logged (console, page errors, HTTP errors), kept in files when its test fails.
CONSOLES: weakref.WeakKeyDictionary[Page, list[str]] = weakref.WeakKeyDictionary()


@pytest.hookimpl(wrapper=True, tryfirst=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Generator[None, pytest.TestReport, pytest.TestReport]:
    """When a browser test fails, keep what its pages showed, and say where in the failure's report."""
    report = yield
    keep = item.stash.get(KEEP_PAGES, None)
    if report.failed and report.when == "call" and keep is not None:
        report.sections.append(("browser", keep()))
    return report


@pytest.fixture
def browser(
    chromium: str, jp_asyncio_loop: asyncio.AbstractEventLoop, tmp_path: Path, request: pytest.FixtureRequest
) -> Iterator[Browser]:
    """A headless Chromium with a fresh profile, driven on the test's loop; closed after the test. When the
    test fails, each page's screenshot and console messages go to the test's ``tmp_path`` (the failure's
    report says where)."""
    from playwright.async_api import async_playwright

    async def start() -> tuple[Any, Browser]:
        driver = await async_playwright().start()
        try:
            launched = await driver.chromium.launch(executable_path=chromium, headless=True, args=FLAGS, timeout=60_000)
        except BaseException:
            await driver.stop()
            raise
        return driver, launched

    driver, launched = jp_asyncio_loop.run_until_complete(asyncio.wait_for(start(), 90))

    async def keep_pages() -> None:
        pages = [page for context in launched.contexts for page in context.pages]
        for number, page in enumerate(pages):
            (tmp_path / f"page-{number}-console.txt").write_text("\n".join(CONSOLES.get(page, [])))
            await page.screenshot(path=tmp_path / f"page-{number}.png", timeout=10_000)

    def keep() -> str:
        """Run between the test and its teardown, while the loop is idle."""
        try:
            jp_asyncio_loop.run_until_complete(asyncio.wait_for(keep_pages(), 30))
        except Exception as error:
            return f"could not keep the pages ({error!r}); some may be in {tmp_path}"
        return f"screenshots and console messages of the pages: {tmp_path}/page-*"

    async def stop() -> None:
        try:
            await launched.close()
        finally:
            await driver.stop()

    request.node.stash[KEEP_PAGES] = keep
    yield launched
    jp_asyncio_loop.run_until_complete(asyncio.wait_for(stop(), 60))


def first_source(root: Path, path: str) -> str:
    """The first cell's source as the test wrote the file (before any room has it: nothing writes it yet)."""
    cells = json.loads((root / path).read_text())["cells"]
    source = cells[0]["source"]
    return source if isinstance(source, str) else "".join(source)


def cells(page: Page) -> Locator:
    """The notebook's cells, in order (JupyterLab and Notebook 7 render the same widgets)."""
    return page.locator(".jp-Notebook .jp-Cell")


def source_lines(page: Page, index: int) -> Locator:
    """The lines of the cell's editor (CodeMirror renders one ``.cm-line`` per line of source): assert
    ``to_have_text([...lines])`` to compare the whole source exactly."""
    return cells(page).nth(index).locator(".cm-content .cm-line")


OpenPage = Callable[..., Awaitable["Page"]]


def _page_opener(
    browser: Browser, server_root: str, jp_base_url: str, token: str, jp_root_dir: Path, route: str
) -> OpenPage:
    async def open_page(path: str, first_cell: str | None = None) -> Page:
        """Open ``path`` and wait until the notebook shows ``first_cell`` (default: the file's first cell) in
        the first cell's editor: the page has joined the document's room and synced with it."""
        from playwright.async_api import expect

        expected = first_source(jp_root_dir, path) if first_cell is None else first_cell
        page = await browser.new_page()
        console = CONSOLES[page] = []
        page.on("console", lambda message: console.append(f"{message.type}: {message.text}"))
        page.on("pageerror", lambda error: console.append(f"page error: {error}"))

        def failed(response: Response) -> None:
            if response.status >= 400:
                where = response.url.replace(token, "<token>")
                console.append(f"HTTP {response.status}: {response.request.method} {where}")

        page.on("response", failed)
        page.set_default_timeout(SEEN)
        # Under load jupyter-collaboration asks after 5 s whether to keep waiting for the document; the
        # handler answers whenever that dialog covers the page before an action or an assertion.
        await page.add_locator_handler(
            page.get_by_role("button", name="Continue waiting"), lambda button: button.click()
        )
        url = f"{server_root}{jp_base_url}{route}/{quote(path)}?token={quote(token)}"
        await page.goto(url, timeout=PAGE_LOAD)
        await expect(source_lines(page, 0)).to_have_text(expected.split("\n"), timeout=PAGE_LOAD)
        return page

    return open_page


@pytest.fixture
def lab_page(browser: Browser, server_root: str, jp_base_url: str, token: str, jp_root_dir: Path) -> OpenPage:
    """``page = await lab_page(path)``: the notebook open in JupyterLab (``/lab/tree/<path>``), synced."""
    return _page_opener(browser, server_root, jp_base_url, token, jp_root_dir, "lab/tree")


@pytest.fixture
def notebook7_page(browser: Browser, server_root: str, jp_base_url: str, token: str, jp_root_dir: Path) -> OpenPage:
    """``page = await notebook7_page(path)``: the notebook open in Notebook 7 (``/notebooks/<path>``), synced."""
    if not NOTEBOOK_7:
        unavailable("Notebook 7 is not installed: pip install -e '.[test]'")
    return _page_opener(browser, server_root, jp_base_url, token, jp_root_dir, "notebooks")


@pytest.fixture
def extension_built() -> None:
    """The JupyterLab extension's build is there (tests of the extension use it): skip without it, and fail
    where browser tests are required (``REQUIRE_BROWSER``, set by .ci/run), since scripts/test.sh builds it."""
    if LABEXTENSION.is_dir():
        return
    if os.environ.get("REQUIRE_BROWSER"):
        pytest.fail("the JupyterLab extension is not built: scripts/test.sh builds it with npm (needs Node)")
    pytest.skip("needs the JupyterLab extension build (pip install -e . with Node, or npm run build:prod)")
