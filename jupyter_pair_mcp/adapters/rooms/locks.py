"""Cells and notebooks a person marked off-limits to agents, and the refusal an agent's write there gets.

A person locks a cell from JupyterLab (the cell toolbar's lock button, ``src/locks.ts``), which writes
``metadata["jupyter_pair_mcp"]["locked"] = {"by": <name>, "at": <ISO time>}`` into the cell through the shared
model, so the lock travels with the file and every collaborator sees it; the notebook's own metadata holds the
same key for a lock of the whole document. The server only reads it: each check reads the metadata of the one
cell a write is about to touch (found through the room's cell index), or the notebook's metadata once, never
every cell. Agents cannot set or lift a lock: a cell they insert may not carry the key, and every path that
changes a locked cell refuses.
"""

from __future__ import annotations

import json
from typing import Any

from pycrdt import Map

from jupyter_pair_mcp.errors import InvalidArgument, Locked

#: The metadata namespace of this project (cell and notebook metadata); its ``locked`` entry is a person's lock.
LOCK_KEY = "jupyter_pair_mcp"
LOCKED = "locked"


def _plain(value: Any) -> Any:
    return value.to_py() if hasattr(value, "to_py") else value


def lock_of(metadata: Any) -> dict[str, str] | None:
    """The lock in a cell's or notebook's metadata (a live map or a plain dict): ``{"by", "at"}``, None when
    unlocked. Reads one key, and converts only that entry."""
    if not isinstance(metadata, Map | dict):
        return None
    ours = _plain(metadata.get(LOCK_KEY))
    lock = ours.get(LOCKED) if isinstance(ours, dict) else None
    if not lock:
        return None
    lock = _plain(lock)
    if not isinstance(lock, dict):
        return {"by": "a person", "at": ""}
    by = str(lock.get("by") or "").strip()[:100] or "a person"
    return {"by": by, "at": str(lock.get("at") or "")[:40]}


def cell_lock(cell: Any) -> dict[str, str] | None:
    """The lock of a live cell map (or a cell as a dict)."""
    return lock_of(cell.get("metadata")) if cell is not None else None


def document_lock(ydoc: Any) -> dict[str, str] | None:
    """The lock of the whole notebook: one read of its metadata."""
    return lock_of(ydoc.get("meta", type=Map).get("metadata"))


def cell_refusal(cell_id: str, index: int | None, lock: dict[str, str], doing: str) -> Locked:
    where = f"cell {cell_id!r}" + (f" (index {index})" if index is not None else "")
    return Locked(
        f"{where} is locked by {lock['by']}: agents may not {doing} it. Nothing was changed; ask {lock['by']} "
        "to unlock it (the lock button on the cell's toolbar in JupyterLab), or work in other cells"
    )


def document_refusal(path: str, lock: dict[str, str], doing: str) -> Locked:
    return Locked(
        f"{path} is locked by {lock['by']}: agents may not {doing} any of its cells. Nothing was changed; ask "
        f"{lock['by']} to unlock the notebook (the lock button on the notebook's toolbar in JupyterLab)"
    )


def check_new_metadata(metadata: dict[str, Any]) -> None:
    """Refuse a new cell's metadata that carries our key: only a person's lock button writes it."""
    if LOCK_KEY in metadata:
        raise InvalidArgument(
            f"metadata key {LOCK_KEY!r} is set only by people (the lock button in JupyterLab): leave it out"
        )


def locked_in_snapshot(snapshot: str, cell_ids: set[str]) -> list[tuple[int, str, dict[str, str]]]:
    """(index, id, lock) of the cells of a :func:`scanning.cells_snapshot` among ``cell_ids`` that are locked
    (safe in any process: for a write planned off the loop, refused before its first edit)."""
    found = []
    for index, cell in enumerate(json.loads(snapshot)):
        if isinstance(cell, dict) and str(cell.get("id", "")) in cell_ids:
            lock = cell_lock(cell)
            if lock is not None:
                found.append((index, str(cell.get("id", "")), lock))
    return found


def first_locked_code(snapshot: str) -> tuple[int, str, dict[str, str]] | None:
    """(index, id, lock) of the first code cell a person locked in a :func:`scanning.cells_snapshot`, if any (safe
    in any process): what a kernel restart that clears or runs every cell must not touch."""
    for index, cell in enumerate(json.loads(snapshot)):
        if isinstance(cell, dict) and cell.get("cell_type") == "code":
            lock = cell_lock(cell)
            if lock is not None:
                return index, str(cell.get("id", "")), lock
    return None
