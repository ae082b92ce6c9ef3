"""Every resources/read is bounded like the tools, says what it left out, and the tool call it names reads on.

A 51 MB cell used to come back whole (51.5 MB) through ``resources/read`` while the tools stop at
``max_content_length``. Now a read returns at most ``max_resource_length`` characters of text (default 100 000,
as the tools' default) and images within a tool result's image limits, in both protocol eras.
"""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pytest

from .conftest import call_tool, within

pytestmark = pytest.mark.usefixtures("jp_serverapp")

LIMIT = 100_000  # the default max_resource_length
SLACK = 1_000  # the markers and notes a cut read adds
ERAS = ["legacy", "2026-07-28"]


def text_size(result: Any) -> int:
    return sum(len(getattr(c, "text", "") or "") + len(getattr(c, "blob", "") or "") for c in result.contents)


def png(size: int) -> str:
    return base64.b64encode(b"\x89PNG" + b"\0" * (size * 3 // 4 - 4)).decode()


@pytest.mark.parametrize("mode", ERAS)
async def test_a_large_document_is_cut_and_get_document_reads_on(mcp_client: Any, jp_root_dir: Path, mode: str) -> None:
    text = "".join(f"line {i:07d}\n" for i in range(100_000))  # 1.3 MB
    (jp_root_dir / "big.txt").write_text(text)
    async with mcp_client(mode=mode) as client:
        [content] = (await within(client.read_resource("document://big.txt"))).contents
        assert len(content.text) < LIMIT + SLACK
        assert content.text.startswith(text[:LIMIT])
        assert "get_document(path='big.txt', offset=100000)" in content.text.splitlines()[-1]
        assert content.meta["truncated"] is True
        assert (content.meta["size"], content.meta["next_offset"]) == (len(text), LIMIT)
        on = await call_tool(client, "get_document", path="big.txt", offset=content.meta["next_offset"])
        assert on["content"] == text[LIMIT : 2 * LIMIT]
        (jp_root_dir / "small.txt").write_text("small")
        [small] = (await within(client.read_resource("document://small.txt"))).contents
        assert small.text == "small" and "truncated" not in small.meta


@pytest.mark.parametrize("mode", ERAS)
async def test_a_huge_cell_with_many_outputs_is_bounded(mcp_client: Any, make_notebook: Any, mode: str) -> None:
    source = "x = 1\n" * 200_000  # 1.2 MB
    outputs = [{"output_type": "stream", "name": "stdout", "text": f"{i}: " + "o" * 1500} for i in range(500)]
    path = make_notebook("huge.ipynb", [{"cell_type": "code", "source": source, "id": "big", "outputs": outputs}])
    base = f"notebook://{quote(path, safe='')}"
    async with mcp_client(mode=mode) as client:
        cell = await within(client.read_resource(f"{base}/cells/big"))
        assert text_size(cell) < LIMIT + SLACK
        first, note = cell.contents[0], cell.contents[-1]
        assert first.text.startswith(source[:LIMIT]) and "more characters cut]" in first.text
        assert first.meta["truncated"] is True and first.meta["revision"]
        assert "get_notebook(path='huge.ipynb', cell_ids=['big'])" in note.text
        assert "outputs 0-499 not shown" in note.text

        for view in ("", "/json", "/cells"):
            [content] = (await within(client.read_resource(f"{base}{view}"))).contents
            # The bound counts the characters of sources and outputs; JSON escapes ("\n") may lengthen a view.
            assert len(content.text) < (LIMIT if view == "" else 2 * LIMIT) + SLACK, view
            if view:
                parsed = json.loads(content.text)
                shown = parsed["cells"] if view == "/json" else parsed
                assert sum(len(c["source"]) + sum(len(o["text"]) for o in c["outputs"]) for c in shown) < LIMIT + SLACK
            assert content.meta == {"truncated": True, "cut_cells": ["big"]}, (view, content.meta)

        # A cell that fits takes as many outputs as the budget holds, then says how many it left out.
        small = [{"cell_type": "code", "source": "print()", "id": "many", "outputs": outputs}]
        path = make_notebook("many.ipynb", small)
        cell = await within(client.read_resource(f"notebook://{path}/cells/many"))
        assert text_size(cell) < LIMIT + SLACK
        shown = [c for c in cell.contents if "output_index" in (c.meta or {})]
        assert 40 < len(shown) < 100
        assert f"outputs {len(shown)}-499 not shown" in cell.contents[-1].text


@pytest.mark.parametrize("mode", ERAS)
async def test_a_long_notebook_stops_at_a_cell_and_get_notebook_reads_on(
    mcp_client: Any, make_notebook: Any, mode: str
) -> None:
    cells = [{"cell_type": "code", "source": f"# cell {i}\n" + "y = 2\n" * 150, "id": f"c{i}"} for i in range(400)]
    path = make_notebook("long.ipynb", cells)
    base = f"notebook://{path}"
    async with mcp_client(mode=mode) as client:
        as_json = json.loads((await within(client.read_resource(f"{base}/json"))).contents[0].text)
        assert as_json["truncated"] is True and as_json["cell_count"] == 400
        next_index = as_json["next_index"]
        assert 50 < next_index < 150 and len(as_json["cells"]) == next_index
        [markdown] = (await within(client.read_resource(base))).contents
        assert len(markdown.text) < LIMIT + SLACK
        assert markdown.meta["next_index"] == next_index
        last = markdown.text.rstrip().splitlines()[-1]
        assert f"cells {next_index}-399 of 400 not shown" in last
        assert f"get_notebook(path='long.ipynb', start_index={next_index})" in last
        [cells_view] = (await within(client.read_resource(f"{base}/cells"))).contents
        assert len(json.loads(cells_view.text)) == next_index and cells_view.meta["next_index"] == next_index
        on = await call_tool(client, "get_notebook", path=path, start_index=next_index, include_outputs=False)
        assert on["cells"][0]["id"] == f"c{next_index}"


async def test_a_notebook_of_many_empty_cells_is_bounded(mcp_client: Any, make_notebook: Any) -> None:
    path = make_notebook("empty.ipynb", [{"cell_type": "markdown", "source": "", "id": f"e{i}"} for i in range(5000)])
    async with mcp_client() as client:
        for view in ("", "/json", "/cells"):
            [content] = (await within(client.read_resource(f"notebook://{path}{view}"))).contents
            assert len(content.text) < 2 * LIMIT, view
            assert content.meta["truncated"] is True


@pytest.mark.parametrize("mode", ERAS)
async def test_images_of_a_cell_read_follow_the_image_limits(mcp_client: Any, make_notebook: Any, mode: str) -> None:
    """At most max_images_per_result (8) images, none over max_image_bytes (1 MiB); the rest come as markers
    saying why."""
    image = {"output_type": "display_data", "metadata": {}, "data": {"image/png": png(10_000), "text/plain": "fig"}}
    huge = {"output_type": "display_data", "metadata": {}, "data": {"image/png": png(2 << 20)}}
    outputs = [huge] + [image] * 10
    path = make_notebook("pics.ipynb", [{"cell_type": "code", "source": "plot()", "id": "p", "outputs": outputs}])
    async with mcp_client(mode=mode) as client:
        cell = await within(client.read_resource(f"notebook://{path}/cells/p"))
    blobs = [c for c in cell.contents if getattr(c, "blob", None)]
    markers = [c for c in cell.contents if "image_not_returned" in (c.meta or {})]
    assert len(blobs) == 8
    assert [m.meta["output_index"] for m in markers] == [0, 9, 10]
    assert "larger than 1048576 base64 bytes" in markers[0].meta["image_not_returned"]
    assert "past the 8 images" in markers[1].meta["image_not_returned"]
    assert markers[0].text.startswith("[image/png image,")
    assert text_size(cell) < 8 * 10_000 + SLACK
