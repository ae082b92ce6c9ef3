"""Suggestions in the room: what a proposal changes, and applying an accepted part of it to the live room.

A proposal is an agent's edit made in a fork of the live document (``forks.py``). What it changes is read
off the fork per cell (inserted, updated, deleted; the before and after text), never off the agent's
arguments, so every edit tool proposes the same way. Accepting applies the chosen cells to the live room in
one agent transaction (one history version, the agent's undo takes it back), each merged three-way from the
text the proposal was made against (``merge.py``, as an agent's edits are): a person typing meanwhile keeps
every keystroke, and a change that overlaps theirs is a conflict with its reason, never a silent overwrite.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from jupyter_pair_mcp.adapters.rooms.cells import nbformat_cell
from jupyter_pair_mcp.adapters.rooms.merge import MergeConflict, apply, apply_hunks, diff, rebase
from jupyter_pair_mcp.adapters.rooms.notebook import NotebookView
from jupyter_pair_mcp.adapters.rooms.textdoc import TextView


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


def cell_changes(before: list[tuple[str, str, str]], after: list[tuple[str, str, str]]) -> list[CellProposal]:
    """The per-cell difference between two ``(id, cell_type, source)`` lists, in the proposal's order."""
    old = {cid: (i, kind, source) for i, (cid, kind, source) in enumerate(before)}
    new_ids = {cid for cid, _, _ in after}
    found: list[CellProposal] = []
    previous = ""
    for i, (cid, kind, source) in enumerate(after):
        if cid not in old:
            found.append(CellProposal(cid, "insert", None, source, kind, i, after_cell=previous))
        elif old[cid][2] != source or old[cid][1] != kind:
            found.append(CellProposal(cid, "update", old[cid][2], source, kind, i))
        previous = cid
    for cid, (i, kind, source) in old.items():
        if cid not in new_ids:
            found.append(CellProposal(cid, "delete", source, None, kind, i))
    return found


def inserted_metadata(view: NotebookView, cells: list[CellProposal]) -> None:
    """Fill in the metadata of the inserted cells from the proposal's notebook (``view``, on the fork)."""
    for cell in cells:
        if cell.change == "insert":
            raw = view.ycell(cell.cell_id).to_py() or {}
            cell.metadata = dict(raw.get("metadata") or {})


def rebased(before: str, after: str, live: str) -> str:
    """``after``'s change of ``before`` carried onto ``live`` (raises MergeConflict when they overlap)."""
    return apply(live, rebase(before, diff(before, after), live))


def apply_cells(view: NotebookView, cells: list[CellProposal], summary: str) -> tuple[dict[str, str | None], str]:
    """Apply ``cells`` to the live notebook in one agent transaction: per cell, None (applied) or why not;
    and the edit's serial (its history version's key), "" when nothing was applied."""
    listed = view.sources()
    order = [cid for cid, _, _ in listed]
    sources = {cid: source for cid, _, source in listed}
    outcome: dict[str, str | None] = {}
    planned: list[tuple[CellProposal, str]] = []  # (cell, live source) of updates and deletes
    for cell in cells:
        if cell.change == "insert":
            if cell.cell_id in sources:
                outcome[cell.cell_id] = "the cell is in the notebook already"
            continue
        if cell.cell_id not in sources:
            outcome[cell.cell_id] = "the cell was deleted since the proposal"
            continue
        live = sources[cell.cell_id]
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
        planned.append((cell, live))
    inserts = [c for c in cells if c.change == "insert" and c.cell_id not in outcome]
    applied = [c.cell_id for c, _ in planned] + [c.cell_id for c in inserts]
    if not applied:
        return outcome, ""
    ycells = view._cells
    with view.edit(summary, cells=applied) as record:
        for cell, live in planned:
            if cell.change == "update":
                at = order.index(cell.cell_id)
                ycell = ycells[at]
                before = cell.before or ""
                apply_hunks(ycell["source"], live, rebase(before, diff(before, cell.after or ""), live))
                if cell.cell_type != str(ycell.get("cell_type")):  # a retype replaces the cell, as updates do
                    view._retype(at, cell.cell_type, str(ycell["source"]))
        for cell, _ in planned:
            if cell.change == "delete":
                at = order.index(cell.cell_id)
                del ycells[at]
                order.pop(at)
        for cell in inserts:
            if cell.after_cell and cell.after_cell in order:
                at = order.index(cell.after_cell) + 1
            else:
                at = 0 if cell.after_cell == "" else min(cell.index or 0, len(order))
            ycell = view._nb.create_ycell(
                {**nbformat_cell(cell.cell_type, cell.after or "", dict(cell.metadata)), "id": cell.cell_id}
            )
            ycells.insert(at, ycell)
            order.insert(at, cell.cell_id)
    outcome.update(dict.fromkeys(applied))
    return outcome, record.serial


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
