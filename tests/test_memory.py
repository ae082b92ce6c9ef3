"""Memory that keeps growing (issue 31 item 10): what the server keeps is bounded by bytes, and memory comes back
when sessions end.

Structural, on a real server: the stores hold at most their bounds, and what sessions held goes. The long run and
its RSS figures are ``benchmarks/bench_soak.py``.
"""

from __future__ import annotations

import sys
from typing import Any

import pytest

from .conftest import call_tool, document_room, until

#: Bytes of version lists kept for get_document_history: a few dozen rows (about 1 KB each).
CACHE_BYTES = 30_000


def _size(value: Any, seen: set[int]) -> int:
    """Memory a value takes as CPython sizes it, its containers' items and an object's attributes included; each
    object counted once (``seen``), as strings shared between rows take their memory once."""
    if id(value) in seen:
        return 0
    seen.add(id(value))
    size = sys.getsizeof(value)
    if isinstance(value, dict):
        return size + sum(_size(k, seen) + _size(v, seen) for k, v in value.items())
    if isinstance(value, (list, tuple)):
        return size + sum(_size(v, seen) for v in value)
    attributes = getattr(value, "__dict__", None)
    return size + _size(attributes, seen) if attributes is not None else size


def _kept_rows(cache: Any) -> list[list[Any]]:
    """Each kept document's rows (the cache keeps them with their size, or alone)."""
    return [entry[0] if isinstance(entry, tuple) else entry for entry in cache._rows.values()]


@pytest.fixture
def mcp_config() -> dict[str, Any]:
    return {"enable_test_fixtures": True, "max_history_cache_bytes": CACHE_BYTES}


async def test_the_version_lists_kept_for_history_stay_within_their_bytes(
    extension: Any, mcp_client: Any, jp_root_dir: Any
) -> None:
    paths = [f"notes-{n}.md" for n in range(3)]
    for path in paths:
        (jp_root_dir / path).write_text("start\n")
    totals = []
    async with mcp_client() as client:
        for path in paths:
            for i in range(15):  # each edit is one stored update: one row of the document's version list
                await call_tool(client, "batch_update_document", path=path, operations=[{"content": f"{i}\n"}])
            listed = await call_tool(client, "get_document_history", path=path, limit=1000)
            totals.append(len(await extension.rooms.history_rows(path, "file")))
            assert listed["total"] >= 1
        cache = extension.rooms._metadata
        kept = _kept_rows(cache)
        seen: set[int] = set()
        held = sum(_size(row, seen) for rows in kept for row in rows)
        assert 0 < held <= CACHE_BYTES, (held, totals)
        assert sum(len(rows) for rows in kept) < sum(totals)  # not every document's list could stay
        assert cache.bytes <= CACHE_BYTES
        # A document whose list was dropped is read again from the store, whole: the listing is the same.
        again = await call_tool(client, "get_document_history", path=paths[0], limit=1000)
        assert again["total"] == (await call_tool(client, "get_document_history", path=paths[0], limit=1000))["total"]
        assert cache.bytes <= CACHE_BYTES


async def test_sessions_ending_give_the_memory_they_freed_back(extension: Any, mcp_client: Any) -> None:
    trim = extension.heap_trim
    if not trim.available:
        pytest.skip("this C library has no malloc_trim")
    before = trim.trims
    for _ in range(3):
        async with mcp_client() as client:
            await call_tool(client, "list_notebooks")
    await until(lambda: not extension.actors.live, what="every session's end")
    await until(lambda: trim.trims > before, limit=15, what="a trim after the sessions ended")


async def test_agents_that_left_leave_nothing_in_a_rooms_awareness(
    jp_serverapp: Any, extension: Any, mcp_client: Any, make_notebook: Any
) -> None:
    path = make_notebook("aware.ipynb", count=2)
    extension.presence.forget_after = 0.2  # a browser's echo of the removal comes within milliseconds
    agents: set[int] = set()
    for _ in range(4):  # one synthetic awareness client per session and room
        async with mcp_client() as client:
            cursor = {"line": 1, "column": 1}
            await call_tool(client, "update_cursor_position", document_path=path, cell_id="cell-0", position=cursor)
            room = document_room(jp_serverapp, path)
            agents |= {cid for cid, state in room.awareness.states.items() if state and "agent" in state}
    assert len(agents) == 4
    await until(lambda: not extension.actors.live, what="every session's end")
    await until(lambda: not agents & set(room.awareness.meta), what="the room forgetting the agents that left")
    assert not agents & set(room.awareness.states)
