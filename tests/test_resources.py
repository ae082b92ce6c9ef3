"""Notebooks and text documents as MCP resources, read through the live rooms."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pytest
from mcp.shared.exceptions import MCPError

from .conftest import call_tool, within

pytestmark = pytest.mark.usefixtures("jp_serverapp")

CELLS = [
    {"cell_type": "markdown", "source": "# Title", "id": "md"},
    {
        "cell_type": "code",
        "source": "1 + 1",
        "id": "two",
        "execution_count": 1,
        "outputs": [
            {"output_type": "execute_result", "execution_count": 1, "metadata": {}, "data": {"text/plain": "2"}}
        ],
    },
]


def text_of(result: Any) -> str:
    return str(result.contents[0].text)


@pytest.mark.parametrize("mode", ["legacy", "2026-07-28"])
async def test_notebook_resources(mcp_client: Any, make_notebook: Any, mode: str) -> None:
    path = make_notebook("dir with space/ana lysis.ipynb", CELLS)
    base = f"notebook://{quote(path, safe='')}"
    async with mcp_client(mode=mode) as client:
        templates = {t.uri_template for t in (await within(client.list_resource_templates())).resource_templates}
        assert {"notebook://{path}", "notebook://{path}/cells/{cell_id}", "document://{path}"} <= templates
        listing = json.loads(text_of(await within(client.read_resource("notebook://list"))))
        assert [n["path"] for n in listing["notebooks"]] == [path]
        assert listing["notebooks"][0]["uri"] == base
        markdown = text_of(await within(client.read_resource(base)))
        assert "# Title" in markdown
        assert "```python\n1 + 1\n```" in markdown
        assert "```text\n2\n```" in markdown
        as_json = json.loads(text_of(await within(client.read_resource(f"{base}/json"))))
        assert as_json["cell_count"] == 2
        assert as_json["metadata"]["kernelspec"]["name"] == "python3"
        cells = json.loads(text_of(await within(client.read_resource(f"{base}/cells"))))
        assert [c["id"] for c in cells] == ["md", "two"]
        one = (await within(client.read_resource(f"{base}/cells/two"))).contents
        assert [(c.text, c.mime_type) for c in one] == [("1 + 1", "text/x-python"), ("2", "text/plain")]
        assert one[0].meta["revision"] and one[0].meta["cell_type"] == "code"
        title = (await within(client.read_resource(f"{base}/cells/md"))).contents
        assert [(c.text, c.mime_type) for c in title] == [("# Title", "text/markdown")]


async def test_resources_are_live(mcp_client: Any, make_notebook: Any, jp_root_dir: Path) -> None:
    path = make_notebook("live.ipynb", CELLS)
    (jp_root_dir / "a.txt").write_text("first")
    async with mcp_client() as client:
        await call_tool(
            client,
            "batch_update_notebook_cells",
            path=path,
            updates=[{"cell_id": "md", "content": "# Changed"}],
            exec=False,
        )
        assert text_of(await within(client.read_resource(f"notebook://{path}/cells/md"))) == "# Changed"
        await call_tool(client, "batch_insert_text", path="a.txt", operations=[{"text": " second", "position": -1}])
        assert text_of(await within(client.read_resource("document://a.txt"))) == "first second"


async def test_resource_errors_say_what_is_wrong(mcp_client: Any, make_notebook: Any) -> None:
    make_notebook("x.ipynb", CELLS)
    async with mcp_client() as client:
        for uri, words in [
            ("notebook://missing.ipynb", "no notebook at"),
            ("notebook://x.ipynb/cells/nope", "no cell with id"),
            ("document://x.ipynb", "notebook"),
        ]:
            with pytest.raises(MCPError) as failure:
                await within(client.read_resource(uri))
            assert words in str(failure.value), uri
        # the session keeps working
        assert json.loads(text_of(await within(client.read_resource("notebook://list"))))["notebooks"]


PNG = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=="


@pytest.mark.parametrize("mode", ["legacy", "2026-07-28"])
async def test_a_cell_is_its_source_then_its_outputs(mcp_client: Any, make_notebook: Any, mode: str) -> None:
    outputs = [
        {"output_type": "stream", "name": "stdout", "text": "printed\n"},
        {"output_type": "display_data", "metadata": {}, "data": {"image/png": PNG, "text/plain": "<Figure>"}},
        {"output_type": "error", "ename": "ValueError", "evalue": "bad", "traceback": ["\x1b[31mValueError\x1b[0m"]},
    ]
    cells = [{"cell_type": "code", "id": "plot", "source": "plot()", "execution_count": 3, "outputs": outputs}]
    path = make_notebook("plots.ipynb", cells)
    uri = f"notebook://{path}/cells/plot"
    async with mcp_client(mode=mode) as client:
        contents = (await within(client.read_resource(uri))).contents
    assert [c.uri for c in contents] == [uri] * 4
    source, stream, image, error = contents
    assert (source.text, source.mime_type) == ("plot()", "text/x-python")
    assert source.meta["execution_count"] == 3 and source.meta["index"] == 0
    assert (stream.text, stream.mime_type, stream.meta["output_type"]) == ("printed\n", "text/plain", "stream")
    assert (image.blob, image.mime_type, image.meta["output_index"]) == (PNG, "image/png", 1)
    assert error.text.startswith("ValueError: bad") and "\x1b" not in error.text


async def test_a_document_resource_is_typed_by_its_name(mcp_client: Any, jp_root_dir: Path) -> None:
    (jp_root_dir / "notes.md").write_text("# notes")
    async with mcp_client() as client:
        (content,) = (await within(client.read_resource("document://notes.md"))).contents
    assert (content.text, content.mime_type) == ("# notes", "text/markdown")
    assert content.meta["revision"]


MISSING = [
    ("notebook://missing.ipynb", "no notebook at"),
    ("notebook://missing.ipynb/cells", "no notebook at"),
    ("notebook://x.ipynb/cells/nope", "no cell with id"),
    ("document://missing.txt", "no file at"),
    ("notebook://x.ipynb/nothing/here", "no resource"),
    ("https://example.com/x", "no resource"),
]


@pytest.mark.parametrize(("mode", "code"), [("legacy", -32002), ("2026-07-28", -32602)])
async def test_a_missing_resource_is_resource_not_found(
    mcp_client: Any, make_notebook: Any, mode: str, code: int
) -> None:
    """-32002 with the URI in data (2025-11-25); 2026-07-28 retired -32002: the SDK's mapping, -32602 (SEP-2164)."""
    make_notebook("x.ipynb", CELLS)
    async with mcp_client(mode=mode) as client:
        for uri, words in MISSING:
            with pytest.raises(MCPError) as failure:
                await within(client.read_resource(uri))
            assert (failure.value.code, failure.value.data) == (code, {"uri": uri}), uri
            assert words in failure.value.message, uri
        with pytest.raises(MCPError) as failure:
            await within(client.read_resource("document://x.ipynb"))  # exists, but is no text document
        assert failure.value.code == -32602 and "notebook" in failure.value.message
