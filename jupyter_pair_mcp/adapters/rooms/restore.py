"""Old versions: rebuild them from stored updates, and write them back into the live room as new edits.

Restoring never rewrites history: the live document is edited towards the old state in one agent
transaction, recorded as a ``restore`` under the actor's own origin (so the actor can undo it like any
other edit of theirs). It touches only what differs — a cell whose source differs gets a minimal text
edit, so a person typing in another cell (or elsewhere in the same file) at the same moment keeps their
text; cells are inserted, deleted or moved by id. Before writing, the stored updates after the restore
point are replayed to find out who changed what since, so the result can say which people's edits
the restore reverted instead of dropping them silently.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from pycrdt import Array, Doc, Map, Text, UndoManager

from jupyter_pair_mcp.adapters.rooms.cellindex import cells_json
from jupyter_pair_mcp.adapters.rooms.cells import apply_edit, source_text
from jupyter_pair_mcp.adapters.rooms.history import Row, replay
from jupyter_pair_mcp.adapters.rooms.locks import LOCK_KEY, cell_lock, cell_refusal
from jupyter_pair_mcp.adapters.rooms.notebook import NotebookView
from jupyter_pair_mcp.adapters.rooms.text import minimal_edit
from jupyter_pair_mcp.adapters.rooms.textdoc import TextView


def version_cells(doc: Doc[Any]) -> list[dict[str, Any]]:
    """Every cell of a notebook document, sources as strings (one linear conversion)."""
    cells = cells_json(doc.get("cells", type=Array))
    for cell in cells:
        cell["source"] = source_text(cell.get("source", ""))
    return cells


def version_page(snapshot: str, start: int, end: int | None) -> tuple[int, list[tuple[str, str, str]]]:
    """How many cells a :func:`scanning.cells_snapshot` of an old version has, and (id, type, source) of those
    in ``start:end``: run in the scan process for a big version, whose outputs (a 12 MB figure) the
    conversion would otherwise hold the loop for."""
    cells = [c for c in json.loads(snapshot) if isinstance(c, dict)]
    page = [
        (str(c.get("id", "")), str(c.get("cell_type", "code")), source_text(c.get("source", "")))
        for c in cells[start:end]
    ]
    return len(cells), page


def version_metadata(doc: Doc[Any]) -> dict[str, Any]:
    meta = doc.get("meta", type=Map)
    value = meta.to_py() or {}
    metadata = value.get("metadata")
    return dict(metadata) if isinstance(metadata, dict) else {}


def version_text(doc: Doc[Any]) -> str:
    return str(doc.get("source", type=Text))


@dataclass
class Touched:
    """Who changed what after a restore point: cell ids (notebooks) or whole-text flags (files)."""

    by_user: set[str] = field(default_factory=set)
    by_agent: set[str] = field(default_factory=set)
    user_versions: int = 0


def touched_since(base: Doc[Any], later: list[Row], kind: str) -> Touched:
    """Replay ``later`` onto ``base`` noting which cells each kind of author changed."""
    touched = Touched()
    if kind != "notebook":
        for row in later:
            if row.metadata.get("source", "user") == "user":
                touched.user_versions += 1
                touched.by_user.add("")
            else:
                touched.by_agent.add("")
        return touched
    before = {c.get("id"): c for c in version_cells(base)}
    for row in later:
        if not row.update:
            continue
        base.apply_update(row.update)
        after = {c.get("id"): c for c in version_cells(base)}
        changed = {str(i) for i in set(before) | set(after) if before.get(i) != after.get(i)}
        if row.metadata.get("source", "user") == "user":
            touched.user_versions += 1
            touched.by_user |= changed
        else:
            touched.by_agent |= changed
        before = after
    return touched


#: The transaction origin the agents' replayed updates get in :func:`without_agents` (a private document's).
_AGENTS = "jupyter-pair-mcp-restore-agents"
#: Stored updates that are agents' work: their edits, the outputs of their runs and restores (a person's panel
#: undo runs under the agent's origin, so it is one too: taking it back with the rest nets to the old state).
AGENT_SOURCES = frozenset({"agent", "run", "restore"})


def without_agents(rows: list[Row], cut: int, kind: str) -> Doc[Any]:
    """The document as it is now with the agents' changes since ``rows[cut]`` taken back and everything else
    (people's typing, the file reloaded from disk) kept.

    Replays the history, giving the agents' updates an origin a private undo manager tracks, then undoes them
    all: a CRDT undo removes only the agents' own items and brings back what they deleted, so what people typed
    after the version stays, even inside text an agent wrote (only a cell an agent inserted goes, with anything
    typed into it: :func:`touched_since` tells which). Runs off the loop (the caller's thread).
    """
    doc = replay(rows[: cut + 1])
    scopes: list[Any] = (
        [doc.get("cells", type=Array), doc.get("meta", type=Map)]
        if kind == "notebook"
        else [doc.get("source", type=Text)]
    )
    manager = UndoManager(scopes=scopes, capture_timeout_millis=0)
    manager.include_origin(_AGENTS)
    for row in rows[cut + 1 :]:
        if not row.update:
            continue
        if row.metadata.get("source", "user") in AGENT_SOURCES:
            with doc.transaction(origin=_AGENTS):
                doc.apply_update(row.update)
        else:
            doc.apply_update(row.update)
    while manager.can_undo():
        manager.undo()
    return doc


def restore_notebook(view: NotebookView, old: Doc[Any], summary: str) -> list[dict[str, Any]]:
    """Edit the live notebook into the state of ``old``; returns what changed, cell by cell."""
    target = version_cells(old)
    target_ids = [str(c.get("id", "")) for c in target]
    wanted = set(target_ids)
    live_cells: Array[Any] = view.ydoc.get("cells", type=Array)
    changes: list[dict[str, Any]] = []
    nb = view._nb
    now = version_cells(view.ydoc)
    metadata = version_metadata(old)
    if view.guarded:
        _check_locks(view, now, target)
        metadata.pop(LOCK_KEY, None)
    with view.edit(summary, source="restore") as record:
        live = [str(c.get("id", "")) for c in now]
        for i in reversed(range(len(live))):
            if live[i] not in wanted:
                changes.append({"cell_id": live[i], "change": "deleted"})
                del live_cells[i]
                del live[i]
        for i, cell in enumerate(target):
            cell_id = target_ids[i]
            if i < len(live) and live[i] == cell_id:
                if _update_in_place(nb, live_cells, i, cell):
                    changes.append({"cell_id": cell_id, "change": "restored"})
                continue
            clean = {k: v for k, v in cell.items() if k != "execution_state"}
            if cell_id in live:
                del live_cells[live.index(cell_id)]
                live.remove(cell_id)
                changes.append({"cell_id": cell_id, "change": "moved back"})
            else:
                changes.append({"cell_id": cell_id, "change": "re-added"})
            live_cells.insert(i, nb.create_ycell(clean))
            live.insert(i, cell_id)
        meta: Map[Any] = view.ydoc.get("meta", type=Map)
        current = meta.get("metadata")
        current_py = current.to_py() if isinstance(current, Map) else current
        if metadata and metadata != current_py:
            meta["metadata"] = Map(metadata)
            changes.append({"cell_id": None, "change": "notebook metadata restored"})
        record.touched = [str(c["cell_id"]) for c in changes if c.get("cell_id")]
    return changes


def _check_locks(view: NotebookView, now: list[dict[str, Any]], target: list[dict[str, Any]]) -> None:
    """Refuse an agent's restore that would change a cell a person locked (or anything in a notebook locked
    whole); and keep it from setting a lock: an old version's lock on a cell unlocked since is left out."""
    view.check_document("restore")
    old = {str(c.get("id", "")): c for c in target}
    locked = set()
    for index, cell in enumerate(now):
        lock = cell_lock(cell)
        if lock is None:
            continue
        cell_id = str(cell.get("id", ""))
        locked.add(cell_id)
        was = old.get(cell_id)
        keys = ("source", "cell_type", "metadata", "outputs", "execution_count")
        if was is None or any(_norm(cell.get(k)) != _norm(was.get(k)) for k in keys):
            raise cell_refusal(cell_id, index, lock, "restore")
    for cell in target:
        metadata = cell.get("metadata")
        if isinstance(metadata, dict) and LOCK_KEY in metadata and str(cell.get("id", "")) not in locked:
            cell["metadata"] = {k: v for k, v in metadata.items() if k != LOCK_KEY}


def _update_in_place(nb: Any, cells: Array[Any], index: int, cell: dict[str, Any]) -> bool:
    """Bring one live cell to ``cell``: a minimal source edit when only text differs, else a new cell map."""
    ycell = cells[index]
    live = ycell.to_py() or {}
    source = str(cell.get("source", ""))
    same_rest = all(
        _norm(live.get(k)) == _norm(cell.get(k)) for k in ("cell_type", "metadata", "outputs", "execution_count")
    )
    live_source = source_text(live.get("source", ""))
    if same_rest:
        if live_source == source:
            return False
        apply_edit(ycell["source"], minimal_edit(live_source, source))
        return True
    clean = {k: v for k, v in cell.items() if k != "execution_state"}
    cells[index] = nb.create_ycell(clean)
    return True


def restore_text(view: TextView, old: Doc[Any], summary: str) -> bool:
    """Edit the live text into the text of ``old`` with one minimal replacement; False when equal."""
    return view.set_text(version_text(old), summary, source="restore")


def _norm(value: Any) -> Any:
    return value if value not in (None, {}, []) else None


__all__ = [
    "Touched",
    "replay",
    "restore_notebook",
    "restore_text",
    "touched_since",
    "version_cells",
    "version_metadata",
    "version_page",
    "version_text",
    "without_agents",
]
