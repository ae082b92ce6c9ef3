"""The endpoint in both protocol eras, through the SDK's streamable HTTP client."""

from __future__ import annotations

from typing import Any

import pytest

from .conftest import within

pytestmark = pytest.mark.usefixtures("jp_serverapp")

EXPECTED_TOOLS = {"list_notebooks", "list_documents", "document_exists"}


@pytest.mark.parametrize("mode", ["legacy", "2026-07-28", "auto"])
async def test_both_eras_list_and_call_tools(mcp_client: Any, jp_root_dir: Any, mode: str) -> None:
    (jp_root_dir / "analysis.ipynb").write_text('{"cells": [], "metadata": {}, "nbformat": 4, "nbformat_minor": 5}')
    async with mcp_client(mode=mode) as client:
        if mode == "legacy":
            assert client.protocol_version == "2025-11-25"
        else:
            assert client.protocol_version == "2026-07-28"
        assert client.server_info is None or client.server_info.name == "jupyter-pair-mcp"
        listed = await within(client.list_tools())
        names = {t.name for t in listed.tools}
        assert names >= EXPECTED_TOOLS
        result = await within(client.call_tool("list_notebooks", {}))
        assert not result.is_error
        assert result.structured_content is not None
        assert [n["path"] for n in result.structured_content["notebooks"]] == ["analysis.ipynb"]


async def test_tools_carry_schemas_and_annotations(mcp_client: Any) -> None:
    async with mcp_client() as client:
        tools = {t.name: t for t in (await within(client.list_tools())).tools}
    for name in EXPECTED_TOOLS:
        tool = tools[name]
        assert tool.output_schema is None, name  # listed only with JupyterPairMCP.output_schemas
        assert tool.description and len(tool.description) > 20, name
        assert tool.annotations is not None
        assert tool.annotations.read_only_hint is True
        # Meaningful only for tools that write (MCP spec): left out of read-only ones to save list bytes.
        assert tool.annotations.destructive_hint is None
        assert tool.annotations.idempotent_hint is None
        assert tool.annotations.open_world_hint is False
    assert tools["save_notebook"].annotations.destructive_hint is False
    assert tools["delete_document"].annotations.destructive_hint is None  # the spec's default: destructive
    assert "path_filter" in tools["list_documents"].input_schema["properties"]
    assert "ctx" not in tools["list_documents"].input_schema["properties"]


async def test_sessions_are_independent(mcp_client: Any) -> None:
    """Two clients at once: nothing about one session leaks into the other."""
    async with mcp_client() as a, mcp_client() as b:
        ra = await within(a.call_tool("document_exists", {"path": "nope.txt"}))
        rb = await within(b.call_tool("list_documents", {}))
        assert ra.structured_content == {"exists": False, "type": None}
        assert rb.structured_content is not None and rb.structured_content["truncated"] is False


async def test_unknown_tool_is_a_tool_error(mcp_client: Any) -> None:
    async with mcp_client() as client:
        result = await within(client.call_tool("no_such_tool", {}))
    assert result.is_error


async def test_bad_argument_type_is_a_tool_error(mcp_client: Any) -> None:
    async with mcp_client() as client:
        result = await within(client.call_tool("list_documents", {"max_results": "lots"}))
        assert result.is_error
        assert "max_results" in result.content[0].text  # type: ignore[union-attr]
        # and the session still works
        ok = await within(client.call_tool("list_documents", {}))
        assert not ok.is_error
