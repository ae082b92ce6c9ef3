"""Requests that stream nothing are answered with one JSON body, not an SSE stream.

The SDK's transport answers a session's every request the same way: an SSE stream (with its priming event,
its event-store entries, a task group and its pings), or, for a whole server, a JSON body. An SSE answer costs
the server about 1.5 ms of CPU more than a JSON one (a ping: 3.6 against 2.2 ms, measured with
``benchmarks/bench_endpoint.py``), a third of a cheap call. :class:`WholeAnswers` picks per request: a JSON
body for requests that send nothing before their response and whose loss a retry repairs — pings,
listings, resource and prompt reads, and calls of :data:`quick <WholeAnswers.quick_tools>` tools (read-only,
run no code) asking for no progress and no task. Everything else keeps the SSE stream: runs and their
progress, edits (a client that lost the answer resumes the stream with ``Last-Event-ID`` rather than repeat
an edit), ``initialize``, tasks, subscriptions.

Which it is, is known for sure only when the request's first message arrives: a quick call that fails sends
its log lines first (protocol/session_log.py, on the call's own stream). Then the answer becomes the SSE
stream after all, the lines and the result on it, as the SDK's 2026-07-28 transport commits to SSE once a
handler emits (``mcp.server._streamable_http_modern``). Taking that first message for the answer — the SDK's
JSON-mode branch may, for its router drops a request's other messages in JSON mode, but ours is an SSE-mode
session's router — sent the client a log line for its answer, and the real answer never.

The JSON path is the SDK's own JSON-response branch (``StreamableHTTPServerTransport._handle_post_request``,
mcp 2.3), taken for one request; any request it does not take, valid or not, goes to the SDK unchanged.
"""

from __future__ import annotations

import logging
from functools import partial
from http import HTTPStatus
from typing import Any

import anyio
import pydantic_core
from anyio.streams.memory import MemoryObjectReceiveStream
from mcp.server.streamable_http import (
    CONTENT_TYPE_SSE,
    MCP_SESSION_ID_HEADER,
    REQUEST_STREAM_BUFFER_SIZE,
    EventMessage,
    SSEEvent,
    StreamableHTTPServerTransport,
    check_accept_headers,
)
from mcp.shared.message import ServerMessageMetadata, SessionMessage
from mcp_types import INTERNAL_ERROR, JSONRPCError, JSONRPCRequest, JSONRPCResponse, jsonrpc_message_adapter
from sse_starlette import EventSourceResponse
from starlette.requests import Request
from starlette.responses import Response
from starlette.types import Receive, Scope, Send

log = logging.getLogger(__name__)

#: Methods that send nothing before their response (tools/call is decided per tool).
QUIET_METHODS = frozenset(
    {
        "ping",
        "tools/list",
        "resources/list",
        "resources/templates/list",
        "resources/read",
        "prompts/list",
        "prompts/get",
        "completion/complete",
    }
)


def whole(message: Any, quick_tools: frozenset[str]) -> bool:
    """Whether ``message`` (a parsed JSON-RPC message) is answered with one JSON body."""
    if not isinstance(message, JSONRPCRequest):
        return False
    params = message.params or {}
    meta = params.get("_meta")
    if isinstance(meta, dict) and "progressToken" in meta:
        return False
    if message.method == "tools/call":
        return params.get("name") in quick_tools and "task" not in params
    return message.method in QUIET_METHODS


class WholeAnswers(StreamableHTTPServerTransport):
    """The SDK's transport, answering requests that stream nothing with one JSON body."""

    def __init__(self, *args: Any, quick_tools: frozenset[str] = frozenset(), **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        #: Tools whose calls send nothing before their result: read-only, no code run.
        self.quick_tools = quick_tools
        self.whole_answers = 0  # requests answered with one JSON body (tests count them)

    async def _handle_post_request(self, scope: Scope, request: Request, receive: Receive, send: Send) -> None:
        message = await self._quiet_request(request)
        if message is None:
            await super()._handle_post_request(scope, request, receive, send)
            return
        if not await self._validate_request_headers(request, send):
            return
        writer = self._read_stream_writer
        assert writer is not None  # connect() ran: the SDK's own branch asserts the same
        request_id = str(message.id)
        self._request_streams[request_id] = anyio.create_memory_object_stream[EventMessage](REQUEST_STREAM_BUFFER_SIZE)
        reader = self._request_streams[request_id][1]
        metadata = ServerMessageMetadata(
            request_context=request,
            on_request_unanswered=partial(self._terminate_unanswered_request, message.id),
            can_send_request=False,  # a JSON body carries the response only
        )
        self.whole_answers += 1
        first: EventMessage | None = None  # a message sent before the answer: the answer streams
        try:
            await writer.send(SessionMessage(message, metadata=metadata))
            try:
                answer = await reader.receive()
            except (anyio.EndOfStream, anyio.ClosedResourceError):
                # The session ended with the request in flight (the SDK answers the same).
                response = self._create_error_response(
                    "Session terminated before the request completed", HTTPStatus.INTERNAL_SERVER_ERROR, INTERNAL_ERROR
                )
            else:
                if isinstance(answer.message, JSONRPCResponse | JSONRPCError):
                    response = self._create_json_response(answer.message)
                elif check_accept_headers(request)[1]:
                    first = answer
                else:
                    response = await self._answer_alone(request_id, reader)
        finally:
            if first is None:
                await self._clean_up_memory_streams(request_id)
        if first is not None:
            await self._stream(scope, receive, send, request_id, first, reader)
            return
        await response(scope, receive, send)

    async def _stream(
        self,
        scope: Scope,
        receive: Receive,
        send: Send,
        request_id: str,
        first: EventMessage,
        reader: MemoryObjectReceiveStream[EventMessage],
    ) -> None:
        """Answer as the SDK's SSE branch does from here: ``first``, then the rest up to the answer.

        No priming event: the events it would precede were stored already, each sent with its own id, which a
        client resumes from. The SDK's writer ends the stream with the answer and frees the request's streams.
        """
        sse_writer, sse_reader = anyio.create_memory_object_stream[SSEEvent](0)
        self._sse_stream_writers[request_id] = sse_writer

        async def forward() -> None:
            try:
                await sse_writer.send(self._create_event_data(first))
            except (anyio.BrokenResourceError, anyio.ClosedResourceError):
                pass  # the client went away; the writer below frees the streams
            await self._run_sse_writer(request_id, sse_writer, reader, None)

        headers = {
            "Cache-Control": "no-cache, no-transform",
            "Connection": "keep-alive",
            "Content-Type": CONTENT_TYPE_SSE,
            **({MCP_SESSION_ID_HEADER: self.mcp_session_id} if self.mcp_session_id else {}),
        }
        try:
            await EventSourceResponse(content=sse_reader, data_sender_callable=forward, headers=headers)(
                scope, receive, send
            )
        finally:
            await sse_reader.aclose()
            self._sse_stream_writers.pop(request_id, None)
            await self._clean_up_memory_streams(request_id)

    async def _answer_alone(self, request_id: str, reader: MemoryObjectReceiveStream[EventMessage]) -> Response:
        """The answer for a client that reads no event stream: what the request sent before it has no wire in
        a JSON body (the SDK's JSON mode drops it the same way); the server's log keeps its log lines."""
        while True:
            try:
                event = await reader.receive()
            except (anyio.EndOfStream, anyio.ClosedResourceError):
                return self._create_error_response(
                    "Session terminated before the request completed", HTTPStatus.INTERNAL_SERVER_ERROR, INTERNAL_ERROR
                )
            if isinstance(event.message, JSONRPCResponse | JSONRPCError):
                return self._create_json_response(event.message)
            log.debug("Not sent to a client without text/event-stream: a message of request %s", request_id)

    async def _quiet_request(self, request: Request) -> JSONRPCRequest | None:
        """The request, when it is valid and answered whole; None for everything the SDK answers itself."""
        accepts_json, _ = check_accept_headers(request)  # the SDK's reading of Accept, wildcards included
        if not accepts_json or not self._check_content_type(request):
            return None
        try:
            body = await request.body()  # kept by starlette: the SDK's branch reads the same bytes again
            message = jsonrpc_message_adapter.validate_python(pydantic_core.from_json(body), by_name=False)
        except Exception:  # not JSON, not JSON-RPC, or no body: the SDK's errors
            return None
        if isinstance(message, JSONRPCRequest) and message.method != "initialize" and whole(message, self.quick_tools):
            return message
        return None
