"""A file rewritten on disk under an open room: the agent's next edit is kept or refused, never dropped.

Another program writes the file while people and an agent have it open. jupyter-collaboration loads the
file over the room when it notices (its poll, its autosave): before, an agent edit made just after the write
answered OK and then vanished from the room and the disk, and save_notebook said saved. Now every call lets
the room load the change first; the agent that used the document before is told on its next call, a writing
call is refused with nothing done, and the reload is a history version whose author is the disk.
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


async def test_an_edit_right_after_the_file_changed_on_disk_is_refused_then_kept(
    mcp_client: Any, make_notebook: Any, jp_root_dir: Path, jp_serverapp: Any, collaborator: Any
) -> None:
    path = "outside.ipynb"
    (jp_root_dir / path).write_text(cells("a = 1", "b = 1"))
    async with mcp_client() as client, collaborator(path) as human:
        update = {"path": path, "exec": False}
        await call_tool(client, "batch_update_notebook_cells", **update, updates=[{"cell_id": "a", "content": "a = 2"}])
        await autosaved(jp_serverapp, path)
        rewrite(jp_root_dir / path, cells("a = 2", "b = 'theirs'"))
        # The agent edits again at once, before the room's poll has seen the file.
        result = await within(
            client.call_tool(
                "batch_update_notebook_cells", {**update, "updates": [{"cell_id": "a", "content": "a = 'agent'"}]}
            )
        )
        assert result.is_error, "the edit was answered OK, though the room then reloads the file over it"
        message = result.content[0].text
        assert "changed on disk" in message and "Nothing was done" in message, message
        assert str(jp_root_dir) not in message
        await human.wait_until(lambda: human.sources() == ["a = 2", "b = 'theirs'"])  # the file's content, live
        read = await call_tool(client, "get_notebook", path=path)
        assert [c["source"] for c in read["cells"]] == ["a = 2", "b = 'theirs'"]
        assert "notice" not in read  # told once
        await call_tool(client, "batch_update_notebook_cells", **update, updates=[{"cell_id": "a", "content": "a = 3"}])
        await autosaved(jp_serverapp, path)
        room = document_room(jp_serverapp, path)
        await room._file.maybe_notify()  # the room's poll: nothing on disk is newer than the room now
        await human.wait_until(lambda: human.sources() == ["a = 3", "b = 'theirs'"])
        assert sources(jp_root_dir / path) == ["a = 3", "b = 'theirs'"]
        saved = await call_tool(client, "save_notebook", path=path)
        assert saved["saved"] is True
        assert sources(jp_root_dir / path) == ["a = 3", "b = 'theirs'"]

        await stored(jp_serverapp, path)
        history = await call_tool(client, "get_document_history", path=path, limit=50)
        disk = [v for v in history["versions"] if v["source"] == "disk"]
        assert len(disk) == 1, history["versions"]
        assert disk[0]["author"] == "file on disk" and "another program" in disk[0]["summary"]
        # The disk version holds the file's content.
        version = await call_tool(client, "get_document_version", path=path, version_id=disk[0]["version_id"])
        assert [c["source"] for c in version["cells"]] == ["a = 2", "b = 'theirs'"]


async def test_a_reload_an_agent_missed_refuses_its_save_and_is_a_notice_on_a_read(
    mcp_client: Any, jp_root_dir: Path, jp_serverapp: Any, collaborator: Any
) -> None:
    """The room's own poll reloaded the file before the agents' next calls; the editor's unsaved edit went with it."""
    ydoc = jp_serverapp.extension_manager.extension_points["jupyter_server_ydoc"].app
    ydoc.document_save_delay = 30  # the agent's edit is not on disk yet when the file changes
    path = "polled.ipynb"
    (jp_root_dir / path).write_text(cells("a = 1", "b = 1"))
    async with mcp_client() as client, mcp_client() as reader, collaborator(path) as human:
        await call_tool(reader, "get_notebook", path=path)
        update = {"path": path, "exec": False}
        await call_tool(client, "batch_update_notebook_cells", **update, updates=[{"cell_id": "a", "content": "a = 2"}])
        rewrite(jp_root_dir / path, cells("a = 1", "b = 'theirs'"))
        await human.wait_until(lambda: human.sources() == ["a = 1", "b = 'theirs'"], limit=10)  # the poll loaded it
        # The editor's save: refused, never "saved: true" for an edit that is gone.
        message = await tool_error(client, "save_notebook", path=path)
        assert "changed on disk" in message and "not yet saved" in message, message
        # The reader is told beside its result.
        read = await call_tool(reader, "get_notebook", path=path)
        assert "changed on disk" in read.get("notice", ""), read
        assert [c["source"] for c in read["cells"]] == ["a = 1", "b = 'theirs'"]
        assert "notice" not in await call_tool(reader, "get_notebook_info", path=path)  # once
        # Told, the editor reads again and redoes its edit: it goes through and reaches the file.
        assert "notice" not in await call_tool(client, "get_notebook", path=path)
        await call_tool(client, "batch_update_notebook_cells", **update, updates=[{"cell_id": "a", "content": "a = 2"}])
        saved = await call_tool(client, "save_notebook", path=path)
        assert saved["saved"] is True and "notice" not in saved
        assert sources(jp_root_dir / path) == ["a = 2", "b = 'theirs'"]


async def test_a_text_file_rewritten_on_disk_refuses_the_next_edit_the_same_way(
    mcp_client: Any, jp_root_dir: Path, jp_serverapp: Any, collaborator: Any
) -> None:
    path = "notes.md"
    (jp_root_dir / path).write_text("one\n")
    async with mcp_client() as client, collaborator(path, "file") as human:
        await call_tool(client, "batch_insert_text", path=path, operations=[{"position": -1, "text": "two\n"}])
        await autosaved(jp_serverapp, path, "file")
        rewrite(jp_root_dir / path, "theirs\n")
        message = await tool_error(client, "batch_insert_text", path=path, operations=[{"position": -1, "text": "x\n"}])
        assert "changed on disk" in message and "Nothing was done" in message, message
        await human.wait_until(lambda: human.text() == "theirs\n")
        read = await call_tool(client, "get_document", path=path)
        assert read["content"] == "theirs\n" and "notice" not in read
        await call_tool(client, "batch_insert_text", path=path, operations=[{"position": -1, "text": "three\n"}])
        assert (await call_tool(client, "get_document", path=path))["content"] == "theirs\nthree\n"
        await autosaved(jp_serverapp, path, "file")
        assert (jp_root_dir / path).read_text() == "theirs\nthree\n"
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
