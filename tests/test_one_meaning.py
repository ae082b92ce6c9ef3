"""One meaning per request: a repeated JSON key is refused, and a tool argument of another type is an error.

Python's json (and pydantic) read ``"name":"delete_document","name":"get_document"`` as the last value,
while a proxy or a log may read the first; and pydantic's lax mode read ``"0"`` and ``true`` as integers and
``"false"`` as a boolean. Each is refused, naming the key or the argument, and nothing runs.
"""

from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import Any

import httpx2
import pytest

from jupyter_pair_mcp.tools.arguments import close, unknown_argument
from jupyter_pair_mcp.transport import requestbody

from .conftest import LEGACY_VERSION, MCP_HEADERS, call_tool, open_session, tool_error, within

pytestmark = pytest.mark.usefixtures("jp_serverapp")

MODERN = "2026-07-28"
MODERN_META = '"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}'


async def post(http: httpx2.AsyncClient, url: str, auth: dict[str, str], era: str, params: str, id: str = "7") -> Any:
    """POST a tools/call written by hand (json.dumps cannot repeat a key) in the given era."""
    if era == "legacy":
        session = await open_session(http, url, auth)
        headers = {**MCP_HEADERS, **auth, "mcp-session-id": session, "mcp-protocol-version": LEGACY_VERSION}
    else:
        headers = {**MCP_HEADERS, **auth, "MCP-Protocol-Version": MODERN, "Mcp-Method": "tools/call"}
        headers["Mcp-Name"] = "get_document"
        if '"_meta":{' in params:
            params = params.replace('"_meta":{', '"_meta":{' + MODERN_META + ",", 1)
        else:
            params = params[:-1] + ',"_meta":{' + MODERN_META + "}}"
    body = '{"jsonrpc":"2.0","id":' + id + ',"method":"tools/call","params":' + params + "}"
    return await http.post(url, content=body.encode(), headers=headers)


def refused(response: Any, key: str, id: Any = 7) -> None:
    assert response.status_code == 400, response.text
    body = response.json()
    assert body["error"]["code"] == -32600, body
    assert f"the key {key!r} appears more than once" in body["error"]["message"], body
    assert body["id"] == id


@pytest.mark.parametrize("era", ["legacy", MODERN])
async def test_a_repeated_key_is_refused_at_any_depth_and_nothing_runs(
    http: httpx2.AsyncClient, mcp_url: str, auth: dict[str, str], jp_root_dir: Path, era: str
) -> None:
    (jp_root_dir / "a.txt").write_text("keep me")
    two_names = '{"name":"delete_document","name":"get_document","arguments":{"path":"a.txt"}}'
    refused(await post(http, mcp_url, auth, era, two_names), "name")
    assert (jp_root_dir / "a.txt").exists()
    two_paths = '{"name":"get_document","arguments":{"path":"a.txt","path":"b.txt"}}'
    refused(await post(http, mcp_url, auth, era, two_paths), "path")
    deep = '{"name":"get_document","arguments":{"path":"a.txt"},"_meta":{"x":[{"k":1},{"k":2,"k":3}]}}'
    refused(await post(http, mcp_url, auth, era, deep), "k")
    refused(
        await post(http, mcp_url, auth, era, '{"name":"get_document","arguments":{"path":"a.txt"}}', '1,"id":2'),
        "id",
        None,
    )
    # The same key in different objects is one meaning each: served.
    same_key_apart = '{"name":"get_document","arguments":{"path":"a.txt"},"_meta":{"name":"x","path":"y"}}'
    ok = await post(http, mcp_url, auth, era, same_key_apart)
    assert ok.status_code == 200 and "keep me" in ok.text, ok.text


async def test_a_large_body_is_checked_off_the_event_loop(monkeypatch: pytest.MonkeyPatch) -> None:
    threads = []
    original = requestbody.refusal

    def recording(body: bytes) -> Any:
        threads.append(threading.get_ident())
        return original(body)

    monkeypatch.setattr(requestbody, "refusal", recording)
    small = b'{"jsonrpc":"2.0","id":1,"method":"ping","params":{"a":1,"a":2}}'
    large = (
        b'{"jsonrpc":"2.0","id":1,"method":"ping","params":{"pad":"'
        + b"x" * requestbody.INLINE_BYTES
        + b'","a":1,"a":2}}'
    )
    assert (await requestbody.check(small)) is not None
    assert (await requestbody.check(large)) is not None
    assert threads[0] == threading.get_ident()  # small: inline
    assert threads[1] != threading.get_ident()  # large: a worker thread


@pytest.mark.parametrize("era", ["legacy", MODERN])
async def test_a_large_body_with_a_repeated_key_is_refused_over_the_wire(
    http: httpx2.AsyncClient, mcp_url: str, auth: dict[str, str], era: str
) -> None:
    pad = "x" * (2 * requestbody.INLINE_BYTES)
    params = '{"name":"get_document","arguments":{"path":"a.txt"},"_meta":{"pad":"' + pad + '","pad":""}}'
    refused(await post(http, mcp_url, auth, era, params), "pad")


# -- types ----------------------------------------------------------------------------------------------------

SCHEMA = close(
    {
        "type": "object",
        "properties": {
            "count": {"type": "integer"},
            "ratio": {"type": "number"},
            "flag": {"type": "boolean"},
            "name": {"anyOf": [{"type": "string"}, {"type": "null"}]},
            "mode": {"enum": ["a", "b"]},
            "cells": {"type": "array", "items": {"$ref": "#/$defs/Cell"}},
            "tags": {"type": "object", "additionalProperties": {"type": "integer"}},
        },
        "required": ["count"],
        "$defs": {"Cell": {"type": "object", "properties": {"index": {"type": "integer"}}}},
    }
)


@pytest.mark.parametrize(
    ("arguments", "words"),
    [
        ({"count": "0"}, "argument 'count' must be an integer, not a string ('0')"),
        ({"count": True}, "argument 'count' must be an integer, not a boolean (True)"),
        ({"count": 1.5}, "argument 'count' must be an integer, not a number (1.5)"),
        ({"ratio": "1"}, "argument 'ratio' must be a number, not a string"),
        ({"flag": "false"}, "argument 'flag' must be a boolean (true or false), not a string ('false')"),
        ({"flag": 0}, "argument 'flag' must be a boolean (true or false), not an integer (0)"),
        ({"name": 3}, "argument 'name' must be a string or null, not an integer"),
        ({"count": None}, "argument 'count' must be an integer, not null"),
        ({"mode": 1}, "argument 'mode' must be a string, not an integer"),
        ({"cells": [{"index": 1}, {"index": "2"}]}, "field 'cells[1].index' must be an integer, not a string"),
        ({"cells": {"index": 1}}, "argument 'cells' must be an array, not an object"),
        ({"tags": {"x": 1, "y": "2"}}, "field 'tags.y' must be an integer"),
    ],
)
def test_a_value_of_another_type_is_named(arguments: dict[str, Any], words: str) -> None:
    message = unknown_argument(SCHEMA, arguments)
    assert message is not None and message.startswith(words), message


def test_values_of_the_declared_types_pass() -> None:
    # An optional argument may be an explicit null (the argument model decides).
    arguments = {"count": 2, "ratio": None, "flag": False, "name": None, "mode": "a", "cells": [{"index": 1.0}]}
    assert unknown_argument(SCHEMA, {**arguments, "tags": {"x": 1}}) is None


WRONG = {
    "integer": ["0", True],
    "number": ["1", False],
    "boolean": ["false", 0],
    "string": [1, False],
    "array": ["[]", {}],
    "object": ["{}", []],
}


def _types(node: Any, defs: dict[str, Any]) -> set[str]:
    if "$ref" in node:
        node = defs[node["$ref"].removeprefix("#/$defs/")]
    if "type" in node:
        return {node["type"]}
    if "enum" in node:
        return {"string"} if all(isinstance(v, str) for v in node["enum"]) else set()
    found: set[str] = set()
    for option in node.get("anyOf", []):
        found |= _types(option, defs)
    return found


@pytest.mark.parametrize("mode", ["legacy", MODERN])
async def test_every_argument_of_every_tool_refuses_other_types(mcp_client: Any, mode: str) -> None:
    """Walks every tool's schema: each argument, given a value of a JSON type it does not allow (the
    coercible ones first: "0" for an integer, "false" for a boolean), is a tool error naming it."""
    async with mcp_client(mode=mode) as client:
        tools = (await client.list_tools()).tools
        checked = 0
        for tool in tools:
            schema = tool.input_schema
            for name, node in schema.get("properties", {}).items():
                allowed = _types(node, schema.get("$defs", {}))
                assert allowed, (tool.name, name, node)
                for kind in sorted(allowed):
                    for value in WRONG[kind]:
                        if _wrong_for(value, allowed):
                            result = await within(client.call_tool(tool.name, {name: value}))
                            assert result.is_error, (tool.name, name, value)
                            message = str(result.content[0].text)
                            assert f"argument {name!r} must be" in message, (tool.name, name, value, message)
                            assert "nothing was done" in message
                            checked += 1
    assert len(tools) > 40 and checked > 200


def _wrong_for(value: Any, allowed: set[str]) -> bool:
    kinds = {
        bool: "boolean",
        int: "integer",
        str: "string",
        list: "array",
        dict: "object",
    }
    kind = kinds[type(value)]
    return kind not in allowed and not (kind == "integer" and "number" in allowed)


@pytest.mark.parametrize("mode", ["legacy", MODERN])
async def test_exec_false_as_a_string_runs_nothing(mcp_client: Any, make_notebook: Any, mode: str) -> None:
    path = make_notebook("strict_types.ipynb", count=2)
    async with mcp_client(mode=mode) as client:
        message = await tool_error(
            client, "batch_insert_notebook_cells", path=path, start_position=0, cells=[{"content": "x"}], exec="false"
        )
        assert "argument 'exec' must be a boolean (true or false), not a string ('false')" in message
        message = await tool_error(client, "get_notebook", path=path, start_index="0")
        assert "argument 'start_index' must be an integer, not a string ('0')" in message
        message = await tool_error(
            client, "batch_update_notebook_cells", path=path, updates=[{"index": "0", "content": "y"}], exec=False
        )
        assert "field 'updates[0].index' must be an integer, not a string ('0')" in message
        message = await tool_error(client, "get_notebook", path=path, end_index=True)
        assert "argument 'end_index' must be an integer, not a boolean (True)" in message
        read = await call_tool(client, "get_notebook", path=path, start_index=0, end_index=2.0, fork_id=None)
    assert [c["source"] for c in read["cells"]] == ["x = 0", "x = 1"]
    assert "inserted" not in json.dumps(read)


# -- size in values -------------------------------------------------------------------------------------------


@pytest.mark.parametrize("era", ["legacy", MODERN])
async def test_a_body_of_too_many_values_is_refused_before_the_sdk_parses_it(
    http: httpx2.AsyncClient, mcp_url: str, auth: dict[str, str], era: str
) -> None:
    """The SDK parses a body on the loop at a cost that grows with its values (4 MiB of tiny objects held the
    loop ~100 ms): a body of more than MAX_VALUES values is refused first, off the loop, and nothing runs."""
    pad = ",".join(["{}"] * (requestbody.MAX_VALUES + 1))
    params = '{"name":"get_document","arguments":{"path":"a.txt"},"_meta":{"pad":[' + pad + "]}}"
    response = await post(http, mcp_url, auth, era, params)
    assert response.status_code == 400, response.text
    body = response.json()
    assert body["error"]["code"] == -32600 and body["id"] == 7, body
    assert f"more than {requestbody.MAX_VALUES} JSON values" in body["error"]["message"]


def test_values_are_counted_at_every_depth() -> None:
    assert requestbody.refusal(json.dumps({"a": [[1] * 10] * 10}).encode()) is None
    nested = json.dumps({"a": [{"b": list(range(requestbody.MAX_VALUES))}]}).encode()
    refusal = requestbody.refusal(nested)
    assert refusal is not None and "JSON values" in refusal.message


# -- depth ----------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("era", ["legacy", MODERN])
async def test_a_body_nested_too_deep_is_refused_naming_the_limit(
    http: httpx2.AsyncClient, mcp_url: str, auth: dict[str, str], era: str
) -> None:
    """~1 000 levels in 2 KB: Python's parser gives up with a RecursionError; the answer names the limit."""
    deep = "[" * 1000 + "]" * 1000
    params = '{"name":"get_document","arguments":{"path":"a.txt"},"_meta":{"pad":' + deep + "}}"
    response = await post(http, mcp_url, auth, era, params)
    assert response.status_code == 400, response.text
    body = response.json()
    assert body["error"]["code"] == -32600, body
    assert f"more than {requestbody.MAX_DEPTH} levels deep (the limit)" in body["error"]["message"], body


def test_depth_is_bounded_where_the_sdk_parser_is() -> None:
    def nested(levels: int) -> bytes:
        return ('{"a":' * (levels - 1) + "[1]" + "}" * (levels - 1)).encode()

    assert requestbody.refusal(nested(requestbody.MAX_DEPTH)) is None
    refusal = requestbody.refusal(nested(requestbody.MAX_DEPTH + 1))
    assert refusal is not None and f"more than {requestbody.MAX_DEPTH} levels deep" in refusal.message
    assert requestbody.refusal(b'{"id": 3, "x": ' + b"[" * 5000 + b"]" * 5000 + b"}") is not None  # RecursionError
