"""History, restore and undo on live rooms, with a real collaborator typing on the websocket."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import pytest

from .conftest import autosaved, call_tool, document_room, received, stored, tool_error, until

pytestmark = pytest.mark.usefixtures("jp_serverapp")

THREE = [{"cell_type": "code", "source": f"x = {i}", "id": f"c{i}"} for i in range(3)]


async def update_cell(client: Any, path: str, cell_id: str, content: str) -> Any:
    return await call_tool(
        client, "batch_update_notebook_cells", path=path, exec=False, updates=[{"cell_id": cell_id, "content": content}]
    )


async def in_history(serverapp: Any, human: Any) -> None:
    """Until the server's room has what the person typed and the room's history has stored it."""
    await received(serverapp, human)
    await stored(serverapp, human.path, "notebook" if human.kind == "notebook" else "file")


async def history(client: Any, path: str, limit: int = 50) -> list[dict[str, Any]]:
    return list((await call_tool(client, "get_document_history", path=path, limit=limit))["versions"])


async def test_history_lists_agent_and_human_versions_in_order(
    mcp_client: Any, make_notebook: Any, collaborator: Any, jp_serverapp: Any
) -> None:
    path = make_notebook("hist.ipynb", THREE)
    async with collaborator(path) as human, mcp_client() as client:
        await update_cell(client, path, "c0", "x = 'agent'")
        await human.wait_until(lambda: human.sources()[0] == "x = 'agent'")
        await human.set_awareness({"user": {"username": "alice", "display_name": "Alice Doe"}, "autosave": True})
        room = document_room(jp_serverapp, path)
        await until(
            lambda: any((s or {}).get("user", {}).get("username") == "alice" for s in room.awareness.states.values())
        )
        human.type_into(2, 4, "40 + ")
        await in_history(jp_serverapp, human)
        await call_tool(
            client, "batch_insert_notebook_cells", path=path, exec=False, cells=[{"content": "a"}, {"content": "b"}]
        )
        versions = await history(client, path)
        newest = versions[0]
        assert newest["source"] == "agent"
        assert newest["summary"].startswith("inserted 2 cells")
        assert newest["author"]  # the client's name
        assert versions[1]["source"] == "user"
        assert versions[1]["author"] == "Alice Doe"  # from the room's awareness
        assert versions[1]["summary"] == "1 change by Alice Doe"
        assert versions[2]["source"] == "agent"
        assert versions[2]["summary"] == "updated cell c0"
        assert versions[-1]["summary"] == "content as loaded from the file"
        ids = [int(v["version_id"]) for v in versions]
        assert ids == sorted(ids, reverse=True)

        # an old version reads back as it was
        old = await call_tool(client, "get_document_version", path=path, version_id=versions[2]["version_id"])
        assert [c["source"] for c in old["cells"]] == ["x = 'agent'", "x = 1", "x = 2"]
        assert old["source"] == "agent"
        capped = await call_tool(
            client, "get_document_version", path=path, version_id=versions[2]["version_id"], max_content_length=5
        )
        assert capped["truncated"] is True
        assert sum(len(c["source"]) for c in capped["cells"]) == 5
        sliced = await call_tool(
            client, "get_document_version", path=path, version_id=versions[2]["version_id"], start_index=1, end_index=2
        )
        assert [c["id"] for c in sliced["cells"]] == ["c1"]
        assert sliced["cell_count"] == 3

        message = await tool_error(client, "get_document_version", path=path, version_id="999999")
        assert "get_document_history" in message
        message = await tool_error(client, "get_document_version", path=path, version_id="latest")
        assert "not a version id" in message


async def test_restore_brings_back_old_content_and_reports_reverted_human_edits(
    mcp_client: Any, make_notebook: Any, collaborator: Any, jp_serverapp: Any
) -> None:
    path = make_notebook("restore.ipynb", THREE)
    async with collaborator(path) as human, mcp_client() as client:
        await update_cell(client, path, "c1", "x = 'good'")
        good = (await history(client, path))[0]["version_id"]
        await update_cell(client, path, "c1", "x = 'bad'")
        await call_tool(client, "batch_delete_notebook_cells", path=path, cell_ids=["c0"])
        await human.wait_until(lambda: human.ids() == ["c1", "c2"])
        human.type_into(1, 0, "# human\n")
        await in_history(jp_serverapp, human)
        result = await call_tool(client, "restore_document_version", path=path, version_id=good)
        await human.wait_until(lambda: human.ids() == ["c0", "c1", "c2"])
        assert human.sources() == ["x = 0", "x = 'good'", "x = 2"]
        assert result["user_edits_reverted"] == ["c2"]
        assert "c2" in result["note"]
        assert result["version_id"] is not None
        versions = await history(client, path)
        assert versions[0]["source"] == "restore"
        assert versions[0]["version_id"] == result["version_id"]
        # restoring is itself a version: going back to before it returns the human's line
        before = versions[1]["version_id"]
        await call_tool(client, "restore_document_version", path=path, version_id=before)
        await human.wait_until(lambda: human.sources() == ["x = 'bad'", "# human\nx = 2"])


async def test_restore_keeps_concurrent_human_typing_elsewhere(
    mcp_client: Any, make_notebook: Any, collaborator: Any
) -> None:
    path = make_notebook("concurrent.ipynb", THREE)
    async with collaborator(path) as human, mcp_client() as client:
        start = (await history(client, path))[0]["version_id"]
        await update_cell(client, path, "c0", "x = 'agent'")
        await human.wait_until(lambda: human.sources()[0] == "x = 'agent'")
        human.go_offline()
        human.type_into(2, 0, "y = 1\n")  # concurrent with the restore: not on the server yet
        await call_tool(client, "restore_document_version", path=path, version_id=start)
        await human.go_online()
        await human.wait_until(lambda: human.sources() == ["x = 0", "x = 1", "y = 1\nx = 2"])
        agent_view = await call_tool(client, "get_notebook", path=path)
        assert [c["source"] for c in agent_view["cells"]] == ["x = 0", "x = 1", "y = 1\nx = 2"]


async def test_undo_takes_back_only_the_agents_own_edits(
    mcp_client: Any, make_notebook: Any, collaborator: Any, jp_serverapp: Any
) -> None:
    path = make_notebook("undo.ipynb", THREE)
    async with collaborator(path) as human, mcp_client() as client, mcp_client() as other:
        await update_cell(client, path, "c0", "x = 'one'")
        await update_cell(other, path, "c1", "x = 'other agent'")
        inserted = await call_tool(
            client, "batch_insert_notebook_cells", path=path, exec=False, cells=[{"content": "new"}]
        )
        new_id = inserted["inserted"][0]["id"]
        await human.wait_until(lambda: len(human.ids()) == 4)
        human.type_into(2, 0, "# typed later\n")
        await in_history(jp_serverapp, human)
        result = await call_tool(client, "undo_agent_edits", path=path, count=2)
        assert result["undone"] == [f"inserted cell {new_id} at 3", "updated cell c0"]
        assert result["removed_cells"] == [new_id]
        assert result["remaining"] == 0
        await human.wait_until(lambda: len(human.ids()) == 3)
        assert human.sources() == ["x = 0", "x = 'other agent'", "# typed later\nx = 2"]
        message = await tool_error(client, "undo_agent_edits", path=path)
        assert "nothing of yours to undo" in message
        versions = await history(client, path)
        assert versions[0]["summary"].startswith("undid 2 edits")
        # the other agent's edit is still its own to undo
        await call_tool(other, "undo_agent_edits", path=path)
        await human.wait_until(lambda: human.sources()[1] == "x = 1")


async def test_text_document_history_restore_and_undo(
    mcp_client: Any, jp_root_dir: Any, collaborator: Any, jp_serverapp: Any
) -> None:
    from pathlib import Path

    Path(jp_root_dir, "notes.md").write_text("alpha\n")
    async with collaborator("notes.md", "file") as human, mcp_client() as client:
        await call_tool(client, "batch_insert_text", path="notes.md", operations=[{"text": "beta\n", "position": 6}])
        first = (await history(client, "notes.md"))[0]
        assert first["source"] == "agent"
        await call_tool(client, "replace_document_text", path="notes.md", old_text="beta", new_text="gamma")
        await human.wait_until(lambda: human.text() == "alpha\ngamma\n")
        human.type_text(0, "# ")
        await in_history(jp_serverapp, human)
        await call_tool(client, "undo_agent_edits", path="notes.md")
        await human.wait_until(lambda: human.text() == "# alpha\nbeta\n")
        old = await call_tool(client, "get_document_version", path="notes.md", version_id=first["version_id"])
        assert old["content"] == "alpha\nbeta\n"
        result = await call_tool(client, "restore_document_version", path="notes.md", version_id=first["version_id"])
        assert result["user_edits_reverted"] == ["text"]
        await human.wait_until(lambda: human.text() == "alpha\nbeta\n")


async def test_fork_edits_are_invisible_until_merge_and_both_sides_survive(
    mcp_client: Any, make_notebook: Any, collaborator: Any, jp_serverapp: Any
) -> None:
    path = make_notebook("fork.ipynb", THREE)
    async with collaborator(path) as human, mcp_client() as client:
        fork = await call_tool(client, "fork_document", path=path, title="draft")
        fork_id = fork["fork_id"]
        await call_tool(
            client,
            "batch_update_notebook_cells",
            path=path,
            fork_id=fork_id,
            updates=[{"cell_id": "c0", "content": "x = 'drafted'"}],
        )
        inserted = await call_tool(
            client, "batch_insert_notebook_cells", path=path, fork_id=fork_id, cells=[{"content": "print('new')"}]
        )
        assert inserted["execution_skipped"].startswith("edits in a fork are not run")
        in_fork = await call_tool(client, "get_notebook", path=path, fork_id=fork_id)
        assert [c["source"] for c in in_fork["cells"]] == ["x = 'drafted'", "x = 1", "x = 2", "print('new')"]
        # the room never saw the draft; meanwhile a person edits another cell
        human.type_into(2, 0, "# mine\n")
        await in_history(jp_serverapp, human)
        assert human.sources() == ["x = 0", "x = 1", "# mine\nx = 2"]
        live = await call_tool(client, "get_notebook", path=path)
        assert [c["source"] for c in live["cells"]] == ["x = 0", "x = 1", "# mine\nx = 2"]

        merged = await call_tool(client, "merge_document_fork", path=path, fork_id=fork_id)
        assert merged["merged"] is True
        assert len(merged["edits"]) == 2
        await human.wait_until(lambda: len(human.ids()) == 4)
        assert human.sources() == ["x = 'drafted'", "x = 1", "# mine\nx = 2", "print('new')"]
        versions = await history(client, path)
        assert versions[0]["summary"].startswith("merged fork 'draft'")
        # merged and discarded: the fork is gone, with a clear message
        message = await tool_error(client, "get_notebook", path=path, fork_id=fork_id)
        assert "create one with fork_document" in message
        # the merge is one edit of this session: undoing it keeps what the person typed
        undone = await call_tool(client, "undo_agent_edits", path=path)
        assert undone["undone"][0].startswith("merged fork 'draft'")
        await human.wait_until(lambda: len(human.ids()) == 3)
        assert human.sources() == ["x = 0", "x = 1", "# mine\nx = 2"]


async def test_synchronized_fork_follows_the_live_document_and_discard(
    mcp_client: Any, jp_root_dir: Any, collaborator: Any, jp_serverapp: Any
) -> None:
    from pathlib import Path

    Path(jp_root_dir, "draft.txt").write_text("one\n")
    async with collaborator("draft.txt", "file") as human, mcp_client() as client:
        fork = await call_tool(client, "fork_document", path="draft.txt", synchronize=True)
        human.type_text(0, "zero\n")
        await in_history(jp_serverapp, human)
        seen = await call_tool(client, "get_document", path="draft.txt", fork_id=fork["fork_id"])
        assert seen["content"] == "zero\none\n"
        await call_tool(
            client,
            "batch_insert_text",
            path="draft.txt",
            fork_id=fork["fork_id"],
            operations=[{"text": "two\n", "position": 9}],
        )
        # A live edit after it reaches the person after anything the fork edit could have sent there.
        await call_tool(client, "batch_insert_text", path="draft.txt", operations=[{"text": "three\n", "position": 9}])
        await human.wait_until(lambda: "three" in human.text(), limit=30)
        assert human.text() == "zero\none\nthree\n"
        listed = await call_tool(client, "list_document_forks", path="draft.txt")
        assert [f["fork_id"] for f in listed["forks"]] == [fork["fork_id"]]
        await call_tool(client, "discard_document_fork", path="draft.txt", fork_id=fork["fork_id"])
        assert (await call_tool(client, "list_document_forks"))["forks"] == []
        assert "no fork" in await tool_error(client, "merge_document_fork", path="draft.txt", fork_id=fork["fork_id"])
        assert human.text() == "zero\none\nthree\n"


class Clock:
    """A clock a test moves by hand."""

    def __init__(self, now: float = 0.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


class TestBounds:
    @pytest.fixture
    def mcp_config(self) -> dict[str, Any]:
        return {"max_history_updates": 40, "max_forks": 3, "fork_ttl": 0.6}

    async def test_history_and_forks_stay_within_their_bounds(
        self, mcp_client: Any, make_notebook: Any, jp_serverapp: Any
    ) -> None:
        path = make_notebook("stress.ipynb", THREE)
        async with mcp_client() as client:
            for n in range(120):
                await update_cell(client, path, "c0", f"x = {n}")
                if n in (10, 60):  # listings in between: the cached rows must be re-read after each squash
                    listed = await call_tool(client, "get_document_history", path=path, limit=1000)
                    assert listed["total"] <= 40
            # The room's save after the last edit adds rows (its saved flag), which can push the history
            # past its bound and squash the versions listed here: list only once they are stored.
            await autosaved(jp_serverapp, path)
            await stored(jp_serverapp, path)
            result = await call_tool(client, "get_document_history", path=path, limit=1000)
            assert result["total"] <= 40
            oldest = result["versions"][-1]
            assert oldest["summary"] == "older history (squashed)"
            assert result["versions"][0]["summary"] == "updated cell c0"
            # the squashed base still replays: the oldest version holds a consistent notebook
            old = await call_tool(client, "get_document_version", path=path, version_id=oldest["version_id"])
            assert [c["id"] for c in old["cells"]] == ["c0", "c1", "c2"]
            second = result["versions"][-2]
            restored = await call_tool(client, "restore_document_version", path=path, version_id=second["version_id"])
            assert restored["changes"]

            # The forks' idle age is read on a clock the test moves: however slow this machine is, no fork
            # expires before the test says the TTL has passed.
            service = jp_serverapp.extension_manager.extension_points["jupyter_pair_mcp"].app.forks
            clock = service.clock = Clock(time.monotonic())
            forks = [await call_tool(client, "fork_document", path=path) for _ in range(3)]
            message = await tool_error(client, "fork_document", path=path)
            assert "merge or discard" in message
            clock.now += 0.5  # within the TTL: a use keeps a fork
            await call_tool(client, "get_notebook", path=path, fork_id=forks[2]["fork_id"])
            clock.now += 0.5  # past the TTL of the two unused ones only
            await until(lambda: service.count == 1, what="the sweeper discarding the unused forks")
            clock.now += 1.0
            await until(lambda: service.count == 0, what="the sweeper discarding the last fork")
            assert (await call_tool(client, "list_document_forks"))["forks"] == []
            assert "expired" in await tool_error(client, "get_notebook", path=path, fork_id=forks[0]["fork_id"])
            await call_tool(client, "fork_document", path=path)


class TestReopen:
    @pytest.fixture
    def mcp_config(self) -> dict[str, Any]:
        return {"room_idle_timeout": 3600}  # the test closes the room itself: no idle timer races it

    async def test_history_survives_the_room_closing_and_reopening(
        self, mcp_client: Any, make_notebook: Any, jp_serverapp: Any
    ) -> None:
        path = make_notebook("reopen.ipynb", THREE)
        rooms = jp_serverapp.extension_manager.extension_points["jupyter_pair_mcp"].app.rooms
        async with mcp_client() as client:
            await update_cell(client, path, "c1", "a")
            first = (await history(client, path))[0]
            assert await rooms.evict_idle(now=time.monotonic() + 7200)  # what the idle-room janitor does
            assert rooms.info(path, "notebook") is None
            assert (await history(client, path))[0] == first  # read from the store, no room needed
            await update_cell(client, path, "c1", "b")
            versions = await history(client, path)
            assert [v["summary"] for v in versions[:2]] == ["updated cell c1", "updated cell c1"]
            assert versions[1]["version_id"] == first["version_id"]
            assert "nothing of yours to undo" not in await tool_error(client, "undo_agent_edits", path=path, count=0)
            # the undo stack went with the old room; restoring the version before works from the store
            await call_tool(client, "undo_agent_edits", path=path)
            message = await tool_error(client, "undo_agent_edits", path=path)
            assert "restore_document_version" in message
            await call_tool(client, "restore_document_version", path=path, version_id=versions[-1]["version_id"])
            data = await call_tool(client, "get_notebook", path=path)
            assert [c["source"] for c in data["cells"]] == ["x = 0", "x = 1", "x = 2"]

    async def test_closing_a_room_waits_for_its_history(
        self, mcp_client: Any, make_notebook: Any, jp_serverapp: Any, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """A room closed while its store still writes the last edit (a busy machine) keeps that edit in its
        history, and reopens from the store, not as "content as loaded from the file"."""
        path = make_notebook("slow.ipynb", THREE)
        rooms = jp_serverapp.extension_manager.extension_points["jupyter_pair_mcp"].app.rooms
        async with mcp_client() as client:
            await update_cell(client, path, "c1", "a")
            await stored(jp_serverapp, path)
            room = document_room(jp_serverapp, path)
            base = type(room.ystore).__mro__[1]  # pycrdt-store's SQLiteYStore, under the history store's write
            original = base.write

            async def slow_write(store: Any, data: bytes) -> None:
                for _ in range(2000):  # a write that takes many loop turns, as on a loaded machine
                    await asyncio.sleep(0)
                await original(store, data)

            monkeypatch.setattr(base, "write", slow_write)
            await update_cell(client, path, "c1", "b")
            assert await rooms.evict_idle(now=time.monotonic() + 7200)
            assert rooms.info(path, "notebook") is None
            summaries = [v["summary"] for v in await history(client, path)]
            assert summaries[:2] == ["updated cell c1", "updated cell c1"], summaries
            await update_cell(client, path, "c2", "c")  # reopens the room
            summaries = [v["summary"] for v in await history(client, path)]
            assert "content as loaded from the file" not in summaries[:3], summaries


async def test_an_execution_is_one_version_by_its_agent(mcp_client: Any, make_notebook: Any) -> None:
    path = make_notebook("run.ipynb", THREE)
    async with mcp_client() as client:
        code = "for i in range(5):\n    print(i, flush=True)"
        inserted = await call_tool(client, "batch_insert_notebook_cells", path=path, cells=[{"content": code}])
        assert inserted["executions"][0]["status"] == "ok"
        cell_id = inserted["inserted"][0]["id"]
        versions = await history(client, path)
        runs = [v for v in versions if v["summary"] == f"ran cell {cell_id}"]
        assert len(runs) == 1, versions
        assert runs[0]["source"] == "agent"
        assert runs[0]["changes"] >= 2  # running, outputs and the count folded into one version
        insert = versions[versions.index(runs[0]) + 1]
        assert insert["summary"].startswith("inserted cell")
        assert runs[0]["author"] == insert["author"] != ""
        activity = await call_tool(client, "get_user_activity", document_path=path)
        kinds = [(a["type"], a["description"]) for a in activity["activities"]]
        assert kinds[0] == ("execution", f"ran cell {cell_id} [1]: ok")
        assert kinds[1][0] == "edit" and kinds[1][1].startswith("inserted cell")
        # outputs are not the agent's edits to undo: undo takes back the insert itself
        result = await call_tool(client, "undo_agent_edits", path=path)
        assert result["undone"][0].startswith("inserted cell")


async def test_undo_after_a_notebook_restore_takes_back_the_restore_exactly(
    mcp_client: Any, make_notebook: Any, collaborator: Any
) -> None:
    cells = [
        {"cell_type": "markdown", "source": "# Title\nIntro", "id": "m0"},
        {"cell_type": "code", "source": "x = 1", "id": "c1"},
    ]
    path = make_notebook("undo_restore.ipynb", cells)
    async with collaborator(path) as human, mcp_client() as client:
        first = (await history(client, path))[-1]["version_id"]
        await update_cell(client, path, "m0", "# Title\nIntro, revised")
        await call_tool(client, "batch_delete_notebook_cells", path=path, cell_ids=["c1"])
        edited = ["# Title\nIntro, revised"]
        await human.wait_until(lambda: human.sources() == edited)
        restored = await call_tool(client, "restore_document_version", path=path, version_id=first)
        await human.wait_until(lambda: human.ids() == ["m0", "c1"])
        assert human.sources() == ["# Title\nIntro", "x = 1"]
        assert restored["version_id"] is not None

        # the restore is this session's newest edit: undoing it gives back exactly what it replaced
        undone = await call_tool(client, "undo_agent_edits", path=path)
        assert undone["undone"] == [f"restored version {first}"]
        assert undone["remaining"] == 2
        await human.wait_until(lambda: human.ids() == ["m0"])
        assert human.sources() == edited
        live = await call_tool(client, "get_notebook", path=path)
        assert [c["source"] for c in live["cells"]] == edited

        # then the edits before it, newest first
        undone = await call_tool(client, "undo_agent_edits", path=path, count=2)
        assert undone["undone"] == ["deleted cell c1", "updated cell m0"]
        await human.wait_until(lambda: human.ids() == ["m0", "c1"])
        assert human.sources() == ["# Title\nIntro", "x = 1"]
        live = await call_tool(client, "get_notebook", path=path)
        assert [c["source"] for c in live["cells"]] == ["# Title\nIntro", "x = 1"]


async def test_a_text_restore_is_a_restore_version_and_undoable(
    mcp_client: Any, jp_root_dir: Any, collaborator: Any
) -> None:
    from pathlib import Path

    Path(jp_root_dir, "restore.md").write_text("alpha\n")
    async with collaborator("restore.md", "file") as human, mcp_client() as client:
        first = (await history(client, "restore.md"))[-1]["version_id"]
        await call_tool(client, "batch_insert_text", path="restore.md", operations=[{"text": "beta\n", "position": 6}])
        await human.wait_until(lambda: human.text() == "alpha\nbeta\n")
        result = await call_tool(client, "restore_document_version", path="restore.md", version_id=first)
        await human.wait_until(lambda: human.text() == "alpha\n")
        assert result["version_id"] is not None
        versions = await history(client, "restore.md")
        assert versions[0]["source"] == "restore"
        assert versions[0]["version_id"] == result["version_id"]
        assert versions[0]["summary"] == f"restored version {first}"

        undone = await call_tool(client, "undo_agent_edits", path="restore.md")
        assert undone["undone"] == [f"restored version {first}"]
        await human.wait_until(lambda: human.text() == "alpha\nbeta\n")
        read = await call_tool(client, "get_document", path="restore.md")
        assert read["content"] == "alpha\nbeta\n"
        await call_tool(client, "undo_agent_edits", path="restore.md")
        await human.wait_until(lambda: human.text() == "alpha\n")
