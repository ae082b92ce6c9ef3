"""Whole-notebook scans and history folds do not convert a big document on the event loop.

pycrdt's ``to_json`` and ``apply_update`` hold the GIL (~40 ns per byte), so a worker thread would not free the
loop: a big notebook's search, outline, replace plan and clear, and every history checkpoint of a big document,
run in the scanner's worker process from an encoded update. Here every document counts as big
(``in_place_bytes`` 0), so each path is shown through the process, with what a person typed included.
"""

from __future__ import annotations

import sqlite3
from typing import Any

import pycrdt
import pycrdt.store.sqlite
import pytest

from .conftest import autosaved, call_tool, received, stored, tool_error

OUT = {"output_type": "stream", "name": "stdout", "text": "printed\n"}
CELLS = [
    {"id": "c0", "cell_type": "code", "source": "needle = 1", "outputs": [OUT], "execution_count": 1},
    {"id": "m1", "cell_type": "markdown", "source": "# A needle in the text"},
    {"id": "c2", "cell_type": "code", "source": "print(needle)", "outputs": [OUT], "execution_count": 2},
]


@pytest.fixture
def scanner(extension: Any, monkeypatch: pytest.MonkeyPatch) -> Any:
    scanner = extension.rooms.scanner
    monkeypatch.setattr(scanner, "in_place_bytes", 0)  # every document is big
    return scanner


async def test_scans_of_a_big_notebook_run_in_the_worker_process(
    mcp_client: Any, make_notebook: Any, collaborator: Any, scanner: Any, jp_serverapp: Any
) -> None:
    path = make_notebook("scan.ipynb", CELLS)
    async with collaborator(path) as human, mcp_client() as client:
        await call_tool(client, "get_notebook_info", path=path)
        human.document.ycells[1]["source"].insert(0, "needle ")  # a person types: the scans see it
        await received(jp_serverapp, human)
        found = await call_tool(client, "search_notebook", path=path, query="needle")
        assert [(m["cell_id"], m["column"]) for m in found["matches"]] == [("c0", 1), ("m1", 1), ("m1", 12), ("c2", 7)]
        outline = await call_tool(client, "get_notebook_outline", path=path)
        assert [(row["id"], row.get("l")) for row in outline["cells"]] == [
            ("c0", "needle = 1"),
            ("m1", "needle # A needle in the text"),
            ("c2", "print(needle)"),
        ]
        replaced = await call_tool(client, "replace_in_notebook", path=path, find="needle", replace="pin")
        assert replaced["replacements"] == 4
        cleared = await call_tool(client, "clear_notebook_outputs", path=path)
        assert cleared["cell_ids"] == ["c0", "c2"]
        await human.wait_until(lambda: human.sources() == ["pin = 1", "pin # A pin in the text", "print(pin)"])
        # An error raised in the worker (a bad group reference, found while planning) is the agent's tool error.
        message = await tool_error(client, "replace_in_notebook", path=path, find="(p)in", replace=r"\2", regex=True)
        assert "invalid replacement" in message
    assert scanner.offloaded["_scan_update"] == 6, "five scans, and the room's cell index built when first used"


class TestInProcess:
    @pytest.fixture
    def mcp_config(self) -> dict[str, Any]:
        return {"scan_processes": 0}

    async def test_no_worker_process_when_none_is_configured(
        self, mcp_client: Any, make_notebook: Any, scanner: Any
    ) -> None:
        path = make_notebook("here.ipynb", CELLS)
        async with mcp_client() as client:
            found = await call_tool(client, "search_notebook", path=path, query="needle")
            assert len(found["matches"]) == 3
        assert not scanner.offloaded and scanner._pool is None


async def test_history_checkpoints_are_folded_in_the_worker_process(
    mcp_client: Any, make_notebook: Any, scanner: Any, jp_serverapp: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """pycrdt-store folds the whole document into a checkpoint every checkpoint_interval writes, on the loop;
    the history store folds it in the worker process instead, and pycrdt-store's own fold never runs."""
    upstream_folds = 0
    original = pycrdt.store.sqlite.Doc

    def counted(*args: Any, **kwargs: Any) -> Any:
        nonlocal upstream_folds
        upstream_folds += 1
        return original(*args, **kwargs)

    monkeypatch.setattr(pycrdt.store.sqlite, "Doc", counted)
    store_class = jp_serverapp.extension_manager.extension_points["jupyter_server_ydoc"].app.ystore_class
    monkeypatch.setattr(store_class, "checkpoint_interval", 3)
    path = make_notebook("checkpoint.ipynb", CELLS)
    async with mcp_client() as client:
        for n in range(8):
            await call_tool(
                client,
                "batch_update_notebook_cells",
                path=path,
                exec=False,
                updates=[{"cell_id": "c0", "content": f"x = {n}"}],
            )
        await autosaved(jp_serverapp, path)
        await stored(jp_serverapp, path)
    assert upstream_folds == 0
    assert scanner.offloaded["fold_updates"] >= 2  # 8 edits and the room's own writes: at least two checkpoints
    db_path = jp_serverapp.extension_manager.extension_points["jupyter_pair_mcp"].app.rooms.history_db()
    with sqlite3.connect(db_path) as db:  # its own connection: SQLite isolates it from the store's writes
        rows = db.execute("SELECT checkpoint FROM ycheckpoints").fetchall()
    assert len(rows) == 1
    folded: pycrdt.Doc[Any] = pycrdt.Doc()
    folded.apply_update(rows[0][0])
    sources = [str(cell["source"]) for cell in folded.get("cells", type=pycrdt.Array).to_py() or []]
    assert sources[1:] == ["# A needle in the text", "print(needle)"] and sources[0].startswith("x = ")
