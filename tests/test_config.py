"""Admin configuration, base_url, enabling/disabling, startup line and shutdown."""

from __future__ import annotations

import asyncio
import logging
import time
from typing import Any

import httpx2
import pytest

from .conftest import INIT_PARAMS, LEGACY_VERSION, MCP_HEADERS, open_session, rpc, until, within
from .patience import patient


async def tool_names(mcp_client: Any) -> set[str]:
    async with mcp_client() as client:
        return {t.name for t in (await within(client.list_tools())).tools}


class TestReadOnly:
    @pytest.fixture
    def mcp_config(self) -> dict[str, Any]:
        return {"read_only": True}

    async def test_read_only_exposes_only_read_only_tools(self, mcp_client: Any, extension: Any) -> None:
        names = await tool_names(mcp_client)
        assert {"list_notebooks", "get_notebook", "search_notebook", "list_documents"} <= names
        assert not names & {"batch_insert_notebook_cells", "batch_update_notebook_cells", "save_notebook"}
        async with mcp_client() as client:
            for tool in (await client.list_tools()).tools:
                assert tool.annotations is not None
                assert tool.annotations.read_only_hint is True


class TestToolGroups:
    @pytest.fixture
    def mcp_config(self) -> dict[str, Any]:
        return {"tool_groups": ["document"]}

    async def test_disabled_group_is_hidden(self, mcp_client: Any) -> None:
        names = await tool_names(mcp_client)
        assert "list_notebooks" not in names
        assert {"list_documents", "document_exists"} <= names
        async with mcp_client() as client:
            result = await within(client.call_tool("list_notebooks", {}))
        assert result.is_error


def test_unknown_tool_group_is_rejected() -> None:
    from jupyter_pair_mcp.app import JupyterPairMCP

    app = JupyterPairMCP()
    with pytest.raises(Exception, match="unknown tool groups"):
        app.tool_groups = ["notebook", "telepathy"]


class TestInvalidToolGroups:
    """A bad ``tool_groups`` fails the extension's link; Jupyter (``reraise_server_extension_failures`` off, its
    default) logs that and loads the extension anyway, with *none* of its configuration applied. The endpoint
    must then not be served at all, and the log must name the bad value."""

    @pytest.fixture
    def jp_server_config(self, jp_server_config: Any, capfd: pytest.CaptureFixture[str]) -> Any:
        # capfd from here: the server is built (and logs to stderr, before pytest-jupyter reroutes its log)
        # while the test is set up.
        jp_server_config.ServerApp.reraise_server_extension_failures = False
        return jp_server_config

    @pytest.fixture
    def mcp_config(self) -> dict[str, Any]:
        return {"tool_groups": ["notebok"], "read_only": True}

    @pytest.fixture
    def jp_argv(self, request: pytest.FixtureRequest) -> list[str]:
        return list(getattr(request, "param", []))

    @pytest.mark.parametrize(
        ("jp_argv", "bad"),
        [
            pytest.param([], "'notebok'", id="typo-in-config"),
            # traitlets hands the extension one string for a single occurrence of a list option
            pytest.param(["--JupyterPairMCP.tool_groups=notebook,document"], "'notebook,document'", id="commas"),
            pytest.param(
                ['--JupyterPairMCP.tool_groups=["notebook","document"]'], '\'["notebook","document"]\'', id="json"
            ),
        ],
        indirect=["jp_argv"],
    )
    @pytest.mark.usefixtures("jp_serverapp")
    async def test_the_endpoint_is_not_served_and_the_log_names_the_value(
        self, http: httpx2.AsyncClient, mcp_url: str, auth: dict[str, str], capfd: pytest.CaptureFixture[str], bad: str
    ) -> None:
        response = await http.post(mcp_url, json=rpc("initialize", INIT_PARAMS), headers={**MCP_HEADERS, **auth})
        assert response.status_code == 404
        log = capfd.readouterr().err.splitlines()
        refused = [line for line in log if "MCP endpoint not served" in line]
        assert len(refused) == 1, "\n".join(log)
        assert bad in refused[0] and "known groups: notebook, execution, document" in refused[0], refused[0]
        if "," in bad:
            assert "--JupyterPairMCP.tool_groups=notebook --JupyterPairMCP.tool_groups=document" in refused[0]
        assert not [line for line in log if "MCP endpoint:" in line]  # no "serving N tools" line


class TestToolGroupsOnTheCommandLine:
    @pytest.fixture
    def jp_argv(self) -> list[str]:
        return ["--JupyterPairMCP.tool_groups=notebook", "--JupyterPairMCP.tool_groups=document"]

    async def test_a_list_is_given_by_repeating_the_option(self, mcp_client: Any, extension: Any) -> None:
        assert extension.tool_groups == ["notebook", "document"]
        names = await tool_names(mcp_client)
        assert {"get_notebook", "list_documents"} <= names
        assert not names & {"execute_notebook_cell", "get_document_history"}


def test_every_trait_has_help_text_with_its_default() -> None:
    from jupyter_pair_mcp.app import JupyterPairMCP

    own = {
        name: trait
        for name, trait in JupyterPairMCP.class_traits(config=True).items()
        if trait.this_class is JupyterPairMCP
    }
    assert len(own) >= 12
    for name, trait in own.items():
        assert trait.help, name
        assert "Default" in trait.help, name


class TestBaseUrl:
    @pytest.fixture
    def jp_base_url(self) -> str:
        return "/jupyter/"

    @pytest.mark.usefixtures("jp_serverapp")
    async def test_endpoint_lives_under_base_url(
        self, http: httpx2.AsyncClient, server_root: str, auth: dict[str, str], mcp_client: Any
    ) -> None:
        for url in (f"{server_root}/jupyter/mcp", f"{server_root}/jupyter/mcp/"):
            response = await http.post(url, json=rpc("initialize", INIT_PARAMS), headers={**MCP_HEADERS, **auth})
            assert response.status_code == 200, url
        assert (await http.post(f"{server_root}/mcp", json={}, headers={**MCP_HEADERS, **auth})).status_code == 404
        assert "list_documents" in await tool_names(mcp_client)


class TestDisabled:
    @pytest.fixture
    def jp_server_config(self, jp_server_config: Any) -> Any:
        jp_server_config.ServerApp.jpserver_extensions["jupyter_pair_mcp"] = False
        return jp_server_config

    @pytest.mark.usefixtures("jp_serverapp")
    async def test_no_endpoint_when_disabled(self, http: httpx2.AsyncClient, mcp_url: str, auth: dict) -> None:
        response = await http.post(mcp_url, json=rpc("initialize", INIT_PARAMS), headers={**MCP_HEADERS, **auth})
        assert response.status_code == 404
        assert (await http.get(mcp_url, headers=auth)).status_code == 404


class TestMaxSessions:
    @pytest.fixture
    def mcp_config(self) -> dict[str, Any]:
        return {"max_sessions": 2}

    @pytest.mark.usefixtures("jp_serverapp")
    async def test_session_limit_answers_503(self, http: httpx2.AsyncClient, mcp_url: str, auth: dict) -> None:
        first = await open_session(http, mcp_url, auth)
        await open_session(http, mcp_url, auth)
        refused = await http.post(mcp_url, json=rpc("initialize", INIT_PARAMS), headers={**MCP_HEADERS, **auth})
        assert refused.status_code == 503
        headers = {**MCP_HEADERS, **auth, "mcp-session-id": first, "mcp-protocol-version": LEGACY_VERSION}
        assert (await http.delete(mcp_url, headers=headers)).status_code == 200
        await open_session(http, mcp_url, auth)


class TestIdleTimeout:
    @pytest.fixture
    def mcp_config(self) -> dict[str, Any]:
        return {"session_idle_timeout": 0.5}

    @pytest.mark.usefixtures("jp_serverapp")
    async def test_idle_session_expires(
        self, http: httpx2.AsyncClient, mcp_url: str, auth: dict, extension: Any
    ) -> None:
        session = await open_session(http, mcp_url, auth)
        headers = {**MCP_HEADERS, **auth, "mcp-session-id": session, "mcp-protocol-version": LEGACY_VERSION}
        # Watched without a request (one would be activity): on a busy machine the expiry may come late.
        await until(lambda: extension.runner.manager.session_count == 0, 60, "the idle session expiring")
        assert (await http.post(mcp_url, json=rpc("ping"), headers=headers)).status_code == 404


async def test_startup_line_names_the_url_and_header_not_the_token(
    extension: Any, jp_serverapp: Any, token: str, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO)
    await extension._start_jupyter_server_extension(jp_serverapp)
    lines = [r.getMessage() for r in caplog.records if r.getMessage().startswith("MCP endpoint:")]
    assert len(lines) == 1
    assert "/a%40b/mcp" in lines[0]
    assert "Authorization: Bearer" in lines[0]
    assert token not in lines[0]


async def test_shutdown_ends_open_streams_within_the_bound(
    extension: Any, http: httpx2.AsyncClient, mcp_url: str, auth: dict[str, str]
) -> None:
    session = await open_session(http, mcp_url, auth)
    headers = {**auth, "Accept": "text/event-stream", "mcp-session-id": session, "mcp-protocol-version": LEGACY_VERSION}
    opened, ended = asyncio.Event(), asyncio.Event()

    async def hold_stream() -> None:
        async with http.stream("GET", mcp_url, headers=headers) as response:
            assert response.status_code == 200
            opened.set()
            async for _ in response.aiter_lines():
                pass
        ended.set()

    reader = asyncio.ensure_future(hold_stream())
    await within(opened.wait())
    assert not ended.is_set()
    started = time.monotonic()
    await within(extension.stop_extension(), 10)
    # Ended by the bound, not by the safety net above (the stream would never end by itself).
    assert time.monotonic() - started < extension.shutdown_timeout + patient(1)
    await within(ended.wait(), 5)
    await reader
    assert not extension.runner.running


def test_loading_the_extension_does_not_import_the_mcp_sdk() -> None:
    """The SDK import (~0.5 s) happens when the endpoint is built, off the server's start path."""
    import subprocess
    import sys

    code = (
        "import sys, jupyter_pair_mcp, jupyter_pair_mcp.app\n"
        "jupyter_pair_mcp._jupyter_server_extension_points()\n"
        "loaded = sorted(m for m in sys.modules if m in ('mcp', 'mcp_types') or m.startswith(('mcp.', 'mcp_types.')))\n"
        "print(loaded)\n"
        "sys.exit(1 if loaded else 0)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stdout + done.stderr


def test_a_fresh_server_answers_mcp_requests_made_while_the_endpoint_is_built() -> None:
    """In a new process the SDK is imported in a worker thread after start and requests arriving meanwhile
    wait for it. (A request importing the SDK itself at that moment deadlocked the import, timing-dependent:
    this catches it only sometimes; the handler imports nothing from the SDK before the build is done.)"""
    import json
    import urllib.request
    from concurrent.futures import ThreadPoolExecutor

    from benchmarks.jupyter_process import JupyterProcess

    body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": INIT_PARAMS}).encode()

    def initialize(url: str, token: str) -> tuple[int, str | None]:
        request = urllib.request.Request(url, data=body, method="POST")
        for name, value in {**MCP_HEADERS, "Authorization": f"Bearer {token}"}.items():
            request.add_header(name, value)
        with urllib.request.urlopen(request, timeout=30) as response:
            return response.status, response.headers.get("mcp-session-id")

    with JupyterProcess() as server, ThreadPoolExecutor(4) as pool:
        answers = list(pool.map(lambda _: initialize(f"{server.url}/mcp", server.token), range(4)))
        log = (server.root.parent / "server.log").read_text()
    assert all(status == 200 and session for status, session in answers), answers
    assert "Traceback" not in log, log[-3000:]
