"""list_notebooks, list_documents, document_exists: results, filters, the path policy and its errors."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from .conftest import within

pytestmark = pytest.mark.usefixtures("jp_serverapp")

NB = '{"cells": [], "metadata": {}, "nbformat": 4, "nbformat_minor": 5}'


@pytest.fixture
def tree(jp_root_dir: Path) -> Path:
    (jp_root_dir / "work" / "deep").mkdir(parents=True)
    (jp_root_dir / "top.ipynb").write_text(NB)
    (jp_root_dir / "README.md").write_text("# hello\n")
    (jp_root_dir / "work" / "analysis.ipynb").write_text(NB)
    (jp_root_dir / "work" / "data.csv").write_text("a,b\n1,2\n")
    (jp_root_dir / "work" / "deep" / "model.py").write_text("x = 1\n")
    (jp_root_dir / "work" / "deep" / "notes.ipynb").write_text(NB)
    (jp_root_dir / ".hidden").mkdir()
    (jp_root_dir / ".hidden" / "secret.ipynb").write_text(NB)
    (jp_root_dir / "work" / ".env").write_text("TOKEN=1")
    return jp_root_dir


async def call(mcp_client: Any, name: str, **arguments: Any) -> Any:
    async with mcp_client() as client:
        return await within(client.call_tool(name, arguments))


def error_text(result: Any) -> str:
    assert result.is_error, result
    return str(result.content[0].text)


@pytest.mark.usefixtures("tree")
async def test_list_notebooks_walks_the_tree_and_skips_hidden(mcp_client: Any) -> None:
    result = await call(mcp_client, "list_notebooks")
    data = result.structured_content
    assert sorted(n["path"] for n in data["notebooks"]) == [
        "top.ipynb",
        "work/analysis.ipynb",
        "work/deep/notes.ipynb",
    ]
    assert data["truncated"] is False
    entry = next(n for n in data["notebooks"] if n["path"] == "top.ipynb")
    assert entry["name"] == "top.ipynb"
    assert entry["size"] == len(NB)
    assert entry["collaborators"] == 0
    assert entry["last_modified"].startswith("20")


@pytest.mark.usefixtures("tree")
async def test_list_notebooks_prefix_and_truncation(mcp_client: Any) -> None:
    result = await call(mcp_client, "list_notebooks", path_prefix="work/")
    assert sorted(n["path"] for n in result.structured_content["notebooks"]) == [
        "work/analysis.ipynb",
        "work/deep/notes.ipynb",
    ]
    result = await call(mcp_client, "list_notebooks", max_results=1)
    assert len(result.structured_content["notebooks"]) == 1
    assert result.structured_content["truncated"] is True
    result = await call(mcp_client, "list_notebooks", path_prefix="work/an")
    assert [n["path"] for n in result.structured_content["notebooks"]] == ["work/analysis.ipynb"]


@pytest.mark.usefixtures("tree")
async def test_list_documents_types_and_filters(mcp_client: Any) -> None:
    everything = (await call(mcp_client, "list_documents")).structured_content["documents"]
    by_path = {d["path"]: d for d in everything}
    assert set(by_path) == {
        "README.md",
        "top.ipynb",
        "work",
        "work/analysis.ipynb",
        "work/data.csv",
        "work/deep",
        "work/deep/model.py",
        "work/deep/notes.ipynb",
    }
    assert by_path["work"]["type"] == "directory"
    assert by_path["work"]["size"] is None
    assert by_path["README.md"]["type"] == "file"
    assert by_path["top.ipynb"]["type"] == "notebook"
    assert by_path["README.md"]["writable"] is True

    md = (await call(mcp_client, "list_documents", file_type=".md")).structured_content["documents"]
    assert [d["path"] for d in md] == ["README.md"]
    dirs = (await call(mcp_client, "list_documents", file_type="directory")).structured_content["documents"]
    assert sorted(d["path"] for d in dirs) == ["work", "work/deep"]
    glob = (await call(mcp_client, "list_documents", path_filter="work/*.csv")).structured_content["documents"]
    assert [d["path"] for d in glob] == ["work/data.csv"]
    deep = (await call(mcp_client, "list_documents", path_filter="**/*.py")).structured_content["documents"]
    assert [d["path"] for d in deep] == ["work/deep/model.py"]
    under = (await call(mcp_client, "list_documents", path_filter="work/deep/")).structured_content["documents"]
    assert sorted(d["path"] for d in under) == ["work/deep/model.py", "work/deep/notes.ipynb"]


@pytest.mark.usefixtures("tree")
@pytest.mark.parametrize(
    ("path", "exists", "kind"),
    [
        ("top.ipynb", True, "notebook"),
        ("README.md", True, "file"),
        ("work", True, "directory"),
        ("work/deep/model.py", True, "file"),
        ("work/missing.py", False, None),
        ("nowhere/at/all.ipynb", False, None),
        ("work/", True, "directory"),
        ("./work", True, "directory"),
    ],
)
async def test_document_exists(mcp_client: Any, path: str, exists: bool, kind: str | None) -> None:
    result = await call(mcp_client, "document_exists", path=path)
    assert not result.is_error
    assert result.structured_content == {"exists": exists, "type": kind}


@pytest.mark.usefixtures("tree")
@pytest.mark.parametrize(
    ("path", "words"),
    [
        ("../outside.txt", "leaves the Jupyter root"),
        ("work/../../etc/passwd", "leaves the Jupyter root"),
        ("/etc/passwd", "absolute"),
        ("C:/Windows", "absolute"),
        (".hidden/secret.ipynb", "hidden"),
        ("work/.env", "hidden"),
        ("work\\data.csv", "backslash"),
        ("work/\x00data.csv", "control character"),
    ],
)
async def test_bad_paths_are_tool_errors_that_say_why(mcp_client: Any, path: str, words: str) -> None:
    result = await call(mcp_client, "document_exists", path=path)
    assert words in error_text(result)


@pytest.mark.usefixtures("tree")
async def test_listing_a_missing_or_hidden_directory_is_an_error(mcp_client: Any) -> None:
    assert "no such directory" in error_text(await call(mcp_client, "list_documents", path_filter="nowhere/"))
    assert "hidden" in error_text(await call(mcp_client, "list_notebooks", path_prefix=".hidden/"))
    assert "leaves the Jupyter root" in error_text(await call(mcp_client, "list_documents", path_filter="../"))


@pytest.mark.usefixtures("tree")
@pytest.mark.parametrize(("args", "words"), [({"max_results": 0}, "max_results"), ({"file_type": "exe"}, "file_type")])
async def test_bad_listing_arguments(mcp_client: Any, args: dict[str, Any], words: str) -> None:
    assert words in error_text(await call(mcp_client, "list_documents", **args))


@pytest.fixture
def outside_link(jp_root_dir: Path, tmp_path: Path) -> Path:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "stolen.ipynb").write_text(NB)
    os.symlink(outside, jp_root_dir / "link")
    os.symlink(outside / "stolen.ipynb", jp_root_dir / "stolen.ipynb")
    (jp_root_dir / "inside.ipynb").write_text(NB)
    os.symlink(jp_root_dir / "inside.ipynb", jp_root_dir / "alias.ipynb")
    return outside


@pytest.mark.usefixtures("outside_link")
async def test_symlinks_out_of_root_are_refused(mcp_client: Any) -> None:
    assert "outside the Jupyter root" in error_text(await call(mcp_client, "document_exists", path="stolen.ipynb"))
    assert "outside the Jupyter root" in error_text(await call(mcp_client, "document_exists", path="link/stolen.ipynb"))
    listed = (await call(mcp_client, "list_notebooks")).structured_content["notebooks"]
    assert "link/stolen.ipynb" not in {n["path"] for n in listed}
    # A link that stays inside the root is fine.
    ok = await call(mcp_client, "document_exists", path="alias.ipynb")
    assert ok.structured_content == {"exists": True, "type": "notebook"}


class TestSymlinksAllowed:
    @pytest.fixture
    def mcp_config(self) -> dict[str, Any]:
        return {"allow_symlinks_outside_root": True}

    @pytest.mark.usefixtures("outside_link")
    async def test_admin_can_allow_links_out_of_root(self, mcp_client: Any) -> None:
        ok = await call(mcp_client, "document_exists", path="link/stolen.ipynb")
        assert ok.structured_content == {"exists": True, "type": "notebook"}


class TestHiddenAllowed:
    @pytest.fixture
    def jp_server_config(self, jp_server_config: Any) -> Any:
        jp_server_config.ContentsManager.allow_hidden = True
        return jp_server_config

    @pytest.mark.usefixtures("tree")
    async def test_hidden_files_follow_the_server_setting(self, mcp_client: Any) -> None:
        ok = await call(mcp_client, "document_exists", path=".hidden/secret.ipynb")
        assert ok.structured_content == {"exists": True, "type": "notebook"}


class TestWalkBound:
    @pytest.fixture
    def mcp_config(self) -> dict[str, Any]:
        return {"max_listed_directories": 2}

    @pytest.mark.usefixtures("tree")
    async def test_listing_stops_at_the_directory_bound(self, mcp_client: Any) -> None:
        result = (await call(mcp_client, "list_notebooks")).structured_content
        assert result["truncated"] is True
        assert "work/deep/notes.ipynb" not in {n["path"] for n in result["notebooks"]}


class TestCollaborators:
    async def test_count_comes_from_the_live_room(self, mcp_client: Any, jp_serverapp: Any, tree: Path) -> None:
        """A notebook with a client in its collaboration room reports it."""
        ydoc = jp_serverapp.extension_manager.extension_points["jupyter_server_ydoc"].app
        file_id = jp_serverapp.web_app.settings["file_id_manager"].index("top.ipynb")

        class FakeRoom:
            clients = {object(), object()}

        ydoc.ywebsocket_server.rooms[f"json:notebook:{file_id}"] = FakeRoom()
        try:
            listed = (await call(mcp_client, "list_notebooks")).structured_content["notebooks"]
        finally:
            del ydoc.ywebsocket_server.rooms[f"json:notebook:{file_id}"]
        counts = {n["path"]: n["collaborators"] for n in listed}
        assert counts["top.ipynb"] == 2
        assert counts["work/analysis.ipynb"] == 0
