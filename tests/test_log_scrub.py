"""No credential reaches a log line about the endpoint: tokens in the query, headers, cookies, ``_xsrf``.

Jupyter's own access log scrubs ``token=`` from URIs, but Tornado's summary of a failed request
(``403 POST /mcp?token=...``, logged by ``log_exception`` for every HTTPError with a log message) and
the ``Uncaught exception`` line do not. Every line is captured here: the root logger at DEBUG (where
Tornado's and Jupyter's loggers propagate) and the ServerApp's own logger.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from typing import Any

import httpx2
import pytest
from tornado import httpserver, netutil, web

from jupyter_pair_mcp.transport.scrub import ScrubbedLogs, scrub_uri

from .conftest import INIT_PARAMS, LEGACY_VERSION, MCP_HEADERS, open_session, rpc

pytestmark = pytest.mark.usefixtures("jp_serverapp")


_CLIENT = ("httpx", "httpcore")


class _Everything(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        if not record.name.startswith(_CLIENT):  # the test's own HTTP client logs the URLs it requests
            self.lines.append(f"{record.name}: {record.getMessage()} {record.args!r} {record.exc_text or ''}")


@pytest.fixture
def logged(jp_serverapp: Any, caplog: pytest.LogCaptureFixture) -> Iterator[list[str]]:
    """Every log line the server writes during the test (root at DEBUG, the ServerApp's logger, the SDK's)."""
    caplog.set_level(logging.DEBUG)
    handler = _Everything()
    loggers = {logging.getLogger(), jp_serverapp.log, logging.getLogger("tornado.access"), logging.getLogger("mcp")}
    levels = {lg: lg.level for lg in loggers}
    for lg in loggers:
        lg.addHandler(handler)
        lg.setLevel(logging.DEBUG)
    yield handler.lines
    for lg in loggers:
        lg.removeHandler(handler)
        lg.setLevel(levels[lg])
    handler.lines.extend(
        f"{r.name}: {r.getMessage()} {r.args!r}" for r in caplog.records if not r.name.startswith(_CLIENT)
    )


async def test_tokens_in_the_query_never_reach_a_log(
    http: httpx2.AsyncClient, mcp_url: str, token: str, logged: list[str]
) -> None:
    wrong = "f00dfeedcafe0123456789wrongtoken"
    ok = await http.post(f"{mcp_url}?token={token}", json=rpc("initialize", INIT_PARAMS), headers=MCP_HEADERS)
    assert ok.status_code == 200
    session = ok.headers["mcp-session-id"]
    refused = await http.post(f"{mcp_url}?token={wrong}", json=rpc("initialize", INIT_PARAMS), headers=MCP_HEADERS)
    assert refused.status_code in (401, 403)
    for query in (f"token={token}", f"access_token={token}&_xsrf={token}"):
        bad_body = await http.post(
            f"{mcp_url}?{query}",
            content=b'{"jsonrpc": "2.0", "id": 1, "id": 2, "method": "ping"}',
            headers=MCP_HEADERS,
        )
        assert 400 <= bad_body.status_code < 500
    media = await http.post(f"{mcp_url}?token={token}", content=b"x", headers={"Content-Type": "text/plain"})
    assert media.status_code == 415
    stale = await http.post(
        f"{mcp_url}?token={token}",
        json=rpc("ping", id=3),
        headers={**MCP_HEADERS, "mcp-session-id": "no-such-session", "mcp-protocol-version": LEGACY_VERSION},
    )
    assert stale.status_code in (400, 404)
    del session
    text = "\n".join(logged)
    assert "/mcp" in text  # the failures were logged...
    assert token not in text, [line for line in logged if token in line]  # ...without the credential
    assert wrong not in text


async def test_headers_and_cookies_never_reach_a_log(
    http: httpx2.AsyncClient, mcp_url: str, auth: dict[str, str], token: str, logged: list[str]
) -> None:
    session = await open_session(http, mcp_url, auth)
    cookie = {"Cookie": f"_xsrf={token}; username-x={token}", "X-XSRFToken": token}
    refused = await http.post(
        mcp_url, json=rpc("ping", id=2), headers={**MCP_HEADERS, **cookie, "Authorization": f"Bearer {token}x"}
    )
    assert refused.status_code in (401, 403)
    odd = await http.delete(mcp_url, headers={**auth, "mcp-session-id": session + "x"})
    assert 400 <= odd.status_code < 500
    text = "\n".join(logged)
    assert token not in text


async def test_the_panel_api_scrubs_too(
    http: httpx2.AsyncClient, server_root: str, jp_base_url: str, token: str, logged: list[str]
) -> None:
    url = f"{server_root}{jp_base_url}api/mcp/undo"
    wrong = token[::-1]
    refused = await http.post(f"{url}?token={wrong}", content=b"{}", headers={"Content-Type": "text/plain"})
    assert 400 <= refused.status_code < 500
    assert "api/mcp/undo" in "\n".join(logged)
    assert wrong not in "\n".join(logged)


@pytest.mark.parametrize(
    ("uri", "logged_as"),
    [
        ("/mcp", "/mcp"),
        ("/mcp?token=abc", "/mcp?token=[secret]"),
        ("/u/a/mcp?x=1&access_token=abc&_xsrf=d&flag", "/u/a/mcp?x=[secret]&access_token=[secret]&_xsrf=[secret]&flag"),
        ("/mcp?", "/mcp?"),
    ],
)
def test_scrub_uri_keeps_the_keys_and_drops_every_value(uri: str, logged_as: str) -> None:
    assert scrub_uri(uri) == logged_as


class _Broken(ScrubbedLogs):
    async def get(self) -> None:
        raise RuntimeError("boom")


async def test_an_uncaught_error_is_logged_without_the_query(
    http: httpx2.AsyncClient, token: str, logged: list[str]
) -> None:
    """Tornado's own line would add ``repr(request)``, the raw URI with it (no /mcp request fails this way)."""
    sockets = netutil.bind_sockets(0, "127.0.0.1")
    server = httpserver.HTTPServer(web.Application([(r"/mcp", _Broken)]))
    server.add_sockets(sockets)
    try:
        port = sockets[0].getsockname()[1]
        response = await http.get(f"http://127.0.0.1:{port}/mcp?token={token}")
        assert response.status_code == 500
    finally:
        server.stop()
    text = "\n".join(logged)
    assert "Uncaught exception GET /mcp?token=[secret]" in text
    assert token not in text
