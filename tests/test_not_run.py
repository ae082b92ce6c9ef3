"""A run stopped by an error names the cells it did not run (their ids, at most NOT_RUN_IDS, and their count),
in every tool that runs cells in order and stops at the first error."""

from __future__ import annotations

from typing import Any

import pytest

from jupyter_pair_mcp.tools.execution import NOT_RUN_IDS

from .conftest import call_tool

pytestmark = pytest.mark.usefixtures("jp_serverapp")

LATER = NOT_RUN_IDS + 5  # code cells after the failing one: more than the list names


def cells() -> list[dict[str, Any]]:
    later = [{"cell_type": "code", "source": f"v{i} = {i}", "id": f"c{i}"} for i in range(LATER)]
    return [
        {"cell_type": "code", "source": "a = 1", "id": "ok"},
        {"cell_type": "code", "source": "raise ValueError('stop')", "id": "bad"},
        {"cell_type": "markdown", "source": "# md", "id": "md"},
        *later,
    ]


def expected(reason: str) -> dict[str, Any]:
    return {"cell_ids": [f"c{i}" for i in range(NOT_RUN_IDS)], "count": LATER, "reason": reason}


STOPPED = "stopped at cell 'bad' (error): these cells were not run"


async def test_batch_execution_names_the_cells_it_did_not_run(mcp_client: Any, make_notebook: Any) -> None:
    path = make_notebook("stop.ipynb", cells())
    async with mcp_client() as client:
        runs = await call_tool(client, "batch_execute_notebook_cells", path=path, timeout=60)
        assert [(r["id"], r["status"]) for r in runs["executions"]] == [("ok", "ok"), ("bad", "error")]
        assert runs["not_run"] == expected(STOPPED)
        every = await call_tool(client, "batch_execute_notebook_cells", path=path, stop_on_error=False, timeout=60)
        assert len(every["executions"]) == 2 + LATER
        assert every.get("not_run") is None
        restarted = await call_tool(client, "restart_notebook_kernel", path=path, exec=True, timeout=60)
        assert [r["id"] for r in restarted["executions"]] == ["ok", "bad"]
        assert restarted["not_run"] == expected(STOPPED)


async def test_an_edit_with_exec_names_the_cells_it_did_not_run(mcp_client: Any, make_notebook: Any) -> None:
    path = make_notebook("edit.ipynb", cells()[:2])
    async with mcp_client() as client:
        inserted = await call_tool(
            client,
            "batch_insert_notebook_cells",
            path=path,
            start_position=1,
            cells=[{"content": "1 / 0"}, {"content": "b = 2"}, {"content": "c = 3"}],
        )
        new = [c["id"] for c in inserted["inserted"]]
        assert [r["id"] for r in inserted["executions"]] == [new[0]]
        assert inserted["execution_skipped"] == (
            f"stopped at cell {new[0]!r} (error): 2 cells were not run: {new[1]!r}, {new[2]!r}"
        )
        updated = await call_tool(
            client,
            "batch_update_notebook_cells",
            path=path,
            updates=[{"cell_id": new[1], "content": "b = 1 / 0"}, {"cell_id": new[2], "content": "c = 4"}],
        )
        assert [r["id"] for r in updated["executions"]] == [new[1]]
        assert updated["execution_skipped"] == f"stopped at cell {new[1]!r} (error): 1 cell was not run: {new[2]!r}"
