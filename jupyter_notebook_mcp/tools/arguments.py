"""Strict arguments: every input schema is closed, and an unknown argument is an error that names it.

The SDK validates tool arguments with models that ignore unknown keys, so a call with a misspelt or
foreign parameter (``positions`` where the tool once took ``start_position``, ``type`` for
``cell_type``) would "succeed" doing something else. :func:`close` marks every object of a tool's
input schema ``additionalProperties: false`` — what clients see in ``tools/list`` — and
:class:`StrictArguments`, a server middleware that runs before the SDK validates anything, answers a
``tools/call`` carrying a key its schema does not name with a tool error naming the key, the closest
valid one and all the valid ones. The walk is linear in the size of the arguments.
"""

from __future__ import annotations

import difflib
import logging
from collections.abc import Callable, Mapping
from typing import Any

from mcp_types import CallToolResult, TextContent

log = logging.getLogger(__name__)


def close(schema: Any) -> Any:
    """A copy of ``schema`` whose objects with declared properties accept no other keys."""
    if isinstance(schema, list):
        return [close(item) for item in schema]
    if not isinstance(schema, dict):
        return schema
    out = {key: close(value) if key != "properties" else value for key, value in schema.items()}
    if isinstance(schema.get("properties"), dict):
        out["properties"] = {name: close(sub) for name, sub in schema["properties"].items()}
        out.setdefault("additionalProperties", False)
    return out


def unknown_argument(schema: Mapping[str, Any], arguments: Mapping[str, Any]) -> str | None:
    """A message naming the first key of ``arguments`` that ``schema`` does not declare; None when all fit."""
    return _walk(schema, arguments, "", schema.get("$defs") or {})


def _resolve(node: Any, defs: Mapping[str, Any]) -> Any:
    ref = node.get("$ref") if isinstance(node, dict) else None
    if isinstance(ref, str) and ref.startswith("#/$defs/"):
        return defs.get(ref.removeprefix("#/$defs/"), {})
    return node


def _branch(node: Any, defs: Mapping[str, Any], want: str) -> Any:
    """The part of ``node`` describing an object (``want="properties"``) or an array (``"items"``)."""
    node = _resolve(node, defs)
    if not isinstance(node, dict):
        return None
    if want in node:
        return node
    for option in node.get("anyOf") or node.get("oneOf") or []:
        found = _branch(option, defs, want)
        if found is not None:
            return found
    return None


def _walk(node: Any, value: Any, where: str, defs: Mapping[str, Any]) -> str | None:
    if isinstance(value, dict):
        shape = _branch(node, defs, "properties")
        if shape is None or shape.get("additionalProperties") is not False:
            return None
        properties = shape["properties"]
        for key in value:
            if key not in properties:
                return _message(where, str(key), list(properties))
        for key, sub in value.items():
            problem = _walk(properties[key], sub, f"{where}.{key}" if where else key, defs)
            if problem is not None:
                return problem
    elif isinstance(value, list):
        shape = _branch(node, defs, "items")
        if shape is None:
            return None
        for i, item in enumerate(value):
            problem = _walk(shape["items"], item, f"{where}[{i}]", defs)
            if problem is not None:
                return problem
    return None


def _message(where: str, key: str, valid: list[str]) -> str:
    close_match = difflib.get_close_matches(key, valid, n=1, cutoff=0.5)
    hint = f" (did you mean {close_match[0]!r}?)" if close_match else ""
    if where:
        return f"unknown field {key!r} in {where}{hint}: the fields there are {', '.join(valid)}"
    return f"unknown argument {key!r}{hint}: the valid arguments are {', '.join(valid)}"


class StrictArguments:
    """Server middleware: refuses a ``tools/call`` whose arguments have a key the tool's schema does not name."""

    def __init__(self, schema_of: Callable[[str], Mapping[str, Any] | None]) -> None:
        self.schema_of = schema_of

    async def __call__(self, ctx: Any, call_next: Any) -> Any:
        params = ctx.params if ctx.method == "tools/call" else None
        if isinstance(params, Mapping):
            name, arguments = params.get("name"), params.get("arguments")
            schema = self.schema_of(name) if isinstance(name, str) else None
            if schema is not None and isinstance(arguments, Mapping):
                problem = unknown_argument(schema, arguments)
                if problem is not None:
                    log.info("Tool %r refused: %s", name, problem)
                    return CallToolResult(
                        content=[TextContent(type="text", text=f"{name}: {problem}; nothing was done")],
                        is_error=True,
                    )
        return await call_next(ctx)
