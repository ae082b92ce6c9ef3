"""Clean errors everywhere: no server path in any message, and a dead kernel said plainly.

Every tool error and resource error must name the problem in the agent's terms (paths relative to the
Jupyter root) and never the server's absolute root directory, whatever the contents manager or the
file system put in their own messages.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import signal
from pathlib import Path
from typing import Any

import pytest
from jupyter_core.utils import ensure_async
from mcp.shared.exceptions import MCPError
from tornado.web import HTTPError
from traitlets.config import Config

from .conftest import call_tool, tool_error, within

pytestmark = pytest.mark.usefixtures("jp_serverapp")

LONG = "x" * 300  # over NAME_MAX (255): the file system itself refuses it


def assert_clean(message: str, root: Path, *expected: str) -> None:
    """The message says what is expected and names no server path (not the root, not its parent)."""
    for prefix in {str(root.parent), os.path.realpath(root.parent)}:
        assert prefix not in message, message
    assert "Traceback" not in message and "internal error" not in message, message
    for words in expected:
        assert words in message, message


@pytest.fixture
def tree(jp_root_dir: Path) -> Path:
    (jp_root_dir / "full").mkdir()
    (jp_root_dir / "full" / "a.txt").write_text("a")
    (jp_root_dir / "hidden_only").mkdir()
    (jp_root_dir / "hidden_only" / ".secret").write_text("s")
    (jp_root_dir / "empty").mkdir()
    (jp_root_dir / "a.txt").write_text("a")
    (jp_root_dir / "bin.dat").write_bytes(b"\x00\xff\xfe\x01binary" * 8)
    return jp_root_dir


TOOL_FAILURES = [
    # the two reported cases
    pytest.param("create_document", {"path": f"{LONG}.txt"}, ["file name is too long"], id="create-long-file"),
    pytest.param("create_document", {"path": f"{LONG}.ipynb"}, ["file name is too long"], id="create-long-notebook"),
    pytest.param(
        "create_document", {"path": LONG, "type": "directory"}, ["file name is too long"], id="create-long-directory"
    ),
    pytest.param("create_document", {"path": "a\x00b.txt"}, ["control character"], id="create-nul"),
    pytest.param(
        "create_document", {"path": "a.txt/b.txt"}, ["'a.txt' is a file, not a directory"], id="create-under-a-file"
    ),
    pytest.param(
        "create_document", {"path": "missing/b.txt"}, ["directory 'missing' does not exist"], id="create-missing-dir"
    ),
    pytest.param(
        "rename_document",
        {"path": "a.txt", "new_path": "missing/b.txt"},
        ["directory 'missing' does not exist"],
        id="rename-onto-missing-directory",
    ),
    pytest.param(
        "rename_document",
        {"path": "a.txt", "new_path": f"{LONG}.txt"},
        ["file name is too long"],
        id="rename-long",
    ),
    pytest.param(
        "rename_document", {"path": "full", "new_path": "full/inner"}, ["into itself"], id="rename-into-itself"
    ),
    pytest.param("rename_document", {"path": "a.txt", "new_path": "b\x00.txt"}, ["control character"], id="rename-nul"),
    pytest.param(
        "copy_document", {"path": "a.txt", "copy_path": f"{LONG}.txt"}, ["file name is too long"], id="copy-long"
    ),
    pytest.param(
        "copy_document",
        {"path": "a.txt", "copy_path": "missing/c.txt"},
        ["directory 'missing' does not exist"],
        id="copy-onto-missing-directory",
    ),
    pytest.param("delete_document", {"path": "full"}, ["'full' is not empty"], id="delete-non-empty-directory"),
    pytest.param(
        "delete_document", {"path": "hidden_only"}, ["'hidden_only' is not empty"], id="delete-directory-of-hidden"
    ),
    pytest.param("delete_document", {"path": "a\x00.txt"}, ["control character"], id="delete-nul"),
    pytest.param("get_document", {"path": "bin.dat"}, ["'bin.dat'", "not UTF-8"], id="read-binary"),
    pytest.param("get_document", {"path": f"{LONG}.txt"}, ["no file at"], id="read-long"),
    pytest.param("get_notebook", {"path": f"{LONG}.ipynb"}, ["no notebook at"], id="read-long-notebook"),
    pytest.param("get_notebook", {"path": "full"}, ["'full' is a directory"], id="read-directory"),
    pytest.param("list_documents", {"path_filter": "a.txt/"}, ["'a.txt'"], id="list-a-file"),
]


@pytest.mark.parametrize(("tool", "arguments", "expected"), TOOL_FAILURES)
async def test_tool_errors_name_no_server_path(
    mcp_client: Any, tree: Path, tool: str, arguments: dict[str, Any], expected: list[str]
) -> None:
    async with mcp_client() as client:
        assert_clean(await tool_error(client, tool, **arguments), tree, *expected)
    assert (tree / "full" / "a.txt").exists() and (tree / "hidden_only" / ".secret").exists()
    assert (tree / "a.txt").read_text() == "a"


@pytest.mark.parametrize(
    ("uri", "expected"),
    [
        pytest.param("document://bin.dat", ["'bin.dat'", "not UTF-8"], id="binary-file"),
        pytest.param(f"document://{LONG}.txt", ["no file at"], id="long-name"),
        pytest.param(f"notebook://{LONG}.ipynb", ["no notebook at"], id="long-notebook-name"),
        pytest.param("document://full", ["'full' is a directory"], id="directory"),
        pytest.param("notebook://list?prefix=a.txt/", ["'a.txt'"], id="list-under-a-file"),
        pytest.param(f"notebook://list?prefix={LONG}/", ["no such directory"], id="list-long"),
    ],
)
async def test_resource_errors_name_no_server_path(mcp_client: Any, tree: Path, uri: str, expected: list[str]) -> None:
    async with mcp_client() as client:
        with pytest.raises(MCPError) as failure:
            await within(client.read_resource(uri))
    assert_clean(str(failure.value), tree, *expected)


async def test_an_empty_directory_is_deleted_and_always_delete_dir_is_honoured(
    mcp_client: Any, tree: Path, jp_serverapp: Any
) -> None:
    (tree / "empty" / ".ipynb_checkpoints").mkdir()  # leftover checkpoints do not make it non-empty
    async with mcp_client() as client:
        assert (await call_tool(client, "delete_document", path="empty"))["deleted"] == "empty"
        jp_serverapp.contents_manager.always_delete_dir = True  # the admin's choice: trees may go
        assert (await call_tool(client, "delete_document", path="full"))["deleted"] == "full"
    assert not (tree / "empty").exists() and not (tree / "full").exists()


def test_a_reason_without_errno_text_is_scrubbed_of_the_root(tmp_path: Path) -> None:
    """shutil.Error is an OSError with no strerror, only a message full of absolute paths."""
    from jupyter_pair_mcp.adapters.contents.errors import translate

    root = str(tmp_path)
    cause = shutil.Error(f"Cannot move a directory '{root}/d' into itself '{root}/d/e'.")
    try:
        try:
            raise cause
        except shutil.Error as exc:
            raise HTTPError(500, f"Unknown error renaming file: d {exc}") from exc
    except HTTPError as http_error:
        message = str(translate(http_error, "d", action="change", root=root))
    assert message == "cannot change 'd': Cannot move a directory 'd' into itself 'd/e'.", message


# -- a dead kernel -----------------------------------------------------------------------------------------


def code(*sources: str) -> list[dict[str, Any]]:
    return [{"cell_type": "code", "source": s, "id": f"k{i}"} for i, s in enumerate(sources)]


class TestDeadKernelWhileJupyterHasNotNoticed:
    """Jupyter's restarter polls every ``time_to_dead`` seconds (3 by default): until it notices, the kernel
    process is gone and nothing has changed anywhere else. Made long here so the window stays open."""

    @pytest.fixture
    def jp_server_config(self, jp_server_config: Config) -> Config:
        jp_server_config.KernelRestarter.time_to_dead = 120.0
        return jp_server_config

    async def test_the_run_that_kills_it_and_the_next_runs_say_so(
        self, mcp_client: Any, make_notebook: Any, collaborator: Any
    ) -> None:
        path = make_notebook("die.ipynb", code("before = 1", "import os\nos._exit(1)", "1 + 2"))
        async with collaborator(path) as human, mcp_client() as client:
            message = await tool_error(
                client, "batch_execute_notebook_cells", path=path, cell_ids=["k0", "k1", "k2"], timeout=60
            )
            assert "cell 'k1'" in message and "the kernel died while running" in message, message
            assert "'k0' (ok)" in message, message  # what ran before it in the same call
            assert "restart_notebook_kernel" in message, message
            await human.wait_until(lambda: human.execution_state(1) == "idle")  # not left "running"
            for _ in range(2):  # the first run after the death (it used to be "internal error"), and the next
                message = await tool_error(client, "execute_notebook_cell", path=path, cell_id="k2", timeout=30)
                assert "kernel has died" in message and "was not run" in message, message
                assert "restart_notebook_kernel" in message and "internal error" not in message, message
            await call_tool(client, "restart_notebook_kernel", path=path)
            result = await call_tool(client, "execute_notebook_cell", path=path, cell_id="k2", timeout=30)
        assert result["status"] == "ok" and result["outputs"][0]["text"] == "3"

    async def test_a_kernel_killed_between_runs_is_not_blamed_on_the_next_cell(
        self, mcp_client: Any, make_notebook: Any, jp_serverapp: Any
    ) -> None:
        path = make_notebook("killed.ipynb", code("value = 41", "value + 1"))
        async with mcp_client() as client:
            await call_tool(client, "execute_notebook_cell", path=path, cell_id="k0", timeout=60)
            await kill_kernel(jp_serverapp, path)
            message = await tool_error(client, "execute_notebook_cell", path=path, cell_id="k1", timeout=30)
        assert "kernel has died" in message and "was not run" in message, message
        assert "while running" not in message, message
        assert "Jupyter is restarting it" in message, message  # its auto-restarter is on (it has not noticed yet)


async def kill_kernel(serverapp: Any, path: str) -> None:
    """SIGKILL the notebook's kernel process, as the OOM killer would."""
    session = next(s for s in await serverapp.session_manager.list_sessions() if s["path"] == path)
    kernel = serverapp.kernel_manager.get_kernel(session["kernel"]["id"])
    os.kill(kernel.provisioner.process.pid, signal.SIGKILL)
    # Dead for Jupyter too before the test goes on: a signal takes a moment to land, and a run sent before
    # it does is "died while running", not "was not run".
    for _ in range(500):
        if not await ensure_async(kernel.is_alive()):
            return
        await asyncio.sleep(0.01)
    raise AssertionError("the killed kernel still looks alive")


async def test_a_kernel_killed_outside_any_run_is_reported_until_it_comes_back(
    mcp_client: Any, make_notebook: Any, jp_serverapp: Any
) -> None:
    """With Jupyter's own restarter timing: every run says plainly that the kernel died until the restarter has
    brought it back, then runs normally; never an internal error."""
    path = make_notebook("killed.ipynb", code("value = 41", "1 + 2"))
    async with mcp_client() as client:
        await call_tool(client, "execute_notebook_cell", path=path, cell_id="k0", timeout=60)
        await kill_kernel(jp_serverapp, path)
        for _ in range(200):  # bounded: the restarter notices within time_to_dead (3 s) and restarts
            result = await within(client.call_tool("execute_notebook_cell", {"path": path, "cell_id": "k1"}))
            text = result.content[0].text if result.content else ""
            if not result.is_error:
                break
            # (a restarted kernel can die again while it starts, so "while running" happens too)
            assert "kernel has died" in text or "kernel died while running" in text, text
            assert "restart" in text and "internal error" not in text, text
            await asyncio.sleep(0.1)
        else:
            pytest.fail("the kernel did not come back")
    assert result.structured_content["status"] == "ok"
    assert result.structured_content["outputs"][0]["text"] == "3"
