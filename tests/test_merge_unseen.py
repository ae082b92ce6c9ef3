"""A write without base_revision never deletes text the agent did not see, in every protocol era.

mcp 2.3's default client speaks the stateless 2026-07-28 era: no session for the server to remember reads
by. The agent reads a cell, appends a line and writes the whole source back without ``base_revision``
while a person types into that cell: the server bases the write on what it last served this principal
(and client) of that cell, so the person's keystrokes survive in the room and on disk. A cell this
principal was never served is written as asked; when the server cannot tell the base (the text it served
was dropped from its bounded store and the cell changed since), the write is refused with the live text
and the revision to redo it on.
"""

from __future__ import annotations

import json
import random
import string
from typing import Any

import pytest
from pycrdt import Array, Text

from .conftest import autosaved, call_tool, received, tool_error, until

ROUNDS = 8
PREFIX = "human: "
TAIL = "\n# end"  # after the person's caret, so the agent's appends never share its insertion point


def _live_source(extension: Any, path: str, index: int) -> str:
    ydoc = extension.rooms.live_ydoc(path, "notebook")
    assert ydoc is not None
    return str(ydoc.get("cells", type=Array)[index]["source"])


def _live_text(extension: Any, path: str) -> str:
    ydoc = extension.rooms.live_ydoc(path, "file")
    assert ydoc is not None
    return str(ydoc.get("source", type=Text))


def _revision_in(message: str) -> str:
    return message.split("base_revision ")[-1].split("'")[1]


@pytest.mark.parametrize("mode", ["2026-07-28", "auto"])
async def test_a_stateless_read_append_write_keeps_every_keystroke(
    mcp_client: Any,
    make_notebook: Any,
    collaborator: Any,
    extension: Any,
    jp_serverapp: Any,
    jp_root_dir: Any,
    mode: str,
) -> None:
    path = make_notebook(
        "typing.ipynb",
        [{"id": "c0", "cell_type": "code", "source": PREFIX + TAIL}, {"id": "c1", "cell_type": "code", "source": "x"}],
    )
    rng = random.Random(18)
    typed: list[str] = []
    async with collaborator(path) as human, mcp_client(mode=mode) as client:

        def type_one() -> None:
            char = rng.choice(string.ascii_lowercase)
            human.type_into(0, len(PREFIX) + len(typed), char)
            typed.append(char)

        for round_ in range(ROUNDS):
            read = await call_tool(client, "get_notebook", path=path, cell_ids=["c0"], include_outputs=False)
            type_one()
            type_one()
            await received(jp_serverapp, human)  # the server holds these keystrokes before the agent writes
            type_one()  # and this one races the write
            update = {"cell_id": "c0", "content": read["cells"][0]["source"] + f"\nline {round_}"}
            await call_tool(client, "batch_update_notebook_cells", path=path, exec=False, updates=[update])

        expected = PREFIX + "".join(typed) + TAIL + "".join(f"\nline {i}" for i in range(ROUNDS))
        await human.wait_until(lambda: human.sources()[0] == expected, limit=10)
        await until(lambda: _live_source(extension, path, 0) == expected, what="the room to hold every keystroke")
        await autosaved(jp_serverapp, path)
    on_disk = json.loads((jp_root_dir / path).read_text())
    assert "".join(on_disk["cells"][0]["source"]) == expected
    assert "".join(on_disk["cells"][1]["source"]) == "x"


async def test_a_cell_never_served_is_written_as_asked(
    mcp_client: Any, make_notebook: Any, collaborator: Any, jp_serverapp: Any
) -> None:
    path = make_notebook(
        "unread.ipynb",
        [{"id": "c0", "cell_type": "code", "source": "a = 1"}, {"id": "c1", "cell_type": "code", "source": "b = 1"}],
    )
    async with collaborator(path) as human, mcp_client(mode="2026-07-28") as client:
        await call_tool(client, "get_notebook", path=path, cell_ids=["c1"])  # another cell: c0 stays unread
        human.type_into(0, len("a = 1"), "0")
        await received(jp_serverapp, human)
        await call_tool(
            client,
            "batch_update_notebook_cells",
            path=path,
            exec=False,
            updates=[{"cell_id": "c0", "content": "z = 2"}],
        )
        await human.wait_until(lambda: human.sources() == ["z = 2", "b = 1"])


class TestForgottenReads:
    @pytest.fixture
    def mcp_config(self) -> dict[str, Any]:
        return {"enable_test_fixtures": True, "max_revision_bytes": 4000}  # room for one 3700-character text

    async def test_a_dropped_read_of_a_changed_cell_is_refused_with_the_live_text(
        self, mcp_client: Any, make_notebook: Any, collaborator: Any, jp_serverapp: Any, extension: Any
    ) -> None:
        big = "#" * 3700
        path = make_notebook(
            "dropped.ipynb",
            [{"id": "c0", "cell_type": "code", "source": "a = 1"}, {"id": "big", "cell_type": "code", "source": big}],
        )
        async with collaborator(path) as human, mcp_client(mode="2026-07-28") as client:
            read = await call_tool(client, "get_notebook", path=path, cell_ids=["c0"])
            await call_tool(client, "get_notebook", path=path, cell_ids=["big"])  # pushes "a = 1" out of the store
            human.type_into(0, len("a = 1"), "0")
            await received(jp_serverapp, human)
            message = await tool_error(
                client,
                "batch_update_notebook_cells",
                path=path,
                exec=False,
                updates=[{"cell_id": "c0", "content": read["cells"][0]["source"] + "\nb = 2"}],
            )
            assert "not known here" in message and "nothing was applied" in message
            assert "a = 10" in message  # the live text, to redo the change on
            assert _live_source(extension, path, 0) == "a = 10"
            # The revision the error names is the base of the redo, even once the person typed on.
            revision = _revision_in(message)
            human.type_into(0, 0, "#\n")
            await received(jp_serverapp, human)
            await call_tool(
                client,
                "batch_update_notebook_cells",
                path=path,
                exec=False,
                updates=[{"cell_id": "c0", "content": "a = 10\nb = 2", "base_revision": revision}],
            )
            await human.wait_until(lambda: human.sources()[0] == "#\na = 10\nb = 2")


async def test_text_operations_without_a_revision_land_where_the_agent_read(
    mcp_client: Any, collaborator: Any, extension: Any, jp_serverapp: Any, jp_root_dir: Any
) -> None:
    (jp_root_dir / "notes.md").write_text("line one\nline two\n")
    async with collaborator("notes.md", kind="file") as human, mcp_client(mode="2026-07-28") as client:
        read = await call_tool(client, "get_document", path="notes.md")
        human.doc.get("source", type=Text).insert(0, "X ")  # the person types before the agent's spot
        await received(jp_serverapp, human)
        start = read["content"].index("line two")
        await call_tool(
            client,
            "batch_update_document",
            path="notes.md",
            operations=[{"position": start, "length": len("line two"), "content": "line 2"}],
        )
        await human.wait_until(lambda: human.text() == "X line one\nline 2\n")
        assert _live_text(extension, "notes.md") == "X line one\nline 2\n"
        await autosaved(jp_serverapp, "notes.md", "file")
    assert (jp_root_dir / "notes.md").read_text() == "X line one\nline 2\n"


async def test_two_agents_on_one_token_are_told_apart_by_their_client_names(
    mcp_client: Any, make_notebook: Any, collaborator: Any, jp_serverapp: Any
) -> None:
    from mcp_types import Implementation

    path = make_notebook("shared.ipynb", [{"id": "c0", "cell_type": "code", "source": "a = 1"}])
    first = mcp_client(mode="2026-07-28", client_info=Implementation(name="agent-one", version="1"))
    second = mcp_client(mode="2026-07-28", client_info=Implementation(name="agent-two", version="1"))
    async with collaborator(path) as human, first as one, second as two:
        read = await call_tool(one, "get_notebook", path=path, cell_ids=["c0"])
        human.type_into(0, len("a = 1"), "0")
        await received(jp_serverapp, human)
        await call_tool(two, "get_notebook", path=path, cell_ids=["c0"])  # the other agent sees "a = 10"
        update = {"cell_id": "c0", "content": read["cells"][0]["source"] + "\nb = 2"}
        await call_tool(one, "batch_update_notebook_cells", path=path, exec=False, updates=[update])
        await human.wait_until(lambda: human.sources() == ["a = 10\nb = 2"])


async def test_a_whole_source_from_a_cut_read_is_refused_without_a_revision_too(
    mcp_client: Any, make_notebook: Any, extension: Any
) -> None:
    long_source = "".join(f"value_{i} = {i}\n" for i in range(40))
    path = make_notebook("cut.ipynb", [{"id": "big", "cell_type": "code", "source": long_source}])
    async with mcp_client(mode="2026-07-28") as client:
        read = await call_tool(client, "get_notebook", path=path, max_content_length=100)
        assert read["cells"][0]["revision"].startswith("cut-")
        start = read["cells"][0]["source"].split("[...")[0]  # the agent drops the cut marker and appends
        message = await tool_error(
            client,
            "batch_update_notebook_cells",
            path=path,
            exec=False,
            updates=[{"cell_id": "big", "content": start + "more = 1"}],
        )
        assert "was cut" in message and "nothing was applied" in message
        assert _live_source(extension, path, 0) == long_source


class TestForgottenMemory:
    @pytest.fixture
    def mcp_config(self) -> dict[str, Any]:
        return {"enable_test_fixtures": True, "max_read_memory_per_principal": 1}  # remembers nothing

    async def test_an_edit_the_server_cannot_tell_the_base_of_is_refused(
        self, mcp_client: Any, make_notebook: Any, collaborator: Any, jp_serverapp: Any, extension: Any
    ) -> None:
        path = make_notebook("forgot.ipynb", [{"id": "c0", "cell_type": "code", "source": "a = 1"}])
        async with collaborator(path) as human, mcp_client(mode="2026-07-28") as client:
            read = await call_tool(client, "get_notebook", path=path, cell_ids=["c0"])
            human.type_into(0, len("a = 1"), "0")
            await received(jp_serverapp, human)
            message = await tool_error(
                client,
                "batch_update_notebook_cells",
                path=path,
                exec=False,
                updates=[{"cell_id": "c0", "content": read["cells"][0]["source"] + "\nb = 2"}],
            )
            assert "no longer remembers" in message and "nothing was applied" in message and "a = 10" in message
            assert _live_source(extension, path, 0) == "a = 10"
            await call_tool(
                client,
                "batch_update_notebook_cells",
                path=path,
                exec=False,
                updates=[{"cell_id": "c0", "content": "a = 10\nb = 2", "base_revision": _revision_in(message)}],
            )
            await human.wait_until(lambda: human.sources() == ["a = 10\nb = 2"])

    async def test_a_retype_or_an_expected_source_needs_no_remembered_base(
        self, mcp_client: Any, make_notebook: Any, collaborator: Any, jp_serverapp: Any
    ) -> None:
        path = make_notebook("retype.ipynb", [{"id": "c0", "cell_type": "code", "source": "a = 1"}])
        async with collaborator(path) as human, mcp_client(mode="2026-07-28") as client:
            await call_tool(client, "get_notebook", path=path, cell_ids=["c0"])  # remembered, then dropped
            human.type_into(0, len("a = 1"), "0")
            await received(jp_serverapp, human)
            await call_tool(  # a retype changes no text: it needs no base
                client,
                "batch_update_notebook_cells",
                path=path,
                exec=False,
                updates=[{"cell_id": "c0", "cell_type": "raw"}],
            )
            # expected_source says which text the agent based its content on: the live one.
            update = {"cell_id": "c0", "content": "a = 10\nb = 2", "expected_source": "a = 10"}
            await call_tool(client, "batch_update_notebook_cells", path=path, exec=False, updates=[update])
            await human.wait_until(
                lambda: human.sources() == ["a = 10\nb = 2"] and human.cells()[0]["cell_type"] == "raw"
            )
