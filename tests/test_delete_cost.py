"""Deleting cells reads only what the answer returns (each cell's id and source, never its outputs) and removes
each run of adjacent cells in one step: deleting a thousand cells beside a 50 MB output costs the loop what
the sources cost, not a conversion of every cell."""

from __future__ import annotations

from typing import Any

import pycrdt
import pytest
from jupyter_ydoc import YNotebook

from jupyter_pair_mcp.adapters.rooms.cellindex import CellIndex
from jupyter_pair_mcp.adapters.rooms.notebook import NotebookView

CELLS = 1_000


def notebook() -> Any:
    nb = YNotebook()
    image = {"output_type": "display_data", "data": {"image/png": "A" * 1000}, "metadata": {}}
    cells = [
        {
            "cell_type": "code",
            "source": f"x = {i}",
            "metadata": {},
            "outputs": [image],
            "execution_count": i,
            "id": f"c{i}",
        }
        for i in range(CELLS)
    ]
    nb.set({"cells": cells, "metadata": {}, "nbformat": 4, "nbformat_minor": 5})
    return nb


@pytest.mark.parametrize(
    "indexes",
    [list(range(CELLS)), list(range(0, CELLS, 2)), [5, 3, 4, 900, 901, 3]],
    ids=["all", "every-other", "runs"],
)
def test_delete_reads_sources_only_and_removes_runs(monkeypatch: pytest.MonkeyPatch, indexes: list[int]) -> None:
    nb = notebook()
    view = NotebookView(nb, CellIndex(nb.ycells), "n.ipynb")
    conversions = removals = 0
    to_py, delitem = pycrdt.Map.to_py, pycrdt.Array.__delitem__

    def counted_to_py(self: pycrdt.Map) -> Any:
        nonlocal conversions
        conversions += 1
        return to_py(self)

    def counted_delitem(self: pycrdt.Array, key: Any) -> None:  # type: ignore[type-arg]
        nonlocal removals
        removals += 1
        delitem(self, key)

    monkeypatch.setattr(pycrdt.Map, "to_py", counted_to_py)
    monkeypatch.setattr(pycrdt.Array, "__delitem__", counted_delitem)
    removed = view.delete(indexes)
    monkeypatch.undo()

    unique = sorted(set(indexes))
    runs = sum(1 for k, i in enumerate(unique) if k == 0 or unique[k - 1] != i - 1)
    assert conversions == 0, "no cell is converted whole (its outputs are not part of the answer)"
    assert removals == runs, "each run of adjacent cells is removed in one step"
    assert removed == [(i, f"c{i}", f"x = {i}") for i in unique]
    left = [c["id"] for c in nb.ycells.to_py()]
    assert left == [f"c{i}" for i in range(CELLS) if i not in set(unique)]
