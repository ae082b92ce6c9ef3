"""A room an agent works in stays open while it uses it, though no browser has it open (issue 25, item 2).

jupyter_server_ydoc closes a room ``document_cleanup_delay`` after its last browser leaves; an agent that
then pauses to think would pay the whole open again (seconds for a big notebook). The rooms adapter keeps
such a room for ``room_idle_timeout`` after the agent's last call (by cancelling the pending cleaner, as a
reconnecting browser does), then saves and closes it itself, and logs it.
"""

from __future__ import annotations

import logging
import time
from typing import Any

import pycrdt
import pytest

from jupyter_pair_mcp.adapters.rooms.keepalive import to_close

from .conftest import call_tool, notebook_json, until, within

FIVE = [{"cell_type": "code", "source": f"x = {i}", "id": f"c{i}"} for i in range(5)]


class TestKeptRooms:
    @pytest.fixture
    def mcp_config(self) -> dict[str, Any]:
        return {"room_idle_timeout": 3.0}

    @pytest.fixture
    def jp_server_config(self, jp_server_config: Any) -> Any:
        jp_server_config["YDocExtension"]["document_cleanup_delay"] = 5.0
        return jp_server_config

    async def test_a_room_the_last_browser_left_stays_open_while_an_agent_uses_it(
        self,
        mcp_client: Any,
        make_notebook: Any,
        collaborator: Any,
        jp_serverapp: Any,
        extension: Any,
        caplog: pytest.LogCaptureFixture,
    ) -> None:
        caplog.set_level(logging.INFO, logger="jupyter_pair_mcp")
        ydoc = jp_serverapp.extension_manager.extension_points["jupyter_server_ydoc"].app
        path = make_notebook("kept.ipynb", FIVE)
        room_id = extension.rooms.room_id(path, "notebook")
        async with mcp_client() as client:
            async with collaborator(path) as human:
                human.type_into(0, 0, "# typed\n")

                async def typed() -> bool:
                    read = await call_tool(client, "get_notebook", path=path, start_index=0, end_index=1)
                    return bool(read["cells"][0]["source"].startswith("# typed"))

                await until(typed, what="the person's typing in the room")
            room = ydoc.ywebsocket_server.rooms[room_id]
            # The browser left: jupyter_server_ydoc starts its cleaner; the adapter cancels it.
            await until(lambda: room.cleaner is not None and room.cleaner.done(), 30, "the cleaner stopped")
            assert room.cleaner.cancelled()
            assert ydoc.ywebsocket_server.rooms.get(room_id) is room
            assert any("Keeping collaboration room" in r.getMessage() for r in caplog.records)
            read = await call_tool(client, "get_notebook", path=path, start_index=0, end_index=1)
            assert read["cells"][0]["source"].startswith("# typed")
            assert ydoc.ywebsocket_server.rooms.get(room_id) is room, "the same room serves the next call"
        # No browser and no agent call for room_idle_timeout: the adapter saves and closes it, and says so.
        await until(
            lambda: any("Closed collaboration room" in r.getMessage() for r in caplog.records), 60, "the room closing"
        )
        assert room_id not in ydoc.ywebsocket_server.rooms


def test_rooms_are_kept_ten_minutes_by_default() -> None:
    from jupyter_pair_mcp.app import JupyterPairMCP

    assert JupyterPairMCP.room_idle_timeout.default_value >= 600


class TestMemoryBound:
    """Kept rooms together hold at most max_kept_rooms_size (encoded): the biggest idle one goes first, logged;
    an agent's next call opens it again, and that re-open is counted."""

    @pytest.fixture
    def mcp_config(self) -> dict[str, Any]:
        return {"room_idle_timeout": 3600, "max_kept_rooms_size": 1}  # the test sets the real bound below

    async def test_the_biggest_kept_room_goes_first(
        self, mcp_client: Any, make_notebook: Any, extension: Any, jp_serverapp: Any, caplog: pytest.LogCaptureFixture
    ) -> None:
        caplog.set_level(logging.INFO, logger="jupyter_pair_mcp")
        rooms = extension.rooms
        server = jp_serverapp.extension_manager.extension_points["jupyter_server_ydoc"].app.ywebsocket_server
        big = make_notebook("big.ipynb", [{**cell, "source": "x" * 20_000} for cell in FIVE])
        small = make_notebook("small.ipynb", FIVE)
        other = make_notebook("other.ipynb", FIVE)
        async with mcp_client() as client:
            for path in (big, small, other):
                await call_tool(client, "get_notebook_info", path=path)
            ids = {path: rooms.room_id(path, "notebook") for path in (big, small, other)}
            sizes = {path: len(server.rooms[ids[path]].ydoc.get_update()) for path in ids}
            assert sizes[big] > 20_000 > sizes[small]
            measure = rooms.kept.sizes.size
            # known without encoding the room
            assert all(sizes[p] <= measure(ids[p], None, server.rooms[ids[p]]) < 2 * sizes[p] for p in ids)
            rooms.kept.max_size = sizes[big] + sizes[small]  # all three do not fit; without the big one they do
            # Used within the last minute: nothing is closed for memory, whatever the bound.
            assert await rooms.evict_idle() == []
            closed = await rooms.evict_idle(now=time.monotonic() + 61)
            assert closed == [ids[big]] and ids[big] not in server.rooms
            assert ids[small] in server.rooms and ids[other] in server.rooms
            assert any("the biggest of the rooms kept" in r.getMessage() for r in caplog.records)
            encodes = []
            get_update = pycrdt.Doc.get_update

            def counted(doc: Any, state: Any = None) -> bytes:
                encodes.append(state)
                return get_update(doc, state)

            with pytest.MonkeyPatch.context() as patch:
                patch.setattr(pycrdt.Doc, "get_update", counted)
                assert await rooms.evict_idle(now=time.monotonic() + 62) == []
            assert rooms.kept.sizes.measured == 0 and encodes == [], "a room is not encoded to measure it"
            # The agent comes back to it: opened again, counted and logged.
            read = await call_tool(client, "get_notebook", path=big, start_index=0, end_index=1)
            assert read["cells"][0]["source"] == "x" * 20_000
            assert rooms.kept.reopened == 1
            assert any("Reopening collaboration room" in r.getMessage() for r in caplog.records)


def test_rooms_to_close_are_the_biggest_idle_ones() -> None:
    sizes = {"a": 50, "b": 300, "c": 100, "d": 400}
    used = {"a": 0.0, "b": 0.0, "c": 0.0, "d": 990.0}  # d was used 10 s ago
    assert to_close(sizes, used, budget=500, now=1000.0) == ["b", "c"]  # d stays though it is the biggest
    assert to_close(sizes, used, budget=10_000, now=1000.0) == []
    assert to_close(sizes, used, budget=0, now=1000.0) == ["b", "c", "a"]


async def test_a_real_server_logs_closing_and_reopening_a_kept_room() -> None:
    """In a Jupyter server of its own (its logging as users have it), the keep-alive's lines reach the server's
    log, and an agent coming back to a room the server closed re-opens it, logged."""
    import httpx2

    from benchmarks.jupyter_process import JupyterProcess, RawSession

    with JupyterProcess("--JupyterPairMCP.room_idle_timeout=0.5") as server:
        (server.root / "kept.ipynb").write_text(notebook_json(FIVE))
        async with httpx2.AsyncClient(headers={"Authorization": f"Bearer {server.token}"}, timeout=60) as http:
            raw = RawSession(http, f"{server.url}/mcp")
            await raw.open()
            await within(raw.call("get_notebook_info", path="kept.ipynb"), 60)
            await until(lambda: "Closed collaboration room" in server.log_text, 60, "the idle room closing")
            read = await within(raw.call("get_notebook", path="kept.ipynb", start_index=0, end_index=1), 60)
            assert read["cells"][0]["source"] == "x = 0"
        assert "Reopening collaboration room" in server.log_text
