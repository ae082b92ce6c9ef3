"""A room that cannot write its file: the save is retried once it can, and agents are told meanwhile.

jupyter-collaboration's autosave logs a failed write (a full disk) or skips a read-only file, and tries
again only at the next change: edits made before are live but never reach the disk if nobody types again.
Tests may run as root, where ``chmod`` does not stop a write, so the server runs a contents manager that
fails the way the real one does while a flag file exists (a full disk, a read-only file, a folder it may
not write into); the save path above it is the real one.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from jupyter_server.services.contents.largefilemanager import AsyncLargeFileManager
from tornado.web import HTTPError
from traitlets.config import Config

from .conftest import autosaved, call_tool, document_room, tool_error, until, within

pytestmark = pytest.mark.usefixtures("jp_serverapp")

FULL_DISK = ".full-disk"  # at the root: every save fails as on a full disk
READ_ONLY = ".read-only"  # at the root: every file is read-only
LOCKED = ".locked"  # in a folder: nothing may be written into it


class FlakyContentsManager(AsyncLargeFileManager):
    """Jupyter's file contents manager, failing like it does on a full disk, a read-only file, a locked folder."""

    async def save(self, model: dict[str, Any], path: str = "") -> dict[str, Any]:
        root = Path(self.root_dir)
        if (root / FULL_DISK).exists():
            error = OSError(28, "No space left on device")
            raise HTTPError(500, f"Unexpected error while saving file: {path} {error}") from error
        if (root / path).parent.joinpath(LOCKED).exists():
            raise HTTPError(403, f"Permission denied: {path}")  # what its perm_to_403 raises for EACCES
        return await super().save(model, path)  # type: ignore[no-any-return]

    async def get(self, path: str, content: bool = True, type: Any = None, **kwargs: Any) -> dict[str, Any]:
        model: dict[str, Any] = await super().get(path, content=content, type=type, **kwargs)
        if (Path(self.root_dir) / READ_ONLY).exists() and model.get("type") != "directory":
            model["writable"] = False
        return model


@pytest.fixture
def jp_server_config(jp_server_config: Config) -> Config:
    jp_server_config.ServerApp.contents_manager_class = FlakyContentsManager
    return jp_server_config


def sources(target: Path) -> list[str]:
    return ["".join(c["source"]) for c in json.loads(target.read_text())["cells"]]


def make(root: Path, name: str) -> str:
    from .conftest import notebook_json

    (root / name).write_text(notebook_json([{"cell_type": "code", "source": "a = 1", "id": "a"}]))
    return name


async def written(jp_serverapp: Any, path: str) -> None:
    """Wait until no save of the room failed last, and none is under way (the file holds the room)."""
    extension = jp_serverapp.extension_manager.extension_points["jupyter_pair_mcp"].app
    room = document_room(jp_serverapp, path)
    await until(lambda: extension.rooms.disk.failing(room.room_id) is None, what=f"{path!r} written again")
    await autosaved(jp_serverapp, path)


@pytest.mark.parametrize("cause", [FULL_DISK, READ_ONLY])
async def test_a_failed_autosave_is_told_and_retried_once_the_cause_is_gone(
    cause: str, mcp_client: Any, jp_root_dir: Path, jp_serverapp: Any, collaborator: Any
) -> None:
    path = make(jp_root_dir, "unsaved.ipynb")
    async with mcp_client() as client, collaborator(path) as human:
        update = {"path": path, "exec": False}
        await call_tool(client, "batch_update_notebook_cells", **update, updates=[{"cell_id": "a", "content": "a = 2"}])
        await autosaved(jp_serverapp, path)
        (jp_root_dir / cause).touch()
        await call_tool(client, "batch_update_notebook_cells", **update, updates=[{"cell_id": "a", "content": "a = 3"}])
        await human.wait_until(lambda: human.sources() == ["a = 3"])

        async def told() -> bool:
            read = await call_tool(client, "get_notebook_info", path=path)
            return "not in the file" in read.get("notice", "")

        await until(told, what="the agent being told its edit is not on disk")
        result = await within(
            client.call_tool(
                "batch_update_notebook_cells", {**update, "updates": [{"cell_id": "a", "content": "a = 4"}]}
            )
        )
        assert not result.is_error
        notice = result.structured_content["notice"]
        assert "could not be written to disk" in notice and str(jp_root_dir) not in notice, notice
        message = await tool_error(client, "save_notebook", path=path)  # never "saved: true"
        assert path in message and "written" in message and str(jp_root_dir) not in message, message

        (jp_root_dir / cause).unlink()  # room on the disk again; nobody edits any more
        await written(jp_serverapp, path)
        assert sources(jp_root_dir / path) == ["a = 4"]
        read = await call_tool(client, "get_notebook_info", path=path)
        assert "notice" not in read
        assert (await call_tool(client, "save_notebook", path=path))["saved"] is True


async def test_writes_into_a_folder_that_refuses_them_name_the_destination(
    mcp_client: Any, jp_root_dir: Path, jp_serverapp: Any
) -> None:
    source = make(jp_root_dir, "source.ipynb")
    (jp_root_dir / "locked").mkdir()
    (jp_root_dir / "locked" / LOCKED).touch()
    async with mcp_client() as client:
        copied = await tool_error(client, "copy_document", path=source, copy_path="locked/copy.ipynb")
        assert "locked/copy.ipynb" in copied and "source.ipynb" not in copied, copied
        saved_as = await tool_error(client, "save_notebook", path=source, new_path="locked/saved.ipynb")
        assert "locked/saved.ipynb" in saved_as and "'source.ipynb'" not in saved_as, saved_as
        created = await tool_error(client, "create_document", path="locked/new.md", content="x")
        assert "locked/new.md" in created and "may not write" in created, created
        missing = await tool_error(client, "copy_document", path=source, copy_path="missing/copy.ipynb")
        assert "'missing'" in missing and "source.ipynb" not in missing, missing
        for message in (copied, saved_as, created, missing):
            assert str(jp_root_dir) not in message and "/tmp" not in message, message
        assert not (jp_root_dir / "locked" / "copy.ipynb").exists()
        assert not (jp_root_dir / "locked" / "saved.ipynb").exists()
