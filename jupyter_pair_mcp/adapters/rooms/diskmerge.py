"""Three-way merge of a file changed on disk with a room's unsaved changes: what the file was is the base.

jupyter-collaboration loads a file changed on disk over its room: every change not saved yet goes, agents' edits
answered OK and people's keystrokes among them. Here the room (ours), the changed file (theirs) and the file as
the room last loaded or wrote it (the base) are merged instead. A notebook is merged cell by cell by id, and each
cell field by field (type, source, metadata, outputs, execution count, attachments): a field changed on one side
only takes that side's value. A field both sides changed differently is a conflict: the file's value wins, and the
room's cell as it was stays in the document's history (the reload is a version of its own). A cell one side
deleted while the other changed it is a conflict too (the file's side wins). Cells added on either side are kept,
each after the cell it followed. A text file is merged line-wise with the agents' three-way text merge; where the
two sides touch the same text the file's whole text wins (a conflict).

Pure functions of JSON-like values: safe in a worker thread.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from jupyter_pair_mcp.adapters.rooms.merge import MergeConflict, apply, diff, rebase

#: Cell fields merged one by one.
FIELDS = ("cell_type", "source", "metadata", "outputs", "execution_count", "attachments")
_MISSING = object()


@dataclass
class Merged:
    """The merge's result: ``content`` for the room, and what the file's side overrode."""

    content: Any
    conflicts: list[str] = field(default_factory=list)  # cell ids (notebooks), or ["text"] for a text file
    kept_ours: bool = False  # the result holds changes of the room that the file does not have (save it)


def _pick(base: Any, ours: Any, theirs: Any) -> tuple[Any, bool]:
    """One value, three-way: (the value, whether it was a conflict)."""
    if ours in (theirs, base):
        return theirs, False
    if theirs == base:
        return ours, False
    return theirs, True


def merge_text(base: str | None, ours: str, theirs: str) -> Merged:
    if ours in (theirs, base) or base is None:
        return Merged(theirs)
    if theirs == base:
        return Merged(ours, kept_ours=True)
    try:
        merged = apply(theirs, rebase(base, diff(base, ours), theirs))
    except MergeConflict:
        return Merged(theirs, ["text"])
    return Merged(merged, kept_ours=merged != theirs)


def _cells_by_id(notebook: dict[str, Any]) -> dict[str, dict[str, Any]] | None:
    """Cells by id, or None when a cell has no id or ids repeat (then the merge is of whole documents)."""
    cells: dict[str, dict[str, Any]] = {}
    for cell in notebook.get("cells", []):
        cell_id = cell.get("id") if isinstance(cell, dict) else None
        if not isinstance(cell_id, str) or not cell_id or cell_id in cells:
            return None
        cells[cell_id] = cell
    return cells


def merge_notebook(base: dict[str, Any] | None, ours: dict[str, Any], theirs: dict[str, Any]) -> Merged:
    if ours in (theirs, base) or base is None:
        return Merged(theirs)
    if theirs == base:
        return Merged(ours, kept_ours=True)
    b, o, t = _cells_by_id(base), _cells_by_id(ours), _cells_by_id(theirs)
    if b is None or o is None or t is None:
        return Merged(theirs, ["(whole notebook: its cells have no ids)"])
    conflicts: list[str] = []
    cells: dict[str, dict[str, Any]] = {}
    for cell_id in list(o) + [i for i in t if i not in o]:
        bc, oc, tc = b.get(cell_id), o.get(cell_id), t.get(cell_id)
        if oc is not None and tc is not None:
            cells[cell_id] = _merge_cell(bc, oc, tc, conflicts)
        elif tc is not None:  # not in the room: new on disk, or deleted in the room
            if bc is None:
                cells[cell_id] = tc
            elif tc != bc:
                conflicts.append(cell_id)  # deleted in the room, changed on disk: the file's cell comes back
                cells[cell_id] = tc
        elif oc is not None:  # not in the file: new in the room, or deleted on disk
            if bc is None:
                cells[cell_id] = oc
            elif oc != bc:
                conflicts.append(cell_id)  # changed in the room, deleted on disk: it goes, its text is in history
    order = _order(list(b), list(o), list(t))
    metadata = _merge_dict(base.get("metadata", {}), ours.get("metadata", {}), theirs.get("metadata", {}))
    merged = {**theirs, "metadata": metadata, "cells": [cells[i] for i in order if i in cells]}
    return Merged(merged, conflicts, kept_ours=merged != theirs)


def _merge_cell(base: dict[str, Any] | None, ours: dict[str, Any], theirs: dict[str, Any], conflicts: list[str]) -> Any:
    if ours == theirs:
        return theirs
    merged = dict(theirs)
    clash = False
    for name in FIELDS:
        bv = base.get(name, _MISSING) if base is not None else _MISSING
        value, conflict = _pick(bv, ours.get(name, _MISSING), theirs.get(name, _MISSING))
        clash = clash or conflict
        if value is _MISSING:
            merged.pop(name, None)
        else:
            merged[name] = value
    if clash:
        conflicts.append(str(theirs["id"]))
    return merged


def _merge_dict(base: Any, ours: Any, theirs: Any) -> Any:
    """Top-level keys of notebook metadata, three-way (a kernel switched in the room and a tag added on disk
    both stay)."""
    if not (isinstance(base, dict) and isinstance(ours, dict) and isinstance(theirs, dict)):
        return _pick(base, ours, theirs)[0]
    merged = {}
    for key in list(theirs) + [k for k in ours if k not in theirs]:
        value, _ = _pick(base.get(key, _MISSING), ours.get(key, _MISSING), theirs.get(key, _MISSING))
        if value is not _MISSING:
            merged[key] = value
    return merged


def _order(base: list[str], ours: list[str], theirs: list[str]) -> list[str]:
    """The cells' order: the file's, unless only the room reordered the cells both have; cells only one side has
    follow the cell they follow on that side."""
    common = set(ours) & set(theirs)
    base_common = [i for i in base if i in common]
    ours_common = [i for i in ours if i in common]
    theirs_common = [i for i in theirs if i in common]
    lead, other = (ours, theirs) if theirs_common == base_common and ours_common != base_common else (theirs, ours)
    order = list(lead)
    placed = set(order)
    after: str | None = None
    inserts: dict[str | None, list[str]] = {}
    for cell_id in other:
        if cell_id in placed:
            after = cell_id
        else:
            inserts.setdefault(after, []).append(cell_id)
    if not inserts:
        return order
    result = list(inserts.get(None, []))
    for cell_id in order:
        result.append(cell_id)
        result.extend(inserts.get(cell_id, []))
    return result


__all__ = ["FIELDS", "Merged", "merge_notebook", "merge_text"]
