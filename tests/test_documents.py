"""Text documents on their live rooms, and creating, renaming, copying and deleting documents."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from .conftest import autosaved, call_tool, received, tool_error

pytestmark = pytest.mark.usefixtures("jp_serverapp")


@pytest.fixture
def script(jp_root_dir: Path) -> str:
    (jp_root_dir / "code.py").write_text("def add(a, b):\n    return a + b\n")
    return "code.py"


async def saved_text(serverapp: Any, root: Path, path: str) -> str:
    """The file once its room's save after the last change wrote it (never read while Jupyter writes it)."""
    await autosaved(serverapp, path, "file")
    return (root / path).read_text()


async def test_edits_reach_the_collaborator_and_the_file(
    mcp_client: Any, script: str, collaborator: Any, jp_root_dir: Path, jp_serverapp: Any
) -> None:
    async with collaborator(script, kind="file") as human, mcp_client() as client:
        assert human.text() == "def add(a, b):\n    return a + b\n"
        result = await call_tool(
            client,
            "batch_update_document",
            path=script,
            operations=[{"content": "# maths\n", "position": 0}, {"content": "\n\nprint(add(1, 2))\n", "position": -1}],
        )
        assert result["applied"] == 2
        expected = "# maths\ndef add(a, b):\n    return a + b\n\n\nprint(add(1, 2))\n"
        await human.wait_until(lambda: human.text() == expected)
        assert result["length"] == len(expected)
        replaced = await call_tool(client, "replace_document_text", path=script, old_text="a + b", new_text="b + a")
        assert replaced["replacements"] == 1
        await human.wait_until(lambda: "return b + a" in human.text())
        read = await call_tool(client, "get_document", path=script)
        assert read["content"] == human.text()
        assert read["mimetype"] == "text/x-python"
        assert read["collaboration"]["room_id"].startswith("text:file:")
    expected = "# maths\ndef add(a, b):\n    return b + a\n\n\nprint(add(1, 2))\n"
    assert await saved_text(jp_serverapp, jp_root_dir, script) == expected


async def test_positions_refer_to_the_text_before_the_batch_and_multibyte_lands_right(
    mcp_client: Any, jp_root_dir: Path, collaborator: Any
) -> None:
    (jp_root_dir / "intl.md").write_text("héllo 🎉 wörld 日本")
    async with collaborator("intl.md", kind="file") as human, mcp_client() as client:
        await call_tool(
            client,
            "batch_insert_text",
            path="intl.md",
            operations=[
                {"content": "[", "position": 6},
                {"content": "]", "position": 7},
                {"content": "語", "position": -1},
            ],
        )
        await human.wait_until(lambda: human.text() == "héllo [🎉] wörld 日本語")
        await call_tool(client, "batch_delete_text", path="intl.md", operations=[{"position": 0, "length": 6}])
        await human.wait_until(lambda: human.text() == "[🎉] wörld 日本語")


async def test_insertions_take_content_and_still_text_their_old_name(
    mcp_client: Any, script: str, collaborator: Any
) -> None:
    """batch_insert_text's operations say ``content`` like every other operation; clients written when they
    said ``text`` keep working, and the listed schema documents only ``content``."""
    async with collaborator(script, kind="file") as human, mcp_client() as client:
        listed = {t.name: t.input_schema for t in (await client.list_tools()).tools}["batch_insert_text"]
        op = listed["$defs"]["TextInsertOp"]
        assert set(op["properties"]) == {"content", "position"} and set(op["required"]) == {"content", "position"}
        await call_tool(client, "batch_insert_text", path=script, operations=[{"content": "# new\n", "position": 0}])
        await human.wait_until(lambda: human.text().startswith("# new\ndef add"))
        old = [{"text": "# old\n", "position": 0}, {"position": -1, "content": "# end\n"}]
        await call_tool(client, "batch_insert_text", path=script, operations=old)
        await human.wait_until(lambda: human.text() == "# old\n# new\ndef add(a, b):\n    return a + b\n# end\n")


@pytest.mark.parametrize(
    ("operation", "words"),
    [
        ({"content": "a", "text": "b", "position": 0}, "'operations[0]': give content, not both content and text"),
        ({"position": 0}, "missing field 'operations[0].content'"),
        ({"texts": "a", "position": 0}, "unknown field 'texts' in operations[0]"),
        ({"text": 1, "position": 0}, "must be a string, not an integer"),
    ],
)
async def test_insertions_refuse_both_names_and_unknown_fields(
    mcp_client: Any, script: str, operation: dict[str, Any], words: str
) -> None:
    async with mcp_client() as client:
        message = await tool_error(client, "batch_insert_text", path=script, operations=[operation])
        assert words in message and "nothing was done" in message
        assert (await call_tool(client, "get_document", path=script))["content"] == "def add(a, b):\n    return a + b\n"


async def test_concurrent_typing_elsewhere_survives_a_batch(
    mcp_client: Any, script: str, collaborator: Any, jp_serverapp: Any
) -> None:
    async with collaborator(script, kind="file") as human, mcp_client() as client:
        human.go_offline()
        human.type_text(0, "# typed by a person\n")
        await call_tool(client, "replace_document_text", path=script, old_text="return a + b", new_text="return a - b")
        await human.go_online()
        expected = "# typed by a person\ndef add(a, b):\n    return a - b\n"
        await human.wait_until(lambda: human.text() == expected)
        await received(jp_serverapp, human)
        assert (await call_tool(client, "get_document", path=script))["content"] == expected


async def test_get_document_slices(mcp_client: Any, jp_root_dir: Path) -> None:
    (jp_root_dir / "long.txt").write_text("abcdefghij" * 10)
    async with mcp_client() as client:
        part = await call_tool(client, "get_document", path="long.txt", offset=95, max_content_length=10)
        assert part["content"] == "fghij"
        assert part["truncated"] is False
        head = await call_tool(client, "get_document", path="long.txt", max_content_length=10)
        assert (head["content"], head["truncated"], head["size"]) == ("abcdefghij", True, 100)


@pytest.mark.parametrize(
    ("tool", "args", "words"),
    [
        ("batch_update_document", {"operations": [{"content": "x", "position": 999}]}, "outside the text"),
        (
            "batch_update_document",
            {"operations": [{"content": "x", "position": 0, "length": 999}]},
            "runs past the end",
        ),
        ("batch_delete_text", {"operations": [{"position": 0, "length": 5}, {"position": 3, "length": 2}]}, "overlap"),
        ("batch_insert_text", {"operations": []}, "empty"),
        ("replace_document_text", {"old_text": "nope", "new_text": "x"}, "not found"),
        ("replace_document_text", {"old_text": "a", "new_text": "x"}, "occurs 3 times"),
    ],
)
async def test_bad_text_edits_change_nothing(
    mcp_client: Any, script: str, jp_root_dir: Path, tool: str, args: dict[str, Any], words: str
) -> None:
    async with mcp_client() as client:
        assert words in await tool_error(client, tool, path=script, **args)
        assert (await call_tool(client, "get_document", path=script))["content"] == "def add(a, b):\n    return a + b\n"


async def test_text_tools_refuse_notebooks_binaries_and_missing_files(
    mcp_client: Any, make_notebook: Any, jp_root_dir: Path
) -> None:
    make_notebook("nb.ipynb", count=1)
    (jp_root_dir / "blob.bin").write_bytes(bytes(range(256)))
    async with mcp_client() as client:
        assert "use get_notebook" in await tool_error(client, "get_document", path="nb.ipynb")
        assert "cannot be opened as text" in await tool_error(client, "get_document", path="blob.bin")
        assert "no file at 'gone.txt'" in await tool_error(client, "get_document", path="gone.txt")


async def test_create_rename_copy_delete(
    mcp_client: Any, jp_root_dir: Path, collaborator: Any, jp_serverapp: Any
) -> None:
    async with mcp_client() as client:
        assert (await call_tool(client, "create_document", path="notes", type="directory"))["created"]
        await call_tool(client, "create_document", path="notes/todo.md", type="markdown", content="- [ ] ship\n")
        await call_tool(client, "create_document", path="notes/new.ipynb", type="notebook", content="# Plan")
        assert (jp_root_dir / "notes" / "todo.md").read_text() == "- [ ] ship\n"
        nb = await call_tool(client, "get_notebook", path="notes/new.ipynb")
        assert [c["source"] for c in nb["cells"]] == ["# Plan"]
        assert "already exists" in await tool_error(client, "create_document", path="notes/todo.md")
        assert "does not exist" in await tool_error(client, "create_document", path="nowhere/x.md")

        async with collaborator("notes/todo.md", kind="file") as human:
            renamed = await call_tool(client, "rename_document", path="notes/todo.md", new_path="notes/done.md")
            assert renamed == {"path": "notes/todo.md", "new_path": "notes/done.md"}
            await call_tool(
                client,
                "batch_insert_text",
                path="notes/done.md",
                operations=[{"text": "- [x] rename\n", "position": -1}],
            )
            await human.wait_until(lambda: human.text() == "- [ ] ship\n- [x] rename\n")
        assert await saved_text(jp_serverapp, jp_root_dir, "notes/done.md") == "- [ ] ship\n- [x] rename\n"
        assert not (jp_root_dir / "notes" / "todo.md").exists()

        copied = await call_tool(client, "copy_document", path="notes/done.md", copy_path="backup.md")
        assert copied["copy_path"] == "backup.md"
        assert (jp_root_dir / "backup.md").read_text() == "- [ ] ship\n- [x] rename\n"
        assert (await call_tool(client, "delete_document", path="backup.md"))["deleted"] == "backup.md"
        assert not (jp_root_dir / "backup.md").exists()
        assert "nothing at" in await tool_error(client, "delete_document", path="backup.md")
