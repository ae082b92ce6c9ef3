"""Fixture tools for conformance and wire tests; registered only when ``enable_test_fixtures`` is on."""

from __future__ import annotations

import asyncio
import logging
from typing import Annotated

import pycrdt
from mcp.server.mcpserver import Context
from mcp.shared.exceptions import MCPError
from mcp_types import (
    MISSING_REQUIRED_CLIENT_CAPABILITY,
    ClientCapabilities,
    MissingRequiredClientCapabilityErrorData,
    SamplingCapability,
)
from pydantic import Field

from jupyter_pair_mcp.errors import InvalidArgument
from jupyter_pair_mcp.models.results import FixtureResult
from jupyter_pair_mcp.tools.registry import Backends, ToolSpec

READ = ("read", "contents")

log = logging.getLogger(__name__)


def conformance_tools(b: Backends) -> list[ToolSpec]:
    async def test_reconnection(ctx: Context) -> FixtureResult:
        """Close this call's SSE stream mid-call, then answer: the client must resume to get the result."""
        await asyncio.sleep(0.05)
        await ctx.close_sse_stream()
        await asyncio.sleep(0.3)
        return FixtureResult(message="Reconnection test completed successfully")

    async def test_progress_stream(
        ctx: Context,
        count: Annotated[int, Field(description="Notifications to send (1-1000).")] = 5,
        interval: Annotated[float, Field(description="Seconds between them (0-5).")] = 0.1,
    ) -> FixtureResult:
        """Send ``count`` progress notifications ``interval`` seconds apart, then answer."""
        if not 0 < count <= 1000 or not 0 <= interval <= 5:
            raise InvalidArgument("count must be 1-1000 and interval 0-5 seconds")
        for step in range(1, count + 1):
            await ctx.report_progress(step, count, f"step {step}")
            await asyncio.sleep(interval)
        return FixtureResult(message=f"sent {count} progress notifications")

    async def test_missing_capability(ctx: Context) -> FixtureResult:
        """Needs the client's sampling capability: without it, answer -32021 as SEP-2575 requires."""
        capabilities = ctx.client_capabilities
        if capabilities is None or capabilities.sampling is None:
            required = ClientCapabilities(sampling=SamplingCapability())
            data = MissingRequiredClientCapabilityErrorData(required_capabilities=required)
            raise MCPError(
                code=MISSING_REQUIRED_CLIENT_CAPABILITY,
                message="this tool needs the client's sampling capability",
                data=data.model_dump(by_alias=True, mode="json", exclude_none=True),
            )
        return FixtureResult(message="sampling capability declared")

    async def test_panic(
        ctx: Context, path: Annotated[str, Field(description="A text file to open live.")]
    ) -> FixtureResult:
        """Make pycrdt panic inside a transaction on the file's live document (deletes past its end).

        A Rust panic reaches Python as pyo3's ``PanicException``, a ``BaseException``: the call must end in an
        internal error while the endpoint serves on."""
        view = await b.rooms.text(await b.contents.require(path, "file"))
        text = view.ydoc.get("source", type=pycrdt.Text)
        end = len(text)
        with view.ydoc.transaction():
            del text[end + 5 : end + 7]  # yrs panics: "Couldn't remove 2 elements", removing none
        return FixtureResult(message="pycrdt did not panic")

    async def test_log_lines(
        ctx: Context,
        path: Annotated[str, Field(description="Named in the lines, as the server's absolute path.")],
        count: Annotated[int, Field(description="Warnings to log (1-100).", ge=1, le=100)] = 1,
        fail: Annotated[bool, Field(description="Answer with a tool error after logging.")] = False,
    ) -> FixtureResult:
        """Log ``count`` warnings naming ``path`` by its absolute path (one from a worker thread) and an error:
        the call's own log lines, for the logging capability; with ``fail``, the call then fails as a tool."""
        absolute = b.contents.manager.root_dir.rstrip("/") + "/" + path
        await asyncio.to_thread(log.warning, "fixture warning 0 about %s", absolute)
        for i in range(1, count):
            log.warning("fixture warning %d about %s", i, absolute)
        log.debug("fixture debug line")
        log.error("fixture error in /etc/elsewhere")
        if fail:
            raise InvalidArgument("fixture failure, as asked")
        return FixtureResult(message="logged")

    return [
        ToolSpec(test_log_lines, "testing", "Fixture: a call's log lines", READ, read_only=True),
        ToolSpec(test_missing_capability, "testing", "Fixture: capability check", READ, read_only=True),
        ToolSpec(test_reconnection, "testing", "Fixture: SSE reconnection", READ, read_only=True),
        ToolSpec(test_progress_stream, "testing", "Fixture: progress stream", READ, read_only=True),
        ToolSpec(test_panic, "testing", "Fixture: a Rust panic in a live document", READ, read_only=True),
    ]
