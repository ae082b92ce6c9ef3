"""Resuming a dropped SSE stream with Last-Event-ID, and never across sessions."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import httpx2
import pytest

from .conftest import LEGACY_VERSION, MCP_HEADERS, open_session, rpc, until, within

pytestmark = pytest.mark.usefixtures("jp_serverapp")

COUNT = 8


def progress_call(request_id: int) -> dict[str, Any]:
    return rpc(
        "tools/call",
        {
            "name": "test_progress_stream",
            "arguments": {"count": COUNT, "interval": 0.15},
            "_meta": {"progressToken": "p"},
        },
        id=request_id,
    )


async def read_events(response: httpx2.Response, until: Any, limit: float = 10) -> list[tuple[str | None, Any]]:
    """Read SSE events from a streaming response until ``until(events)`` holds (or time runs out)."""
    events: list[tuple[str | None, Any]] = []
    event_id: str | None = None
    data: list[str] = []

    async def consume() -> None:
        nonlocal event_id, data
        async for line in response.aiter_lines():
            if line.startswith("id:"):
                event_id = line[3:].strip()
            elif line.startswith("data:"):
                data.append(line[5:].strip())
            elif line == "":
                if event_id is not None or data:
                    payload = "".join(data).strip()
                    events.append((event_id, json.loads(payload) if payload else None))
                    if until(events):
                        return
                event_id, data = None, []

    try:
        await asyncio.wait_for(consume(), limit)
    except TimeoutError:
        pass
    return events


def progress_steps(events: list[tuple[str | None, Any]]) -> list[int]:
    return [
        int(msg["params"]["progress"]) for _, msg in events if msg and msg.get("method") == "notifications/progress"
    ]


def has_result(request_id: int) -> Any:
    return lambda events: any(msg and msg.get("id") == request_id and "result" in msg for _, msg in events)


async def test_dropped_stream_resumes_with_every_missed_event(
    http: httpx2.AsyncClient, mcp_url: str, auth: dict[str, str], extension: Any
) -> None:
    session = await open_session(http, mcp_url, auth)
    headers = {**MCP_HEADERS, **auth, "mcp-session-id": session, "mcp-protocol-version": LEGACY_VERSION}

    async with http.stream("POST", mcp_url, json=progress_call(11), headers=headers) as response:
        assert response.status_code == 200
        assert response.headers["content-type"].startswith("text/event-stream")
        first = await read_events(response, lambda ev: len(progress_steps(ev)) >= 2)
        store = extension.event_store  # built by the first request
        seen_events = store.event_count  # any stored from now on, this client never reads
    # The stream is now dropped mid-call (the client closed the connection).
    assert first[0][1] is None and first[0][0], "a priming event with an id comes first"
    seen = progress_steps(first)
    assert seen == [1, 2]
    last_id = [eid for eid, msg in first if eid][-1]

    await until(lambda: store.event_count > seen_events, what="the tool going on, its events stored meanwhile")
    resume = {**headers, "Accept": "text/event-stream", "Last-Event-ID": last_id}
    async with http.stream("GET", mcp_url, headers=resume) as response:
        assert response.status_code == 200
        rest = await read_events(response, has_result(11))
    steps = seen + progress_steps(rest)
    assert steps == list(range(1, COUNT + 1)), "every progress event exactly once, in order"
    result = next(msg for _, msg in rest if msg and msg.get("id") == 11)
    assert result["result"]["structuredContent"] == {"message": f"sent {COUNT} progress notifications"}


async def test_another_sessions_event_id_replays_nothing(
    http: httpx2.AsyncClient, mcp_url: str, auth: dict[str, str]
) -> None:
    """Same credential, other session: the first session's Last-Event-ID yields none of its events."""
    first = await open_session(http, mcp_url, auth)
    headers_a = {**MCP_HEADERS, **auth, "mcp-session-id": first, "mcp-protocol-version": LEGACY_VERSION}
    async with http.stream("POST", mcp_url, json=progress_call(1), headers=headers_a) as response:
        events_a = await read_events(response, has_result(1))
    assert has_result(1)(events_a)
    ids_a = [eid for eid, _ in events_a if eid]

    second = await open_session(http, mcp_url, auth)
    headers_b = {**headers_a, "mcp-session-id": second, "Accept": "text/event-stream"}
    for event_id in (ids_a[0], ids_a[-1]):
        async with http.stream("GET", mcp_url, headers={**headers_b, "Last-Event-ID": event_id}) as response:
            leaked = await read_events(response, lambda ev: bool(ev), limit=1.0)
        assert [msg for _, msg in leaked if msg] == []

    # Forged ids (another scope, garbage) replay nothing either.
    for forged in ("deadbeef.0.0", "x", ids_a[0].replace(ids_a[0].split(".")[0], "0" * 16)):
        async with http.stream("GET", mcp_url, headers={**headers_b, "Last-Event-ID": forged}) as response:
            leaked = await read_events(response, lambda ev: bool(ev), limit=0.5)
        assert [msg for _, msg in leaked if msg] == []


async def test_sdk_client_resumes_a_stream_the_server_closes(mcp_client: Any) -> None:
    """SEP-1699 polling: the server closes the POST stream mid-call; the SDK reconnects and gets the result."""
    async with mcp_client() as client:
        result = await within(client.call_tool("test_reconnection", {}))
    assert not result.is_error
    assert result.structured_content == {"message": "Reconnection test completed successfully"}


async def test_sdk_client_receives_progress(mcp_client: Any) -> None:
    received: list[float] = []

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        received.append(progress)

    async with mcp_client() as client:
        result = await within(
            client.call_tool("test_progress_stream", {"count": 4, "interval": 0.01}, progress_callback=on_progress)
        )
    assert not result.is_error
    assert received == [1, 2, 3, 4]


async def test_session_end_releases_its_events(
    http: httpx2.AsyncClient, mcp_url: str, auth: dict[str, str], extension: Any
) -> None:
    session = await open_session(http, mcp_url, auth)
    store = extension.event_store  # the endpoint is built by the first request
    headers = {**MCP_HEADERS, **auth, "mcp-session-id": session, "mcp-protocol-version": LEGACY_VERSION}
    async with http.stream("POST", mcp_url, json=progress_call(3), headers=headers) as response:
        await read_events(response, has_result(3))
    assert store.stream_count >= 1
    before = store.stream_count
    assert (await http.delete(mcp_url, headers=headers)).status_code == 200
    await until(lambda: store.stream_count < before, what="the ended session's streams being dropped")


async def test_a_big_read_is_delivered_but_not_kept_for_replay(
    http: httpx2.AsyncClient, mcp_url: str, auth: dict[str, str], jp_root_dir: Any, extension: Any
) -> None:
    """Events are bounded by bytes: a result over event_store_max_event_bytes (here 256 KiB) reaches the client whole,
    is not held in memory, and a client resuming past it is told so instead of waiting for it forever."""
    text = "0123456789abcdef" * (1_000_000 // 16)
    (jp_root_dir / "big.txt").write_text(text)
    session = await open_session(http, mcp_url, auth)
    extension.event_store.max_event_bytes = 256 * 1024  # built by the first request
    headers = {**MCP_HEADERS, **auth, "mcp-session-id": session, "mcp-protocol-version": LEGACY_VERSION}
    # Asking for progress makes a read stream (SSE, with events to replay); without, it is one JSON body.
    call = rpc(
        "tools/call",
        {
            "name": "get_document",
            "arguments": {"path": "big.txt", "max_content_length": 1_000_000},
            "_meta": {"progressToken": "big"},
        },
        id=21,
    )
    async with http.stream("POST", mcp_url, json=call, headers=headers) as response:
        events = await read_events(response, has_result(21), limit=60)
    result = next(msg for _, msg in events if msg and msg.get("id") == 21)
    assert result["result"]["structuredContent"]["content"] == text
    store = extension.event_store
    assert store.byte_count < 256 * 1024
    priming = events[0][0]
    resume = {**headers, "Accept": "text/event-stream", "Last-Event-ID": priming}
    async with http.stream("GET", mcp_url, headers=resume) as response:
        replayed = await read_events(response, lambda ev: any(m and m.get("id") == 21 for _, m in ev), limit=10)
    stand_in = next(msg for _, msg in replayed if msg and msg.get("id") == 21)
    assert "not kept for replay" in stand_in["error"]["message"]
