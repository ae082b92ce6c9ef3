"""Every output readable: rich outputs as their text, images as bounded MCP image content, from every
tool that returns outputs — in a real kernel, over the real MCP wire."""

from __future__ import annotations

import json
from typing import Any

import pytest

from .conftest import call_tool, tool_error, within

pytestmark = pytest.mark.usefixtures("jp_serverapp")

PNG = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=="
IMPORTS = "import base64\nfrom IPython.display import HTML, JSON, Image, Latex, Markdown, display\n"
SHOW_PNG = f"display(Image(data=base64.b64decode('{PNG}'), format='png'))"
RICH = IMPORTS + (
    "display(HTML('<b>Total</b><table><tr><th>item</th><th>n</th></tr>"
    "<tr><td>apples &amp; pears</td><td>3</td></tr></table><script>alert(1)</script>'))\n"
    "display(Markdown('# Title\\n\\n*done*'))\n"
    "display(JSON({'a': [1, 2], 'b': 'x'}))\n"
    "display(Latex('$x^2$'))\n"
    "display(HTML('<p>shown</p>'), metadata={})"
)
RICH_TEXTS = ["Total\nitem | n\napples & pears | 3", "# Title\n\n*done*", "JSON", "$x^2$", "shown"]


def texts(outputs: list[dict[str, Any]]) -> list[str]:
    """The outputs' texts, the compact JSON one checked and replaced by "JSON" (the room keeps neither the
    order of its keys nor the ints: 1 comes back 1.0)."""
    found = [o["text"] for o in outputs]
    assert found[2].startswith("{") and " " not in found[2]
    assert json.loads(found[2]) == {"a": [1, 2], "b": "x"}
    return [*found[:2], "JSON", *found[3:]]


def code(*sources: str) -> list[dict[str, Any]]:
    return [{"cell_type": "code", "source": s, "id": f"k{i}"} for i, s in enumerate(sources)]


def images_of(result: Any) -> list[Any]:
    return [c for c in result.content if c.type == "image"]


async def call(client: Any, name: str, **arguments: Any) -> Any:
    result = await within(client.call_tool(name, arguments), 60)
    assert not result.is_error, result.content[0].text
    return result


async def test_rich_outputs_read_as_text_when_executed_and_read(mcp_client: Any, make_notebook: Any) -> None:
    path = make_notebook("rich.ipynb", code(RICH))
    async with mcp_client() as client:
        ran = await call(client, "execute_notebook_cell", path=path, cell_id="k0", timeout=60)
        assert texts(ran.structured_content["outputs"]) == RICH_TEXTS
        assert images_of(ran) == []
        assert "images" not in ran.structured_content
        read = await call_tool(client, "get_notebook", path=path)
        assert texts(read["cells"][0]["outputs"]) == RICH_TEXTS
        batch = await call(client, "batch_execute_notebook_cells", path=path, timeout=60)
        assert texts(batch.structured_content["executions"][0]["outputs"]) == RICH_TEXTS


async def test_big_html_output_is_read_only_as_far_as_needed(mcp_client: Any, make_notebook: Any) -> None:
    rows = "''.join(f'<tr><td>row {i}</td><td>{i * 2}</td></tr>' for i in range(20_000))"
    path = make_notebook("bightml.ipynb", code(IMPORTS + f"display(HTML('<table>' + {rows} + '</table>'))"))
    async with mcp_client() as client:
        ran = await call(client, "execute_notebook_cell", path=path, cell_id="k0", timeout=60)
        [output] = ran.structured_content["outputs"]
        assert output["text"].startswith("row 0 | 0\nrow 1 | 2\nrow 2 | 4\n")
        assert output["text"].endswith("more characters of HTML not read]")
        assert len(output["text"]) < 2100
        read = await call_tool(client, "get_notebook", path=path)
        assert read["cells"][0]["outputs"][0]["text"] == output["text"]
        assert read["cut_cells"] == ["k0"], "a partly read HTML output counts as cut"


async def test_exec_on_insert_and_update_returns_images(mcp_client: Any, make_notebook: Any) -> None:
    path = make_notebook("edit.ipynb", code("x = 1"))
    async with mcp_client() as client:
        cells = [{"cell_type": "code", "content": IMPORTS + SHOW_PNG}]
        inserted = await call(client, "batch_insert_notebook_cells", path=path, cells=cells, exec=True)
        [image] = images_of(inserted)
        assert (image.mime_type, image.data) == ("image/png", PNG)
        new_id = inserted.structured_content["inserted"][0]["id"]
        assert inserted.structured_content["images"] == {
            "returned": 1,
            "cell_ids": [new_id],
            "omitted": 0,
            "omitted_reason": None,
        }
        assert inserted.structured_content["executions"][0]["outputs"][0]["mime"] == "image/png"
        updates = [{"content": IMPORTS + SHOW_PNG + "\n" + SHOW_PNG}]
        updated = await call(client, "batch_update_notebook_cells", path=path, updates=updates, cell_ids=["k0"])
        assert [(i.mime_type, i.data) for i in images_of(updated)] == [("image/png", PNG)] * 2
        assert updated.structured_content["images"]["cell_ids"] == ["k0", "k0"]
        quiet = await call(
            client, "batch_update_notebook_cells", path=path, updates=[{"content": "y = 2"}], cell_ids=["k0"]
        )
        assert images_of(quiet) == []
        assert "images" not in quiet.structured_content


async def test_get_notebook_images_only_when_asked(mcp_client: Any, make_notebook: Any) -> None:
    path = make_notebook("read.ipynb", code(IMPORTS + SHOW_PNG, "1 + 1", IMPORTS + SHOW_PNG))
    async with mcp_client() as client:
        await call(client, "batch_execute_notebook_cells", path=path, timeout=60)
        default = await call(client, "get_notebook", path=path)
        assert images_of(default) == []
        assert "images" not in default.structured_content
        assert default.structured_content["cells"][0]["outputs"][0]["text"] == "[image/png image, 70 bytes]"
        asked = await call(client, "get_notebook", path=path, include_images=True)
        assert [(i.mime_type, i.data) for i in images_of(asked)] == [("image/png", PNG)] * 2
        assert asked.structured_content["images"]["cell_ids"] == ["k0", "k2"]
        some = await call(client, "get_notebook", path=path, include_images=True, start_index=1)
        assert some.structured_content["images"]["cell_ids"] == ["k2"], "only the returned cells' images"
        error = await tool_error(client, "get_notebook", path=path, include_images=True, include_outputs=False)
        assert "include_images needs include_outputs" in error


async def test_restart_with_exec_returns_images(mcp_client: Any, make_notebook: Any) -> None:
    path = make_notebook("restart.ipynb", code(IMPORTS + SHOW_PNG))
    async with mcp_client() as client:
        await call(client, "execute_notebook_cell", path=path, cell_id="k0", timeout=60)
        restarted = await call(client, "restart_notebook_kernel", path=path, exec=True, timeout=60)
        assert [i.data for i in images_of(restarted)] == [PNG]
        assert restarted.structured_content["images"]["cell_ids"] == ["k0"]


async def test_image_count_and_size_are_bounded(mcp_client: Any, make_notebook: Any) -> None:
    many = IMPORTS + f"for _ in range(11):\n    {SHOW_PNG}"
    big = IMPORTS + "display(Image(data=b'\\x89PNG' + bytes(800_000), format='png'))\n" + SHOW_PNG
    path = make_notebook("bounds.ipynb", code(many, big))
    async with mcp_client() as client:
        ran = await call(client, "execute_notebook_cell", path=path, cell_id="k0", timeout=60)
        assert len(ran.structured_content["outputs"]) == 11
        assert len(images_of(ran)) == 8
        report = ran.structured_content["images"]
        assert (report["returned"], report["omitted"]) == (8, 3)
        assert report["omitted_reason"] == "3 past the 8 images a result carries"
        ran = await call(client, "execute_notebook_cell", path=path, cell_id="k1", timeout=60)
        assert [i.data for i in images_of(ran)] == [PNG], "the image over 1 MB is left out, the next one comes"
        report = ran.structured_content["images"]
        assert (report["returned"], report["omitted"]) == (1, 1)
        assert report["omitted_reason"] == f"1 larger than {1 << 20} base64 bytes"
        read = await call(client, "get_notebook", path=path, include_images=True)
        assert len(images_of(read)) == 8
        report = read.structured_content["images"]
        assert (report["returned"], report["omitted"]) == (8, 5)
        assert report["omitted_reason"] == f"4 past the 8 images a result carries; 1 larger than {1 << 20} base64 bytes"


class TestImageTraits:
    """The bounds are the admin's: ``max_images_per_result``, ``max_image_bytes``, ``max_image_bytes_total``."""

    @pytest.fixture
    def mcp_config(self) -> dict[str, Any]:
        return {"max_image_bytes_total": 2 * len(PNG), "max_images_per_result": 5}

    async def test_images_bounded_in_total(self, mcp_client: Any, make_notebook: Any) -> None:
        path = make_notebook("total.ipynb", code(IMPORTS + f"for _ in range(3):\n    {SHOW_PNG}"))
        async with mcp_client() as client:
            ran = await call(client, "execute_notebook_cell", path=path, cell_id="k0", timeout=60)
        assert len(images_of(ran)) == 2
        report = ran.structured_content["images"]
        assert (report["returned"], report["omitted"]) == (2, 1)
        assert report["omitted_reason"] == f"1 past {2 * len(PNG)} base64 bytes of images in all"


class TestImagesOff:
    @pytest.fixture
    def mcp_config(self) -> dict[str, Any]:
        return {"include_images": False}

    async def test_get_notebook_says_images_are_off(self, mcp_client: Any, make_notebook: Any) -> None:
        path = make_notebook("off.ipynb", code(IMPORTS + SHOW_PNG))
        async with mcp_client() as client:
            ran = await call(client, "execute_notebook_cell", path=path, cell_id="k0", timeout=60)
            assert images_of(ran) == []
            read = await call(client, "get_notebook", path=path, include_images=True)
        assert images_of(read) == []
        report = read.structured_content["images"]
        assert (report["returned"], report["omitted"]) == (0, 1)
        assert report["omitted_reason"] == "1 not returned: images are switched off on this server"
