"""One-cell work stays flat as a notebook grows (issue 35): a cell read or edited again is reached without a walk
of the cells array, typing during the index's off-loop build does not make the first edit rebuild it on the loop,
duplicate ids never share a kept cell, and one scan serves every page of an outline.

Counted, not timed: array elements walked (index access to position i walks i elements), whole-array JSON
conversions, document encodes and index rebuilds per call, at N and 10N cells.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pycrdt
import pycrdt._base as pycrdt_base
import pytest
from jupyter_ydoc import YNotebook

from jupyter_pair_mcp.adapters.rooms import cellindex
from jupyter_pair_mcp.adapters.rooms.cellindex import CellIndex, index_rows
from jupyter_pair_mcp.adapters.rooms.cells import CellChange, NewCell
from jupyter_pair_mcp.adapters.rooms.notebook import NotebookView
from jupyter_pair_mcp.adapters.rooms.scanning import cells_snapshot

from .conftest import call_tool


class Work:
    """Array elements walked, whole-array conversions, encodes and index rebuilds since the last :meth:`take`."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.steps = self.conversions = self.encodes = self.rebuilds = 0
        getitem, to_json, encode, rebuild = (
            pycrdt.Array.__getitem__,
            cellindex.cells_json,
            pycrdt.Doc.get_update,
            CellIndex._rebuild,
        )

        def counted_getitem(array: Any, key: Any) -> Any:
            self.steps += key + 1 if isinstance(key, int) and key >= 0 else 0
            return getitem(array, key)

        def counted_to_json(ycells: Any) -> Any:
            self.conversions += 1
            return to_json(ycells)

        def counted_encode(doc: Any, *args: Any) -> Any:
            self.encodes += 1
            return encode(doc, *args)

        def counted_rebuild(index: CellIndex) -> None:
            self.rebuilds += 1
            rebuild(index)

        monkeypatch.setattr(pycrdt.Array, "__getitem__", counted_getitem)
        monkeypatch.setattr(cellindex, "cells_json", counted_to_json)
        monkeypatch.setattr(pycrdt.Doc, "get_update", counted_encode)
        monkeypatch.setattr(CellIndex, "_rebuild", counted_rebuild)

    def take(self) -> tuple[int, int, int, int]:
        found = (self.steps, self.conversions, self.encodes, self.rebuilds)
        self.steps = self.conversions = self.encodes = self.rebuilds = 0
        return found


def notebook(count: int) -> Any:
    nb = YNotebook()
    cells = nb.ycells
    with nb.ydoc.transaction():  # each at index 0 from the last: no walk (jupyter_ydoc's set walks per cell)
        for i in reversed(range(count)):
            cells.insert(0, nb.create_ycell({"cell_type": "code", "source": f"x = {i}", "id": f"c{i}", "metadata": {}}))
    return nb


def one_cell_work(count: int, monkeypatch: pytest.MonkeyPatch) -> dict[str, tuple[int, int, int, int]]:
    nb = notebook(count)
    index = CellIndex(nb.ycells)
    view = NotebookView(nb, index, "n.ipynb")
    middle = f"c{count // 2}"
    assert len(index.ids) == count  # built (off the loop in a server: CellIndex.prepare)
    work = Work(monkeypatch)
    found: dict[str, tuple[int, int, int, int]] = {}
    view.cell(view.resolve(cell_id=middle))
    found["first read"] = work.take()
    for k in range(3):
        view.cell(view.resolve(cell_id=middle))
        found["read"] = work.take()
        view.update([CellChange(cell_id=middle, source=f"y = {k}")])
        found["update"] = work.take()
    ((_, inserted, _),) = view.insert([NewCell("new")], view.resolve(cell_id=middle) + 1)
    work.take()  # the insertion itself: pycrdt inserts by index
    view.cell(view.resolve(cell_id=inserted))
    found["read inserted"] = work.take()
    moved = view.resolve(cell_id=middle)
    view.move(moved, moved + 1)
    work.take()
    view.cell(view.resolve(cell_id=middle))
    found["read moved"] = work.take()
    assert view.sources_at([view.resolve(cell_id=middle)]) == ["y = 2"]
    monkeypatch.undo()
    return found


def test_a_cell_met_once_is_read_and_edited_again_without_walking_the_array(monkeypatch: pytest.MonkeyPatch) -> None:
    small, large = one_cell_work(100, monkeypatch), one_cell_work(1000, monkeypatch)
    assert small["first read"][0] <= 100 and large["first read"][0] <= 1000  # one walk to the cell, once
    for op in ("read", "update", "read inserted", "read moved"):
        assert small[op] == large[op] == (0, 0, 0, 0), (op, small, large)


def test_duplicate_ids_never_share_a_kept_cell() -> None:
    nb = notebook(10)
    index = CellIndex(nb.ycells)
    view = NotebookView(nb, index, "n.ipynb")
    view.cell(view.resolve(cell_id="c3"))  # kept
    with nb.ydoc.transaction():  # a collaborator pastes a copy of c3 at the start
        nb.ycells.insert(0, nb.create_ycell({"cell_type": "code", "source": "copy", "id": "c3", "metadata": {}}))
    at = view.resolve(cell_id="c3")
    assert view.cell(at).source == ("copy" if at == 0 else "x = 3")
    del nb.ycells[0]
    assert view.cell(view.resolve(cell_id="c3")).source == "x = 3"


def test_typing_during_the_off_loop_build_does_not_drop_it(monkeypatch: pytest.MonkeyPatch) -> None:
    """A person typing while the index of a just-opened room is built off the loop changes nothing the index holds:
    the build is kept, and the first edit does not rebuild the index from every cell on the loop."""
    nb = notebook(50)
    index = CellIndex(nb.ycells)

    async def scan(ydoc: Any, fn: Any) -> Any:
        snapshot = cells_snapshot(ydoc)
        nb.ycells[7]["source"] += " + 1"  # typed while the worker builds
        return fn(snapshot)

    asyncio.run(index.prepare(scan))
    work = Work(monkeypatch)
    assert index.position("c7") == 7 and index.counts()["code"] == 50
    assert work.take()[1:] == (0, 0, 0), "no conversion, encode or rebuild on the loop"
    monkeypatch.undo()
    assert index_rows(cells_snapshot(nb.ydoc))[0] == index.ids


@pytest.fixture
def paged(make_notebook: Any, mcp_client: Any, jp_asyncio_loop: Any) -> str:
    """A 6,000-cell notebook whose room is open (opening it is jupyter-collaboration's step on the loop)."""
    path = make_notebook("paged.ipynb", count=6000)

    async def open_room() -> None:
        async with mcp_client() as client:
            await call_tool(client, "get_notebook_info", path=path)

    jp_asyncio_loop.run_until_complete(open_room())
    return str(path)


@pytest.mark.loop_bound(
    10.0,
    reason="jupyter-collaboration opens (setup) and saves (teardown) a 6,000-cell room",
    phases=("setup", "teardown"),
)
async def test_one_scan_serves_every_page_of_an_outline(paged: str, mcp_client: Any, extension: Any) -> None:
    path = paged
    outlines = extension.rooms.outlines
    async with mcp_client() as client:
        before = outlines.scans
        rows: list[dict[str, Any]] = []
        for _ in range(2):  # paged through twice: one scan
            rows, start = [], 0
            while start is not None:
                found = await call_tool(client, "get_notebook_outline", path=path, start_index=start)
                rows += found["cells"]
                start = found["next_index"]
            assert [r["i"] for r in rows] == list(range(6000))
        assert outlines.scans - before == 1
        first = rows[0]["id"]
        await call_tool(
            client, "batch_update_notebook_cells", path=path, exec=False, updates=[{"cell_id": first, "content": "z"}]
        )
        found = await call_tool(client, "get_notebook_outline", path=path)
        assert found["cells"][0]["l"] == "z", "an edit makes a new version: scanned again"
        assert outlines.scans - before == 2


async def test_an_edit_computes_no_event_path(
    make_notebook: Any, mcp_client: Any, collaborator: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """pycrdt's deep-observer wrapper computes each event's ``path``, a walk of the cells array to the cell, for
    every observer on every edit (12-40 ms to the middle of 100,000 cells): the room's observers, ours and
    jupyter-collaboration's autosave trigger, take raw events instead."""
    path = make_notebook("paths.ipynb", count=20)
    paths = 0
    init = pycrdt_base.BaseEvent.__init__

    def counted(event: Any, raw: Any, doc: Any) -> None:
        nonlocal paths
        paths += "path" in type(event).__slots__
        init(event, raw, doc)

    async with collaborator(path) as person, mcp_client() as client:
        cell_id = (await call_tool(client, "get_notebook", path=path, start_index=10, end_index=11))["cells"][0]["id"]
        monkeypatch.setattr(pycrdt_base.BaseEvent, "__init__", counted)
        await call_tool(
            client, "batch_update_notebook_cells", path=path, exec=False, updates=[{"cell_id": cell_id, "content": "e"}]
        )
        await person.wait_until(lambda: person.source(10) == "e")
        monkeypatch.undo()
    assert paths == 0
