"""Clearing cells' outputs in edits of bounded cost, the cells found off the loop and fetched by bounded walks.

What to clear is found by a scan (:mod:`.scanning`: off the loop) with :func:`to_clear`; the live cells are
fetched a bounded walk per loop turn (:meth:`NotebookView.fetch_cells`: pycrdt index access walks the array from
its start), and :func:`clear` empties one batch in one transaction. pycrdt builds every change event of a
transaction for the room's deep observers (jupyter_ydoc's, the cell index's) with its path, a walk of the cells
array, so one transaction clearing 10,000 cells held the loop for seconds: :func:`clear_in_edits` cuts a clear
into edits bounded by :func:`batches`, each in its own loop turns. An agent's clear is its own edits (the undo
tool takes them back, outputs and execution counts); a restart's is the shared ``run`` source's.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable
from typing import Any

from jupyter_pair_mcp.adapters.rooms.cells import cells_text
from jupyter_pair_mcp.adapters.rooms.locks import cell_lock, cell_refusal, first_locked_code
from jupyter_pair_mcp.adapters.rooms.notebook import NotebookView
from jupyter_pair_mcp.adapters.rooms.scanning import Scanner
from jupyter_pair_mcp.errors import NotFound

#: Cells one clear edit empties at most.
CLEAR_BATCH = 100
#: Sum of the positions of one edit's cells, at most: fetching each cell walks the array up to it, and pycrdt
#: builds each change event's path, for each deep observer of the room, with a walk too (~3 ms of loop per
#: cell cleared at the end of 10,000 cells, where this budget gives ~6 cells an edit: ~20-25 ms, half the loop
#: target, as a loaded machine can double it).
POSITIONS_PER_EDIT = 60_000


def to_clear(
    snapshot: str, cell_ids: set[str] | None
) -> tuple[list[tuple[int, str]], list[str], tuple[int, str, dict[str, str]] | None]:
    """(index, id) of the code cells (only ``cell_ids`` when given) that have outputs or an execution count: what
    a clear changes (the others are never fetched from the live array); the ``cell_ids`` no cell has; and the
    first of those cells a person locked (index, id, lock), if any: an agent's clear is refused before it starts."""
    found = []
    locked = None
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
            lock = cell_lock(cell) if locked is None else None
            if lock is not None:
                locked = (index, cell_id, lock)
    return found, sorted((cell_ids or set()) - seen), locked


def batches(targets: list[tuple[int, str]]) -> list[list[tuple[int, str]]]:
    """``targets`` cut into edits of at most :data:`CLEAR_BATCH` cells whose positions (plus a fixed cost each)
    add up to :data:`POSITIONS_PER_EDIT` at most; a lone cell further on is an edit of its own."""
    found: list[list[tuple[int, str]]] = []
    walked = 0
    for target in targets:
        cost = target[0] + 64
        if not found or len(found[-1]) >= CLEAR_BATCH or walked + cost > POSITIONS_PER_EDIT:
            found.append([])
            walked = 0
        found[-1].append(target)
        walked += cost
    return found


def clear(view: NotebookView, targets: list[tuple[int, str]], cells: list[Any], source: str = "agent") -> list[str]:
    """Empty the outputs and execution count of each target in one edit; the ids cleared, in order.

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
            if source != "run" and cell_lock(ycell) is not None:  # locked since the scan
                view.check_cell(view.resolve(cell_id=cell_id), "clear the outputs of", ycell)
            live.append((cell_id, ycell))
    ids = [cell_id for cell_id, _ in live]
    if not ids:
        return []
    with view.edit(f"cleared outputs of {cells_text(ids)}", source=source, cells=ids):
        for _, ycell in live:
            outputs = ycell.get("outputs")
            if outputs is not None and len(outputs):
                outputs.clear()
            if ycell.get("execution_count") is not None:
                ycell["execution_count"] = None
    return ids


async def clear_in_edits(
    fresh: Callable[[], Awaitable[NotebookView]], scanner: Scanner, cell_ids: set[str] | None, source: str = "agent"
) -> tuple[list[str], int]:
    """Clear the code cells (``cell_ids`` only, when given) in bounded edits: (the ids cleared, the edits made).

    ``fresh`` gives the live notebook again for each edit (the room is re-acquired, as on every call); a
    ``cell_ids`` entry no cell has raises :class:`NotFound` before anything is cleared, and so does an agent's
    clear of a cell (or notebook) a person locked, with :class:`Locked` (a restart's clear, ``source="run"``, is not
    the agent's edit: it clears every cell).
    """
    first = await fresh()
    if source != "run":
        first.check_document("clear the outputs of")
    targets, missing, locked = await scanner.scan(first.ydoc, to_clear, cell_ids)
    if missing:
        shown = ", ".join(repr(cid[:40]) for cid in missing[:5]) + (", ..." if len(missing) > 5 else "")
        raise NotFound(f"no cell with id {shown} in {first.path}: read the notebook for current cell ids")
    if locked is not None and source != "run":
        raise cell_refusal(locked[1], locked[0], locked[2], "clear the outputs of")
    cleared: list[str] = []
    edits = 0
    for batch in batches(targets):
        view = await fresh()
        cells: list[Any] = []
        view.fetch_cells([index for index, _ in batch], cells, 2 * POSITIONS_PER_EDIT)
        await asyncio.sleep(0)  # the fetch and the edit in separate loop turns
        live = await fresh()
        if live.ydoc is not view.ydoc:  # the room was replaced: its cells are looked up again by id
            cells = [None] * len(batch)
        done = clear(live, batch, cells, source)
        edits += bool(done)
        cleared.extend(done)
        await asyncio.sleep(0)
    return cleared, edits


async def refuse_locked_code(view: NotebookView, scanner: Scanner, doing: str) -> None:
    """Refuse ``doing`` (a kernel restart that clears or runs every code cell) before it starts, when a person
    locked the notebook or any code cell: one scan, off the loop for a big notebook."""
    view.check_document(doing)
    locked = await scanner.scan(view.ydoc, first_locked_code)
    if locked is not None:
        raise cell_refusal(locked[1], locked[0], locked[2], doing)
