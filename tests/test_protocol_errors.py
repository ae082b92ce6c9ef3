"""Bad input on the wire: each gets its status code, and the server keeps serving."""

from __future__ import annotations

import httpx2
import pytest

from .conftest import INIT_PARAMS, LEGACY_VERSION, MCP_HEADERS, open_session, rpc
from .test_security import assert_still_serving

pytestmark = pytest.mark.usefixtures("jp_serverapp")


async def session_headers(http: httpx2.AsyncClient, url: str, auth: dict[str, str]) -> dict[str, str]:
    session = await open_session(http, url, auth)
    return {**MCP_HEADERS, **auth, "mcp-session-id": session, "mcp-protocol-version": LEGACY_VERSION}


async def test_malformed_json(http: httpx2.AsyncClient, mcp_url: str, auth: dict[str, str]) -> None:
    response = await http.post(mcp_url, content=b'{"jsonrpc": "2.0", "method": ', headers={**MCP_HEADERS, **auth})
    assert response.status_code == 400
    assert response.json()["error"]["code"] == -32700
    await assert_still_serving(http, mcp_url, auth)


async def test_malformed_json_in_a_session(http: httpx2.AsyncClient, mcp_url: str, auth: dict[str, str]) -> None:
    headers = await session_headers(http, mcp_url, auth)
    response = await http.post(mcp_url, content=b"not json at all", headers=headers)
    assert response.status_code == 400
    ok = await http.post(mcp_url, json=rpc("ping", id=3), headers=headers)
    assert ok.status_code == 200


async def test_jsonrpc_batch_is_rejected(http: httpx2.AsyncClient, mcp_url: str, auth: dict[str, str]) -> None:
    headers = await session_headers(http, mcp_url, auth)
    response = await http.post(mcp_url, json=[rpc("ping", id=1), rpc("ping", id=2)], headers=headers)
    assert response.status_code == 400
    assert "error" in response.json()
    await assert_still_serving(http, mcp_url, auth)


@pytest.mark.parametrize("content_type", ["text/plain", "application/x-www-form-urlencoded", "multipart/form-data"])
async def test_wrong_content_type(
    http: httpx2.AsyncClient, mcp_url: str, auth: dict[str, str], content_type: str
) -> None:
    headers = {**MCP_HEADERS, **auth, "Content-Type": content_type}
    response = await http.post(mcp_url, content=b'{"jsonrpc":"2.0","id":1,"method":"ping"}', headers=headers)
    assert response.status_code == 415
    await assert_still_serving(http, mcp_url, auth)


@pytest.mark.parametrize("accept", ["text/html", "application/json", "text/event-stream"])
async def test_wrong_accept_on_post(http: httpx2.AsyncClient, mcp_url: str, auth: dict[str, str], accept: str) -> None:
    response = await http.post(
        mcp_url, json=rpc("initialize", INIT_PARAMS), headers={**MCP_HEADERS, **auth, "Accept": accept}
    )
    assert response.status_code == 406
    await assert_still_serving(http, mcp_url, auth)


async def test_wrong_accept_on_get(http: httpx2.AsyncClient, mcp_url: str, auth: dict[str, str]) -> None:
    headers = await session_headers(http, mcp_url, auth)
    response = await http.get(mcp_url, headers={**headers, "Accept": "application/json"})
    assert response.status_code == 406


async def test_unknown_session(http: httpx2.AsyncClient, mcp_url: str, auth: dict[str, str]) -> None:
    headers = {**MCP_HEADERS, **auth, "mcp-session-id": "0" * 32, "mcp-protocol-version": LEGACY_VERSION}
    assert (await http.post(mcp_url, json=rpc("ping"), headers=headers)).status_code == 404
    assert (await http.get(mcp_url, headers={**headers, "Accept": "text/event-stream"})).status_code == 404
    assert (await http.delete(mcp_url, headers=headers)).status_code == 404
    await assert_still_serving(http, mcp_url, auth)


async def test_deleted_session(http: httpx2.AsyncClient, mcp_url: str, auth: dict[str, str], extension: object) -> None:
    headers = await session_headers(http, mcp_url, auth)
    before = extension.runner.manager.session_count  # type: ignore[attr-defined]
    assert (await http.delete(mcp_url, headers=headers)).status_code == 200
    assert extension.runner.manager.session_count == before - 1  # type: ignore[attr-defined]
    assert (await http.post(mcp_url, json=rpc("ping"), headers=headers)).status_code == 404
    await assert_still_serving(http, mcp_url, auth)


async def test_request_before_initialize_needs_a_session(
    http: httpx2.AsyncClient, mcp_url: str, auth: dict[str, str]
) -> None:
    response = await http.post(
        mcp_url, json=rpc("tools/list", {}), headers={**MCP_HEADERS, **auth, "mcp-protocol-version": LEGACY_VERSION}
    )
    assert response.status_code == 400


@pytest.mark.parametrize("version", ["1999-01-01", "not-a-version"])
async def test_unsupported_protocol_version_header(
    http: httpx2.AsyncClient, mcp_url: str, auth: dict[str, str], version: str
) -> None:
    response = await http.post(
        mcp_url, json=rpc("tools/list", {}), headers={**MCP_HEADERS, **auth, "mcp-protocol-version": version}
    )
    assert response.status_code == 400
    assert "error" in response.json()
    await assert_still_serving(http, mcp_url, auth)


async def test_unsupported_version_in_initialize_is_negotiated_down(
    http: httpx2.AsyncClient, mcp_url: str, auth: dict[str, str]
) -> None:
    params = {**INIT_PARAMS, "protocolVersion": "1999-01-01"}
    response = await http.post(mcp_url, json=rpc("initialize", params), headers={**MCP_HEADERS, **auth})
    assert response.status_code == 200
    assert '"protocolVersion":"1999-01-01"' not in response.text.replace(" ", "")


async def test_oversized_body_is_refused_before_it_is_read(
    http: httpx2.AsyncClient, mcp_url: str, auth: dict[str, str]
) -> None:
    body = b'{"jsonrpc":"2.0","id":1,"method":"ping","params":{"pad":"' + b"x" * (5 * 1024 * 1024) + b'"}}'
    response = await http.post(mcp_url, content=body, headers={**MCP_HEADERS, **auth})
    assert response.status_code == 413
    await assert_still_serving(http, mcp_url, auth)


async def test_oversized_chunked_body_is_refused(http: httpx2.AsyncClient, mcp_url: str, auth: dict[str, str]) -> None:
    async def chunks():  # no Content-Length: the limit is enforced while streaming
        for _ in range(6):
            yield b"x" * (1024 * 1024)

    response = await http.post(mcp_url, content=chunks(), headers={**MCP_HEADERS, **auth})
    assert response.status_code == 413
    await assert_still_serving(http, mcp_url, auth)


async def test_body_just_under_the_limit_reaches_the_sdk(
    http: httpx2.AsyncClient, mcp_url: str, auth: dict[str, str]
) -> None:
    headers = await session_headers(http, mcp_url, auth)
    pad = "x" * (3 * 1024 * 1024)
    response = await http.post(mcp_url, json=rpc("ping", {"_meta": {"pad": pad}}, id=9), headers=headers)
    assert response.status_code == 200


@pytest.mark.parametrize("method", ["PUT", "PATCH"])
async def test_unsupported_http_methods(
    http: httpx2.AsyncClient, mcp_url: str, auth: dict[str, str], method: str
) -> None:
    response = await http.request(method, mcp_url, json=rpc("ping"), headers={**MCP_HEADERS, **auth})
    assert response.status_code == 405
