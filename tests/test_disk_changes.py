"""A file rewritten on disk under an open room: merged with what the room has not saved, never dropped.

Another program writes the file while people and an agent have it open. jupyter-collaboration loads the
file over the room when it notices (its poll, its autosave), replacing every change not saved yet. Now the
file is merged into the room (three-way, the file as last saved as the base, cell by cell by id): every call
lets the room merge a change first; an agent that used the document before is told on its next call; only
where both sides changed the same place does the file win, and then a writing call that was not told is
refused with nothing done. The reload is a history version whose author is the disk.
"""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

import pytest

from .conftest import autosaved, call_tool, document_room, notebook_json, stored, tool_error, within

pytestmark = pytest.mark.usefixtures("jp_serverapp")


def rewrite(target: Path, text: str) -> None:
    """Another program writes the file (its modification time surely newer than the room's)."""
    target.write_text(text)
    later = time.time() + 5
    os.utime(target, (later, later))


def sources(target: Path) -> list[str]:
    import json

    return ["".join(c["source"]) for c in json.loads(target.read_text())["cells"]]


#: Reads of the file's model that are not a call's look at it: the room's poll every file_poll_interval, its
#: autosave, and, after each save, DiskWatch learning whether the file is writable (a busy machine saves between
#: calls).
ROOM_OWN = {"_watch_file", "maybe_save_content", "_save_content_at_path", "room_event"}


def cells(a: str, b: str) -> str:
    return notebook_json([{"cell_type": "code", "source": a, "id": "a"}, {"cell_type": "code", "source": b, "id": "b"}])


async def test_an_edit_right_after_the_file_changed_on_disk_is_merged_with_it(
    mcp_client: Any, make_notebook: Any, jp_root_dir: Path, jp_serverapp: Any, collaborator: Any
) -> None:
    path = "outside.ipynb"
    (jp_root_dir / path).write_text(cells("a = 1", "b = 1"))
    async with mcp_client() as client, collaborator(path) as human:
        update = {"path": path, "exec": False}
        await call_tool(client, "batch_update_notebook_cells", **update, updates=[{"cell_id": "a", "content": "a = 2"}])
        await autosaved(jp_serverapp, path)
        rewrite(jp_root_dir / path, cells("a = 2", "b = 'theirs'"))
        # The agent edits again at once, before the room's poll has seen the file: the file is merged in first.
        result = await call_tool(
            client, "batch_update_notebook_cells", **update, updates=[{"cell_id": "a", "content": "a = 'agent'"}]
        )
        assert "changed on disk" in result["notice"] and "merged" in result["notice"], result
        assert str(jp_root_dir) not in result["notice"]
        await human.wait_until(lambda: human.sources() == ["a = 'agent'", "b = 'theirs'"])  # both, live
        read = await call_tool(client, "get_notebook", path=path)
        assert [c["source"] for c in read["cells"]] == ["a = 'agent'", "b = 'theirs'"]
        assert "notice" not in read  # told once
        await autosaved(jp_serverapp, path)
        room = document_room(jp_serverapp, path)
        await room._file.maybe_notify()  # the room's poll: nothing on disk is newer than the room now
        assert sources(jp_root_dir / path) == ["a = 'agent'", "b = 'theirs'"]
        saved = await call_tool(client, "save_notebook", path=path)
        assert saved["saved"] is True
        assert sources(jp_root_dir / path) == ["a = 'agent'", "b = 'theirs'"]

        await stored(jp_serverapp, path)
        history = await call_tool(client, "get_document_history", path=path, limit=50)
        disk = [v for v in history["versions"] if v["source"] == "disk"]
        assert len(disk) == 1, history["versions"]
        assert disk[0]["author"] == "file on disk" and "another program" in disk[0]["summary"]
        version = await call_tool(client, "get_document_version", path=path, version_id=disk[0]["version_id"])
        assert [c["source"] for c in version["cells"]] == ["a = 2", "b = 'theirs'"]


async def test_a_reload_keeps_the_unsaved_edits_it_does_not_conflict_with(
    mcp_client: Any, jp_root_dir: Path, jp_serverapp: Any, collaborator: Any
) -> None:
    """The room's own poll finds the file changed while an agent's edit and a person's typing are not saved yet:
    before, both were replaced by the file; now the file is merged in, cell by cell, and the merge is saved."""
    ydoc = jp_serverapp.extension_manager.extension_points["jupyter_server_ydoc"].app
    ydoc.document_save_delay = 30  # the edits are not on disk yet when the file changes
    extension = jp_serverapp.extension_manager.extension_points["jupyter_pair_mcp"].app
    extension.rooms.save_interval = 0  # nor written by the bounded interval
    path = "polled.ipynb"
    three = [
        {"cell_type": "code", "source": "a = 1", "id": "a"},
        {"cell_type": "code", "source": "b = 1", "id": "b"},
        {"cell_type": "markdown", "source": "notes", "id": "c"},
    ]
    (jp_root_dir / path).write_text(notebook_json(three))
    async with mcp_client() as client, mcp_client() as reader, collaborator(path) as human:
        await call_tool(reader, "get_notebook", path=path)
        update = {"path": path, "exec": False}
        await call_tool(client, "batch_update_notebook_cells", **update, updates=[{"cell_id": "a", "content": "a = 2"}])
        human.type_into(2, len("notes"), " typed")
        await human.wait_until(lambda: human.sources()[0] == "a = 2")
        theirs = [dict(three[0]), {**three[1], "source": "b = 'theirs'"}, dict(three[2])]
        theirs.append({"cell_type": "code", "source": "d = 'new on disk'", "id": "d"})
        rewrite(jp_root_dir / path, notebook_json(theirs))
        wanted = ["a = 2", "b = 'theirs'", "notes typed", "d = 'new on disk'"]
        await human.wait_until(lambda: human.sources() == wanted, limit=10)  # the poll merged it
        read = await call_tool(reader, "get_notebook", path=path)
        assert "merged" in read.get("notice", ""), read
        assert [c["source"] for c in read["cells"]] == wanted
        saved = await call_tool(client, "save_notebook", path=path)  # no refusal: nothing of it was lost
        assert saved["saved"] is True
        assert sources(jp_root_dir / path) == wanted


async def test_a_conflicting_change_on_disk_wins_and_the_agent_is_told_which_cell(
    mcp_client: Any,
    jp_root_dir: Path,
    jp_serverapp: Any,
    collaborator: Any,
    http: Any,
    server_root: str,
    jp_base_url: str,
    auth: dict[str, str],
) -> None:
    ydoc = jp_serverapp.extension_manager.extension_points["jupyter_server_ydoc"].app
    ydoc.document_save_delay = 30
    extension = jp_serverapp.extension_manager.extension_points["jupyter_pair_mcp"].app
    extension.rooms.save_interval = 0
    path = "clash.ipynb"
    (jp_root_dir / path).write_text(cells("a = 1", "b = 1"))
    async with mcp_client() as client, collaborator(path) as human:
        update = {"path": path, "exec": False}
        await call_tool(client, "batch_update_notebook_cells", **update, updates=[{"cell_id": "a", "content": "a = 2"}])
        await human.wait_until(lambda: human.sources()[0] == "a = 2")
        rewrite(jp_root_dir / path, cells("a = 'disk'", "b = 1"))
        await human.wait_until(lambda: human.sources() == ["a = 'disk'", "b = 1"], limit=10)
        message = await tool_error(client, "save_notebook", path=path)
        assert "changed on disk" in message and "(a)" in message and "history" in message, message
        assert "notice" not in await call_tool(client, "get_notebook", path=path)  # told once
        await stored(jp_serverapp, path)
        history = await call_tool(client, "get_document_history", path=path, limit=50)
        agent = [v for v in history["versions"] if v["source"] == "agent"]
        version = await call_tool(client, "get_document_version", path=path, version_id=agent[0]["version_id"])
        assert [c["source"] for c in version["cells"]] == ["a = 2", "b = 1"]  # the room's side, kept in history
        # People see it in the activity panel, with the cell where the file won.
        response = await http.get(f"{server_root}{jp_base_url}api/mcp/activity", params={"path": path}, headers=auth)
        entries = [e for e in response.json()["entries"] if e["kind"] == "disk"]
        assert len(entries) == 1 and "file's version won" in entries[0]["summary"], entries
        assert [c["cell_id"] for c in entries[0]["cells"]] == ["a"], entries


async def test_a_text_file_rewritten_on_disk_is_merged_line_by_line(
    mcp_client: Any, jp_root_dir: Path, jp_serverapp: Any, collaborator: Any
) -> None:
    ydoc = jp_serverapp.extension_manager.extension_points["jupyter_server_ydoc"].app
    ydoc.document_save_delay = 30
    extension = jp_serverapp.extension_manager.extension_points["jupyter_pair_mcp"].app
    extension.rooms.save_interval = 0
    path = "notes.md"
    (jp_root_dir / path).write_text("one\n")
    async with mcp_client() as client, collaborator(path, "file") as human:
        await call_tool(client, "batch_insert_text", path=path, operations=[{"position": -1, "text": "two\n"}])
        rewrite(jp_root_dir / path, "zero\none\n")
        result = await call_tool(client, "batch_insert_text", path=path, operations=[{"position": -1, "text": "3\n"}])
        assert "merged" in result.get("notice", ""), result
        await human.wait_until(lambda: human.text() == "zero\none\ntwo\n3\n")
        room = document_room(jp_serverapp, path, "file")
        room._save_delay = 0.1
        await call_tool(client, "batch_insert_text", path=path, operations=[{"position": -1, "text": "4\n"}])
        await autosaved(jp_serverapp, path, "file")
        assert (jp_root_dir / path).read_text() == "zero\none\ntwo\n3\n4\n"
        await stored(jp_serverapp, path, "file")
        history = await call_tool(client, "get_document_history", path=path, limit=50)
        assert [v["author"] for v in history["versions"] if v["source"] == "disk"] == ["file on disk"]


def test_a_notice_leads_a_result_and_follows_an_error() -> None:
    from jupyter_pair_mcp.notices import with_notes

    result = {"content": [{"type": "text", "text": "{}"}], "structuredContent": {"a": 1}, "isError": False}
    noticed = with_notes(result, ["x changed on disk."])
    assert noticed["content"][0] == {"type": "text", "text": "Notice: x changed on disk."}
    assert noticed["structuredContent"] == {"a": 1, "notice": "Notice: x changed on disk."}
    error = {"content": [{"type": "text", "text": "refused"}], "isError": True}
    assert [c["text"] for c in with_notes(error, ["n."])["content"]] == ["refused", "Notice: n."]
    assert result["content"] == [{"type": "text", "text": "{}"}]  # the given result is left as it was


async def test_a_call_on_an_unchanged_file_looks_at_it_without_reading_its_model(
    mcp_client: Any, jp_root_dir: Path, jp_serverapp: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Before each call the room looks at its file. When the file has not changed that is one ``lstat``: the
    contents manager's model (its path checks, file-id lookups and event, ~0.5-1 ms of the loop under load) is
    read only when the file is newer than the room's copy, or after a rename."""
    import sys

    path = "still.ipynb"
    (jp_root_dir / path).write_text(cells("a = 1", "b = 1"))
    manager = jp_serverapp.contents_manager
    original = manager.get
    reads: list[str] = []

    def counted(asked: str, *args: Any, **kwargs: Any) -> Any:
        callers, frame = set(), sys._getframe(1)
        while frame is not None:  # names only: inspect.stack() reads every module's source (100 ms, loaded)
            callers.add(frame.f_code.co_name)
            frame = frame.f_back
        if not callers & ROOM_OWN:
            reads.append(asked)
        return original(asked, *args, **kwargs)

    monkeypatch.setattr(manager, "get", counted)
    async with mcp_client() as client:
        await call_tool(client, "get_notebook_info", path=path)  # opens the room (which reads the file)
        await autosaved(jp_serverapp, path)
        reads.clear()
        for n in range(10):
            await call_tool(client, "get_notebook", path=path, cell_ids=["a"])
            await call_tool(
                client,
                "batch_update_notebook_cells",
                path=path,
                exec=False,
                updates=[{"cell_id": "b", "content": f"b = {n}"}],
            )
        assert reads == [], f"{len(reads)} model reads for 20 calls on a file nobody changed"
        await autosaved(jp_serverapp, path)
        rewrite(jp_root_dir / path, cells("a = 'theirs'", "b = 9"))
        data = await call_tool(client, "get_notebook", path=path, cell_ids=["a"])
        assert data["cells"][0]["source"] == "a = 'theirs'"  # a change on disk is still loaded first
        assert reads  # ...through the contents manager, once the file is newer


async def test_a_change_on_disk_during_a_call_is_merged_before_it_answers(
    mcp_client: Any, jp_root_dir: Path, jp_serverapp: Any, collaborator: Any
) -> None:
    """The file is rewritten while the agent's edit is being made: the call looks at the file again before it
    answers, merges the change, and says so in its answer; the edit is kept."""
    extension = jp_serverapp.extension_manager.extension_points["jupyter_pair_mcp"].app
    path = "during.ipynb"
    (jp_root_dir / path).write_text(cells("a = 1", "b = 1"))
    rewrites: list[str] = []

    def rewrite_during(edit: Any) -> None:  # another program writes the file as the agent's edit commits
        if edit.path == path and not rewrites:
            rewrites.append(path)
            rewrite(jp_root_dir / path, cells("a = 1", "b = 'theirs'"))

    async with mcp_client() as client, collaborator(path) as human:
        await call_tool(client, "get_notebook_info", path=path)
        await autosaved(jp_serverapp, path)
        extension.rooms.journal.on_edit(rewrite_during)
        result = await call_tool(
            client, "batch_update_notebook_cells", path=path, exec=False, updates=[{"cell_id": "a", "content": "a = 2"}]
        )
        assert rewrites and "merged" in result.get("notice", ""), result
        await human.wait_until(lambda: human.sources() == ["a = 2", "b = 'theirs'"])
        saved = await call_tool(client, "save_notebook", path=path)
        assert saved["saved"] is True and "notice" not in saved, saved
        assert sources(jp_root_dir / path) == ["a = 2", "b = 'theirs'"]


async def test_calls_go_on_during_a_slow_save(
    mcp_client: Any, jp_root_dir: Path, jp_serverapp: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A save of a big notebook holds the file loader's lock for seconds: calls waited for it, then failed with
    "still being loaded from disk" though nothing was being loaded. They go on with the live document now."""
    import asyncio

    path = "slow.ipynb"
    (jp_root_dir / path).write_text(cells("a = 1", "b = 1"))
    manager = jp_serverapp.contents_manager
    original = manager.save
    writing, release = asyncio.Event(), asyncio.Event()

    async def slow_save(model: Any, saved_path: str) -> Any:
        if saved_path == path:
            writing.set()
            await release.wait()  # the disk is slow: the save is under way until the test lets it end
        return await original(model, saved_path)

    monkeypatch.setattr(manager, "save", slow_save)
    async with mcp_client() as client:
        await call_tool(client, "get_notebook_info", path=path)
        update = {"path": path, "exec": False}
        await call_tool(client, "batch_update_notebook_cells", **update, updates=[{"cell_id": "a", "content": "a = 2"}])
        saving = asyncio.ensure_future(call_tool(client, "save_notebook", path=path))
        await within(writing.wait())
        # The file's time has not moved yet; make it look changed, as a save under way does on a real disk.
        later = time.time() + 5
        os.utime(jp_root_dir / path, (later, later))
        edited = await within(
            call_tool(client, "batch_update_notebook_cells", **update, updates=[{"cell_id": "b", "content": "b = 2"}])
        )
        assert "notice" not in edited, edited
        read = await within(call_tool(client, "get_notebook", path=path))
        assert [c["source"] for c in read["cells"]] == ["a = 2", "b = 2"]
        assert not saving.done()  # all of it while the save was still writing
        release.set()
        await within(saving)


async def test_a_file_put_back_to_an_older_version_is_written_again_not_merged(
    mcp_client: Any, jp_root_dir: Path, jp_serverapp: Any
) -> None:
    """jupyter_server reads a notebook that is half written by restoring the copy it made before writing (its
    atomic-writing recovery), so a read during the room's write can put the previous file back, with its older
    time. That is the room's own write undone, not another program's change: merging it would undo the room's
    edits wherever it had not changed since. The room writes again instead."""
    path = "undone.ipynb"
    before = cells("a = 1", "b = 1")
    (jp_root_dir / path).write_text(before)
    old = os.stat(jp_root_dir / path).st_mtime
    async with mcp_client() as client:
        update = {"path": path, "exec": False}
        await call_tool(client, "batch_update_notebook_cells", **update, updates=[{"cell_id": "a", "content": "a = 2"}])
        assert (await call_tool(client, "save_notebook", path=path))["saved"] is True
        (jp_root_dir / path).write_text(before)  # the backup put back, with its own (older) time
        os.utime(jp_root_dir / path, (old, old))
        await call_tool(client, "batch_update_notebook_cells", **update, updates=[{"cell_id": "b", "content": "b = 2"}])
        saved = await call_tool(client, "save_notebook", path=path)
        assert saved["saved"] is True and "notice" not in saved, saved
        read = await call_tool(client, "get_notebook", path=path)
        assert [c["source"] for c in read["cells"]] == ["a = 2", "b = 2"]
    assert sources(jp_root_dir / path) == ["a = 2", "b = 2"]


async def test_a_big_notebook_is_merged_on_its_copy_and_comes_back_in_bounded_steps(
    mcp_client: Any, jp_root_dir: Path, jp_serverapp: Any, collaborator: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A big notebook changed on disk under its open room is merged on its copy in the worker process
    (adapters/rooms/replicas.py), not in the room in one loop step (every cell of 20,000 changed: 1.5 s), and comes
    back in updates of a bounded number of cells, each applied in a loop step of its own. An agent's edit and a
    person's typing not saved yet are kept; the history tells the change as the disk's."""
    from jupyter_pair_mcp.adapters.rooms import reload, replicas

    ydoc = jp_serverapp.extension_manager.extension_points["jupyter_server_ydoc"].app
    ydoc.document_save_delay = 30  # the edits are not on disk yet when the file changes
    extension = jp_serverapp.extension_manager.extension_points["jupyter_pair_mcp"].app
    extension.rooms.save_interval = 0
    monkeypatch.setattr(extension.rooms.scanner, "in_place_bytes", 0)  # every notebook is big
    monkeypatch.setattr(replicas, "MERGE_CELLS", 3)
    in_the_room: list[Any] = []
    in_place = reload._apply_notebook
    monkeypatch.setattr(reload, "_apply_notebook", lambda *args: in_the_room.append(in_place(*args)))
    copies = extension.rooms._reader.replicas
    path = "merged_big.ipynb"
    ten = [{"cell_type": "code", "source": f"x = {i}", "id": f"c{i}"} for i in range(10)]
    (jp_root_dir / path).write_text(notebook_json(ten))
    async with mcp_client() as client, collaborator(path) as human:
        await call_tool(client, "get_notebook_info", path=path)
        update = {"path": path, "exec": False}
        await call_tool(
            client, "batch_update_notebook_cells", **update, updates=[{"cell_id": "c0", "content": "agent"}]
        )
        human.type_into(1, 0, "typed ")
        await human.wait_until(lambda: human.sources()[:2] == ["agent", "typed x = 1"])
        theirs = [dict(cell) for cell in ten[:2]] + [{**cell, "source": f"{cell['source']} # disk"} for cell in ten[2:]]
        rewrite(jp_root_dir / path, notebook_json(theirs))
        wanted = ["agent", "typed x = 1", *[f"x = {i} # disk" for i in range(2, 10)]]
        await human.wait_until(lambda: human.sources() == wanted, limit=10)  # the poll merged it
        assert (copies.merges, in_the_room) == (1, []), "merged on the copy, not in the room"
        assert copies.merge_updates >= 3, "8 cells changed, 3 a step"
        await stored(jp_serverapp, path)
        history = await call_tool(client, "get_document_history", path=path, limit=50)
        assert "disk" in [v["source"] for v in history["versions"]], history
        assert (await call_tool(client, "save_notebook", path=path))["saved"] is True
        await autosaved(jp_serverapp, path)
        assert sources(jp_root_dir / path) == wanted
    assert copies.seeds == 1 and copies.lost == 0, "the copy stayed the room's"
