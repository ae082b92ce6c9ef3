"""A person typing and an agent editing the same cell: every keystroke and every agent line lands exactly once.

The agent reads, appends a line and writes the whole source back, 20 times, while a collaborator on the
room websocket types into that same cell. Some keystrokes reach the server between the agent's read and
its write (the test waits for the server's room to hold them: the case that used to delete them), others
race the write. Without ``expected_source`` and in both protocol eras: with ``base_revision``, and in a
stateful session without it (the server remembers what it served that session).
"""

from __future__ import annotations

import asyncio
import json
import random
import string
from typing import Any

import pytest
from pycrdt import Array, Text

from .conftest import call_tool, tool_error, within

CYCLES = 20
PREFIX = "human: "
#: After the person's caret, so the agent's appends (at the end) never share its insertion point: two
#: inserts racing at one point are ordered by client id in a CRDT, so the caret's keystrokes could land
#: after an agent line (all present, but not where this test looks for them).
TAIL = "\n# end"


def _live_source(extension: Any, path: str, index: int) -> str:
    ydoc = extension.rooms.live_ydoc(path, "notebook")
    assert ydoc is not None
    return str(ydoc.get("cells", type=Array)[index]["source"])


async def _until(predicate: Any, limit: float = 10) -> None:
    """Wait for a condition on the server's room (polled: the server shares this event loop)."""

    async def poll() -> None:
        while not predicate():
            await asyncio.sleep(0.005)

    await within(poll(), limit)


@pytest.mark.parametrize(
    ("mode", "pass_revision"),
    [("legacy", True), ("2026-07-28", True), ("legacy", False)],
    ids=["legacy-base_revision", "modern-base_revision", "legacy-remembered"],
)
async def test_append_while_a_person_types_keeps_every_keystroke(
    mcp_client: Any,
    make_notebook: Any,
    collaborator: Any,
    extension: Any,
    jp_root_dir: Any,
    mode: str,
    pass_revision: bool,
) -> None:
    path = make_notebook(
        "typing.ipynb",
        [
            {"id": "c0", "cell_type": "code", "source": PREFIX + TAIL},
            {"id": "c1", "cell_type": "code", "source": "x = 1"},
        ],
    )
    rng = random.Random(11)
    typed: list[str] = []
    async with collaborator(path) as human, mcp_client(mode=mode) as client:

        def type_one() -> None:
            char = rng.choice(string.ascii_lowercase)
            human.type_into(0, len(PREFIX) + len(typed), char)  # the person's caret: end of the first line
            typed.append(char)

        for cycle in range(CYCLES):
            read = await call_tool(client, "get_notebook", path=path, cell_ids=["c0"], include_outputs=False)
            cell = read["cells"][0]
            # The person types between the agent's read and its write; the server has these keystrokes.
            type_one()
            type_one()
            await _until(lambda: PREFIX + "".join(typed) in _live_source(extension, path, 0))
            type_one()  # and one that races the write
            update: dict[str, Any] = {"cell_id": "c0", "content": cell["source"] + f"\nline {cycle}"}
            if pass_revision:
                update["base_revision"] = cell["revision"]
            await call_tool(client, "batch_update_notebook_cells", path=path, exec=False, updates=[update])

        expected = PREFIX + "".join(typed) + TAIL + "".join(f"\nline {i}" for i in range(CYCLES))
        await human.wait_until(lambda: human.sources()[0] == expected, limit=10)
        await _until(lambda: _live_source(extension, path, 0) == expected)
        saved = await call_tool(client, "save_notebook", path=path)
        assert saved["saved"] is True
    on_disk = json.loads((jp_root_dir / path).read_text())
    assert "".join(on_disk["cells"][0]["source"]) == expected
    assert "".join(on_disk["cells"][1]["source"]) == "x = 1"


async def test_overlapping_edit_is_refused_with_the_current_text(
    mcp_client: Any, make_notebook: Any, collaborator: Any, extension: Any
) -> None:
    path = make_notebook("overlap.ipynb", [{"id": "c0", "cell_type": "code", "source": "value = compute(x)"}])
    async with collaborator(path) as human, mcp_client() as client:
        read = await call_tool(client, "get_notebook", path=path)
        revision = read["cells"][0]["revision"]
        human.type_into(0, len("value = compute"), "_fast")
        await _until(lambda: _live_source(extension, path, 0) == "value = compute_fast(x)")
        message = await tool_error(
            client,
            "batch_update_notebook_cells",
            path=path,
            exec=False,
            updates=[{"cell_id": "c0", "content": "value = other(x)", "base_revision": revision}],
        )
        assert "changed where your edit applies" in message
        assert "nothing was applied" in message
        assert "value = compute_fast(x)" in message  # the current text, to redo the change on
        assert _live_source(extension, path, 0) == "value = compute_fast(x)"
        # The revision the error names is the base for the retry.
        now = message.split("base_revision ")[-1].split("'")[1]
        done = await call_tool(
            client,
            "batch_update_notebook_cells",
            path=path,
            exec=False,
            updates=[{"cell_id": "c0", "content": "value = other_fast(x)", "base_revision": now}],
        )
        assert done["updated"][0]["id"] == "c0"
        await human.wait_until(lambda: human.sources() == ["value = other_fast(x)"])


async def test_operations_edit_a_cell_without_reading_it(
    mcp_client: Any, make_notebook: Any, collaborator: Any
) -> None:
    path = make_notebook("ops.ipynb", [{"id": "c0", "cell_type": "code", "source": "print('a')"}])
    async with collaborator(path) as human, mcp_client(mode="2026-07-28") as client:
        result = await call_tool(
            client,
            "batch_update_notebook_cells",
            path=path,
            exec=False,
            updates=[
                {
                    "cell_id": "c0",
                    "operations": [{"content": "# first\n", "position": 0}, {"content": "\nprint('b')"}],
                }
            ],
        )
        await human.wait_until(lambda: human.sources() == ["# first\nprint('a')\nprint('b')"])
        assert len(result["updated"][0]["revision"]) == 12
        bad = await tool_error(
            client,
            "batch_update_notebook_cells",
            path=path,
            updates=[{"cell_id": "c0", "content": "x", "operations": [{"content": "y"}]}],
        )
        assert "give one" in bad


async def test_an_unknown_base_revision_is_refused_unless_the_text_is_unchanged(
    mcp_client: Any, make_notebook: Any
) -> None:
    path = make_notebook("unknown.ipynb", [{"id": "c0", "cell_type": "code", "source": "a = 1"}])
    async with mcp_client() as client:
        message = await tool_error(
            client,
            "batch_update_notebook_cells",
            path=path,
            exec=False,
            updates=[{"cell_id": "c0", "content": "a = 2", "base_revision": "000000000000"}],
        )
        assert "not known here" in message
        assert "nothing was applied" in message
        read = await call_tool(client, "get_notebook", path=path)
        assert read["cells"][0]["source"] == "a = 1"


@pytest.mark.parametrize("pass_revision", [True, False], ids=["base_revision", "remembered"])
async def test_seeded_random_edits_by_a_person_and_an_agent_all_land(
    mcp_client: Any, make_notebook: Any, collaborator: Any, extension: Any, pass_revision: bool
) -> None:
    """Several cells; the person types tokens at line starts, the agent appends tokens (read -> write),
    inserts, deletes and moves cells. Every token of a cell that still exists is in it exactly once."""
    rng = random.Random(2024)
    cells = [{"id": f"c{i}", "cell_type": "code", "source": f"<s{i}>"} for i in range(4)]
    path = make_notebook("random.ipynb", cells)
    expected: dict[str, list[str]] = {c["id"]: [c["source"]] for c in cells}
    counter = iter(range(10_000))

    async with collaborator(path) as human, mcp_client() as client:

        def person_types() -> None:
            index = rng.randrange(len(human.ids()))
            text = human.sources()[index]
            starts = [0] + [i + 1 for i, ch in enumerate(text) if ch == "\n"]
            token = f"<h{next(counter)}>"
            human.type_into(index, rng.choice(starts), token + "\n")
            expected[human.ids()[index]].append(token)

        async def settled() -> None:
            await _until(lambda: _room_sources(extension, path) == dict(zip(human.ids(), human.sources(), strict=True)))

        for _ in range(25):
            target = rng.choice(list(expected))
            read = await call_tool(client, "get_notebook", path=path, cell_ids=[target], include_outputs=False)
            for _ in range(rng.randint(0, 3)):
                person_types()
            if rng.random() < 0.5:
                await settled()  # these keystrokes reached the server between the agent's read and write
            token = f"<a{next(counter)}>"
            update: dict[str, Any] = {"cell_id": target, "content": read["cells"][0]["source"] + "\n" + token}
            if pass_revision:
                update["base_revision"] = read["cells"][0]["revision"]
            await call_tool(client, "batch_update_notebook_cells", path=path, exec=False, updates=[update])
            expected[target].append(token)
            await settled()
            action = rng.random()
            ids = list(expected)
            if action < 0.15 and len(ids) > 2:
                victim = rng.choice([i for i in ids if i != target])
                await call_tool(client, "batch_delete_notebook_cells", path=path, cell_ids=[victim])
                del expected[victim]
            elif action < 0.3:
                token = f"<n{next(counter)}>"
                done = await call_tool(
                    client,
                    "batch_insert_notebook_cells",
                    path=path,
                    exec=False,
                    positions=[rng.randint(0, len(ids))],
                    cells=[{"content": token}],
                )
                expected[done["inserted"][0]["id"]] = [token]
            elif action < 0.45:
                await call_tool(
                    client, "move_notebook_cell", path=path, cell_id=rng.choice(ids), to_index=rng.randrange(len(ids))
                )
            await settled()

        final = dict(zip(human.ids(), human.sources(), strict=True))
        assert set(final) == set(expected)
        for cell_id, tokens in expected.items():
            for token in tokens:
                assert final[cell_id].count(token) == 1, (cell_id, token, final[cell_id])
        assert _room_sources(extension, path) == final


def _room_sources(extension: Any, path: str) -> dict[str, str]:
    ydoc = extension.rooms.live_ydoc(path, "notebook")
    assert ydoc is not None
    return {str(c["id"]): str(c["source"]) for c in ydoc.get("cells", type=Array).to_py()}


def _live_text(extension: Any, path: str) -> str:
    ydoc = extension.rooms.live_ydoc(path, "file")
    assert ydoc is not None
    return str(ydoc.get("source", type=Text))


@pytest.mark.parametrize("mode", ["legacy", "2026-07-28"])
async def test_text_operations_from_an_old_read_land_where_the_agent_meant(
    mcp_client: Any, collaborator: Any, extension: Any, jp_root_dir: Any, mode: str
) -> None:
    (jp_root_dir / "notes.md").write_text("line one\nline two\n")
    async with collaborator("notes.md", kind="file") as human, mcp_client(mode=mode) as client:
        read = await call_tool(client, "get_document", path="notes.md")
        human.doc.get("source", type=Text).insert(0, "X ")  # the person types before the agent's spot
        await _until(lambda: _live_text(extension, "notes.md").startswith("X "))
        done = await call_tool(
            client,
            "batch_insert_text",
            path="notes.md",
            base_revision=read["revision"],
            operations=[{"text": " (edited)", "position": len("line one")}],
        )
        assert done["length"] == len("X line one (edited)\nline two\n")
        await human.wait_until(lambda: human.text() == "X line one (edited)\nline two\n")
        # The person types inside what the agent then deletes: refused, with the text as it is now.
        read = await call_tool(client, "get_document", path="notes.md")
        human.doc.get("source", type=Text).insert(len("X line one (edited)\nline t"), "w")
        await _until(lambda: "line twwo" in _live_text(extension, "notes.md"))
        start = read["content"].index("line two")
        message = await tool_error(
            client,
            "batch_delete_text",
            path="notes.md",
            base_revision=read["revision"],
            operations=[{"position": start, "length": len("line two")}],
        )
        assert "changed where your edit applies" in message
        assert "line twwo" in message
        assert _live_text(extension, "notes.md") == "X line one (edited)\nline twwo\n"


async def test_a_cut_read_is_flagged_and_cannot_be_written_back_whole(mcp_client: Any, make_notebook: Any) -> None:
    long_source = "".join(f"value_{i} = {i}\n" for i in range(40))
    path = make_notebook("cut.ipynb", [{"id": "big", "cell_type": "code", "source": long_source}])
    for mode in ("legacy", "2026-07-28"):
        async with mcp_client(mode=mode) as client:
            read = await call_tool(client, "get_notebook", path=path, max_content_length=100)
            cell = read["cells"][0]
            assert read["truncated"] is True
            assert read["cut_cells"] == ["big"]
            assert read["next_index"] is None
            assert cell["revision"].startswith("cut-")
            assert "more characters cut]" in cell["source"]
            # With the cut read's revision (or, in a session, remembered), a whole-source write is refused...
            message = await tool_error(
                client,
                "batch_update_notebook_cells",
                path=path,
                updates=[{"cell_id": "big", "content": "x = 1\n" + cell["source"], "base_revision": cell["revision"]}],
            )
            assert "was cut" in message and "nothing was applied" in message
            # ...and so is the cut text sent back without one (it carries the cut marker).
            message = await tool_error(
                client,
                "batch_update_notebook_cells",
                path=path,
                updates=[{"cell_id": "big", "content": cell["source"] + "\nmore = 1"}],
            )
            assert "nothing was applied" in message
    async with mcp_client() as client:
        # Operations from a cut read are fine: positions index the whole source the read began.
        await call_tool(
            client,
            "batch_update_notebook_cells",
            path=path,
            exec=False,
            updates=[
                {
                    "cell_id": "big",
                    "operations": [{"content": "# top\n", "position": 0}],
                    "base_revision": cell["revision"],
                }
            ],
        )
        whole = await call_tool(client, "get_notebook", path=path)
    assert whole["cells"][0]["source"] == "# top\n" + long_source
    assert whole["truncated"] is False and whole["cut_cells"] == []


async def test_resources_give_each_cell_its_revision(mcp_client: Any, make_notebook: Any) -> None:
    path = make_notebook("res.ipynb", [{"id": "c0", "cell_type": "code", "source": "a = 1"}])
    async with mcp_client() as client:
        cell = (await within(client.read_resource(f"notebook://{path}/cells/c0"))).contents[0].meta
        listing = json.loads((await within(client.read_resource(f"notebook://{path}/cells"))).contents[0].text)
        assert (
            cell["revision"]
            == listing[0]["revision"]
            == (await call_tool(client, "get_notebook", path=path))["cells"][0]["revision"]
        )
        markdown = (await within(client.read_resource(f"notebook://{path}"))).contents[0].text
        assert f"revision={cell['revision']}" in markdown
        done = await call_tool(
            client,
            "batch_update_notebook_cells",
            path=path,
            exec=False,
            updates=[{"cell_id": "c0", "content": "a = 2", "base_revision": cell["revision"]}],
        )
        assert done["updated"][0]["revision"] != cell["revision"]
