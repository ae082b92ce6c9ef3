"""A failure in one call ends that call, never the endpoint (issue 31 item 4).

pycrdt's Rust panics reach Python as pyo3's ``PanicException``, a ``BaseException``: a ``except Exception``
boundary lets one through. One escaped the SDK's task groups during a commit and ended the MCP session manager,
after which every request answered 500 until Jupyter was restarted. The fixture tool ``test_panic`` makes
pycrdt panic for real, in a transaction on a live document.
"""

from __future__ import annotations

import logging
import re
from pathlib import Path
from typing import Any

import pycrdt
import pytest
from mcp.shared.exceptions import MCPError

from jupyter_pair_mcp.protocol.event_store import ScopedEventStore

from .conftest import call_tool, tool_error, until, within

MODES = ["legacy", "2026-07-28"]


@pytest.fixture
def notes(jp_root_dir: Path) -> str:
    (jp_root_dir / "notes.txt").write_text("hello\n")
    return "notes.txt"


@pytest.mark.parametrize("mode", MODES)
async def test_a_panic_in_one_call_ends_that_call_and_the_endpoint_serves_on(
    mode: str, mcp_client: Any, notes: str, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.ERROR, logger="jupyter_pair_mcp")
    async with mcp_client() as other, mcp_client(mode=mode) as client:
        assert (await call_tool(other, "get_document", path=notes))["content"] == "hello\n"
        message = await tool_error(client, "test_panic", path=notes)
        found = re.search(r"internal error in test_panic \(ref ([0-9a-f]{8})\)", message)
        assert found, message
        assert "Traceback" not in message and "remove" not in message  # nothing of the panic reaches the client
        logged = [r for r in caplog.records if found.group(1) in r.getMessage()]
        assert logged and logged[0].exc_info is not None, caplog.text  # the log has the details under the ref
        # The same session, another session, and a new one are served as before.
        assert (await call_tool(client, "get_document", path=notes))["content"] == "hello\n"
        assert (await call_tool(other, "get_document", path=notes))["content"] == "hello\n"
    async with mcp_client(mode=mode) as fresh:
        await call_tool(fresh, "get_document", path=notes)


def a_panic() -> BaseException:
    """A real pyo3 ``PanicException`` from pycrdt (deleting past a text's end), to raise where a test needs it."""
    text = pycrdt.Doc().get("t", type=pycrdt.Text)
    try:
        del text[5:7]
    except BaseException as exc:  # what we want is this very BaseException
        return exc
    raise AssertionError("pycrdt did not panic")


async def test_a_failure_that_ends_a_session_ends_no_other(
    mcp_client: Any, notes: str, extension: Any, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """A panic where no call's boundary is (the session's message router storing an event for resumption):
    that session ends, the others and the endpoint carry on."""
    caplog.set_level(logging.ERROR, logger="jupyter_pair_mcp")
    panic = a_panic()
    store_event = ScopedEventStore.store_event
    armed = [True]

    async def failing_store(self: ScopedEventStore, stream_id: str, message: Any) -> Any:
        if armed[0] and message is not None and getattr(message, "method", None) == "notifications/progress":
            armed[0] = False
            raise panic
        return await store_event(self, stream_id, message)

    async def progressed(progress: float, total: float | None, message: str | None) -> None:
        pass

    async def victim() -> None:
        async with mcp_client() as client:
            call = client.call_tool("test_progress_stream", {"count": 1, "interval": 0}, progress_callback=progressed)
            await within(call, 60)

    monkeypatch.setattr(ScopedEventStore, "store_event", failing_store)
    async with mcp_client() as other:
        await call_tool(other, "get_document", path=notes)
        with pytest.raises(Exception):  # noqa: B017, PT011 - how the client learns its session ended is the SDK's
            await victim()
        assert not armed[0]
        assert "An MCP session ended on a failure (ref " in caplog.text
        assert (await call_tool(other, "get_document", path=notes))["content"] == "hello\n"
    async with mcp_client() as fresh:
        await call_tool(fresh, "get_document", path=notes)
    assert extension.runner.restarts == 0  # contained below the session manager


async def test_a_session_manager_that_ends_is_started_again(
    mcp_client: Any, notes: str, extension: Any, caplog: pytest.LogCaptureFixture
) -> None:
    """The last line: should anything end the SDK's session manager (its task group), the next request starts a
    new one instead of every request answering 500 until Jupyter restarts."""
    caplog.set_level(logging.ERROR, logger="jupyter_pair_mcp")
    panic = a_panic()

    async def fail() -> None:
        raise panic

    async with mcp_client() as client:
        await call_tool(client, "get_document", path=notes)
        runner = extension.runner
        ended = runner._task
        runner.manager._task_group.start_soon(fail)
        await until(ended.done, what="the session manager ending")
    assert "The MCP session manager stopped (ref " in caplog.text
    for mode in MODES:
        async with mcp_client(mode=mode) as fresh:
            assert (await call_tool(fresh, "get_document", path=notes))["content"] == "hello\n"
    assert runner.restarts == 1 and runner.running


@pytest.mark.parametrize("mode", MODES)
async def test_a_panic_in_a_resource_read_or_a_prompt_ends_that_request_only(
    mode: str,
    mcp_client: Any,
    make_notebook: Any,
    extension: Any,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Both read the live notebook: made to panic there, each request is a JSON-RPC internal error naming a
    reference in the log, and the session serves on."""
    caplog.set_level(logging.ERROR, logger="jupyter_pair_mcp")
    path = make_notebook("panics.ipynb")

    async def panicking(*args: Any, **kwargs: Any) -> Any:
        del pycrdt.Doc().get("t", type=pycrdt.Text)[5:7]  # yrs panics: "Couldn't remove 2 elements"
        raise AssertionError("pycrdt did not panic")

    async with mcp_client(mode=mode) as client:
        monkeypatch.setattr(extension.rooms, "notebook", panicking)
        for request in (
            client.read_resource(f"notebook://{path}"),
            client.get_prompt("explain_cell_output", {"path": path, "cell_id": "cell-0"}),
        ):
            with pytest.raises(MCPError) as caught:
                await within(request)
            found = re.search(r"internal error \(ref ([0-9a-f]{8})\)", str(caught.value))
            assert found and "remove" not in str(caught.value), caught.value
            assert f"failed (ref {found.group(1)})" in caplog.text
        monkeypatch.undo()
        read = await call_tool(client, "get_notebook", path=path)
        assert [cell["id"] for cell in read["cells"]] == ["cell-0", "cell-1", "cell-2"]
