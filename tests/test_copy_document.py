"""``copy_document`` is all or nothing: a failed copy leaves no file and no directory behind and says why.

It used to copy to ``name-Copy1.ext`` beside the source and rename that to ``copy_path``: a rename that
failed (a 300-character name) left the intermediate copy behind, and a ``copy_path`` under a missing
directory made the contents manager create a *file* named like that directory.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from .conftest import call_tool, notebook_json, tool_error

pytestmark = pytest.mark.usefixtures("jp_serverapp")


def tree(root: Path) -> list[str]:
    return sorted(str(p.relative_to(root)) for p in root.rglob("*"))


@pytest.fixture
def source(jp_root_dir: Path) -> str:
    (jp_root_dir / "nb.ipynb").write_text(notebook_json([{"cell_type": "code", "source": "x = 1", "id": "a"}]))
    (jp_root_dir / "sub").mkdir()
    return "nb.ipynb"


@pytest.mark.parametrize(
    ("copy_path", "words"),
    [
        pytest.param("x" * 300 + ".ipynb", "too long", id="name-too-long"),
        pytest.param("sub/" + "y" * 300 + ".ipynb", "too long", id="name-too-long-in-subdirectory"),
        pytest.param("missing/copy.ipynb", "directory 'missing' does not exist", id="missing-directory"),
        pytest.param("missing/deeper/copy.ipynb", "directory 'missing/deeper' does not exist", id="missing-tree"),
        pytest.param("sub/missing/copy.ipynb", "directory 'sub/missing' does not exist", id="missing-subdirectory"),
        pytest.param("nb.ipynb/copy.ipynb", "not a directory", id="under-a-file"),
    ],
)
async def test_a_failed_copy_leaves_nothing_behind(
    mcp_client: Any, jp_root_dir: Path, source: str, copy_path: str, words: str
) -> None:
    before = tree(jp_root_dir)
    async with mcp_client() as client:
        message = await tool_error(client, "copy_document", path=source, copy_path=copy_path)
        assert words in message, message
        assert str(jp_root_dir) not in message and "Traceback" not in message, message
        assert not (await call_tool(client, "document_exists", path="missing"))["exists"]
    assert tree(jp_root_dir) == before


async def test_a_copy_of_a_corrupt_notebook_leaves_nothing_behind(mcp_client: Any, jp_root_dir: Path) -> None:
    (jp_root_dir / "bad.ipynb").write_bytes(b"{not json")
    before = tree(jp_root_dir)
    async with mcp_client() as client:
        message = await tool_error(client, "copy_document", path="bad.ipynb", copy_path="good.ipynb")
    assert "'bad.ipynb'" in message and str(jp_root_dir) not in message, message
    assert tree(jp_root_dir) == before


async def test_a_copy_lands_at_copy_path_and_only_there(mcp_client: Any, jp_root_dir: Path, source: str) -> None:
    async with mcp_client() as client:
        result = await call_tool(client, "copy_document", path=source, copy_path="sub/copied.ipynb")
    assert result == {"path": "nb.ipynb", "copy_path": "sub/copied.ipynb"}
    assert [p for p in tree(jp_root_dir) if ".ipynb_checkpoints" not in p] == ["nb.ipynb", "sub", "sub/copied.ipynb"]
    assert "".join(json.loads((jp_root_dir / "sub/copied.ipynb").read_text())["cells"][0]["source"]) == "x = 1"
