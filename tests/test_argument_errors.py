"""A wrong argument gets an error as clear as an unknown one: a missing required argument and a value outside
the allowed ones are named with what is allowed, in both protocol eras, never pydantic's raw text."""

from __future__ import annotations

from typing import Any

import pytest

from jupyter_pair_mcp.tools.arguments import close, unknown_argument

from .conftest import tool_error

pytestmark = pytest.mark.usefixtures("jp_serverapp")

SCHEMA = close(
    {
        "type": "object",
        "properties": {
            "path": {"type": "string"},
            "mode": {"enum": ["a", "b"]},
            "maybe": {"anyOf": [{"enum": ["x", "y"]}, {"type": "null"}]},
            "cells": {"type": "array", "items": {"$ref": "#/$defs/Cell"}},
        },
        "required": ["path"],
        "$defs": {"Cell": {"type": "object", "properties": {"id": {"type": "string"}}, "required": ["id"]}},
    }
)


@pytest.mark.parametrize(
    ("arguments", "words"),
    [
        ({}, "missing argument 'path' (required: path)"),
        ({"path": "p", "mode": "c"}, "argument 'mode' must be one of 'a', 'b', not 'c'"),
        ({"path": "p", "maybe": "z"}, "argument 'maybe' must be one of 'x', 'y' or null, not 'z'"),
        ({"path": "p", "cells": [{"id": "1"}, {}]}, "missing field 'cells[1].id' (required: id)"),
    ],
)
def test_a_missing_or_unlisted_value_is_named(arguments: dict[str, Any], words: str) -> None:
    assert unknown_argument(SCHEMA, arguments) == words


def test_allowed_values_pass() -> None:
    assert unknown_argument(SCHEMA, {"path": "p", "mode": "a", "maybe": None, "cells": [{"id": "1"}]}) is None


@pytest.mark.parametrize("mode", ["legacy", "2026-07-28"])
async def test_the_wire_error_names_the_argument_not_pydantic(mcp_client: Any, make_notebook: Any, mode: str) -> None:
    path = make_notebook("a.ipynb")
    async with mcp_client(mode=mode) as client:
        missing = await tool_error(client, "get_notebook")
        assert "missing argument 'path'" in missing and "pydantic" not in missing, missing
        unlisted = await tool_error(client, "set_user_presence", status="asleep")
        assert "pydantic" not in unlisted and "validation error" not in unlisted, unlisted
        wrong = await tool_error(client, "list_documents", file_type="pdf")
        assert "file_type" in wrong and "pydantic" not in wrong and "validation error" not in wrong, wrong
        assert path
