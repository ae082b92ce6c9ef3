"""Kernels: which are installed and running, the kernel a new notebook gets, and switching a notebook's kernel
the way JupyterLab's kernel picker does (its metadata in the live room, its Jupyter session's kernel)."""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path
from typing import Any

import nbformat
import pytest
from jupyter_server.auth.authorizer import Authorizer
from pycrdt import Map
from traitlets.config import Config

from .conftest import call_tool, tool_error, within
from .test_notebook_live import autosaved_file

pytestmark = pytest.mark.usefixtures("jp_serverapp")

ALT = "python3-alt"
BROKEN = "broken"
# Whether the code runs in the alt kernel's process: only its kernelspec sets this variable.
FLAVOR = "import os\nos.environ.get('KERNEL_FLAVOR', 'default')"


@pytest.fixture
def jp_server_config(jp_server_config: Config, jp_kernel_dir: Path) -> Config:
    """A second Python kernelspec in the test server's Jupyter path, so switching starts another kernel."""
    spec_dir = jp_kernel_dir / ALT
    spec_dir.mkdir(parents=True, exist_ok=True)
    spec = {
        "argv": [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"],
        "display_name": "Python 3 (alt)",
        "language": "python",
        "env": {"KERNEL_FLAVOR": "alt"},
    }
    (spec_dir / "kernel.json").write_text(json.dumps(spec))
    broken = jp_kernel_dir / BROKEN  # its program does not exist: the kernel cannot start
    broken.mkdir(parents=True, exist_ok=True)
    argv = [str(jp_kernel_dir / "no-such-program"), "-f", "{connection_file}"]
    (broken / "kernel.json").write_text(json.dumps({"argv": argv, "display_name": "Broken", "language": "python"}))
    return jp_server_config


def code(*sources: str) -> list[dict[str, Any]]:
    return [{"cell_type": "code", "source": s, "id": f"k{i}"} for i, s in enumerate(sources)]


def live_metadata(human: Any) -> dict[str, Any]:
    """The notebook metadata as a collaborator's replica has it."""
    metadata = human.doc.get("meta", type=Map).get("metadata")
    return dict(metadata.to_py()) if metadata is not None else {}


class Api:
    """Jupyter's REST API, as JupyterLab calls it."""

    def __init__(self, http: Any, server_root: str, jp_base_url: str, auth: dict[str, str]) -> None:
        self.http, self.root, self.auth = http, f"{server_root}{jp_base_url}api", auth

    async def get(self, what: str) -> Any:
        response = await self.http.get(f"{self.root}/{what}", headers=self.auth)
        assert response.status_code == 200, response.text
        return response.json()

    async def session(self, path: str) -> dict[str, Any]:
        ours = [s for s in await self.get("sessions") if s["path"] == path]
        assert len(ours) == 1, ours
        return dict(ours[0])

    async def open_notebook(self, path: str, kernel_name: str) -> dict[str, Any]:
        """What JupyterLab does when it opens a notebook: a session with the kernel its metadata names."""
        body = {"path": path, "type": "notebook", "name": Path(path).name, "kernel": {"name": kernel_name}}
        response = await self.http.post(f"{self.root}/sessions", json=body, headers=self.auth)
        assert response.status_code == 201, response.text
        return dict(response.json())


@pytest.fixture
def api(http: Any, server_root: str, jp_base_url: str, auth: dict[str, str]) -> Api:
    return Api(http, server_root, jp_base_url, auth)


async def test_list_kernelspecs_shows_installed_kernels_and_the_default(mcp_client: Any) -> None:
    async with mcp_client() as client:
        listed = await call_tool(client, "list_kernelspecs")
    specs = {s["name"]: s for s in listed["kernelspecs"]}
    assert specs["python3"]["language"] == "python"
    assert specs["python3"]["display_name"]
    assert specs[ALT] == {"name": ALT, "display_name": "Python 3 (alt)", "language": "python"}
    assert listed["default"] == "python3"
    assert listed["truncated"] is False


@pytest.mark.parametrize("kernel_name", [None, ALT])
async def test_a_created_notebook_names_its_kernel_and_opens_with_it(
    mcp_client: Any, api: Api, jp_root_dir: Path, jp_serverapp: Any, kernel_name: str | None
) -> None:
    path = "made.ipynb"
    expected = kernel_name or "python3"
    arguments = {"kernel_name": kernel_name} if kernel_name else {}
    async with mcp_client() as client:
        await call_tool(client, "create_document", path=path, content="# notes", **arguments)
        # No room has opened it yet: the file is as the contents manager wrote it, and nothing writes it now.
        saved = nbformat.reads((jp_root_dir / path).read_text(), as_version=4)
        nbformat.validate(saved)
        spec = saved.metadata["kernelspec"]
        assert spec["name"] == expected
        assert spec["display_name"] and spec["language"] == "python"
        assert saved.metadata["language_info"] == {"name": "python"}
        live = (await call_tool(client, "get_notebook", path=path))["metadata"]
        assert live["kernelspec"] == dict(spec)

        # JupyterLab opens it with the kernel its metadata names: our runs use that session's kernel.
        session = await api.open_notebook(path, live["kernelspec"]["name"])
        assert session["kernel"]["name"] == expected
        await call_tool(client, "batch_insert_notebook_cells", path=path, cells=[{"content": FLAVOR}], exec=False)
        run = await call_tool(client, "batch_execute_notebook_cells", path=path, timeout=60)
        flavor = "'alt'" if kernel_name == ALT else "'default'"
        assert run["executions"][0]["outputs"][0]["text"] == flavor
        assert (await api.session(path))["kernel"]["id"] == session["kernel"]["id"]
        info = await call_tool(client, "get_notebook_info", path=path)
        assert info["kernel"]["name"] == expected
    assert (await autosaved_file(jp_serverapp, jp_root_dir, path))["metadata"]["kernelspec"]["name"] == expected


async def test_unknown_kernel_names_are_tool_errors_listing_the_installed(
    mcp_client: Any, make_notebook: Any, jp_root_dir: Path
) -> None:
    path = make_notebook("named.ipynb", code("1"))
    async with mcp_client() as client:
        created = await tool_error(client, "create_document", path="nope.ipynb", kernel_name="nope")
        assert "kernel 'nope' is not installed" in created
        assert "python3" in created and ALT in created
        assert not (jp_root_dir / "nope.ipynb").exists()
        switched = await tool_error(client, "set_notebook_kernel", path=path, kernel_name="nope")
        assert "kernel 'nope' is not installed" in switched and ALT in switched
        assert "kernel_name is for notebooks" in await tool_error(
            client, "create_document", path="notes.md", kernel_name="python3"
        )
        assert (await call_tool(client, "get_notebook", path=path))["metadata"]["kernelspec"]["name"] == "python3"


async def test_set_notebook_kernel_switches_the_metadata_live_and_the_session_kernel(
    mcp_client: Any, make_notebook: Any, collaborator: Any, api: Api
) -> None:
    path = make_notebook("switch.ipynb", code("x = 41", FLAVOR, "x + 1"))
    async with mcp_client() as client, collaborator(path) as human:
        first = await call_tool(client, "batch_execute_notebook_cells", path=path, cell_ids=["k0", "k1"], timeout=60)
        assert first["executions"][1]["outputs"][0]["text"] == "'default'"
        before = await api.session(path)
        assert before["kernel"]["name"] == "python3"
        assert live_metadata(human)["kernelspec"]["name"] == "python3"

        switched = await call_tool(client, "set_notebook_kernel", path=path, kernel_name=ALT)
        assert switched["kernelspec"] == {"name": ALT, "display_name": "Python 3 (alt)", "language": "python"}
        assert switched["started"] is True
        await human.wait_until(lambda: live_metadata(human)["kernelspec"]["name"] == ALT)
        assert live_metadata(human)["kernelspec"] == switched["kernelspec"]
        assert live_metadata(human)["language_info"]["name"] == "python"

        after = await api.session(path)
        assert after["id"] == before["id"], "the notebook's session follows; no second session"
        assert after["kernel"]["name"] == ALT
        assert after["kernel"]["id"] == switched["kernel"]["id"] != before["kernel"]["id"]
        assert before["kernel"]["id"] not in {k["id"] for k in await api.get("kernels")}, "the old kernel is shut down"
        info = await call_tool(client, "get_notebook_info", path=path)
        assert info["kernel"]["id"] == after["kernel"]["id"]

        run = await call_tool(client, "batch_execute_notebook_cells", path=path, cell_ids=["k1", "k2"], timeout=60)
        assert run["executions"][0]["outputs"][0]["text"] == "'alt'"
        assert run["executions"][1]["status"] == "error", "a new kernel: x is gone"

        again = await call_tool(client, "set_notebook_kernel", path=path, kernel_name=ALT)
        assert again["started"] is False
        assert again["kernel"]["id"] == after["kernel"]["id"]

        failed = await tool_error(client, "set_notebook_kernel", path=path, kernel_name=BROKEN)
        assert "kernel 'broken' could not be started" in failed
        assert "no-such-program" not in failed, "no server path in messages"
        assert (await api.session(path))["kernel"]["id"] == after["kernel"]["id"], "the notebook keeps its kernel"
        assert live_metadata(human)["kernelspec"]["name"] == ALT


async def test_set_notebook_kernel_without_a_session_picks_the_kernel_of_the_next_run(
    mcp_client: Any, make_notebook: Any, api: Api
) -> None:
    path = make_notebook("later.ipynb", code(FLAVOR))
    async with mcp_client() as client:
        switched = await call_tool(client, "set_notebook_kernel", path=path, kernel_name=ALT)
        assert switched["kernel"] is None
        assert switched["started"] is False
        assert [s for s in await api.get("sessions") if s["path"] == path] == []
        assert (await call_tool(client, "get_notebook", path=path))["metadata"]["kernelspec"]["name"] == ALT
        info = await call_tool(client, "get_notebook_info", path=path)
        assert (info["kernelspec"], info["kernel"]) == (ALT, None), "which kernel a run will start, before any runs"
        run = await call_tool(client, "execute_notebook_cell", path=path, cell_id="k0", timeout=60)
        assert run["outputs"][0]["text"] == "'alt'"
        assert (await api.session(path))["kernel"]["name"] == ALT


async def test_list_kernels_shows_running_kernels_and_their_notebooks(
    mcp_client: Any, make_notebook: Any, api: Api
) -> None:
    path = make_notebook("listed.ipynb", code("1"))
    async with mcp_client() as client:
        assert (await call_tool(client, "list_kernels"))["kernels"] == []
        await call_tool(client, "execute_notebook_cell", path=path, cell_id="k0", timeout=60)
        listed = await call_tool(client, "list_kernels")
    session = await api.session(path)
    [kernel] = listed["kernels"]
    assert kernel["id"] == session["kernel"]["id"]
    assert kernel["name"] == "python3"
    assert kernel["paths"] == [path]
    assert kernel["state"] in ("idle", "busy")
    assert kernel["last_activity"]
    assert kernel["connections"] == 0
    assert listed["truncated"] is False


async def test_a_run_on_the_replaced_kernel_is_interrupted(
    mcp_client: Any, make_notebook: Any, collaborator: Any, api: Api
) -> None:
    """Our run on the old kernel is interrupted and ends as an interrupted run; the new kernel serves the next."""
    path = make_notebook("cut.ipynb", code("import time\nprint('asleep', flush=True)\ntime.sleep(60)", FLAVOR))
    async with mcp_client() as client, collaborator(path) as human:
        sleeper = asyncio.ensure_future(
            within(client.call_tool("execute_notebook_cell", {"path": path, "cell_id": "k0", "timeout": 120}), 30)
        )
        await human.wait_until(lambda: bool(human.cells()[0]["outputs"]), limit=30)
        switched = await call_tool(client, "set_notebook_kernel", path=path, kernel_name=ALT)
        cut = await sleeper
        assert not cut.is_error, cut.content[0].text
        assert cut.structured_content["status"] == "error"
        assert "KeyboardInterrupt" in "".join(o["text"] for o in cut.structured_content["outputs"])
        assert (await api.session(path))["kernel"]["id"] == switched["kernel"]["id"]
        run = await call_tool(client, "execute_notebook_cell", path=path, cell_id="k1", timeout=60)
        assert run["outputs"][0]["text"] == "'alt'"


class NoWritesAuthorizer(Authorizer):  # type: ignore[misc]
    """May run kernels but not change files."""

    def is_authorized(self, handler: Any, user: Any, action: str, resource: str) -> bool:
        return not (action == "write" and resource == "contents")


class TestWithoutWrite:
    @pytest.fixture
    def jp_server_config(self, jp_server_config: Config) -> Config:
        jp_server_config.ServerApp.authorizer_class = NoWritesAuthorizer
        return jp_server_config

    async def test_set_notebook_kernel_needs_write_on_contents(
        self, mcp_client: Any, make_notebook: Any, api: Api
    ) -> None:
        path = make_notebook("guarded.ipynb", code("1"))
        async with mcp_client() as client:
            await call_tool(client, "execute_notebook_cell", path=path, cell_id="k0", timeout=60)
            kernel = (await api.session(path))["kernel"]
            message = await tool_error(client, "set_notebook_kernel", path=path, kernel_name=ALT)
            assert "not authorized to write contents" in message
            assert (await call_tool(client, "get_notebook", path=path))["metadata"]["kernelspec"]["name"] == "python3"
        after = (await api.session(path))["kernel"]
        assert (after["id"], after["name"]) == (kernel["id"], "python3")
