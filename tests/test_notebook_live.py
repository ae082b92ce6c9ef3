"""Edits through the live room, watched by a real collaborator on the websocket."""

from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path
from typing import Any

import nbformat
import pytest

from .conftest import autosaved, call_tool, received, stored, tool_error, until

pytestmark = pytest.mark.usefixtures("jp_serverapp")

FIVE = [{"cell_type": "code", "source": f"x = {i}", "id": f"c{i}"} for i in range(5)]


def disk_sources(path: Path) -> list[str]:
    return ["".join(c["source"]) for c in json.loads(path.read_text())["cells"]]


async def autosaved_file(serverapp: Any, root: Path, path: str) -> dict[str, Any]:
    """The notebook file once the room's save after its last change wrote it (Jupyter writes a file in place:
    a read while it writes can see half a file), validated."""
    await autosaved(serverapp, path)
    text = (root / path).read_text()
    nbformat.validate(nbformat.reads(text, as_version=4))
    return dict(json.loads(text))


async def test_insert_reaches_the_collaborator_live(mcp_client: Any, make_notebook: Any, collaborator: Any) -> None:
    path = make_notebook("live.ipynb", FIVE)
    async with collaborator(path) as human, mcp_client() as client:
        assert human.ids() == ["c0", "c1", "c2", "c3", "c4"]
        result = await call_tool(
            client,
            "batch_insert_notebook_cells",
            path=path,
            exec=False,
            cells=[{"content": "# Notes", "cell_type": "markdown"}, {"content": "y = 2"}],
            after_cell_id="c1",
        )
        await human.wait_until(lambda: len(human.ids()) == 7)
        assert [c["index"] for c in result["inserted"]] == [2, 3]
        assert result["cell_count"] == 7
        assert human.sources() == ["x = 0", "x = 1", "# Notes", "y = 2", "x = 2", "x = 3", "x = 4"]
        assert human.cells()[2]["cell_type"] == "markdown"
        assert human.ids()[2:4] == [c["id"] for c in result["inserted"]]
        # appended when no position is given; at an index otherwise
        await call_tool(client, "batch_insert_notebook_cells", path=path, exec=False, cells=[{"content": "end"}])
        await call_tool(
            client, "batch_insert_notebook_cells", path=path, exec=False, cells=[{"content": "top"}], start_position=0
        )
        await human.wait_until(lambda: len(human.ids()) == 9)
        assert human.sources()[0] == "top"
        assert human.sources()[-1] == "end"


async def test_collaborator_edits_are_seen_by_the_next_call(
    mcp_client: Any, make_notebook: Any, collaborator: Any, jp_serverapp: Any
) -> None:
    path = make_notebook("human.ipynb", FIVE)
    async with collaborator(path) as human, mcp_client() as client:
        human.type_into(0, 4, "42 + ")
        new_id = human.insert_cell(1, "typed by a person")
        await received(jp_serverapp, human)
        data = await call_tool(client, "get_notebook", path=path)
        assert data["cells"][0]["source"] == "x = 42 + 0"
        assert data["cells"][1] == {**data["cells"][1], "id": new_id, "source": "typed by a person"}
        # and ids keep addressing the right cells after the person shifted them
        await call_tool(
            client,
            "batch_update_notebook_cells",
            path=path,
            exec=False,
            updates=[{"cell_id": "c3", "content": "x = 33"}],
        )
        await human.wait_until(lambda: "x = 33" in human.sources())
        assert human.sources()[4] == "x = 33"


async def test_update_is_a_minimal_edit_that_keeps_concurrent_typing(
    mcp_client: Any, make_notebook: Any, collaborator: Any, jp_serverapp: Any
) -> None:
    """The person types at the top while the agent rewrites the last line: both survive."""
    source = "def f(a, b):\n    total = a + b\n    return total\n"
    path = make_notebook("concurrent.ipynb", [{"cell_type": "code", "source": source, "id": "f"}])
    async with collaborator(path) as human, mcp_client() as client:
        human.go_offline()
        human.type_into(0, 0, "# added by a person\n")
        await call_tool(
            client,
            "batch_update_notebook_cells",
            path=path,
            exec=False,
            updates=[{"cell_id": "f", "content": source.replace("return total", "return total * 2")}],
        )
        await human.go_online()
        expected = "# added by a person\n" + source.replace("return total", "return total * 2")
        await human.wait_until(lambda: human.sources() == [expected])
        await received(jp_serverapp, human)
        data = await call_tool(client, "get_notebook", path=path)
        assert data["cells"][0]["source"] == expected


async def test_simultaneous_edits_in_one_cell_converge(
    mcp_client: Any, make_notebook: Any, collaborator: Any, jp_serverapp: Any
) -> None:
    path = make_notebook("race.ipynb", [{"cell_type": "code", "source": "alpha\nbeta\ngamma\n", "id": "r"}])
    async with collaborator(path) as human, mcp_client() as client:
        human.go_offline()
        update = asyncio.ensure_future(
            call_tool(
                client,
                "batch_update_notebook_cells",
                path=path,
                exec=False,
                updates=[{"cell_id": "r", "content": "alpha\nBETA\ngamma\n"}],
            )
        )
        for k in range(20):  # the person keeps typing at the end while the update is in flight
            human.type_into(0, len(human.sources()[0]), f"{k}")
            await asyncio.sleep(0.002)
        await update
        await human.go_online()
        typed = "".join(str(k) for k in range(20))
        await human.wait_until(lambda: human.sources() == [f"alpha\nBETA\ngamma\n{typed}"])
        await received(jp_serverapp, human)
        data = await call_tool(client, "get_notebook", path=path)
        assert data["cells"][0]["source"] == human.sources()[0]


async def test_without_expected_source_an_update_replaces_text_typed_before_it(
    mcp_client: Any, make_notebook: Any, collaborator: Any, jp_serverapp: Any
) -> None:
    """Documented semantics: content is the cell's new source. Text the person typed *before* the call
    (so the server had it) is replaced; expected_source turns that into a refusal instead."""
    path = make_notebook("overwrite.ipynb", [{"cell_type": "code", "source": "a = 1\n", "id": "o"}])
    async with collaborator(path) as human, mcp_client() as client:
        human.type_into(0, 0, "# typed first\n")
        await received(jp_serverapp, human)
        refused = await tool_error(
            client,
            "batch_update_notebook_cells",
            path=path,
            updates=[{"cell_id": "o", "content": "a = 2\n", "expected_source": "a = 1\n"}],
        )
        assert "changed since read" in refused
        await call_tool(
            client,
            "batch_update_notebook_cells",
            path=path,
            exec=False,
            updates=[{"cell_id": "o", "content": "a = 2\n"}],
        )
        await human.wait_until(lambda: human.sources() == ["a = 2\n"])


async def test_expected_source_refuses_a_stale_edit(
    mcp_client: Any, make_notebook: Any, collaborator: Any, jp_serverapp: Any
) -> None:
    path = make_notebook("stale.ipynb", FIVE)
    async with collaborator(path) as human, mcp_client() as client:
        human.type_into(2, 0, "# changed\n")
        await received(jp_serverapp, human)
        before = human.sources()
        message = await tool_error(
            client,
            "batch_update_notebook_cells",
            path=path,
            updates=[
                {"cell_id": "c0", "content": "ok = 1"},
                {"cell_id": "c2", "content": "x = 20", "expected_source": "x = 2"},
            ],
        )
        assert "changed since read" in message
        assert "nothing was applied" in message
        await asyncio.sleep(0.2)
        assert human.sources() == before
        fine = await call_tool(
            client,
            "batch_update_notebook_cells",
            path=path,
            exec=False,
            updates=[{"cell_id": "c2", "content": "x = 20", "expected_source": "# changed\nx = 2"}],
        )
        assert [(u["index"], u["id"]) for u in fine["updated"]] == [(2, "c2")]


@pytest.mark.parametrize(
    ("tool", "args", "words"),
    [
        ("batch_update_notebook_cells", {"updates": [{"index": -1, "content": "a"}]}, "negative"),
        (
            "batch_update_notebook_cells",
            {"updates": [{"index": 5, "content": "a"}]},
            "out of range: notebook has 5 cells (0-4)",
        ),
        ("batch_update_notebook_cells", {"updates": [{"cell_id": "zz", "content": "a"}]}, "no cell with id 'zz'"),
        (
            "batch_update_notebook_cells",
            {"updates": [{"cell_id": "c1", "index": 3, "content": "a"}]},
            "is at index 1, not 3",
        ),
        (
            "batch_update_notebook_cells",
            {"updates": [{"index": 0, "content": "a"}, {"cell_id": "c0", "content": "b"}]},
            "twice",
        ),
        (
            "batch_update_notebook_cells",
            {"updates": [{"index": 0, "content": "a"}, {"index": 9, "content": "b"}]},
            "out of range",
        ),
        ("batch_update_notebook_cells", {"updates": [{"index": 0}]}, "changes nothing"),
        ("batch_update_notebook_cells", {"updates": []}, "empty"),
        ("batch_insert_notebook_cells", {"cells": [{"content": "a"}], "start_position": 6}, "out of range"),
        ("batch_insert_notebook_cells", {"cells": [{"content": "a"}], "after_cell_id": "zz"}, "no cell with id"),
        (
            "batch_insert_notebook_cells",
            {"cells": [{"content": "a"}], "after_cell_id": "c0", "start_position": 3},
            "give one of them",
        ),
        ("batch_insert_notebook_cells", {"cells": [{"content": "a", "cell_type": "sql"}]}, "cell_type"),
        ("batch_delete_notebook_cells", {"cell_ids": ["c0", "zz"]}, "no cell with id 'zz'"),
        ("batch_delete_notebook_cells", {"start_index": 3, "end_index": 9}, "at most 5"),
        ("batch_delete_notebook_cells", {}, "name the cells"),
        ("batch_delete_notebook_cells", {"cell_ids": ["c0"], "start_index": 1}, "not both"),
        ("move_notebook_cell", {"cell_id": "c0", "to_index": 5}, "out of range"),
        ("move_notebook_cell", {"to_index": 1}, "give cell_id"),
        ("replace_in_notebook", {"find": "x", "replace": "y", "expected_count": 2}, "found 5 matches"),
        ("replace_in_notebook", {"find": "(x", "replace": "y", "regex": True}, "invalid regular expression"),
        ("replace_in_notebook", {"find": "(x)", "replace": r"\2", "regex": True}, "invalid replacement"),
        ("replace_in_notebook", {"find": "", "replace": "y"}, "empty"),
    ],
)
async def test_bad_edits_are_tool_errors_and_change_nothing(
    mcp_client: Any,
    make_notebook: Any,
    collaborator: Any,
    jp_root_dir: Path,
    tool: str,
    args: dict[str, Any],
    words: str,
) -> None:
    path = make_notebook("guarded.ipynb", FIVE)
    async with collaborator(path) as human, mcp_client() as client:
        before = (human.ids(), human.sources())
        changes = human.changes
        assert words in await tool_error(client, tool, path=path, **args)
        await asyncio.sleep(0.1)
        assert (human.ids(), human.sources()) == before
        assert human.changes == changes
    assert disk_sources(jp_root_dir / path) == before[1]


async def test_delete_move_replace_and_retype(mcp_client: Any, make_notebook: Any, collaborator: Any) -> None:
    cells = [
        *FIVE,
        {
            "cell_type": "code",
            "source": "print('out')",
            "id": "out",
            "execution_count": 7,
            "metadata": {"tags": ["keep"]},
            "outputs": [{"output_type": "stream", "name": "stdout", "text": "out\n"}],
        },
    ]
    path = make_notebook("ops.ipynb", cells)
    async with collaborator(path) as human, mcp_client() as client:
        moved = await call_tool(client, "move_notebook_cell", path=path, cell_id="out", to_index=0)
        assert moved == {"id": "out", "from_index": 5, "to_index": 0}
        await human.wait_until(lambda: human.ids()[0] == "out")
        first = human.cells()[0]
        assert first["outputs"][0]["text"] == "out\n"
        assert first["metadata"]["tags"] == ["keep"]
        assert first["execution_count"] == 7
        assert len(human.ids()) == 6

        deleted = await call_tool(client, "batch_delete_notebook_cells", path=path, cell_ids=["c1", "c3"])
        assert [(d["id"], d["source"]) for d in deleted["deleted"]] == [("c1", "x = 1"), ("c3", "x = 3")]
        assert deleted["cell_count"] == 4
        ranged = await call_tool(client, "batch_delete_notebook_cells", path=path, start_index=1)
        assert [d["id"] for d in ranged["deleted"]] == ["c0"]
        await human.wait_until(lambda: human.ids() == ["out", "c2", "c4"])

        replaced = await call_tool(
            client, "replace_in_notebook", path=path, find="x = (\\d)", replace="y = \\1", regex=True, expected_count=2
        )
        assert replaced["replacements"] == 2
        assert [(c["id"], c["count"]) for c in replaced["cells"]] == [("c2", 1), ("c4", 1)]
        await human.wait_until(lambda: human.sources() == ["print('out')", "y = 2", "y = 4"])

        retyped = await call_tool(
            client,
            "batch_update_notebook_cells",
            path=path,
            exec=False,
            updates=[{"cell_id": "c2", "cell_type": "markdown", "content": "## Two"}],
        )
        assert [(u["index"], u["id"]) for u in retyped["updated"]] == [(1, "c2")]
        await human.wait_until(lambda: human.cells()[1]["cell_type"] == "markdown")
        assert human.cells()[1]["source"] == "## Two"
        assert "outputs" not in human.cells()[1]
        info = await call_tool(client, "get_notebook_info", path=path)
        assert (info["code_count"], info["markdown_count"], info["executed_count"]) == (2, 1, 1)


async def test_unicode_edits_land_at_the_right_characters(
    mcp_client: Any, make_notebook: Any, collaborator: Any
) -> None:
    path = make_notebook("unicode.ipynb", [{"cell_type": "markdown", "source": "héllo wörld 🎉 日本", "id": "u"}])
    async with collaborator(path) as human, mcp_client() as client:
        await call_tool(
            client,
            "batch_update_notebook_cells",
            path=path,
            exec=False,
            updates=[{"cell_id": "u", "content": "héllo WÖRLD 🎉 日本語"}],
        )
        await human.wait_until(lambda: human.sources() == ["héllo WÖRLD 🎉 日本語"])
        await call_tool(client, "replace_in_notebook", path=path, find="🎉", replace="🚀✨")
        await human.wait_until(lambda: human.sources() == ["héllo WÖRLD 🚀✨ 日本語"])
        # several matches after multibyte characters: each lands at its own byte offset
        await call_tool(client, "replace_in_notebook", path=path, find="([ÖR🚀語])", replace="<\\1>", regex=True)
        await human.wait_until(lambda: human.sources() == ["héllo W<Ö><R>LD <🚀>✨ 日本<語>"])


async def test_unopened_notebook_is_edited_through_a_room_and_saved(
    mcp_client: Any,
    make_notebook: Any,
    jp_root_dir: Path,
    collaboration_events: list[dict[str, Any]],
    jp_serverapp: Any,
) -> None:
    path = make_notebook("closed.ipynb", FIVE)
    async with mcp_client() as client:
        await call_tool(
            client,
            "batch_insert_notebook_cells",
            path=path,
            exec=False,
            cells=[{"content": "added"}],
            after_cell_id="c4",
        )
        await call_tool(
            client,
            "batch_update_notebook_cells",
            path=path,
            exec=False,
            updates=[{"cell_id": "c0", "content": "x = 100"}],
        )
    nb = await autosaved_file(jp_serverapp, jp_root_dir, path)
    assert "".join(nb["cells"][0]["source"]) == "x = 100"
    ids = [c["id"] for c in nb["cells"]]
    assert len(set(ids)) == len(ids) == 6
    assert disk_sources(jp_root_dir / path)[5] == "added"
    await asyncio.sleep(1.2)  # past a file poll, which is when an out-of-band change would show
    actions = [e.get("action") for e in collaboration_events]
    assert "save" in actions
    assert "overwrite" not in actions
    assert not [e for e in collaboration_events if e.get("level") == "ERROR"]


async def test_save_notebook_writes_now(
    mcp_client: Any, make_notebook: Any, jp_root_dir: Path, jp_serverapp: Any
) -> None:
    ydoc = jp_serverapp.extension_manager.extension_points["jupyter_server_ydoc"].app
    ydoc.document_save_delay = 30  # rooms created from now on would wait 30 s to save by themselves
    path = make_notebook("save.ipynb", FIVE)
    async with mcp_client() as client:
        await call_tool(
            client,
            "batch_update_notebook_cells",
            path=path,
            exec=False,
            updates=[{"index": 1, "content": "saved = True"}],
        )
        result = await call_tool(client, "save_notebook", path=path)
    assert result["saved"] is True
    assert disk_sources(jp_root_dir / path)[1] == "saved = True"


@pytest.mark.parametrize("mcp_config", [{"room_idle_timeout": 0.3}])  # the room is then closed soon after
async def test_edit_after_the_last_collaborator_left_is_not_lost(
    mcp_client: Any, make_notebook: Any, collaborator: Any, jp_root_dir: Path, jp_serverapp: Any
) -> None:
    path = make_notebook("left.ipynb", FIVE)
    ydoc = jp_serverapp.extension_manager.extension_points["jupyter_server_ydoc"].app
    async with mcp_client() as client:
        async with collaborator(path) as human:
            await call_tool(
                client,
                "batch_update_notebook_cells",
                path=path,
                exec=False,
                updates=[{"cell_id": "c0", "content": "before"}],
            )
            await human.wait_until(lambda: human.sources()[0] == "before")
            room_id = human.room_id
        # The person closed the tab: the room is deleted once the agent's use of it is idle (0.3 s here).
        deadline = time.monotonic() + 5
        while room_id in ydoc.ywebsocket_server.rooms and time.monotonic() < deadline:
            await asyncio.sleep(0.05)
        assert room_id not in ydoc.ywebsocket_server.rooms
        await call_tool(
            client,
            "batch_update_notebook_cells",
            path=path,
            exec=False,
            updates=[{"cell_id": "c1", "content": "after"}],
        )
        data = await call_tool(client, "get_notebook", path=path)
        assert [c["source"] for c in data["cells"][:2]] == ["before", "after"]
    nb = await autosaved_file(jp_serverapp, jp_root_dir, path)
    assert ["".join(c["source"]) for c in nb["cells"]][:2] == ["before", "after"]


class TestIdleRooms:
    @pytest.fixture
    def mcp_config(self) -> dict[str, Any]:
        return {"room_idle_timeout": 0.5}

    async def test_rooms_we_opened_are_saved_and_closed_when_idle(
        self, mcp_client: Any, make_notebook: Any, jp_root_dir: Path, jp_serverapp: Any, extension: Any
    ) -> None:
        ydoc = jp_serverapp.extension_manager.extension_points["jupyter_server_ydoc"].app
        ydoc.document_save_delay = 30  # only our eviction can save this edit in time
        path = make_notebook("idle.ipynb", FIVE)
        async with mcp_client() as client:
            created = await call_tool(client, "create_notebook_session", path=path)
            await call_tool(
                client, "batch_update_notebook_cells", path=path, exec=False, updates=[{"index": 0, "content": "kept"}]
            )
        room_id = created["room_id"]  # open until then (the janitor may close it any time from now)
        await until(lambda: room_id not in ydoc.ywebsocket_server.rooms, 60, "the idle room closing")
        assert disk_sources(jp_root_dir / path)[0] == "kept"


class TestYStoreLocation:
    """Rooms opened by agents keep their history where configured, never in the server's CWD."""

    @pytest.fixture
    def jp_server_config(self, jp_server_config: Any) -> Any:
        del jp_server_config["SQLiteYStore"]
        return jp_server_config

    @pytest.fixture
    def mcp_config(self, tmp_path: Path) -> dict[str, Any]:
        return {"ystore_path": str(tmp_path / "history" / "ystore.db")}

    async def test_history_goes_to_the_configured_path(
        self, mcp_client: Any, make_notebook: Any, tmp_path: Path, collaborator: Any, jp_serverapp: Any
    ) -> None:
        cwd = tmp_path / "cwd"
        cwd.mkdir()
        import os

        os.chdir(cwd)
        path = make_notebook("hist.ipynb", FIVE)
        other = make_notebook("hist2.ipynb", FIVE)
        async with mcp_client() as client:
            await call_tool(
                client, "batch_update_notebook_cells", path=path, exec=False, updates=[{"index": 0, "content": "a"}]
            )
            async with collaborator(other) as human:  # a browser-style room uses the same store
                human.type_into(0, 0, "b")
                await received(jp_serverapp, human)
                await stored(jp_serverapp, other)
        assert (tmp_path / "history" / "ystore.db").exists()
        assert not (cwd / ".jupyter_ystore.db").exists()


class TestAuthorization:
    """Each tool asks Jupyter's authorizer for its own permission: here writes are refused."""

    @pytest.fixture
    def jp_server_config(self, jp_server_config: Any) -> Any:
        jp_server_config.ServerApp.authorizer_class = "tests.test_notebook_live.ReadOnlyAuthorizer"
        return jp_server_config

    async def test_reads_pass_and_edits_are_refused(
        self, mcp_client: Any, make_notebook: Any, jp_root_dir: Path
    ) -> None:
        path = make_notebook("guarded.ipynb", FIVE)
        async with mcp_client() as client:
            data = await call_tool(client, "get_notebook", path=path)
            assert len(data["cells"]) == 5
            message = await tool_error(
                client, "batch_update_notebook_cells", path=path, updates=[{"index": 0, "content": "nope"}]
            )
            assert "not authorized to write contents" in message
        assert disk_sources(jp_root_dir / path)[0] == "x = 0"


from jupyter_server.auth.authorizer import Authorizer  # noqa: E402


class ReadOnlyAuthorizer(Authorizer):
    def is_authorized(self, handler: Any, user: Any, action: str, resource: str) -> bool:
        # The endpoint itself is a write on contents for POST: allow the MCP handler, refuse tools' writes.
        from jupyter_pair_mcp.transport.handlers import MCPHandler

        if isinstance(handler, MCPHandler) and getattr(handler, "_bridge", None) is not None:
            return action == "read"
        return True
