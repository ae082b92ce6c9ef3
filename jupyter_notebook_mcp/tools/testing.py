"""Fixture tools for the MCP conformance suite; registered only when ``enable_test_fixtures`` is on."""

from __future__ import annotations

import asyncio

from mcp.server.mcpserver import Context

from ..models import ReconnectionResult
from .registry import ToolSpec


def conformance_tools() -> list[ToolSpec]:
    async def test_reconnection(ctx: Context) -> ReconnectionResult:
        """Close this call's SSE stream mid-call, then answer: the client must resume to get the result."""
        await asyncio.sleep(0.05)
        await ctx.close_sse_stream()
        await asyncio.sleep(0.3)
        return ReconnectionResult(message="Reconnection test completed successfully")

    return [ToolSpec(test_reconnection, "testing", "Conformance: SSE reconnection", ("read", "contents"), True)]
