"""A refused request keeps its kept-alive connection usable, or says ``Connection: close``.

Refusals before the body is read (429, 401, 403, 415) used to end the response and then drop the connection
without saying so (Tornado closes a connection whose request body was never read, after it already wrote the
headers): a client retrying on 429 over a kept-alive connection met a broken pipe instead of the next answer.
Here one raw HTTP/1.1 connection carries every request, and a dropped connection is a failure unless the last
response announced it.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any
from urllib.parse import urlparse

import pytest

from .conftest import MCP_HEADERS

pytestmark = pytest.mark.usefixtures("jp_serverapp")

MODERN = "2026-07-28"


def discover(id: int) -> bytes:
    meta = {"io.modelcontextprotocol/protocolVersion": MODERN, "io.modelcontextprotocol/clientCapabilities": {}}
    return json.dumps({"jsonrpc": "2.0", "id": id, "method": "server/discover", "params": {"_meta": meta}}).encode()


class Reset(Exception):
    """The server closed the connection without announcing it."""


class Connection:
    """One kept-alive HTTP/1.1 connection, one request at a time."""

    def __init__(self, url: str) -> None:
        parsed = urlparse(url)
        self.host, self.port, self.path = parsed.hostname or "127.0.0.1", parsed.port or 80, parsed.path
        self.reader: asyncio.StreamReader | None = None
        self.writer: asyncio.StreamWriter | None = None
        self.opened = 0

    async def request(
        self, method: str, headers: dict[str, str], body: bytes = b"", *, send_body: bool = True
    ) -> tuple[int, dict[str, str], bytes]:
        if self.writer is None:
            self.reader, self.writer = await asyncio.open_connection(self.host, self.port)
            self.opened += 1
        assert self.reader is not None
        lines = [f"{method} {self.path} HTTP/1.1", f"Host: {self.host}:{self.port}"]
        lines += [f"{k}: {v}" for k, v in headers.items()]
        if (body or method == "POST") and "Content-Length" not in headers:
            lines.append(f"Content-Length: {len(body)}")
        self.writer.write(("\r\n".join(lines) + "\r\n\r\n").encode("latin-1") + (body if send_body else b""))
        try:
            await self.writer.drain()
            head = await asyncio.wait_for(self.reader.readuntil(b"\r\n\r\n"), 20)
        except (asyncio.IncompleteReadError, ConnectionError) as exc:
            raise Reset(f"{method} answered nothing: the connection was dropped ({exc!r})") from None
        status_line, *header_lines = head.decode("latin-1").split("\r\n")
        status = int(status_line.split()[1])
        response_headers = {}
        for line in header_lines:
            if ":" in line:
                name, _, value = line.partition(":")
                response_headers[name.strip().lower()] = value.strip()
        payload = await self._body(response_headers)
        if response_headers.get("connection", "").lower() == "close":
            await self.close()  # announced: a client opens a new connection, as HTTP says
        return status, response_headers, payload

    async def _body(self, headers: dict[str, str]) -> bytes:
        assert self.reader is not None
        if "content-length" in headers:
            return await self.reader.readexactly(int(headers["content-length"]))
        if headers.get("transfer-encoding", "").lower() != "chunked":
            return b""
        body = b""
        while True:
            size = int((await self.reader.readuntil(b"\r\n")).strip(), 16)
            chunk = await self.reader.readexactly(size + 2)
            if size == 0:
                return body
            body += chunk[:-2]

    async def close(self) -> None:
        if self.writer is not None:
            self.writer.close()
            self.reader = self.writer = None


def modern_headers(auth: dict[str, str]) -> dict[str, str]:
    return {**MCP_HEADERS, **auth, "MCP-Protocol-Version": MODERN, "Mcp-Method": "server/discover"}


class TestPastTheRateLimit:
    @pytest.fixture
    def mcp_config(self) -> dict[str, Any]:
        return {"rate_limit": 0.01, "rate_limit_burst": 4}  # no token comes back during the test

    async def test_forty_requests_on_one_connection_get_only_200_or_429(
        self, mcp_url: str, auth: dict[str, str]
    ) -> None:
        connection = Connection(mcp_url)
        statuses = []
        try:
            for n in range(40):
                status, headers, body = await connection.request("POST", modern_headers(auth), discover(n))
                statuses.append(status)
                if status == 429:
                    assert int(headers["retry-after"]) >= 1
                    assert json.loads(body)["message"].startswith("rate limit")
            get_status, _, _ = await connection.request("GET", {**modern_headers(auth), "Accept": "text/event-stream"})
        finally:
            await connection.close()
        assert statuses == [200] * 4 + [429] * 36, statuses
        assert get_status == 429
        assert connection.opened == 1, "every refusal kept the connection"


async def test_refusals_before_the_body_keep_the_connection(mcp_url: str, auth: dict[str, str]) -> None:
    connection = Connection(mcp_url)
    good = modern_headers(auth)
    refused = [
        ({**good, "Authorization": "Bearer wrong"}, 401),
        ({k: v for k, v in good.items() if k != "Authorization"}, 401),
        ({**good, "Origin": "https://elsewhere.example"}, 403),
        ({**good, "Content-Type": "text/plain"}, 415),
    ]
    try:
        for headers, expected in refused:
            status, _, _ = await connection.request("POST", headers, discover(1))
            assert status == expected
            status, _, body = await connection.request("POST", good, discover(2))
            assert status == 200, body
        for method in ("GET", "DELETE"):
            status, _, _ = await connection.request(method, {**good, "Authorization": "Bearer wrong"})
            assert status == 401
    finally:
        await connection.close()
    assert connection.opened == 1


async def test_a_refused_request_with_a_body_past_the_bound_says_connection_close(
    mcp_url: str, auth: dict[str, str]
) -> None:
    """Reading 64 MiB a caller without credentials announced is not worth the connection: it is closed, and
    the response says so first (the client opens a new one instead of meeting a broken pipe)."""
    connection = Connection(mcp_url)
    headers = {**modern_headers(auth), "Authorization": "Bearer wrong", "Content-Length": str(64 << 20)}
    try:
        # The headers alone: the body is never sent, and the answer must not wait for it.
        status, response_headers, _ = await connection.request("POST", headers, b"", send_body=False)
        assert status == 401
        assert response_headers["connection"] == "close"
        status, _, _ = await connection.request("POST", modern_headers(auth), discover(3))
        assert status == 200
    finally:
        await connection.close()
    assert connection.opened == 2
