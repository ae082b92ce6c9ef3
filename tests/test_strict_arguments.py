"""Unknown arguments are errors that name them, never silently ignored; the published designs' shapes work."""

from __future__ import annotations

from typing import Any

import pytest

from jupyter_pair_mcp.tools.arguments import close, unknown_argument

from .conftest import call_tool, tool_error

SCHEMA = close(
    {
        "type": "object",
        "properties": {
            "path": {"type": "string"},
            "cells": {"type": "array", "items": {"$ref": "#/$defs/CellInput"}},
            "positions": {"anyOf": [{"type": "array", "items": {"type": "integer"}}, {"type": "null"}]},
            "metadata": {"type": "object", "additionalProperties": True},
        },
        "$defs": {
            "CellInput": {
                "type": "object",
                "properties": {"content": {"type": "string"}, "cell_type": {"type": "string"}},
            }
        },
    }
)


def test_close_marks_every_object_with_properties() -> None:
    assert SCHEMA["additionalProperties"] is False
    assert SCHEMA["$defs"]["CellInput"]["additionalProperties"] is False
    assert SCHEMA["properties"]["metadata"]["additionalProperties"] is True  # a free-form dict stays open


@pytest.mark.parametrize(
    ("arguments", "words"),
    [
        ({"path": "a", "position": 0}, ["'position'", "did you mean 'positions'", "path, cells, positions"]),
        ({"path": "a", "cells": [{"content": "x"}, {"type": "markdown"}]}, ["'type'", "cells[1]", "'cell_type'"]),
        ({"path": "a", "root_path": "/"}, ["'root_path'", "the valid arguments are"]),
    ],
)
def test_unknown_keys_are_named_with_the_closest_valid_one(arguments: dict[str, Any], words: list[str]) -> None:
    message = unknown_argument(SCHEMA, arguments)
    assert message is not None
    for word in words:
        assert word in message


def test_known_keys_and_free_form_dicts_pass() -> None:
    arguments = {"path": "a", "cells": [{"content": "x", "cell_type": "code"}], "metadata": {"anything": 1}}
    assert unknown_argument(SCHEMA, arguments) is None


async def test_every_tool_schema_is_closed_and_every_nested_object_too(mcp_client: Any) -> None:
    async with mcp_client() as client:
        tools = (await client.list_tools()).tools
    open_objects = []

    def visit(tool: str, node: Any, where: str) -> None:
        if isinstance(node, dict):
            if "properties" in node and node.get("additionalProperties") is not False:
                open_objects.append(f"{tool}:{where}")
            for key, value in node.items():
                visit(tool, value, f"{where}/{key}")
        elif isinstance(node, list):
            for i, value in enumerate(node):
                visit(tool, value, f"{where}/{i}")

    for tool in tools:
        visit(tool.name, tool.input_schema, "")
    assert len(tools) > 40
    assert open_objects == []


@pytest.mark.parametrize("mode", ["legacy", "2026-07-28"])
async def test_an_unknown_argument_is_a_tool_error_and_nothing_happens(
    mcp_client: Any, make_notebook: Any, mode: str
) -> None:
    path = make_notebook("strict.ipynb", count=2)
    async with mcp_client(mode=mode) as client:
        message = await tool_error(
            client, "batch_insert_notebook_cells", path=path, position=0, cells=[{"type": "markdown", "content": "x"}]
        )
        assert "unknown argument 'position'" in message
        assert "did you mean" in message
        message = await tool_error(
            client, "batch_insert_notebook_cells", path=path, start_position=0, cells=[{"type": "markdown"}]
        )
        assert "unknown field 'type' in cells[0]" in message
        assert "'cell_type'" in message
        for name, arguments in [
            ("get_notebook", {"path": path, "offset": 5}),
            ("list_notebooks", {"root_path": "/"}),
            ("restart_notebook_kernel", {"path": path, "clear_contents": True}),
            ("get_active_sessions", {"include_session": True}),
            ("batch_delete_notebook_cells", {"path": path, "ranges": [[0, 1]]}),
            ("set_user_presence", {"path": path}),
        ]:
            message = await tool_error(client, name, **arguments)
            assert "unknown argument" in message, (name, message)
            assert "nothing was done" in message
        read = await call_tool(client, "get_notebook", path=path)
    assert read["cell_count"] == 2
    assert [c["source"] for c in read["cells"]] == ["x = 0", "x = 1"]


async def test_positions_insert_each_cell_at_its_own_index(mcp_client: Any, make_notebook: Any) -> None:
    path = make_notebook("positions.ipynb", count=3)
    async with mcp_client() as client:
        done = await call_tool(
            client,
            "batch_insert_notebook_cells",
            path=path,
            exec=False,
            positions=[0, 3],
            cells=[{"content": "first", "cell_type": "markdown"}, {"content": "middle"}],
        )
        read = await call_tool(client, "get_notebook", path=path)
        sources = [c["source"] for c in read["cells"]]
        assert sources == ["first", "x = 0", "x = 1", "middle", "x = 2"]
        assert [(c["index"], c["cell_type"]) for c in done["inserted"]] == [(0, "markdown"), (3, "code")]
        assert read["cells"][0]["cell_type"] == "markdown"
        assert "one per cell" in await tool_error(
            client, "batch_insert_notebook_cells", path=path, positions=[0], cells=[{"content": "a"}, {"content": "b"}]
        )
        assert "out of range" in await tool_error(
            client, "batch_insert_notebook_cells", path=path, positions=[9], cells=[{"content": "a"}]
        )


async def test_updates_addressed_by_top_level_cell_ids_or_a_range(mcp_client: Any, make_notebook: Any) -> None:
    path = make_notebook("addressed.ipynb", count=4)
    async with mcp_client() as client:
        ids = [c["id"] for c in (await call_tool(client, "get_notebook", path=path))["cells"]]
        await call_tool(
            client,
            "batch_update_notebook_cells",
            path=path,
            exec=False,
            cell_ids=[ids[3], ids[0]],
            updates=[{"content": "three"}, {"content": "zero"}],
        )
        await call_tool(
            client,
            "batch_update_notebook_cells",
            path=path,
            exec=False,
            start_index=1,
            end_index=3,
            updates=[{"content": "one"}, {"content": "two"}],
        )
        read = await call_tool(client, "get_notebook", path=path)
        assert [c["source"] for c in read["cells"]] == ["zero", "one", "two", "three"]
        message = await tool_error(
            client,
            "batch_update_notebook_cells",
            path=path,
            start_index=1,
            end_index=2,
            updates=[{"content": "a"}, {"content": "b"}],
        )
        assert "end_index is exclusive" in message
        message = await tool_error(
            client, "batch_update_notebook_cells", path=path, cell_ids=[ids[0]], updates=[{"cell_id": ids[1]}]
        )
        assert "leave them out" in message


async def test_documents_take_the_designs_file_types(mcp_client: Any, make_notebook: Any, jp_root_dir: Any) -> None:
    make_notebook("work/nb.ipynb", count=1)
    (jp_root_dir / "work" / "notes.md").write_text("# notes\n")
    (jp_root_dir / "work" / "data.csv").write_text("a,b\n")
    async with mcp_client() as client:

        async def listed(file_type: str) -> list[str]:
            found = await call_tool(client, "list_documents", path_filter="work/", file_type=file_type)
            return sorted(d["path"] for d in found["documents"])

        assert await listed("text") == ["work/data.csv", "work/notes.md"]
        assert await listed("markdown") == ["work/notes.md"]
        assert await listed("notebook") == ["work/nb.ipynb"]
        session = await call_tool(client, "create_document_session", path="work/notes.md", file_type="markdown")
        assert session["room_id"].startswith("text:file:")
        assert "not one of" in await tool_error(
            client, "create_document_session", path="work/notes.md", file_type="pdf"
        )
        created = await call_tool(client, "create_document", path="work/new.ipynb", content="# Title")
        assert created["type"] == "notebook"
        read = await call_tool(client, "get_notebook", path="work/new.ipynb")
        assert [(c["cell_type"], c["source"]) for c in read["cells"]] == [("markdown", "# Title")]
        assert read["metadata"]["nbformat"].startswith("4.")
