"""A loopback reverse proxy that adds the Jupyter token header to every request.

The MCP conformance CLI takes only a URL: some of its scenarios drop the query string (so
``?token=`` is lost) and none can set headers. This proxy forwards everything else untouched —
method, path, body, Host and Origin (so DNS-rebinding checks reach Jupyter as sent) — and streams
the response back chunk by chunk so SSE behaves as it would direct.
"""

from __future__ import annotations

import asyncio
import contextlib

import httpx2
from tornado import httpserver, netutil, web

_HOP = {"connection", "keep-alive", "transfer-encoding", "content-length", "te", "trailer", "upgrade"}


class _Forward(web.RequestHandler):
    SUPPORTED_METHODS = ("GET", "POST", "DELETE", "PUT", "PATCH", "OPTIONS", "HEAD")

    def initialize(self, target: str, authorization: str, client: httpx2.AsyncClient) -> None:
        self.target = target
        self.authorization = authorization
        self.client = client
        self._task: asyncio.Task[None] | None = None

    def set_default_headers(self) -> None:
        self.clear_header("Content-Type")
        self.clear_header("Server")

    def on_connection_close(self) -> None:
        if self._task is not None:
            self._task.cancel()

    async def _forward(self) -> None:
        headers = [(k, v) for k, v in self.request.headers.get_all() if k.lower() not in _HOP]
        headers.append(("Authorization", self.authorization))
        url = self.target + self.request.uri
        async with self.client.stream(
            self.request.method or "GET", url, headers=headers, content=self.request.body or None
        ) as response:
            self.set_status(response.status_code, response.reason_phrase or "Unknown")
            for name, value in response.headers.multi_items():
                if name.lower() not in _HOP:
                    self.add_header(name, value)
            await self.flush()
            async for chunk in response.aiter_raw():
                self.write(chunk)
                await self.flush()
        self.finish()

    async def _handle(self) -> None:
        self._task = asyncio.ensure_future(self._forward())
        with contextlib.suppress(asyncio.CancelledError):
            await self._task

    get = post = delete = put = patch = options = head = _handle  # type: ignore[assignment]


class AuthProxy:
    """Listens on every loopback address of ``localhost`` (one port) and forwards to ``target``."""

    def __init__(self, target: str, token: str) -> None:
        self.client = httpx2.AsyncClient(timeout=httpx2.Timeout(60, read=None))
        app = web.Application(
            [
                (
                    r"/.*",
                    _Forward,
                    {"target": target.rstrip("/"), "authorization": f"token {token}", "client": self.client},
                )
            ]
        )
        self.server = httpserver.HTTPServer(app)
        sockets = netutil.bind_sockets(0, "localhost")
        self.port: int = sockets[0].getsockname()[1]
        self.server.add_sockets(sockets)

    async def close(self) -> None:
        self.server.stop()
        await self.client.aclose()

    def url(self, path: str) -> str:
        return f"http://localhost:{self.port}{path}"
