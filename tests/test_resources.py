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
        one = json.loads(text_of(await within(client.read_resource(f"{base}/cells/two"))))
        assert one["outputs"][0]["text"] == "2"


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
        cell = json.loads(text_of(await within(client.read_resource(f"notebook://{path}/cells/md"))))
        assert cell["source"] == "# Changed"
        await call_tool(client, "batch_insert_text", path="a.txt", operations=[{"text": " second", "position": -1}])
        assert text_of(await within(client.read_resource("document://a.txt"))) == "first second"


async def test_resource_errors(mcp_client: Any, make_notebook: Any) -> None:
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
