"""Fixtures: a real Jupyter server (token on) with our extension, and real MCP clients over HTTP."""

from __future__ import annotations

import asyncio
import contextlib
import json
import ssl
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path
from typing import Any

import httpx2
import pytest
from jupyter_server.auth.authorizer import Authorizer
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from traitlets.config import Config

from jupyter_pair_mcp.adapters.rooms.updates import state_vector

from .patience import patient

pytest_plugins = ["pytest_jupyter.jupyter_server", "tests.watchdog", "tests.timeouts", "tests.loopmonitor"]

#: One TLS context for every test client, made once at import: each client would otherwise load the CA bundle
#: (~100 ms of CPU on a loaded machine) inside the test's own loop step, which the loop monitor counts. The
#: test servers are plain HTTP on 127.0.0.1: it is never used for a handshake.
TLS = ssl.create_default_context()
LEGACY_VERSION = "2025-11-25"
MCP_HEADERS = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}


@pytest.fixture(autouse=True)
def jp_asyncio_loop(jp_asyncio_loop: asyncio.AbstractEventLoop) -> Iterator[asyncio.AbstractEventLoop]:
    """pytest-jupyter's loop, ended as ``asyncio.run`` ends one before it is closed.

    pytest-jupyter closes each test's loop with its tasks still pending; they are destroyed later, by the
    garbage collector, in whatever test runs then ("Task was destroyed but it is pending!"), and their
    ``finally`` blocks never run. sse-starlette's per-thread shutdown watcher is one: left pending, its
    ``watcher_started`` flag stays set, so no watcher runs on the next test's loop. Here they are cancelled
    and awaited, async generators closed and the default executor's threads joined, after the server stopped.
    """
    yield jp_asyncio_loop
    _finish(jp_asyncio_loop)


def _finish(loop: asyncio.AbstractEventLoop) -> None:
    tasks = [task for task in asyncio.all_tasks(loop) if not task.done()]
    for task in tasks:  # at this point: sse-starlette's watcher, jupyter-collaboration's room cleanups
        task.cancel()
    if tasks:
        loop.run_until_complete(asyncio.wait(tasks, timeout=10))
    loop.run_until_complete(loop.shutdown_asyncgens())
    loop.run_until_complete(asyncio.wait_for(loop.shutdown_default_executor(), 10))


class ReadOnlyAuthorizer(Authorizer):  # type: ignore[misc]
    """A viewer: every read is allowed, every other action denied."""

    def is_authorized(self, handler: Any, user: Any, action: str, resource: str) -> bool:
        return action == "read"


@pytest.fixture
def mcp_config() -> dict[str, Any]:
    """Per-test overrides of ``JupyterPairMCP`` traits."""
    return {"enable_test_fixtures": True}


@pytest.fixture
def jp_server_config(tmp_path: Path, mcp_config: dict[str, Any], monkeypatch: pytest.MonkeyPatch) -> Config:
    # Rooms created by jupyter-collaboration write their store into the CWD: keep it in tmp.
    monkeypatch.chdir(tmp_path)
    return Config(
        {
            "ServerApp": {
                "jpserver_extensions": {
                    "jupyter_pair_mcp": True,
                    "jupyter_server_ydoc": True,
                    "jupyter_server_fileid": True,
                },
                "reraise_server_extension_failures": True,
            },
            "BaseFileIdManager": {"db_path": str(tmp_path / "file_id.db")},
            "SQLiteYStore": {"db_path": str(tmp_path / "ystore.db")},
            "YDocExtension": {"document_save_delay": 0.1, "document_cleanup_delay": 0.5},
            # Freezing the heap at each test server's start would freeze the test process's (a full collection
            # of it, and its servers never collected after): test_heap.py runs a server of its own for it.
            "JupyterPairMCP": {"freeze_startup_heap": False, **mcp_config},
        }
    )


@pytest.fixture
def token(jp_serverapp: Any) -> str:
    return str(jp_serverapp.identity_provider.token)


@pytest.fixture
def extension(jp_serverapp: Any) -> Any:
    return jp_serverapp.extension_manager.extension_points["jupyter_pair_mcp"].app


@pytest.fixture
def server_root(jp_http_port: int, http_server_client: Any) -> str:
    """``http://127.0.0.1:PORT``; requesting it makes the test server listen."""
    return f"http://127.0.0.1:{jp_http_port}"


@pytest.fixture
def mcp_url(server_root: str, jp_base_url: str) -> str:
    return f"{server_root}{jp_base_url}mcp"


@pytest.fixture
def auth(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


@pytest.fixture
def http(jp_asyncio_loop: asyncio.AbstractEventLoop) -> Iterator[httpx2.AsyncClient]:
    """A raw HTTP client for wire-level checks (no credentials unless a test adds them)."""
    client = httpx2.AsyncClient(timeout=20, verify=TLS)
    yield client
    jp_asyncio_loop.run_until_complete(client.aclose())


@pytest.fixture
def mcp_client(mcp_url: str, auth: dict[str, str]) -> Callable[..., contextlib.AbstractAsyncContextManager[Client]]:
    """Factory: ``async with mcp_client(mode="legacy") as client`` — the SDK client over HTTP."""

    @contextlib.asynccontextmanager
    async def connect(
        mode: str = "legacy", headers: dict[str, str] | None = None, **kwargs: Any
    ) -> AsyncIterator[Client]:
        http_client = httpx2.AsyncClient(headers=headers if headers is not None else auth, timeout=30, verify=TLS)
        async with http_client:
            transport = streamable_http_client(mcp_url, http_client=http_client)
            async with Client(transport, mode=mode, **kwargs) as client:  # type: ignore[arg-type]
                yield client

    return connect


def rpc(method: str, params: dict[str, Any] | None = None, id: int | None = 1) -> dict[str, Any]:
    message: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
    if params is not None:
        message["params"] = params
    if id is not None:
        message["id"] = id
    return message


INIT_PARAMS = {
    "protocolVersion": LEGACY_VERSION,
    "capabilities": {},
    "clientInfo": {"name": "wire-test", "version": "0"},
}


async def open_session(http: httpx2.AsyncClient, url: str, headers: dict[str, str]) -> str:
    """Initialize a legacy session over raw HTTP; return its ``Mcp-Session-Id``."""
    response = await http.post(url, json=rpc("initialize", INIT_PARAMS), headers={**MCP_HEADERS, **headers})
    assert response.status_code == 200, response.text
    session_id = response.headers["mcp-session-id"]
    note = await http.post(
        url,
        json=rpc("notifications/initialized", id=None),
        headers={**MCP_HEADERS, **headers, "mcp-session-id": session_id, "mcp-protocol-version": LEGACY_VERSION},
    )
    assert note.status_code == 202, note.text
    return session_id


def sse_messages(text: str) -> list[tuple[str | None, dict[str, Any] | None]]:
    """Parse a complete SSE body into (event id, JSON data or None for priming events). Lines end in CRLF, LF
    or CR (the SSE format; the SDK's sse_starlette writes CRLF)."""
    events = []
    for block in text.replace("\r\n", "\n").replace("\r", "\n").split("\n\n"):
        event_id, data = None, []
        for line in block.splitlines():
            if line.startswith("id:"):
                event_id = line[3:].strip()
            elif line.startswith("data:"):
                data.append(line[5:].strip())
        if event_id is None and not data:
            continue
        payload = "\n".join(data).strip()
        events.append((event_id, json.loads(payload) if payload else None))
    return events


async def within(awaitable: Any, seconds: float = 20) -> Any:
    """Every await on the network gets a deadline, a safety net that names the await that never ended:
    ``seconds`` on an idle machine, times the suite's ``patience`` (tests/patience.py) on this one."""
    return await asyncio.wait_for(awaitable, patient(seconds))


def notebook_json(cells: list[dict[str, Any]], **metadata: Any) -> str:
    """An nbformat 4.5 notebook; each cell dict needs at least cell_type and source."""
    full = []
    for i, cell in enumerate(cells):
        c = {"id": cell.get("id", f"cell-{i}"), "metadata": {}, **cell}
        if c["cell_type"] == "code":
            c.setdefault("outputs", [])
            c.setdefault("execution_count", None)
        full.append(c)
    meta = {"kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"}, **metadata}
    return json.dumps({"cells": full, "metadata": meta, "nbformat": 4, "nbformat_minor": 5})


@pytest.fixture
def make_notebook(jp_root_dir: Path) -> Callable[..., str]:
    def make(name: str, cells: list[dict[str, Any]] | None = None, count: int | None = None) -> str:
        if cells is None:
            cells = [{"cell_type": "code", "source": f"x = {i}"} for i in range(count or 3)]
        target = jp_root_dir / name
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(notebook_json(cells))
        return name

    return make


@pytest.fixture
def collaborator(server_root: str, jp_base_url: str, token: str) -> Callable[..., Any]:
    from .collaborator import Collaborator

    def join(path: str, kind: str = "notebook") -> Collaborator:
        return Collaborator(server_root, jp_base_url, token, path, kind)

    return join


async def call_tool(client: Client, name: str, **arguments: Any) -> Any:
    """Call a tool and return its structured content; fail loudly on a tool error."""
    result = await within(client.call_tool(name, arguments))
    assert not result.is_error, result.content[0].text if result.content else result
    return result.structured_content


async def tool_error(client: Client, name: str, **arguments: Any) -> str:
    result = await within(client.call_tool(name, arguments))
    assert result.is_error, f"{name} should have failed: {result.structured_content}"
    return str(result.content[0].text)


async def until(predicate: Callable[[], Any], limit: float = 10.0, what: str = "the condition") -> None:
    """Wait until ``predicate()`` holds (it may be a coroutine function), re-checked every 10 ms; ``limit`` is
    the idle machine's seconds, times the suite's ``patience`` (tests/patience.py)."""
    limit = patient(limit)
    deadline = asyncio.get_running_loop().time() + limit
    while True:
        value = predicate()
        if asyncio.iscoroutine(value):
            value = await value
        if value:
            return
        if asyncio.get_running_loop().time() > deadline:
            raise AssertionError(f"{what} did not happen within {limit} s")
        await asyncio.sleep(0.01)


def document_room(serverapp: Any, path: str, kind: str = "notebook") -> Any | None:
    """The collaboration room open for ``path`` on the server, or None; opens nothing."""
    rooms = serverapp.extension_manager.extension_points["jupyter_pair_mcp"].app.rooms
    return rooms._room(rooms.room_id(path, kind, create_id=False))


async def autosaved(serverapp: Any, path: str, kind: str = "notebook") -> None:
    """Wait until the room's debounced save has written the file. Call it after the last change: each change
    starts the room's save task (synchronously), so once no save task is waiting or writing, the file holds
    the content and nothing is writing it — the moment a test may read it. A room already closed writes
    nothing more (jupyter-collaboration closes a room a delay after its last client left)."""
    from jupyter_pair_mcp.adapters.rooms.persist import save_pending

    room = document_room(serverapp, path, kind)
    if room is not None:
        await until(lambda: not save_pending(room), what=f"the save of {path!r}")


def has_all_of(holder: bytes, other: bytes) -> bool:
    """Whether the state vector ``holder`` includes every insertion counted in the state vector ``other``."""
    have = state_vector(holder)
    return all(have.get(client, 0) >= clock for client, clock in state_vector(other).items())


async def received(serverapp: Any, human: Any) -> None:
    """Wait until the server's room holds everything ``human`` (a Collaborator) inserted so far. Insertions
    only: a pure deletion does not advance a state vector, so wait on content for those."""
    room = document_room(serverapp, human.path, human.kind if human.kind == "notebook" else "file")
    assert room is not None, f"no room is open for {human.path!r}"
    mine = human.doc.get_state()
    await until(lambda: has_all_of(room.ydoc.get_state(), mine), what=f"the server receiving {human.path!r} edits")


async def stored(serverapp: Any, path: str, kind: str = "notebook") -> None:
    """Wait until the room's store (its history) holds every update the room has, with no write or history
    squash under way. After :func:`autosaved` and with nobody editing, the history stays as it is then."""
    from jupyter_pair_mcp.adapters.rooms.history import replay

    extension = serverapp.extension_manager.extension_points["jupyter_pair_mcp"].app
    room = document_room(serverapp, path, kind)
    assert room is not None, f"no room is open for {path!r}"

    async def caught_up() -> bool:
        rows = await extension.rooms.history_rows(path, kind, updates=True)
        doc = await asyncio.to_thread(replay, rows)
        idle = not room.ystore._mcp_lock.locked()  # ProvenanceYStore: held from a row's insert to its squash
        return idle and has_all_of(doc.get_state(), room.ydoc.get_state())

    await until(caught_up, what=f"the history of {path!r} catching up with its room")


@pytest.fixture
def audited(jp_serverapp: Any) -> list[dict[str, Any]]:
    """Every audit event (``tool_call/v1``, services/audit.py) the server emits during the test."""
    from jupyter_pair_mcp.services.audit import SCHEMA_ID

    events: list[dict[str, Any]] = []

    async def listener(logger: Any, schema_id: str, data: dict[str, Any]) -> None:
        events.append(dict(data))

    jp_serverapp.event_logger.add_listener(schema_id=SCHEMA_ID, listener=listener)
    return events


@pytest.fixture
def collaboration_events(jp_serverapp: Any) -> list[dict[str, Any]]:
    """Every jupyter-collaboration room event (load, save, overwrite, clean, errors) during the test."""
    events: list[dict[str, Any]] = []

    async def listener(logger: Any, schema_id: str, data: dict[str, Any]) -> None:
        events.append(dict(data))

    jp_serverapp.event_logger.add_listener(
        schema_id="https://schema.jupyter.org/jupyter_collaboration/session/v1", listener=listener
    )
    return events


class WholeReads:
    """Reads of every cell at once (``cells_json``: one conversion of the whole notebook) by the server's code."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        from jupyter_pair_mcp.adapters.rooms import cellindex, notebook_reads, undo

        self.n = 0
        original = cellindex.cells_json

        def counted(ycells: Any) -> Any:
            self.n += 1
            return original(ycells)

        for module in (cellindex, notebook_reads, undo):
            monkeypatch.setattr(module, "cells_json", counted)


@pytest.fixture
def whole_reads(monkeypatch: pytest.MonkeyPatch) -> WholeReads:
    return WholeReads(monkeypatch)
