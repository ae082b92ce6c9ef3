"""Clearing cells' outputs as one agent edit, the cells found in a snapshot and fetched by a bounded walk.

What to clear is found off the loop in a :meth:`NotebookView.snapshot` (:func:`to_clear`); the caller fetches
those live cells a bounded walk per loop turn (:meth:`NotebookView.fetch_cells`: pycrdt index access walks the
array from its start), and :func:`clear` empties them in one transaction under the agent's own origin, so the
undo tool takes the whole clear back, outputs and execution counts, as JupyterLab's "Clear Outputs" cleared them.
"""

from __future__ import annotations

import json
from typing import Any

from jupyter_pair_mcp.adapters.rooms.cells import cells_text
from jupyter_pair_mcp.adapters.rooms.notebook import NotebookView
from jupyter_pair_mcp.errors import NotFound


def to_clear(snapshot: str, cell_ids: set[str] | None) -> tuple[list[tuple[int, str]], list[str]]:
    """(index, id) of the code cells (only ``cell_ids`` when given) that have outputs or an execution count: what
    a clear changes (the others are never fetched from the live array); and the ``cell_ids`` no cell has."""
    found = []
    seen: set[str] = set()
    for index, cell in enumerate(json.loads(snapshot)):
        if not isinstance(cell, dict):
            continue
        cell_id = str(cell.get("id", ""))
        if cell_ids is not None:
            if cell_id not in cell_ids:
                continue
            seen.add(cell_id)
        if cell.get("cell_type") == "code" and (cell.get("outputs") or cell.get("execution_count") is not None):
            found.append((index, cell_id))
    return found, sorted((cell_ids or set()) - seen)


def clear(view: NotebookView, targets: list[tuple[int, str]], cells: list[Any]) -> list[str]:
    """Empty the outputs and execution count of each target in one agent edit; the ids cleared, in order.

    ``cells`` are the live cells fetched where the snapshot saw each target; a cell moved since is looked up by
    id (one walk), a cell deleted since is skipped (nothing of it is left to clear).
    """
    live: list[tuple[str, Any]] = []
    with view.ydoc.transaction():  # one transaction for all the reads
        for (_, cell_id), ycell in zip(targets, cells, strict=True):
            if ycell is None or ycell.get("id") != cell_id:
                try:
                    ycell = view.ycell(cell_id)
                except NotFound:
                    continue
            live.append((cell_id, ycell))
    ids = [cell_id for cell_id, _ in live]
    if not ids:
        return []
    with view.edit(f"cleared outputs of {cells_text(ids)}", cells=ids):
        for _, ycell in live:
            outputs = ycell.get("outputs")
            if outputs is not None and len(outputs):
                outputs.clear()
            if ycell.get("execution_count") is not None:
                ycell["execution_count"] = None
    return ids
