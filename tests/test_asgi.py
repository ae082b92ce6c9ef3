"""The Tornado-to-ASGI bridge against toy ASGI apps, over a real Tornado HTTP server."""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

import httpx2
import pytest
import tornado.web
from tornado.httpserver import HTTPServer
from tornado.testing import bind_unused_port

from jupyter_pair_mcp.transport.asgi import ASGIApp, Message, Scope, TornadoASGIBridge

from .conftest import within

Receive = Any
Send = Any


class BridgeHandler(tornado.web.RequestHandler):
    """Hands every GET/POST to an ASGI app through the bridge, as the extension's handler does."""

    def initialize(self, app: ASGIApp, bridges: list[TornadoASGIBridge], extra_scope: dict[str, Any]) -> None:
        self.app = app
        self.bridges = bridges
        self.extra_scope = extra_scope
        self.bridge: TornadoASGIBridge | None = None

    async def get(self, *args: Any) -> None:
        await self._run()

    async def post(self, *args: Any) -> None:
        await self._run()

    async def _run(self) -> None:
        self.bridge = TornadoASGIBridge(self, self.request.body, extra_scope=self.extra_scope)
        self.bridges.append(self.bridge)
        await self.bridge.run(self.app)

    def on_connection_close(self) -> None:
        if self.bridge is not None:
            self.bridge.connection_closed()


@dataclass
class Served:
    client: httpx2.AsyncClient
    port: int
    bridges: list[TornadoASGIBridge] = field(default_factory=list)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"


@contextlib.asynccontextmanager
async def serve(app: ASGIApp, extra_scope: dict[str, Any] | None = None) -> AsyncIterator[Served]:
    """Serve ``app`` through the bridge on a free local port; yield a client for it."""
    sock, port = bind_unused_port()
    bridges: list[TornadoASGIBridge] = []
    web_app = tornado.web.Application(
        [(r"/.*", BridgeHandler, {"app": app, "bridges": bridges, "extra_scope": extra_scope or {}})]
    )
    server = HTTPServer(web_app)
    server.add_sockets([sock])
    client = httpx2.AsyncClient(base_url=f"http://127.0.0.1:{port}", timeout=10, trust_env=False)
    try:
        yield Served(client, port, bridges)
    finally:
        await within(client.aclose(), 10)
        server.stop()
        await within(server.close_all_connections(), 10)


def start(status: int = 200, headers: list[tuple[bytes, bytes]] | None = None) -> Message:
    return {"type": "http.response.start", "status": status, "headers": headers or []}


def body(data: bytes = b"", more: bool = False) -> Message:
    return {"type": "http.response.body", "body": data, "more_body": more}


SSE_HEADERS = [(b"content-type", b"text/event-stream"), (b"cache-control", b"no-cache")]


# --- (a) the scope and the request body ----------------------------------------------------------


async def test_scope_and_body_reach_the_app() -> None:
    seen: dict[str, Any] = {}

    async def echo(scope: Scope, receive: Receive, send: Send) -> None:
        first = await receive()
        # The body comes exactly once: a second receive() waits (for a disconnect), it does not
        # hand out the body again.
        second = asyncio.ensure_future(receive())
        done, _ = await asyncio.wait([second], timeout=0.2)
        second.cancel()
        seen.update(scope=dict(scope), first=first, second_done=bool(done))
        payload = {
            "type": scope["type"],
            "method": scope["method"],
            "path": scope["path"],
            "query_string": scope["query_string"].decode(),
            "headers": [[k.decode(), v.decode()] for k, v in scope["headers"]],
            "body": first["body"].decode(),
            "state": scope["state"],
            "user": scope.get("user"),
        }
        await send(start(200, [(b"content-type", b"application/json")]))
        await send(body(json.dumps(payload).encode()))

    extra = {"state": {"who": "alice"}, "user": "alice"}
    async with serve(echo, extra_scope=extra) as served:
        response = await within(
            served.client.post(
                "/some/path?a=1&b=two%20words",
                content=b'{"hello": "world"}',
                headers={"X-Custom-Header": "MixedCase Value", "Content-Type": "application/json"},
            )
        )

    assert response.status_code == 200
    assert response.headers["content-type"] == "application/json"
    echoed = response.json()
    assert echoed["type"] == "http"
    assert echoed["method"] == "POST"
    assert echoed["path"] == "/some/path"
    assert echoed["query_string"] == "a=1&b=two%20words"
    assert echoed["body"] == '{"hello": "world"}'
    assert echoed["state"] == {"who": "alice"}
    assert echoed["user"] == "alice"
    assert ["x-custom-header", "MixedCase Value"] in echoed["headers"]

    scope = seen["scope"]
    assert scope["type"] == "http"
    assert scope["method"] == "POST"
    assert scope["scheme"] == "http"
    assert scope["http_version"] == "1.1"
    assert scope["path"] == "/some/path"
    assert scope["raw_path"] == b"/some/path"
    assert scope["query_string"] == b"a=1&b=two%20words"
    assert isinstance(scope["query_string"], bytes)
    assert scope["root_path"] == ""
    assert scope["asgi"]["version"] == "3.0"
    assert scope["server"] == ("127.0.0.1", served.port)
    assert scope["client"][0] == "127.0.0.1"
    headers = scope["headers"]
    assert all(isinstance(k, bytes) and isinstance(v, bytes) for k, v in headers)
    assert all(k == k.lower() for k, _ in headers)
    assert (b"x-custom-header", b"MixedCase Value") in headers
    assert (b"content-type", b"application/json") in headers
    assert (b"content-length", b"18") in headers
    assert scope["state"] == {"who": "alice"}
    assert scope["user"] == "alice"

    assert seen["first"] == {"type": "http.request", "body": b'{"hello": "world"}', "more_body": False}
    assert seen["second_done"] is False


async def test_get_without_body_gets_empty_body_and_empty_query() -> None:
    seen: dict[str, Any] = {}

    async def app(scope: Scope, receive: Receive, send: Send) -> None:
        seen["message"] = await receive()
        seen["scope"] = dict(scope)
        await send(start(200, [(b"content-type", b"text/plain")]))
        await send(body(b"ok"))

    async with serve(app) as served:
        response = await within(served.client.get("/plain"))

    assert response.status_code == 200
    assert response.text == "ok"
    assert seen["message"] == {"type": "http.request", "body": b"", "more_body": False}
    assert seen["scope"]["method"] == "GET"
    assert seen["scope"]["path"] == "/plain"
    assert seen["scope"]["query_string"] == b""
    assert seen["scope"]["state"] == {}
    assert "user" not in seen["scope"]


# --- (b) streaming in chunks ---------------------------------------------------------------------


async def test_multi_chunk_body_arrives_in_order_and_incrementally() -> None:
    chunks = [b"alpha,", b"beta,", b"gamma,", b"delta"]
    gates = [asyncio.Event() for _ in chunks]

    async def app(scope: Scope, receive: Receive, send: Send) -> None:
        await receive()
        await send(start(200, [(b"content-type", b"application/octet-stream")]))
        for gate, chunk in zip(gates, chunks, strict=True):
            await asyncio.wait_for(gate.wait(), 10)
            await send(body(chunk, more=True))
        await send(body(b"", more=False))

    received = b""
    async with serve(app) as served:
        gates[0].set()  # the first chunk is needed before the response can be seen at all
        response = await within(served.client.send(served.client.build_request("GET", "/"), stream=True))
        try:
            assert response.status_code == 200
            stream = response.aiter_raw()
            for i in range(len(chunks)):
                # Each chunk reaches the client before the app produces the next one: the bridge
                # flushed it.
                while len(received) < sum(len(c) for c in chunks[: i + 1]):
                    received += await within(stream.__anext__(), 5)
                assert received == b"".join(chunks[: i + 1])
                if i + 1 < len(gates):
                    gates[i + 1].set()
            rest = [piece async for piece in stream]
            assert b"".join(rest) == b""
        finally:
            await within(response.aclose())

    assert received == b"alpha,beta,gamma,delta"


async def test_multi_chunk_body_read_whole() -> None:
    async def app(scope: Scope, receive: Receive, send: Send) -> None:
        await receive()
        await send(start(200, [(b"content-type", b"text/plain")]))
        for i in range(20):
            await send(body(f"line {i}\n".encode(), more=True))
        await send(body(b"end\n"))

    async with serve(app) as served:
        response = await within(served.client.get("/"))

    assert response.status_code == 200
    assert response.text == "".join(f"line {i}\n" for i in range(20)) + "end\n"


# --- (c) and (d) server-sent events --------------------------------------------------------------


async def test_event_stream_headers_are_flushed_before_first_event() -> None:
    release = asyncio.Event()
    first_event_sent = asyncio.Event()

    async def app(scope: Scope, receive: Receive, send: Send) -> None:
        await receive()
        await send(start(200, SSE_HEADERS))
        await asyncio.wait_for(release.wait(), 10)
        first_event_sent.set()
        await send(body(b"id: 1\ndata: first\n\n", more=True))
        await send(body(b"data: last\n\n"))

    async with serve(app) as served:
        # Without the flush, the status line would not arrive until the first event: this would
        # time out, because the event waits for `release`.
        response = await within(served.client.send(served.client.build_request("GET", "/sse"), stream=True), 5)
        try:
            assert not first_event_sent.is_set()
            assert response.status_code == 200
            assert response.headers["content-type"] == "text/event-stream"
            assert response.headers["cache-control"] == "no-cache"
            release.set()
            lines = []
            async for line in response.aiter_lines():
                lines.append(line)
            assert first_event_sent.is_set()
            assert lines == ["id: 1", "data: first", "", "data: last", ""]
        finally:
            await within(response.aclose())


async def test_event_stream_headers_flushed_with_delayed_first_event() -> None:
    """The same with a plain delay (the app waits on nothing the test controls): the headers arrive while the
    app still waits, before its body is sent (an order, not a time: a busy machine can stretch either)."""
    body_sent = asyncio.Event()

    async def app(scope: Scope, receive: Receive, send: Send) -> None:
        await receive()
        await send(start(200, [(b"content-type", b"text/event-stream; charset=utf-8")]))
        await asyncio.sleep(1.0)
        body_sent.set()
        await send(body(b"data: late\n\n"))

    async with serve(app) as served:
        response = await within(served.client.send(served.client.build_request("GET", "/"), stream=True), 5)
        try:
            headers_before_body = not body_sent.is_set()
            text = await within(response.aread(), 5)
        finally:
            await within(response.aclose())

    assert response.status_code == 200
    assert headers_before_body, "the headers waited for the first event"
    assert text == b"data: late\n\n"


async def test_app_sees_disconnect_when_client_closes_event_stream() -> None:
    disconnected = asyncio.Event()
    outcome: dict[str, Any] = {"sent": 0}

    async def app(scope: Scope, receive: Receive, send: Send) -> None:
        await receive()
        await send(start(200, SSE_HEADERS))
        waiting = asyncio.ensure_future(receive())
        try:
            deadline = asyncio.get_running_loop().time() + 15
            n = 0
            while not waiting.done() and asyncio.get_running_loop().time() < deadline:
                await send(body(f"data: {n}\n\n".encode(), more=True))
                n += 1
                outcome["sent"] += 1
                await asyncio.wait([waiting], timeout=0.05)
            if waiting.done():
                outcome["message"] = waiting.result()
                disconnected.set()
        finally:
            waiting.cancel()

    async with serve(app) as served:
        response = await within(served.client.send(served.client.build_request("GET", "/events"), stream=True), 5)
        data = []
        try:
            lines = response.aiter_lines()
            while len(data) < 3:
                line = await within(lines.__anext__(), 5)
                if line.startswith("data:"):
                    data.append(line)
        finally:
            await within(response.aclose())
        assert data == ["data: 0", "data: 1", "data: 2"]

        await within(disconnected.wait(), 2)
        assert outcome["message"] == {"type": "http.disconnect"}
        sent_at_disconnect = outcome["sent"]
        await asyncio.sleep(0.2)
        assert outcome["sent"] == sent_at_disconnect  # the app stopped
        assert len(served.bridges) == 1

        # The server is still fine.
        # (A fresh request after the client went away gets its own stream.)
        response = await within(served.client.send(served.client.build_request("GET", "/events"), stream=True), 5)
        try:
            lines = response.aiter_lines()
            assert await within(lines.__anext__(), 5) == "data: 0"
        finally:
            await within(response.aclose())


async def test_app_waiting_only_on_receive_sees_disconnect() -> None:
    """No writes at all after the headers: the disconnect must still be noticed."""
    disconnected = asyncio.Event()
    outcome: dict[str, Any] = {}

    async def app(scope: Scope, receive: Receive, send: Send) -> None:
        await receive()
        await send(start(200, SSE_HEADERS))
        await send(body(b": keepalive\n\n", more=True))
        with contextlib.suppress(TimeoutError):
            outcome["message"] = await asyncio.wait_for(receive(), 15)
            disconnected.set()

    async with serve(app) as served:
        response = await within(served.client.send(served.client.build_request("GET", "/"), stream=True), 5)
        try:
            assert await within(response.aiter_lines().__anext__(), 5) == ": keepalive"
        finally:
            await within(response.aclose())
        await within(disconnected.wait(), 2)

    assert outcome["message"] == {"type": "http.disconnect"}


# --- (e) hop-by-hop headers ----------------------------------------------------------------------

HOP_BY_HOP = [
    (b"content-length", b"3"),
    (b"transfer-encoding", b"chunked"),
    (b"connection", b"close"),
    (b"keep-alive", b"timeout=1"),
    (b"content-type", b"text/plain"),
    (b"x-kept", b"yes"),
]


@pytest.mark.parametrize("streamed", [False, True], ids=["single-body", "streamed"])
async def test_hop_by_hop_headers_from_app_are_dropped(streamed: bool) -> None:
    payload = b"0123456789" * 10

    async def app(scope: Scope, receive: Receive, send: Send) -> None:
        await receive()
        await send(start(200, HOP_BY_HOP))
        if streamed:
            for i in range(0, len(payload), 25):
                await send(body(payload[i : i + 25], more=True))
            await send(body())
        else:
            await send(body(payload))

    async with serve(app) as served:
        first = await within(served.client.get("/one"))
        # Same client, so the same keep-alive connection if the first response was framed right.
        second = await within(served.client.get("/two"))

    for response in (first, second):
        assert response.status_code == 200
        assert response.content == payload
        assert response.headers["x-kept"] == "yes"
        assert response.headers["content-type"] == "text/plain"
        assert "keep-alive" not in response.headers
        assert response.headers.get("connection", "").lower() != "close"
        assert response.headers.get_list("transfer-encoding") in ([], ["chunked"])
        if streamed:
            assert response.headers["transfer-encoding"] == "chunked"
            assert "content-length" not in response.headers
        else:
            assert response.headers["content-length"] == str(len(payload))


# --- (f) and (g) apps that fail ------------------------------------------------------------------


async def test_app_raising_before_response_gives_500_and_server_keeps_serving() -> None:
    async def app(scope: Scope, receive: Receive, send: Send) -> None:
        await receive()
        if scope["path"] == "/boom":
            raise RuntimeError("boom")
        await send(start(200, [(b"content-type", b"text/plain")]))
        await send(body(b"still here"))

    async with serve(app) as served:
        failed = await within(served.client.post("/boom", content=b"x"))
        after = await within(served.client.get("/fine"))
        again = await within(served.client.post("/boom", content=b"x"))

    assert failed.status_code == 500
    assert again.status_code == 500
    assert after.status_code == 200
    assert after.text == "still here"
    assert not served.bridges[0].response_started
    assert served.bridges[1].response_started


async def test_app_returning_without_response_gives_500() -> None:
    async def app(scope: Scope, receive: Receive, send: Send) -> None:
        await receive()

    async with serve(app) as served:
        response = await within(served.client.get("/"))
        follow_up = await within(served.client.get("/"))

    assert response.status_code == 500
    assert response.content == b""
    assert follow_up.status_code == 500


async def test_app_sending_body_before_start_gives_500() -> None:
    errors: list[BaseException] = []

    async def app(scope: Scope, receive: Receive, send: Send) -> None:
        await receive()
        try:
            await send(body(b"too early"))
        except RuntimeError as error:
            errors.append(error)
            raise

    async with serve(app) as served:
        response = await within(served.client.get("/"))

    assert response.status_code == 500
    assert b"too early" not in response.content
    assert len(errors) == 1
    assert "before http.response.start" in str(errors[0])


async def test_start_without_body_then_return_completes_response() -> None:
    async def app(scope: Scope, receive: Receive, send: Send) -> None:
        await receive()
        await send(start(201, [(b"location", b"/thing/1")]))

    async with serve(app) as served:
        response = await within(served.client.post("/things", content=b"{}"))

    assert response.status_code == 201
    assert response.headers["location"] == "/thing/1"
    assert response.content == b""


# --- (h) status codes ----------------------------------------------------------------------------


async def test_202_with_empty_body() -> None:
    async def app(scope: Scope, receive: Receive, send: Send) -> None:
        await receive()
        await send(start(202))
        await send(body(b""))

    async with serve(app) as served:
        response = await within(served.client.post("/", content=b"{}"))

    assert response.status_code == 202
    assert response.reason_phrase == "Accepted"
    assert response.content == b""
    assert response.headers.get("content-length", "0") == "0"


async def test_404_with_json_body() -> None:
    async def app(scope: Scope, receive: Receive, send: Send) -> None:
        await receive()
        await send(start(404, [(b"content-type", b"application/json")]))
        await send(body(json.dumps({"error": "no such thing"}).encode()))

    async with serve(app) as served:
        response = await within(served.client.get("/missing"))

    assert response.status_code == 404
    assert response.reason_phrase == "Not Found"
    assert response.headers["content-type"] == "application/json"
    assert response.json() == {"error": "no such thing"}


async def test_unregistered_status_code_passes_through() -> None:
    async def app(scope: Scope, receive: Receive, send: Send) -> None:
        await receive()
        await send(start(299, [(b"content-type", b"text/plain")]))
        await send(body(b"odd"))

    async with serve(app) as served:
        response = await within(served.client.get("/"))

    assert response.status_code == 299
    assert response.reason_phrase == "Unknown"
    assert response.text == "odd"


# --- (i) repeated headers ------------------------------------------------------------------------


async def test_repeated_headers_are_all_kept() -> None:
    async def app(scope: Scope, receive: Receive, send: Send) -> None:
        await receive()
        await send(
            start(
                200,
                [
                    (b"Content-Type", b"application/json"),
                    (b"Set-Cookie", b"a=1; Path=/"),
                    (b"set-cookie", b"b=2; Path=/; HttpOnly"),
                    (b"x-multi", b"one"),
                    (b"X-Multi", b"two"),
                ],
            )
        )
        await send(body(b"{}"))

    async with serve(app) as served:
        response = await within(served.client.get("/"))

    assert response.status_code == 200
    assert response.headers.get_list("set-cookie") == ["a=1; Path=/", "b=2; Path=/; HttpOnly"]
    assert response.headers.get_list("x-multi") == ["one", "two"]
    # The app's content type replaces Tornado's default rather than joining it.
    assert response.headers.get_list("content-type") == ["application/json"]


async def test_default_content_type_is_not_added() -> None:
    async def app(scope: Scope, receive: Receive, send: Send) -> None:
        await receive()
        await send(start(200, [(b"x-only", b"this")]))
        await send(body(b"raw"))

    async with serve(app) as served:
        response = await within(served.client.get("/"))

    assert response.status_code == 200
    assert "content-type" not in response.headers
    assert response.headers["x-only"] == "this"


# --- the exchange's end and path decoding, as the ASGI spec says ---------------------------------


async def test_receive_after_response_complete_returns_disconnect() -> None:
    outcome: dict[str, Any] = {}
    observed = asyncio.Event()

    async def app(scope: Scope, receive: Receive, send: Send) -> None:
        await receive()
        await send(start(200, [(b"content-type", b"text/plain")]))
        await send(body(b"done"))
        try:
            outcome["message"] = await asyncio.wait_for(receive(), 3)
        except TimeoutError:
            outcome["message"] = "timed out"
        observed.set()

    async with serve(app) as served:
        response = await within(served.client.get("/"))
        assert response.text == "done"
        # Close the keep-alive connection too: even that is never reported to the app.
        await within(served.client.aclose())
        await within(observed.wait(), 5)

    assert outcome["message"] == {"type": "http.disconnect"}


async def test_scope_path_is_percent_decoded() -> None:
    seen: dict[str, Any] = {}

    async def app(scope: Scope, receive: Receive, send: Send) -> None:
        await receive()
        seen["path"], seen["raw_path"] = scope["path"], scope["raw_path"]
        await send(start(204))
        await send(body())

    async with serve(app) as served:
        response = await within(served.client.get("/a%20b/caf%C3%A9"))

    assert response.status_code == 204
    assert seen["raw_path"] == b"/a%20b/caf%C3%A9"
    assert seen["path"] == "/a b/café"


async def test_app_failing_mid_response_drops_the_connection() -> None:
    """Half a body must not look like a complete response: the connection is dropped instead."""

    calls = []

    async def app(scope: Scope, receive: Receive, send: Send) -> None:
        calls.append(1)
        await receive()
        await send(start(200, [(b"content-type", b"text/plain")]))
        await send(body(b"partial", more=len(calls) == 1))
        if len(calls) == 1:
            raise RuntimeError("boom")

    async with serve(app) as served:
        with pytest.raises(httpx2.RemoteProtocolError, match="incomplete"):
            await within(served.client.get("/"))
        ok = await within(served.client.get("/"))  # and the server keeps serving
        assert ok.text == "partial"
