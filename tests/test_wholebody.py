"""Requests that stream nothing are answered with one JSON body; runs, edits and progress keep their SSE stream.

An SSE answer costs the server about 1.5 ms of CPU more than a JSON one (protocol/wholebody.py). Over the real
wire, with a real server: the content type of each answer, and that the answer is the same either way.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

import httpx2
import pytest
from mcp_types import JSONRPCRequest

from jupyter_pair_mcp.protocol.wholebody import whole

from .conftest import LEGACY_VERSION, MCP_HEADERS, open_session, rpc, sse_messages

CELLS = [{"cell_type": "code", "source": "1 + 1", "id": "c0"}]


@pytest.fixture
def post(http: httpx2.AsyncClient, mcp_url: str, auth: dict[str, str]) -> Any:
    headers: dict[str, str] = {}

    async def send(method: str, params: dict[str, Any], accept: str | None = None) -> tuple[str, dict[str, Any]]:
        """(content type, the response message) of one request, in one session opened on the first."""
        if not headers:
            session = await open_session(http, mcp_url, auth)
            headers.update({**MCP_HEADERS, **auth, "mcp-session-id": session, "mcp-protocol-version": LEGACY_VERSION})
        sent = {**headers, **({"Accept": accept} if accept else {})}
        response = await http.post(mcp_url, json=rpc(method, params, id=7), headers=sent, timeout=60)
        kind = response.headers.get("content-type", "").split(";")[0]
        if kind == "application/json":
            return kind, response.json()
        assert response.status_code == 200, response.text
        send.seen = [m for _, m in sse_messages(response.text) if m]  # type: ignore[attr-defined]
        return kind, next(m for m in send.seen if m.get("id") == 7)  # type: ignore[attr-defined]

    return send


async def test_reads_are_one_json_body(post: Any, make_notebook: Any) -> None:
    path = make_notebook("quick.ipynb", CELLS)
    for method, params in [
        ("ping", {}),
        ("tools/list", {}),
        ("tools/call", {"name": "get_notebook", "arguments": {"path": path}}),
        ("tools/call", {"name": "search_notebook", "arguments": {"path": path, "query": "1"}}),
        ("resources/read", {"uri": f"notebook://{path}"}),
    ]:
        kind, message = await post(method, params)
        assert kind == "application/json", method
        assert "result" in message, message
    kind, message = await post("tools/call", {"name": "get_notebook", "arguments": {"path": "missing.ipynb"}})
    assert kind == "application/json" and message["result"]["isError"], "a tool error is a JSON body too"


async def test_runs_edits_and_progress_keep_their_stream(post: Any, make_notebook: Any) -> None:
    path = make_notebook("stream.ipynb", CELLS)
    streamed = [
        ("tools/call", {"name": "execute_notebook_cell", "arguments": {"path": path, "cell_id": "c0"}}),
        (
            "tools/call",
            {
                "name": "batch_update_notebook_cells",
                "arguments": {"path": path, "exec": False, "updates": [{"cell_id": "c0", "content": "2 + 2"}]},
            },
        ),
        ("tools/call", {"name": "get_notebook", "arguments": {"path": path}, "_meta": {"progressToken": 1}}),
    ]
    for method, params in streamed:
        kind, message = await post(method, params)
        assert kind == "text/event-stream", params
        assert "result" in message and not message["result"].get("isError"), message
    assert json.dumps(message["result"]).count("2 + 2") >= 1, "the read after the edit sees it"


async def test_a_json_only_client_can_read(post: Any, make_notebook: Any) -> None:
    """A request answered whole needs only ``Accept: application/json``; one that streams still needs both."""
    path = make_notebook("accept.ipynb", CELLS)
    kind, message = await post("tools/call", {"name": "get_notebook", "arguments": {"path": path}}, "application/json")
    assert kind == "application/json" and "result" in message
    kind, message = await post(
        "tools/call",
        {"name": "execute_notebook_cell", "arguments": {"path": path, "cell_id": "c0"}},
        "application/json",
    )
    assert "error" in message and "text/event-stream" in message["error"]["message"]


async def test_a_quick_call_that_logs_before_its_answer_streams_both(
    post: Any, extension: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Whole or not is known when the first message comes: a failing quick call sends its log line first
    (protocol/session_log.py), so its answer is the SSE stream, the line then the result. A client reading
    JSON only gets the result alone (the line has no wire there); the next quick call is one JSON body again."""

    async def cancelled_inside() -> Any:
        future = asyncio.get_running_loop().create_future()
        future.cancel()
        return await future

    monkeypatch.setattr(extension.kernels, "running", cancelled_inside)
    kind, message = await post("tools/call", {"name": "list_kernels", "arguments": {}})
    assert kind == "text/event-stream" and message["result"]["isError"], message
    assert message["result"]["content"][0]["text"].count("internal error in list_kernels") == 1
    assert post.seen[0]["method"] == "notifications/message" and "list_kernels failed" in post.seen[0]["params"]["data"]
    kind, message = await post("tools/call", {"name": "list_kernels", "arguments": {}}, "application/json")
    assert kind == "application/json" and message["result"]["isError"], message
    monkeypatch.undo()
    kind, message = await post("tools/call", {"name": "list_kernels", "arguments": {}})
    assert kind == "application/json" and not message["result"].get("isError"), message


def test_which_requests_are_whole() -> None:
    quick = frozenset({"get_notebook"})

    def request(method: str, **params: Any) -> JSONRPCRequest:
        return JSONRPCRequest(jsonrpc="2.0", id=1, method=method, params=params)

    assert whole(request("ping"), quick) and whole(request("resources/read", uri="x"), quick)
    assert whole(request("tools/call", name="get_notebook", arguments={}), quick)
    assert not whole(request("tools/call", name="execute_notebook_cell", arguments={}), quick)
    assert not whole(request("tools/call", name="get_notebook", arguments={}, task={}), quick)
    assert not whole(request("tools/call", name="get_notebook", _meta={"progressToken": 1}), quick)
    assert not whole(request("tasks/result", taskId="t"), quick) and not whole(request("initialize"), quick)


async def test_only_read_only_tools_are_quick(extension: Any, mcp_client: Any) -> None:
    async with mcp_client() as client:
        tools = {tool.name: tool for tool in (await client.list_tools()).tools}
    quick = extension._endpoint.runner.manager.quick_tools
    assert "get_notebook" in quick and "execute_notebook_cell" not in quick
    assert all(tools[name].annotations and tools[name].annotations.read_only_hint for name in quick)
