"""tools/list carries compact schemas: no annotation titles, every property (even one named "title") kept."""

from __future__ import annotations

from typing import Any

import pytest

from jupyter_notebook_mcp.server import compact_schema

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


@pytest.mark.usefixtures("jp_serverapp")
async def test_listed_schemas_are_compact_and_still_validate(mcp_client: Any, make_notebook: Any) -> None:
    path = make_notebook("schemas.ipynb", count=2)
    async with mcp_client() as client:
        tools = {t.name: t for t in (await within(client.list_tools())).tools}
        fork = tools["fork_document"]
        assert "title" in fork.output_schema["properties"]  # a property named title survives
        assert "title" not in fork.output_schema["properties"]["title"]
        assert all("title" not in p for p in tools["get_notebook"].input_schema["properties"].values())
        # structured results still validate against the listed schema on the client
        result = await within(client.call_tool("fork_document", {"path": path, "title": "t"}))
        assert not result.is_error
        assert result.structured_content["title"] == "t"
