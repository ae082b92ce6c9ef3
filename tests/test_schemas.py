"""tools/list carries compact schemas: no annotation titles, every property (even one named "title") kept.

Optional input parameters list as their type (no ``anyOf [..., null]``, no ``default: null``) and still
accept an explicit null; output schemas are listed only when an admin turns them on, and structured
content comes back either way.
"""

from __future__ import annotations

from typing import Any

import pytest

from jupyter_pair_mcp.protocol.server import compact_schema, drop_null_options

from .conftest import within


def test_compact_schema_drops_annotation_titles_only() -> None:
    schema = {
        "title": "ForkResult",
        "type": "object",
        "properties": {
            "title": {"title": "Title", "type": "string"},
            "cells": {"title": "Cells", "type": "array", "items": {"$ref": "#/$defs/Cell"}},
            "note": {"anyOf": [{"type": "string", "title": "X"}, {"type": "null"}]},
        },
        "$defs": {"Cell": {"title": "Cell", "type": "object", "properties": {"id": {"title": "Id"}}}},
        "required": ["title"],
    }
    assert compact_schema(schema) == {
        "type": "object",
        "properties": {
            "title": {"type": "string"},
            "cells": {"type": "array", "items": {"$ref": "#/$defs/Cell"}},
            "note": {"anyOf": [{"type": "string"}, {"type": "null"}]},
        },
        "$defs": {"Cell": {"type": "object", "properties": {"id": {}}}},
        "required": ["title"],
    }


def test_drop_null_options_keeps_types_and_other_defaults() -> None:
    schema = {
        "type": "object",
        "properties": {
            "fork_id": {"anyOf": [{"type": "string"}, {"type": "null"}], "default": None, "description": "d"},
            "sel": {"anyOf": [{"$ref": "#/$defs/S"}, {"type": "null"}], "default": None},
            "either": {"anyOf": [{"type": "string"}, {"type": "integer"}, {"type": "null"}], "default": None},
            "kept": {"anyOf": [{"type": "string"}, {"type": "null"}]},  # required null-able: unchanged
            "n": {"type": "integer", "default": 5},
        },
        "$defs": {
            "S": {
                "type": "object",
                "properties": {"x": {"anyOf": [{"type": "integer"}, {"type": "null"}], "default": None}},
            }
        },
    }
    assert drop_null_options(schema) == {
        "type": "object",
        "properties": {
            "fork_id": {"type": "string", "description": "d"},
            "sel": {"$ref": "#/$defs/S"},
            "either": {"anyOf": [{"type": "string"}, {"type": "integer"}]},
            "kept": {"anyOf": [{"type": "string"}, {"type": "null"}]},
            "n": {"type": "integer", "default": 5},
        },
        "$defs": {"S": {"type": "object", "properties": {"x": {"type": "integer"}}}},
    }


@pytest.mark.usefixtures("jp_serverapp")
async def test_default_lists_no_output_schemas_and_still_returns_structured_content(
    mcp_client: Any, make_notebook: Any
) -> None:
    path = make_notebook("lean.ipynb", count=2)
    async with mcp_client() as client:
        tools = {t.name: t for t in (await within(client.list_tools())).tools}
        assert all(t.output_schema is None for t in tools.values())
        assert tools["get_notebook"].input_schema["properties"]["fork_id"] == {
            "type": "string",
            "description": "Fork id.",
        }
        # an explicit null for an optional parameter is still accepted (the SDK validates with the model)
        result = await within(client.call_tool("get_notebook", {"path": path, "end_index": None, "fork_id": None}))
        assert not result.is_error, result
        assert result.structured_content is not None and result.structured_content["cell_count"] == 2
        result = await within(client.call_tool("fork_document", {"path": path, "title": "t"}))
        assert not result.is_error
        assert result.structured_content is not None and result.structured_content["title"] == "t"


class TestOutputSchemas:
    @pytest.fixture
    def mcp_config(self) -> dict[str, Any]:
        return {"enable_test_fixtures": True, "output_schemas": True}

    @pytest.mark.usefixtures("jp_serverapp")
    async def test_listed_schemas_are_compact_and_still_validate(self, mcp_client: Any, make_notebook: Any) -> None:
        path = make_notebook("schemas.ipynb", count=2)
        async with mcp_client() as client:
            tools = {t.name: t for t in (await within(client.list_tools())).tools}
            assert all(t.output_schema is not None for t in tools.values())
            fork = tools["fork_document"]
            assert "title" in fork.output_schema["properties"]  # a property named title survives
            assert "title" not in fork.output_schema["properties"]["title"]
            assert all("title" not in p for p in tools["get_notebook"].input_schema["properties"].values())
            # structured results still validate against the listed schema on the client
            result = await within(client.call_tool("fork_document", {"path": path, "title": "t"}))
            assert not result.is_error
            assert result.structured_content["title"] == "t"
            result = await within(client.call_tool("get_notebook_info", {"path": path}))
            assert not result.is_error and result.structured_content["kernel"] is None  # nulls still validate
