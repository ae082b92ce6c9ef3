"""Hostile sizes against every tool, while the loop monitor (tests/loopmonitor.py) watches the event loop.

The server shares Jupyter's event loop with every notebook and kernel of the user: one call that holds it
freezes everyone. Each case here drives a tool with an input near a limit (a source near the 4 MiB body
limit, tens of thousands of matches, thousands of cells, huge indexes and ranges, deep metadata, long
names) and needs nothing but the monitor to fail: a step on the loop past its bound fails the test. The
inputs are built outside the loop where they are big (files written before the server reads them), and
answers are kept small (``max_content_length``) so the test client's own parsing stays cheap.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from .conftest import call_tool, received

pytestmark = pytest.mark.usefixtures("jp_serverapp")

MATCHES = 20_000


async def test_replace_in_notebook_with_many_matches(mcp_client: Any, make_notebook: Any) -> None:
    path = make_notebook("many.ipynb", [{"cell_type": "code", "source": "x\n" * MATCHES, "id": "big"}])
    async with mcp_client() as client:
        done = await call_tool(client, "replace_in_notebook", path=path, find="x", replace="yy")
        assert done["replacements"] == MATCHES
        cell = await call_tool(client, "get_notebook", path=path, cell_ids=["big"], max_content_length=200_000)
        assert cell["cells"][0]["source"] == "yy\n" * MATCHES


async def test_replace_document_text_with_many_matches(mcp_client: Any, jp_root_dir: Path) -> None:
    (jp_root_dir / "many.txt").write_text("x\n" * MATCHES)
    async with mcp_client() as client:
        done = await call_tool(
            client, "replace_document_text", path="many.txt", old_text="x", new_text="yy", replace_all=True
        )
        assert done["replacements"] == MATCHES
        text = await call_tool(client, "get_document", path="many.txt", max_content_length=200_000)
        assert text["content"] == "yy\n" * MATCHES


@pytest.mark.parametrize("size", [1_000_000, 3_900_000])
async def test_merge_of_a_huge_cell_changed_at_both_ends(
    mcp_client: Any, make_notebook: Any, collaborator: Any, jp_serverapp: Any, size: int
) -> None:
    """A whole-source write with base_revision of a huge cell, changed at both ends while a person typed in
    its middle: the merge keeps the person's typing and the agent's two changes, the loop stays free."""
    source = ("0123456789abcdef" * (size // 16 + 1))[:size]
    path = make_notebook("huge.ipynb", [{"cell_type": "code", "source": "", "id": "first"}])
    async with collaborator(path) as human, mcp_client() as client:
        # The agent's own insert serves it the source and its revision (a read would exceed the client's
        # 1 MiB limit on one server-sent event).
        inserted = await call_tool(
            client, "batch_insert_notebook_cells", path=path, cells=[{"content": source}], start_position=0, exec=False
        )
        cell = inserted["inserted"][0]
        await human.wait_until(lambda: len(human.ids()) == 2, limit=20)
        human.type_into(0, size // 2, "PERSON")
        await received(jp_serverapp, human)
        content = "START" + source[5:-5] + "!!END"
        await call_tool(
            client,
            "batch_update_notebook_cells",
            path=path,
            updates=[{"cell_id": cell["id"], "content": content, "base_revision": cell["revision"]}],
        )
        merged = content[: size // 2] + "PERSON" + content[size // 2 :]
        await human.wait_until(lambda: human.source(0) == merged, limit=20)
