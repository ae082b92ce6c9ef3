"""What an agent is told before it edits a code cell: the edit runs it, in a kernel people share, whose working
directory is the notebook's folder (and that this is so)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from .conftest import call_tool

pytestmark = pytest.mark.usefixtures("jp_serverapp")


async def test_the_edit_tools_say_they_run_code_cells_in_the_shared_kernel_in_the_notebooks_folder(
    mcp_client: Any,
) -> None:
    async with mcp_client() as client:
        instructions = client.instructions or ""
        tools = {t.name: t for t in (await client.list_tools()).tools}
    assert "run" in instructions and "share" in instructions and "notebook's folder" in instructions
    for name in ("batch_insert_notebook_cells", "batch_update_notebook_cells"):
        tool = tools[name]
        assert "unless exec=false" in tool.description, name
        run = tool.input_schema["properties"]["exec"]
        assert run["default"] is True, name
        assert "share" in run["description"] and "notebook's folder" in run["description"], name
    for name in ("execute_notebook_cell", "batch_execute_notebook_cells"):
        assert "share" in tools[name].description, name


async def test_the_kernel_runs_in_the_notebooks_folder(mcp_client: Any, make_notebook: Any, jp_root_dir: Path) -> None:
    path = make_notebook("work/deeper/where.ipynb", [])
    async with mcp_client() as client:
        result = await call_tool(
            client, "batch_insert_notebook_cells", path=path, cells=[{"content": "import os\nos.getcwd()"}]
        )
    [run] = result["executions"]
    assert run["status"] == "ok", run
    assert os.path.realpath(run["outputs"][0]["text"].strip("'")) == os.path.realpath(jp_root_dir / "work" / "deeper")
