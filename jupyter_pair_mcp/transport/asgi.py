"""Run an ASGI application for one Tornado request.

Jupyter serves Tornado; the MCP SDK serves ASGI. No Tornado-to-ASGI adapter package exists, and
this one is small: it knows nothing about MCP. It turns the (already buffered) Tornado request into
an ASGI ``http`` scope, feeds the body as one ``http.request`` message, answers later ``receive()``
calls with ``http.disconnect`` once the client goes away, and writes the response back through the
handler, flushing every chunk so server-sent events reach the client as they are produced.

Things that bit us and are handled here: headers must be flushed at once for ``text/event-stream``
(else a GET stream hangs until its first event); hop-by-hop headers from the app must not be copied
(Tornado frames the response itself); a write to a closed connection must end the response quietly
and tell the app the client is gone.
"""

from __future__ import annotations

import asyncio
import http
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any
from urllib.parse import unquote

from tornado.iostream import StreamClosedError
from tornado.web import RequestHandler

Message = MutableMapping[str, Any]
Scope = MutableMapping[str, Any]
ASGIApp = Callable[[Scope, Callable[[], Awaitable[Message]], Callable[[Message], Awaitable[None]]], Awaitable[None]]

# Framing headers Tornado computes itself; copying the app's would corrupt the response.
_HOP_BY_HOP = frozenset(
    {b"connection", b"keep-alive", b"transfer-encoding", b"content-length", b"te", b"trailer", b"upgrade"}
)

#: Bytes of a response body written per loop turn.
_SLICE = 256 * 1024


class TornadoASGIBridge:
    """One ASGI request/response cycle over one Tornado request handler.

    Call :meth:`connection_closed` from the handler's ``on_connection_close``; then ``await
    bridge.run(app)`` from the verb method. ``extra_scope`` entries (``state``, ``user``, ...)
    are merged into the scope so the app can see who is calling.
    """

    def __init__(self, handler: RequestHandler, body: bytes, *, extra_scope: dict[str, Any] | None = None) -> None:
        self.handler = handler
        self.body = body
        self.extra_scope = extra_scope or {}
        self._disconnected = asyncio.Event()
        self._body_sent = False
        self._started = False
        self._finished = False

    def connection_closed(self) -> None:
        self._disconnected.set()

    @property
    def response_started(self) -> bool:
        return self._started

    def build_scope(self) -> Scope:
        request = self.handler.request
        path, _, query = request.uri.partition("?") if request.uri else ("/", "", "")
        host, _, port = (request.host or "").rpartition(":")
        server = (host, int(port)) if port.isdigit() else (request.host, None)
        scope: Scope = {
            "type": "http",
            "asgi": {"version": "3.0", "spec_version": "2.3"},
            "http_version": request.version.removeprefix("HTTP/") if request.version else "1.1",
            "method": request.method or "GET",
            "scheme": request.protocol,
            "path": unquote(request.path),
            "raw_path": path.encode("latin-1"),
            "query_string": query.encode("latin-1"),
            "root_path": "",
            "headers": [(k.lower().encode("latin-1"), v.encode("latin-1")) for k, v in request.headers.get_all()],
            "client": (request.remote_ip, 0) if request.remote_ip else None,
            "server": server,
            "state": {},
        }
        scope.update(self.extra_scope)
        return scope

    async def receive(self) -> Message:
        if not self._body_sent:
            self._body_sent = True
            return {"type": "http.request", "body": self.body, "more_body": False}
        await self._disconnected.wait()
        return {"type": "http.disconnect"}

    async def send(self, message: Message) -> None:
        kind = message["type"]
        if self._disconnected.is_set() or self._finished:
            return
        if kind == "http.response.start":
            self._start(message)
            if self._is_event_stream():
                await self._flush()
        elif kind == "http.response.body":
            if not self._started:
                raise RuntimeError("ASGI app sent a body before http.response.start")
            chunk = message.get("body", b"")
            # A big body goes out a slice at a time, the loop free between slices: one write of a 10 MB
            # answer would hold the loop every notebook and kernel share for as long as it takes to copy.
            view = memoryview(chunk)
            while len(view) > _SLICE and not self._disconnected.is_set():
                self.handler.write(bytes(view[:_SLICE]))
                view = view[_SLICE:]
                await self._flush()
            if view and not self._disconnected.is_set():
                self.handler.write(bytes(view) if len(view) < len(chunk) else chunk)
            if message.get("more_body", False):
                await self._flush()
            else:
                await self._finish()

    async def run(self, app: ASGIApp) -> None:
        """Run ``app`` to completion and make sure the Tornado response is complete."""
        try:
            await app(self.build_scope(), self.receive, self.send)
        except Exception:
            if self._started and not self._finished:
                # Half a response must not look like a whole one: drop the connection, as uvicorn does.
                self._disconnected.set()
                self.handler.request.connection.close()  # type: ignore[union-attr]
            raise
        finally:
            if not self._finished and not self._disconnected.is_set():
                if not self._started:
                    self.handler.set_status(500)
                await self._finish()

    def _start(self, message: Message) -> None:
        status = int(message["status"])
        try:
            reason = http.HTTPStatus(status).phrase
        except ValueError:
            reason = "Unknown"
        self.handler.set_status(status, reason)
        self.handler.clear_header("Content-Type")
        for raw_name, raw_value in message.get("headers", []):
            name = bytes(raw_name).lower()
            if name in _HOP_BY_HOP:
                continue
            self.handler.add_header(name.decode("latin-1"), bytes(raw_value).decode("latin-1"))
        self._started = True

    def _is_event_stream(self) -> bool:
        content_type = self.handler._headers.get("Content-Type", "")
        return str(content_type).startswith("text/event-stream")

    async def _flush(self) -> None:
        try:
            await self.handler.flush()
        except StreamClosedError:
            self._disconnected.set()

    async def _finish(self) -> None:
        self._finished = True
        try:
            await self.handler.finish()
        except StreamClosedError:
            pass
        # Tornado drops its close callback once the response is finished, so a later receive() would
        # wait forever: from here on the app is told the exchange is over (as the ASGI spec says).
        self._disconnected.set()
