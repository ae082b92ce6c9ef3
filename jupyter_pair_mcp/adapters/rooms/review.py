"""Suggestions in the room: what a proposal changes, and applying an accepted part of it to the live room.

A proposal is an agent's edit recorded, not made, by the proposal's view of the live document
(``proposing.py``): per cell, inserted, updated or deleted, with the text it changes and what it makes of it,
so every edit tool proposes the same way and a proposal on a big notebook costs (and holds) what it changes.

Accepting applies the chosen cells to the live room in one agent transaction (one history version, the
agent's undo takes it back), each found by id and merged three-way from the text the proposal was made
against (``merge.py``, as an agent's edits are): a person typing meanwhile keeps every keystroke, and a
change that overlaps theirs is a conflict with its reason, never a silent overwrite.
"""

from __future__ import annotations

import bisect
import logging
from dataclasses import dataclass, field
from typing import Any

from jupyter_pair_mcp.adapters.rooms.cells import nbformat_cell, source_text
from jupyter_pair_mcp.adapters.rooms.merge import MergeConflict, apply, apply_hunks, diff, rebase, shared_budgets
from jupyter_pair_mcp.adapters.rooms.notebook import NotebookView
from jupyter_pair_mcp.adapters.rooms.textdoc import TextView

log = logging.getLogger(__name__)


@dataclass
class CellProposal:
    """One cell's part of a suggestion: ``before`` is the text it was made against (None for an insert)."""

    cell_id: str
    change: str  # "insert" | "update" | "delete"
    before: str | None
    after: str | None
    cell_type: str
    index: int | None  # in the proposal (insert, update) or in the live document when proposed (delete)
    after_cell: str | None = None  # insert: the cell it follows in the proposal ("" for the first)
    metadata: dict[str, Any] = field(default_factory=dict)  # insert: the new cell's metadata
    state: str = "pending"
    reason: str | None = None
    cut: bool = False  # before/after kept only in part (a finished suggestion keeps what is shown)


def live_sources(view: NotebookView, cell_ids: set[str]) -> dict[str, str]:
    """The live sources of those of ``cell_ids`` still in the notebook, by id: one walk each, never a whole read."""
    found = {}
    for cid in cell_ids:
        at = view.find(cid)
        if at is not None:
            found[cid] = source_text(view._live(at).get("source", ""))
    return found


def rebased(before: str, after: str, live: str) -> str:
    """``after``'s change of ``before`` carried onto ``live`` (raises MergeConflict when they overlap)."""
    return apply(live, rebase(before, diff(before, after), live))


def apply_cells(view: NotebookView, cells: list[CellProposal], summary: str) -> tuple[dict[str, str | None], str]:
    """Apply ``cells`` to the live notebook in one agent transaction: per cell, None (applied) or why not;
    and the edit's serial (its history version's key), "" when nothing was applied.

    Each cell is found by id (the room's cell index), never by reading the whole notebook: an accept costs the
    cells it applies. Positions are taken before the transaction and kept current by hand inside it (the index
    learns of structural changes only when the transaction ends): updates in place, then deletions from the
    end, then insertions after their anchors.
    """
    outcome: dict[str, str | None] = {}
    planned: list[tuple[CellProposal, int, str]] = []  # (cell, live position, live source) of updates and deletes
    fetched: dict[int, Any] = {}  # their live cells, by position: found once (the edit forgets the index's fetches)
    for cell in cells:
        at = view.find(cell.cell_id)
        if cell.change == "insert":
            if at is not None:
                outcome[cell.cell_id] = "the cell is in the notebook already"
            continue
        if at is None:
            outcome[cell.cell_id] = "the cell was deleted since the proposal"
            continue
        fetched[at] = view._live(at)
        live = source_text(fetched[at].get("source", ""))
        if cell.change == "delete":
            if live != cell.before:
                outcome[cell.cell_id] = "the cell changed since the proposal: deleting it would lose that"
                continue
        else:
            try:
                rebased(cell.before or "", cell.after or "", live)
            except MergeConflict:
                outcome[cell.cell_id] = "the cell changed since the proposal where the suggestion changes it"
                continue
        planned.append((cell, at, live))
    inserts = [c for c in cells if c.change == "insert" and c.cell_id not in outcome]
    applied = [c.cell_id for c, _, _ in planned] + [c.cell_id for c in inserts]
    if not applied:
        return outcome, ""
    gone = sorted(at for c, at, _ in planned if c.change == "delete")
    anchors = {c.after_cell: view.find(c.after_cell) for c in inserts if c.after_cell}
    count = view.cell_count
    ycells = view._cells
    hunks = [
        rebase(c.before or "", diff(c.before or "", c.after or ""), live) if c.change == "update" else []
        for c, _, live in planned
    ]
    budgets = shared_budgets([live for _, _, live in planned], [len(h) for h in hunks])  # one budget for all
    with view.edit(summary, cells=applied, person=True) as record:  # a person's accept: never refused by a lock
        for (cell, at, live), cell_hunks, most in zip(planned, hunks, budgets, strict=True):
            if cell.change == "update":
                ycell = fetched[at]
                apply_hunks(ycell["source"], live, cell_hunks, most)
                if cell.cell_type != str(ycell.get("cell_type")):  # a retype replaces the cell, as updates do
                    view._retype(at, cell.cell_type, str(ycell["source"]))
        for start, end in reversed(_runs(gone)):
            del ycells[start:end]
        count -= len(gone)
        # Where each anchor is now: live anchors shifted by the deletions, then by each insertion before them.
        deleted = {c.cell_id for c, _, _ in planned if c.change == "delete"}
        placed = {cid: at - bisect.bisect_left(gone, at) for cid, at in anchors.items() if at is not None}
        placed = {cid: at for cid, at in placed.items() if cid not in deleted}
        for cell in inserts:
            if cell.after_cell in placed:
                at = placed[cell.after_cell] + 1
            else:
                at = 0 if cell.after_cell == "" else min(cell.index or 0, count)
            ycell = view._nb.create_ycell(
                {**nbformat_cell(cell.cell_type, cell.after or "", dict(cell.metadata)), "id": cell.cell_id}
            )
            ycells.insert(at, ycell)
            count += 1
            placed = {cid: p + 1 if p >= at else p for cid, p in placed.items()}
            placed[cell.cell_id] = at
    outcome.update(dict.fromkeys(applied))
    return outcome, record.serial


def _runs(positions: list[int]) -> list[tuple[int, int]]:
    """Sorted positions as ``[start, end)`` runs of consecutive ones (one array deletion each)."""
    runs: list[tuple[int, int]] = []
    for at in positions:
        if runs and runs[-1][1] == at:
            runs[-1] = (runs[-1][0], at + 1)
        else:
            runs.append((at, at + 1))
    return runs


def apply_text(view: TextView, before: str, after: str, summary: str) -> tuple[str | None, str]:
    """Apply a text document's suggestion merged onto the live text as one agent edit: None or why not, and
    the edit's serial."""
    live = view.text
    try:
        hunks = rebase(before, diff(before, after), live)
    except MergeConflict:
        return "the text changed since the proposal where the suggestion changes it", ""
    if not hunks:
        return None, ""
    with view._edit(summary, None) as record:
        apply_hunks(view._text, live, hunks)
    return None, record.serial
