"""Strict arguments: every input schema is closed, every value has the JSON type its schema says, and
anything else is an error that names it.

The SDK validates tool arguments with models that ignore unknown keys, so a call with a misspelt or
foreign parameter (``positions`` where the tool once took ``start_position``, ``type`` for
``cell_type``) would "succeed" doing something else. And they coerce (pydantic's lax mode): an integer
took ``"0"`` and ``true``, a boolean took ``"false"``. :func:`close` marks every object of a tool's
input schema ``additionalProperties: false`` — what clients see in ``tools/list`` — and
:class:`StrictArguments`, a server middleware that runs before the SDK validates anything, answers a
``tools/call`` carrying a key its schema does not name, or a value of another JSON type than the schema
allows, or missing a required one, or outside the values an enum lists, with a tool error naming the argument
(the closest valid name, the type or values expected) — never pydantic's raw text with its links. Ranges stay
the tools' own checks. The walk is linear in the size of the arguments.

A field that was renamed keeps its old name as an alias (:data:`OLD_NAMES`), so clients written against the
earlier contract keep working: the middleware renames it before anything is checked; listed schemas show only
the new name, and giving both names is an error. Likewise an argument of the seed designs a tool has no use for
is taken, unlisted, with the one value that means what the tool does anyway (:data:`UNLISTED`).
"""

from __future__ import annotations

import difflib
import json
import logging
from collections.abc import Callable, Mapping
from dataclasses import replace
from typing import Any

from mcp_types import CallToolResult, TextContent

log = logging.getLogger(__name__)

#: Renamed fields of the objects in a tool's list argument: tool -> (argument, old name, new name).
#: ``batch_insert_text`` operations said ``text`` where every other operation says ``content``.
OLD_NAMES: dict[str, tuple[str, str, str]] = {"batch_insert_text": ("operations", "text", "content")}


#: Arguments of the seed designs a tool takes without listing them, each with the one value that means what the
#: tool does anyway: tool -> {argument: (that value, why another is refused)}. The seed's (jupyter-collaboration-mcp)
#: batch_delete_notebook_cells took ``exec``, "execute cells before deletion", default true, and ran nothing either
#: way (a stub): false is what deleting does; true asks for a run no seed client ever got, so it is refused, not
#: guessed. Unlisted: ``tools/list`` is in every agent's context, and no new caller needs them.
UNLISTED: dict[str, dict[str, tuple[Any, str]]] = {
    "batch_delete_notebook_cells": {
        "exec": (
            False,
            "deleting never runs cells; to run them first call batch_execute_notebook_cells, then delete "
            "(exec false or left out)",
        )
    }
}


def unlisted(tool: str, arguments: Mapping[str, Any]) -> tuple[Mapping[str, Any], str | None]:
    """``arguments`` without the tool's :data:`UNLISTED` ones when they have their accepted value, else a message;
    unchanged when the tool has none or none is given."""
    accepted = UNLISTED.get(tool)
    if not accepted or not any(name in arguments for name in accepted):
        return arguments, None
    for name, (value, why) in accepted.items():
        given = arguments.get(name, value)
        if type(given) is not type(value) or given != value:
            shown = repr(given)
            return arguments, f"argument {name!r} can only be {json.dumps(value)} here, not {shown[:40]}: {why}"
    return {key: item for key, item in arguments.items() if key not in accepted}, None


def renamed(tool: str, arguments: Mapping[str, Any]) -> tuple[Mapping[str, Any], str | None]:
    """``arguments`` with the tool's old field names replaced by the new ones, and a message when an object
    gives both; unchanged when the tool renamed nothing or nothing uses an old name."""
    if tool not in OLD_NAMES:
        return arguments, None
    argument, old, new = OLD_NAMES[tool]
    items = arguments.get(argument)
    if not isinstance(items, list) or not any(isinstance(item, dict) and old in item for item in items):
        return arguments, None
    out: list[Any] = []
    for i, item in enumerate(items):
        if isinstance(item, dict) and old in item:
            if new in item:
                return arguments, f"field '{argument}[{i}]': give {new}, not both {new} and {old} (its old name)"
            item = {(new if key == old else key): value for key, value in item.items()}
        out.append(item)
    return {**arguments, argument: out}, None


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
    """A message naming the first key of ``arguments`` that ``schema`` does not declare, or the first value
    whose JSON type the schema does not allow; None when all fit."""
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
    for option in node.get("anyOf") or node.get("oneOf") or node.get("allOf") or []:
        found = _branch(option, defs, want)
        if found is not None:
            return found
    return None


_KINDS = {"string": "a string", "integer": "an integer", "number": "a number", "boolean": "a boolean (true or false)"}
_KINDS |= {"array": "an array", "object": "an object", "null": "null"}


def _kind(value: Any) -> str:
    """The JSON type of a parsed JSON value."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "integer" if value.is_integer() else "number"  # JSON Schema: 1.0 is an integer
    if isinstance(value, str):
        return "string"
    return "array" if isinstance(value, list) else "object"


def _allowed(node: Any, defs: Mapping[str, Any], depth: int = 0) -> set[str] | None:
    """The JSON types ``node`` allows, or None when it does not constrain the type."""
    node = _resolve(node, defs)
    if not isinstance(node, dict) or depth > 8:
        return None
    declared = node.get("type")
    if isinstance(declared, str):
        return {declared}
    if isinstance(declared, list):
        return {str(t) for t in declared}
    if "const" in node:
        return {_kind(node["const"])}
    if isinstance(node.get("enum"), list):
        return {_kind(v) for v in node["enum"]}
    options = node.get("anyOf") or node.get("oneOf") or node.get("allOf")
    if not isinstance(options, list):
        return None
    union: set[str] = set()
    for option in options:
        allowed = _allowed(option, defs, depth + 1)
        if allowed is None:
            return None
        union |= allowed
    return union


def _wrong_type(node: Any, value: Any, where: str, defs: Mapping[str, Any]) -> str | None:
    """A message when ``value``'s JSON type is not one ``node`` allows: "0" for an integer, true for an
    integer, "false" for a boolean (pydantic would coerce each, and "false" must never mean true)."""
    allowed = _allowed(node, defs)
    if allowed is None:
        return None
    kind = _kind(value)
    if kind in allowed or (kind == "integer" and "number" in allowed):
        return None
    expected = " or ".join(_KINDS.get(t, t) for t in sorted(allowed, key=lambda t: (t == "null", t)))
    shown = repr(value) if kind in ("string", "integer", "number", "boolean") else ""
    shown = f" ({shown[:40]}{'...' if len(shown) > 40 else ''})" if shown else ""
    got = _KINDS[kind] if kind != "boolean" else "a boolean"
    what = f"field {where!r}" if "." in where or "[" in where else f"argument {where!r}"
    return f"{what} must be {expected}, not {got}{shown}"


def _listed(node: Any, defs: Mapping[str, Any], depth: int = 0) -> list[Any] | None:
    """The values ``node`` allows when it lists them (``enum``, ``const``, options of those or null), else None."""
    node = _resolve(node, defs)
    if not isinstance(node, dict) or depth > 8:
        return None
    if isinstance(node.get("enum"), list):
        return list(node["enum"])
    if "const" in node:
        return [node["const"]]
    if node.get("type") == "null":
        return [None]
    options = node.get("anyOf") or node.get("oneOf")
    if not isinstance(options, list):
        return None
    values: list[Any] = []
    for option in options:
        listed = _listed(option, defs, depth + 1)
        if listed is None:
            return None
        values += listed
    return values if any(v is not None for v in values) else None


def _unlisted(node: Any, value: Any, where: str, defs: Mapping[str, Any]) -> str | None:
    """A message when ``node`` lists the values it allows and ``value`` is not one of them."""
    listed = _listed(node, defs)
    if listed is None or value in listed:
        return None
    named = [repr(v) for v in listed if v is not None]
    allowed = ", ".join(named[:20]) + (" or null" if None in listed else "")
    shown = repr(value)
    what = f"field {where!r}" if "." in where or "[" in where else f"argument {where!r}"
    return f"{what} must be one of {allowed}, not {shown[:40]}{'...' if len(shown) > 40 else ''}"


def _walk(node: Any, value: Any, where: str, defs: Mapping[str, Any], optional: bool = False) -> str | None:
    # An explicit null for an optional argument is left to the argument model: the listed schemas drop the
    # null option of parameters whose default is null (server.drop_null_options), which still take it.
    if where and not (optional and value is None):
        problem = _wrong_type(node, value, where, defs) or _unlisted(node, value, where, defs)
        if problem is not None:
            return problem
    if isinstance(value, dict):
        shape = _branch(node, defs, "properties")
        if shape is None:
            shape = _resolve(node, defs)
            extra = shape.get("additionalProperties") if isinstance(shape, dict) else None
            if not isinstance(extra, dict):
                return None
            return _each(((key, extra, sub, False) for key, sub in value.items()), where, defs)  # a typed dict
        properties = shape["properties"]
        if shape.get("additionalProperties") is False:
            for key in value:
                if key not in properties:
                    return _message(where, str(key), list(properties))
        extra = shape.get("additionalProperties")
        extra = extra if isinstance(extra, dict) else {}
        required = shape.get("required") or ()
        fields = ((key, properties.get(key, extra), sub, key not in required) for key, sub in value.items())
        problem = _each(fields, where, defs)  # what is wrong with what was given first, then what is missing
        if problem is not None:
            return problem
        for key in required:
            if key not in value:
                what = f"field {f'{where}.{key}'!r}" if where else f"argument {key!r}"
                return f"missing {what} (required: {', '.join(required)})"
        return None
    if isinstance(value, list):
        shape = _branch(node, defs, "items")
        if shape is None:
            return None
        for i, item in enumerate(value):
            problem = _walk(shape["items"], item, f"{where}[{i}]", defs)
            if problem is not None:
                return problem
    return None


def _each(fields: Any, where: str, defs: Mapping[str, Any]) -> str | None:
    for key, node, sub, optional in fields:
        problem = _walk(node, sub, f"{where}.{key}" if where else str(key), defs, optional)
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
    """Server middleware: refuses a ``tools/call`` whose arguments have a key the tool's schema does not name
    or a value of a JSON type it does not allow."""

    def __init__(self, schema_of: Callable[[str], Mapping[str, Any] | None]) -> None:
        self.schema_of = schema_of

    async def __call__(self, ctx: Any, call_next: Any) -> Any:
        params = ctx.params if ctx.method == "tools/call" else None
        if isinstance(params, Mapping):
            name, arguments = params.get("name"), params.get("arguments")
            schema = self.schema_of(name) if isinstance(name, str) else None
            if schema is not None and isinstance(arguments, Mapping):
                assert isinstance(name, str)
                renaming, problem = renamed(name, arguments)
                if problem is None:
                    renaming, problem = unlisted(name, renaming)
                problem = problem or unknown_argument(schema, renaming)
                if problem is not None:
                    log.info("Tool %r refused: %s", name, problem)
                    return CallToolResult(
                        content=[TextContent(type="text", text=f"{name}: {problem}; nothing was done")],
                        is_error=True,
                    )
                if renaming is not arguments:
                    ctx = replace(ctx, params={**params, "arguments": renaming})
        return await call_next(ctx)
