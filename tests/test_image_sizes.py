"""An image's text marker gives the image's size in bytes (decoded), not the length of its base64."""

from __future__ import annotations

import base64
import os
from typing import Any

from .conftest import call_tool


def _wrapped(data: bytes) -> list[str]:
    """base64 as notebooks may store it: lines of 76 characters, each ending in a newline."""
    text = base64.b64encode(data).decode()
    return [text[i : i + 76] + "\n" for i in range(0, len(text), 76)]


async def test_an_image_marker_says_its_size_in_bytes(mcp_client: Any, make_notebook: Any) -> None:
    sizes = [13092, 13093, 13094]  # no, one and two padding characters
    outputs = [
        {"output_type": "display_data", "metadata": {}, "data": {"image/png": _wrapped(os.urandom(n))}} for n in sizes
    ]
    svg = "<svg xmlns='http://www.w3.org/2000/svg'><text>é</text></svg>"
    outputs.append({"output_type": "display_data", "metadata": {}, "data": {"image/svg+xml": svg}})
    path = make_notebook("img.ipynb", [{"cell_type": "code", "source": "plot()", "outputs": outputs}])
    async with mcp_client() as client:
        read = await call_tool(client, "get_notebook", path=path)
    texts = [o["text"] for o in read["cells"][0]["outputs"]]
    assert texts == [
        "[image/png image, 13092 bytes]",
        "[image/png image, 13093 bytes]",
        "[image/png image, 13094 bytes]",
        f"[image/svg+xml image, {len(svg.encode())} bytes]",
    ]
