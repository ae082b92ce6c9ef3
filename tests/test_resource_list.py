"""resources/list: every notebook and text document as a concrete resource, in bounded pages."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pytest
from mcp.shared.exceptions import MCPError

from jupyter_pair_mcp.adapters.contents.listing import Entry, walk_after
from jupyter_pair_mcp.errors import NotFound
from jupyter_pair_mcp.protocol.resources import MAX_LISTED

from .conftest import notebook_json, within

pytestmark = pytest.mark.usefixtures("jp_serverapp")


async def list_all(client: Any) -> tuple[list[Any], list[int], list[str]]:
    """Every page of resources/list: the resources, each page's size, and the cursors followed."""
    resources: list[Any] = []
    sizes: list[int] = []
    cursors: list[str] = []
    cursor = None
    for _ in range(20):
        page = await within(client.list_resources(cursor=cursor, cache_mode="bypass"))
        resources.extend(page.resources)
        sizes.append(len(page.resources))
        cursor = page.next_cursor
        if cursor is None:
            return resources, sizes, cursors
        cursors.append(cursor)
    raise AssertionError(f"resources/list did not end within 20 pages: {sizes}")


def write_notebooks(root: Path, names: list[str]) -> None:
    body = notebook_json([{"cell_type": "code", "source": "x = 1"}])
    for name in names:
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(body)


@pytest.mark.parametrize("mode", ["legacy", "2026-07-28"])
async def test_pages_list_every_notebook_and_text_document_once(mcp_client: Any, jp_root_dir: Path, mode: str) -> None:
    notebooks = [f"nb{i:03}.ipynb" for i in range(200)] + [f"work/deeper/nb{i:02}.ipynb" for i in range(50)]
    await asyncio.to_thread(write_notebooks, jp_root_dir, notebooks)  # many files: off the loop the server shares
    (jp_root_dir / "notes.md").write_text("# notes")
    (jp_root_dir / "work" / "data.csv").write_text("a,b\n1,2\n")
    (jp_root_dir / "work" / "my script.py").write_text("print(1)")
    (jp_root_dir / "picture.png").write_bytes(b"\x89PNG\r\n\x1a\n")  # not a text document: not listed
    async with mcp_client(mode=mode) as client:
        resources, sizes, cursors = await list_all(client)
        again, _, cursors_again = await list_all(client)
    assert all(size <= 100 for size in sizes) and len(sizes) == 3, sizes
    assert cursors == cursors_again and [r.uri for r in again] == [r.uri for r in resources], "stable pages"
    uris = [r.uri for r in resources]
    assert len(uris) == len(set(uris)) == 253
    expected = {f"notebook://{quote(n, safe='')}" for n in notebooks} | {
        "document://notes.md",
        "document://work%2Fdata.csv",
        "document://work%2Fmy%20script.py",
    }
    assert set(uris) == expected
    by_uri = {r.uri: r for r in resources}
    notebook = by_uri["notebook://work%2Fdeeper%2Fnb07.ipynb"]
    assert (notebook.name, notebook.title, notebook.mime_type) == (
        "work/deeper/nb07.ipynb",
        "nb07.ipynb",
        "text/markdown",
    )
    assert notebook.annotations.last_modified
    script = by_uri["document://work%2Fmy%20script.py"]
    assert (script.name, script.title, script.mime_type, script.size) == (
        "work/my script.py",
        "my script.py",
        "text/x-python",
        8,
    )
    assert by_uri["document://notes.md"].mime_type == "text/markdown"


async def test_a_listed_resource_reads(mcp_client: Any, jp_root_dir: Path) -> None:
    write_notebooks(jp_root_dir, ["a b.ipynb"])
    (jp_root_dir / "notes.md").write_text("# notes")
    async with mcp_client() as client:
        page = await within(client.list_resources())
        texts = [(await within(client.read_resource(r.uri))).contents[0].text for r in page.resources]
    assert "x = 1" in texts[0] and texts[1] == "# notes"


async def test_the_listing_is_bounded(mcp_client: Any, jp_root_dir: Path) -> None:
    names = [f"d{d:02}/n{i:02}.ipynb" for d in range(MAX_LISTED // 100 + 1) for i in range(100)]
    await asyncio.to_thread(write_notebooks, jp_root_dir, names)  # 1100 files: off the loop the server shares
    async with mcp_client() as client:
        resources, sizes, _ = await list_all(client)
    assert len(resources) == MAX_LISTED and max(sizes) == 100
    assert resources[-1].name == f"d{MAX_LISTED // 100 - 1:02}/n99.ipynb"


@pytest.mark.parametrize("cursor", ["nonsense", "W1swLDAsIiJdXQ", "WzUwLDAsIi4uL2V0Yy9wYXNzd2QiXQ"])
async def test_a_bad_cursor_is_invalid_params(mcp_client: Any, cursor: str) -> None:
    async with mcp_client() as client:
        with pytest.raises(MCPError) as failure:
            await within(client.list_resources(cursor=cursor, cache_mode="bypass"))
    assert failure.value.code == -32602 and "invalid cursor" in failure.value.message


class _Tree:
    """A contents adapter over a dict tree that counts listings (the walk's cost, for the pure-logic test)."""

    max_directories = 1000

    def __init__(self, tree: dict[str, Any]) -> None:
        self.tree = tree
        self.listed: list[str] = []

    async def _children(self, directory: str) -> list[Entry]:
        self.listed.append(directory)
        node: Any = self.tree
        for part in directory.split("/") if directory else []:
            if not isinstance(node.get(part), dict):
                raise NotFound(directory)
            node = node[part]
        entries = [
            Entry(
                f"{directory}/{name}".lstrip("/"), name, "directory" if isinstance(v, dict) else "notebook", 1, "", True
            )
            for name, v in node.items()
        ]
        return sorted(entries, key=lambda e: (e.type == "directory", e.name))

    def _is_link_outside(self, path: str) -> bool:
        return False


async def pages(walk: _Tree, after: str, limit: int) -> tuple[list[Entry], int, bool]:
    return await walk_after(walk, after, accept=lambda e: e.type != "directory", limit=limit, max_directories=100)  # type: ignore[arg-type]


async def test_a_page_walks_only_its_slice() -> None:
    tree: dict[str, Any] = {
        "z": {f"b{i}": {f"f{j}": 1 for j in range(10)} for i in range(10)},
        **{f"top{i}": 1 for i in range(5)},
    }
    walk = _Tree(tree)
    everything, _, done = await pages(walk, "", 1000)
    assert done and len(everything) == 105
    walk.listed.clear()
    page, listed, done = await pages(walk, everything[49].path, 10)
    assert [e.path for e in page] == [e.path for e in everything[50:60]] and not done
    # the ancestors of the cursor's path (root, z, z/b4), then only what the page walked (z/b5)
    assert walk.listed == ["", "z", "z/b4", "z/b5"] and listed == 4
    del tree["z"]["b4"]  # the cursor's directory vanished: the walk goes on after it
    page, _, _ = await pages(walk, everything[49].path, 1)
    assert page[0].path == "z/b5/f0"
