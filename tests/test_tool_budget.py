"""The default tools/list is a budget every tool must fit: bytes, descriptions, no output schemas.

``tools/list`` sits in every agent's context. By default it is at most ``BUDGET`` bytes of JSON (as sent,
compact), every parameter at any depth (``cells[].content``, ``updates[].operations[].position``,
``position.line``) has a one-line description, tool descriptions are one line, and no tool carries an
output schema (SDK clients validate results against one and build the validator on their first call of
the tool: seconds in a fresh process). The admin trait ``output_schemas`` lists them all.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from typing import Any

import pytest
from jsonschema.validators import Draft202012Validator  # type: ignore[import-untyped]
from mcp_types import ListToolsResult

from jupyter_pair_mcp.adapters.contents.adapter import ContentsAdapter
from jupyter_pair_mcp.adapters.kernels.adapter import KernelsAdapter
from jupyter_pair_mcp.adapters.rooms import RoomsAdapter
from jupyter_pair_mcp.protocol.server import build_server
from jupyter_pair_mcp.services.execution import ExecutionService
from jupyter_pair_mcp.services.tasks import TaskStore
from jupyter_pair_mcp.tools.registry import GROUPS, Backends

BUDGET = 30_000  # bytes of the default tools/list result; a new tool that does not fit must make room


def listing(*, test_fixtures: bool = False, output_schemas: bool = False) -> list[dict[str, Any]]:
    """The tools/list result's tools as JSON, all groups enabled (what a default server lists)."""
    rooms, kernels = RoomsAdapter(None), KernelsAdapter(None)
    backends = Backends(ContentsAdapter(None), rooms, kernels, ExecutionService(rooms, kernels, max_output_length=0))
    server, _ = build_server(
        backends,
        groups=GROUPS,
        read_only=False,
        test_fixtures=test_fixtures,
        output_schemas=output_schemas,
        tasks=TaskStore(),  # the tools that run code are listed with their task support
    )
    tools = asyncio.run(server.list_tools())
    result = ListToolsResult(tools=tools).model_dump(mode="json", by_alias=True, exclude_none=True)
    return list(result["tools"])


def wire_bytes(tools: list[dict[str, Any]]) -> int:
    return len(json.dumps({"tools": tools}, separators=(",", ":"), ensure_ascii=False).encode())


def parameters(
    node: Any, where: str, defs: dict[str, Any], seen: frozenset[str] = frozenset()
) -> Iterator[tuple[str, Any]]:
    """``(dotted path, schema)`` of every property below ``node``, following $ref, anyOf, items and maps."""
    if not isinstance(node, dict):
        return
    ref = node.get("$ref")
    if isinstance(ref, str):
        name = ref.rsplit("/", 1)[-1]
        if name not in seen:  # a recursive model is walked once
            yield from parameters(defs[name], where, defs, seen | {name})
    for key, sub in (node.get("properties") or {}).items():
        path = f"{where}.{key}" if where else key
        yield path, sub
        yield from parameters(sub, path, defs, seen)
    for key in ("anyOf", "oneOf", "allOf", "prefixItems"):
        for option in node.get(key) or []:
            yield from parameters(option, where, defs, seen)
    if isinstance(node.get("items"), dict):
        yield from parameters(node["items"], f"{where}[]", defs, seen)
    if isinstance(node.get("additionalProperties"), dict):
        yield from parameters(node["additionalProperties"], f"{where}{{}}", defs, seen)


def test_default_tool_list_fits_the_budget() -> None:
    tools = listing()
    size = wire_bytes(tools)
    largest = sorted(((wire_bytes([t]), t["name"]) for t in tools), reverse=True)[:5]
    assert size <= BUDGET, (
        f"the default tools/list ({len(tools)} tools) is {size} bytes (~{size // 4} tokens), over its budget of "
        f"{BUDGET}: shorten descriptions or tools (largest: {largest})"
    )


@pytest.mark.parametrize("fixtures", [False, True], ids=["product", "with-test-fixtures"])
def test_every_parameter_has_a_one_line_description(fixtures: bool) -> None:
    missing, multiline = [], []
    for tool in listing(test_fixtures=fixtures):
        schema = tool["inputSchema"]
        for path, prop in parameters(schema, "", schema.get("$defs") or {}):
            description = prop.get("description") if isinstance(prop, dict) else None
            if not isinstance(description, str) or not description.strip():
                missing.append(f"{tool['name']}: {path}")
            elif "\n" in description:
                multiline.append(f"{tool['name']}: {path}")
    assert not missing, f"parameters without a description: {missing}"
    assert not multiline, f"descriptions over several lines: {multiline}"


def test_nested_fields_are_walked() -> None:
    """The walk reaches the nested fields the contract names (a guard against a walk that sees nothing)."""
    tools = {t["name"]: t["inputSchema"] for t in listing()}
    found = {
        name: {path for path, _ in parameters(tools[name], "", tools[name].get("$defs") or {})}
        for name in ("batch_insert_notebook_cells", "batch_update_notebook_cells", "update_cursor_position")
    }
    assert "cells[].content" in found["batch_insert_notebook_cells"]
    assert "updates[].operations[].position" in found["batch_update_notebook_cells"]
    assert {"position.line", "selection.start.column"} <= found["update_cursor_position"]


def test_tool_descriptions_are_one_clean_line() -> None:
    for tool in listing(test_fixtures=True):
        description = tool["description"]
        assert description and description == " ".join(description.split()), tool["name"]


def test_no_output_schemas_by_default_all_with_the_trait() -> None:
    assert [t["name"] for t in listing() if "outputSchema" in t] == []
    with_schemas = listing(output_schemas=True)
    assert all(t["outputSchema"]["type"] == "object" for t in with_schemas)
    assert wire_bytes(with_schemas) > wire_bytes(listing()) + 10_000


@pytest.mark.parametrize("output_schemas", [False, True])
def test_listed_schemas_are_valid_json_schema(output_schemas: bool) -> None:
    for tool in listing(test_fixtures=True, output_schemas=output_schemas):
        Draft202012Validator.check_schema(tool["inputSchema"])
        if output_schemas:
            Draft202012Validator.check_schema(tool["outputSchema"])


def test_optional_parameters_list_no_null_noise() -> None:
    """An optional parameter reads as its type, not ``anyOf [type, null]`` with ``default: null``."""
    for tool in listing():
        schema = tool["inputSchema"]
        for path, prop in parameters(schema, "", schema.get("$defs") or {}):
            assert prop.get("default", 0) is not None, f"{tool['name']}: {path}"
            assert {"type": "null"} not in prop.get("anyOf", []), f"{tool['name']}: {path}"


@pytest.mark.usefixtures("jp_serverapp")
@pytest.mark.parametrize("mode", ["legacy", "2026-07-28"])
async def test_tools_list_is_shaped_once_per_protocol_version(
    mcp_client: Any, monkeypatch: pytest.MonkeyPatch, mode: str
) -> None:
    """The SDK validates and re-dumps a whole result for the wire; for the fixed tool list that is done once."""
    from mcp.server.runner import ServerRunner

    shaped: list[str] = []
    original = ServerRunner._serialize

    def counted(self: Any, method: str, *args: Any, **kwargs: Any) -> Any:
        shaped.append(method)
        return original(self, method, *args, **kwargs)

    monkeypatch.setattr(ServerRunner, "_serialize", counted)
    async with mcp_client(mode=mode) as first, mcp_client(mode=mode) as second:
        listed = [await client.list_tools(cache_mode="bypass") for client in (first, second, first)]
    assert shaped.count("tools/list") <= 1, shaped
    names = [[t.name for t in result.tools] for result in listed]
    assert names[0] == names[1] == names[2] and len(names[0]) > 40
