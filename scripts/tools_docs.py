"""Write docs/tools.md from the live tool list (tests check the file is current).

Usage: python scripts/tools_docs.py [--check]
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

from generated import write_or_check

from jupyter_pair_mcp.adapters.contents.adapter import ContentsAdapter
from jupyter_pair_mcp.adapters.kernels.adapter import KernelsAdapter
from jupyter_pair_mcp.adapters.rooms import RoomsAdapter
from jupyter_pair_mcp.protocol.server import build_server, tool_specs
from jupyter_pair_mcp.services.execution import ExecutionService
from jupyter_pair_mcp.tools.registry import GROUPS, Backends

TARGET = Path(__file__).resolve().parents[1] / "docs" / "tools.md"

HEADER = """# Tools

Generated from the server's live tool list (`python scripts/tools_docs.py`; a test fails when this page
and the code disagree). Every tool returns structured content (the result fields below), plus the same
JSON as text for clients that only read text. `tools/list` carries no output schemas unless an admin
turns them on (`JupyterPairMCP.output_schemas`): SDK clients validate results against them and build
the validators on a process's first call of each tool, which cost seconds. The default `tools/list` is a
budget, at most 30 000 bytes (`tests/test_tool_budget.py`): every parameter, nested fields too, carries a
one-line description, and every new tool must fit. Tools are listed by name without a `title` (the
titles below are for people reading this page), and read-only tools leave out the destructive and
idempotent hints, which the MCP spec gives meaning only for tools that write. Paths are relative to the
Jupyter root with `/` separators. A bad argument, a refused path or a missing file is a tool error
(`isError: true`) whose message says what is wrong and what to do.

Arguments are strict: every input schema is closed (`additionalProperties: false`, nested objects too),
and an argument or field a tool does not list below is a tool error naming it and the closest valid
name, with nothing done. Values are not coerced: an integer argument given `"0"` or `true`, or a boolean
given `"false"` or `0`, is a tool error naming the argument and the type it takes (`argument 'exec' must be a
boolean (true or false), not a string ('false')`). An argument whose default is `null` may be given as `null`.

Admins choose the groups (`JupyterPairMCP.tool_groups`) and can expose only read-only tools
(`JupyterPairMCP.read_only`).
"""


def _type(schema: dict[str, Any]) -> str:
    if "anyOf" in schema:
        return " or ".join(_type(s) for s in schema["anyOf"])
    if schema.get("type") == "array":
        return f"list of {_type(schema.get('items', {}))}"
    if "$ref" in schema:
        return str(schema["$ref"]).rsplit("/", 1)[-1]
    return str(schema.get("type", "object"))


def _table(what: str, schema: dict[str, Any]) -> list[str]:
    required = set(schema.get("required", []))
    rows = [f"| {what} | type | default | description |", "|---|---|---|---|"]
    for name, prop in schema.get("properties", {}).items():
        default = "required" if name in required else f"`{json.dumps(prop.get('default'))}`"
        rows.append(f"| `{name}` | {_type(prop)} | {default} | {prop.get('description', '')} |")
    return rows


def render() -> str:
    rooms, kernels = RoomsAdapter(None), KernelsAdapter(None)
    backends = Backends(ContentsAdapter(None), rooms, kernels, ExecutionService(rooms, kernels, max_output_length=0))
    server, _ = build_server(backends, groups=GROUPS, read_only=False, output_schemas=True)  # for result fields
    tools = {t.name: t for t in asyncio.run(server.list_tools())}
    lines = [HEADER]
    specs = tool_specs(backends)
    for group in GROUPS:
        members = [s for s in specs if s.group == group]
        if not members:
            continue
        lines.append(f"## Group `{group}`\n")
        for spec in members:
            tool = tools[spec.name]
            hints = [
                h
                for h, on in (
                    ("read-only", spec.read_only),
                    ("destructive", spec.destructive),
                    ("idempotent", spec.idempotent),
                )
                if on
            ]
            lines.append(f"### `{spec.name}` — {spec.title}\n")
            lines.append(f"{tool.description}\n")
            lines.append(
                f"Annotations: {', '.join(hints) or 'none'}. Needs `{spec.permission[0]}` on `{spec.permission[1]}`.\n"
            )
            lines.extend(_table("parameter", tool.input_schema))
            for model, schema in (tool.input_schema.get("$defs") or {}).items():
                lines.append(f"\n`{model}` fields (no others):\n")
                lines.extend(_table("field", schema))
            out = (tool.output_schema or {}).get("properties", {})
            lines.append(f"\nResult fields: {', '.join(f'`{k}`' for k in out)}.\n")
    return "\n".join(lines)


if __name__ == "__main__":
    raise SystemExit(write_or_check(TARGET, render()))
