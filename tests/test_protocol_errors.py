"""Bad input on the wire: each gets its status code, and the server keeps serving."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator

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


# -- Accept --------------------------------------------------------------------------------------------------
# MCP requires clients to send Accept listing application/json and text/event-stream (POST) or text/event-stream
# (GET). The SDK refuses a request without Accept with 406 (kept: the client broke a MUST), and reads the RFC 9110
# wildcards as the types they cover: */* is accepted. (HTTP itself would read a missing Accept as */*.)

MODERN = "2026-07-28"


def modern(method: str, id: object = 1) -> dict[str, object]:
    meta = {"io.modelcontextprotocol/protocolVersion": MODERN, "io.modelcontextprotocol/clientCapabilities": {}}
    return {"jsonrpc": "2.0", "id": id, "method": method, "params": {"_meta": meta}}


def modern_headers(method: str) -> dict[str, str]:
    return {**MCP_HEADERS, "MCP-Protocol-Version": MODERN, "Mcp-Method": method}


@pytest.fixture
def bare(jp_asyncio_loop: asyncio.AbstractEventLoop) -> Iterator[httpx2.AsyncClient]:
    """An HTTP client that sends no Accept header at all (httpx sends */* unless told not to)."""
    client = httpx2.AsyncClient(timeout=20)
    del client.headers["accept"]
    yield client
    jp_asyncio_loop.run_until_complete(client.aclose())


async def test_no_accept_header_is_406_in_both_eras(
    bare: httpx2.AsyncClient, http: httpx2.AsyncClient, mcp_url: str, auth: dict[str, str]
) -> None:
    no_accept = {k: v for k, v in MCP_HEADERS.items() if k != "Accept"}
    headers = {k: v for k, v in (await session_headers(http, mcp_url, auth)).items() if k != "Accept"}
    posts = [
        (rpc("initialize", INIT_PARAMS), {**no_accept, **auth}),
        (rpc("ping", id=2), headers),
        (modern("server/discover"), {**modern_headers("server/discover"), **auth}),
    ]
    for body, request_headers in posts:
        request_headers = {k: v for k, v in request_headers.items() if k != "Accept"}
        response = await bare.post(mcp_url, json=body, headers=request_headers)
        assert "accept" not in {k.lower() for k in response.request.headers}
        assert response.status_code == 406, (body["method"], response.status_code, response.text)
    async with bare.stream("GET", mcp_url, headers=headers) as stream:
        assert stream.status_code == 406
    await assert_still_serving(http, mcp_url, auth)


async def test_wildcard_accept_is_accepted(http: httpx2.AsyncClient, mcp_url: str, auth: dict[str, str]) -> None:
    headers = {**(await session_headers(http, mcp_url, auth)), "Accept": "*/*"}
    initialize = await http.post(
        mcp_url, json=rpc("initialize", INIT_PARAMS), headers={**MCP_HEADERS, **auth, "Accept": "*/*"}
    )
    assert initialize.status_code == 200
    assert (await http.post(mcp_url, json=rpc("ping", id=2), headers=headers)).status_code == 200
    discover = await http.post(
        mcp_url, json=modern("server/discover"), headers={**modern_headers("server/discover"), **auth, "Accept": "*/*"}
    )
    assert discover.status_code == 200, discover.text
    async with http.stream("GET", mcp_url, headers=headers) as stream:
        assert stream.status_code == 200
        assert stream.headers["content-type"].startswith("text/event-stream")


@pytest.mark.parametrize(
    ("method", "accept"), [("POST", "application/*"), ("POST", "text/*"), ("GET", "application/*")]
)
async def test_a_wildcard_that_leaves_out_a_needed_type_is_406(
    http: httpx2.AsyncClient, mcp_url: str, auth: dict[str, str], method: str, accept: str
) -> None:
    headers = {**(await session_headers(http, mcp_url, auth)), "Accept": accept}
    if method == "POST":
        # An edit is answered with a stream: it needs both types. A ping is one JSON body: application/* will do.
        edit = rpc("tools/call", {"name": "batch_update_notebook_cells", "arguments": {}}, id=2)
        response = await http.post(mcp_url, json=edit, headers=headers)
        assert response.status_code == 406
        ping = await http.post(mcp_url, json=rpc("ping", id=3), headers=headers)
        assert ping.status_code == (200 if accept == "application/*" else 406), ping.text
    else:
        async with http.stream("GET", mcp_url, headers=headers) as stream:
            assert stream.status_code == 406


# -- JSON-RPC ids ------------------------------------------------------------------------------------------
# MCP ids are strings or integers. The SDK's handshake-era transport took a request with any other id for a
# notification (202, never answered); the handler refuses it first, in both eras.

BAD_IDS = [
    pytest.param({"a": 1}, "an object", id="object"),
    pytest.param([1], "an array", id="array"),
    pytest.param(1.5, "a non-integer number", id="fraction"),
    pytest.param(True, "a boolean", id="boolean"),
    pytest.param(None, "null", id="null"),
]


def assert_invalid_id(response: httpx2.Response, kind: str) -> None:
    assert response.status_code == 400, response.text
    body = response.json()
    assert body["jsonrpc"] == "2.0" and body["id"] is None, body
    assert body["error"]["code"] == -32600, body
    assert "id must be a string or an integer" in body["error"]["message"] and kind in body["error"]["message"], body


@pytest.mark.parametrize(("bad", "kind"), BAD_IDS)
async def test_an_id_that_is_not_a_string_or_integer_is_400_in_a_legacy_session(
    http: httpx2.AsyncClient, mcp_url: str, auth: dict[str, str], bad: object, kind: str
) -> None:
    headers = await session_headers(http, mcp_url, auth)
    assert_invalid_id(
        await http.post(mcp_url, json={"jsonrpc": "2.0", "id": bad, "method": "ping"}, headers=headers), kind
    )
    initialize = {**rpc("initialize", INIT_PARAMS), "id": bad}
    assert_invalid_id(await http.post(mcp_url, json=initialize, headers={**MCP_HEADERS, **auth}), kind)
    assert (await http.post(mcp_url, json=rpc("ping", id="ok"), headers=headers)).status_code == 200
    await assert_still_serving(http, mcp_url, auth)


@pytest.mark.parametrize(("bad", "kind"), BAD_IDS)
async def test_an_id_that_is_not_a_string_or_integer_is_400_in_the_modern_era(
    http: httpx2.AsyncClient, mcp_url: str, auth: dict[str, str], bad: object, kind: str
) -> None:
    headers = {**modern_headers("server/discover"), **auth}
    assert_invalid_id(await http.post(mcp_url, json=modern("server/discover", id=bad), headers=headers), kind)
    assert (await http.post(mcp_url, json=modern("server/discover", id="ok"), headers=headers)).status_code == 200


async def test_string_and_integer_ids_and_an_error_response_without_id_pass(
    http: httpx2.AsyncClient, mcp_url: str, auth: dict[str, str]
) -> None:
    headers = await session_headers(http, mcp_url, auth)
    for good in ["abc", 0, -7, 2**53 + 1]:
        response = await http.post(mcp_url, json=rpc("ping", id=good), headers=headers)  # type: ignore[arg-type]
        assert response.status_code == 200 and f'"id":{json.dumps(good)}' in response.text.replace(" ", ""), good
    # JSON-RPC lets an error response to a request that could not be read carry "id": null: not ours to refuse.
    error = {"jsonrpc": "2.0", "id": None, "error": {"code": -32700, "message": "Parse error"}}
    assert (await http.post(mcp_url, json=error, headers=headers)).status_code == 202
