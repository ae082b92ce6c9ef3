"""One call's view of a live notebook: reads by slice, edits as one agent transaction.

A :class:`NotebookView` wraps the room's live ``YNotebook`` for the duration of one tool call. Use it
synchronously, right after :meth:`RoomsAdapter.notebook` returned it: the room can be deleted at any
``await`` (its last browser left), and an edit to a stale document "succeeds" and is lost. Every
mutating method validates everything first and then applies all of its changes inside one
``transaction(origin=AGENT_ORIGIN)``, so a batch is all or nothing and observers can tell agent edits
from human ones. Addressing, people's locks and the reads are :class:`NotebookReader`'s (``notebook_reads.py``).
"""

from __future__ import annotations

import contextlib
import uuid
from collections.abc import Iterator
from typing import Any

from pycrdt import Map

from jupyter_pair_mcp.adapters.rooms.cellmerge import end_of_change, merged_change
from jupyter_pair_mcp.adapters.rooms.cells import (
    BaseFinder,
    CellChange,
    CellUpdate,
    NewCell,
    cells_text,
    check_type,
    nbformat_cell,
)
from jupyter_pair_mcp.adapters.rooms.edits import UNDOABLE
from jupyter_pair_mcp.adapters.rooms.edits import Edit as JournalEdit
from jupyter_pair_mcp.adapters.rooms.locks import check_new_metadata
from jupyter_pair_mcp.adapters.rooms.merge import Hunk, apply, apply_hunks, rebase, shared_budgets
from jupyter_pair_mcp.adapters.rooms.notebook_reads import NotebookReader
from jupyter_pair_mcp.adapters.rooms.replace import Replacement
from jupyter_pair_mcp.errors import Conflict, InvalidArgument

#: Cells an edit names for the activity log (a batch of 200 cells names its first ones).
MAX_EDIT_CELLS = 20
#: Transaction origin of every edit we make (history and subscriptions tell agents apart by it).
AGENT_ORIGIN = "jupyter-pair-mcp"


def insert_positions(count: int, cells: list[NewCell], at: int | list[int]) -> list[int]:
    """Where each of ``cells`` goes among ``count`` cells (all from ``at``, or each at its own index, counting
    the cells inserted before it), refused as an agent's argument when out of range or of an unknown type: one
    check for a live insert and a proposed one, so a proposal is refused exactly when the edit would be."""
    positions = [at + k for k in range(len(cells))] if isinstance(at, int) else list(at)
    for k, position in enumerate(positions):
        if position < 0 or position > count + k:
            where = "start_position" if isinstance(at, int) else f"positions[{k}]"
            raise InvalidArgument(
                f"{where} {position} out of range: there are {count + k} cells then, so 0-{count + k}"
            )
    for cell in cells:
        check_type(cell.cell_type)
        check_new_metadata(cell.metadata or {})
    return positions


class NotebookView(NotebookReader):
    """The live notebook behind one tool call: its reads (``notebook_reads.py``) and an agent's edits."""

    @contextlib.contextmanager
    def edit(
        self,
        summary: str,
        *,
        source: str = "agent",
        cell_id: str | None = None,
        offset: int | None = None,
        cells: list[str] | None = None,
        person: bool = False,
    ) -> Iterator[JournalEdit]:
        """One agent transaction, announced to the journal (history, undo, presence) around its commit.

        Refused (:class:`Locked`) when a person locked the whole notebook, unless it writes a run's outputs (the
        run itself was checked when it started) or carries out a ``person``'s decision (accepting a suggestion).

        The actor's own origin marks its edits and restores so that its undo finds exactly those;
        execution output writes (``source="run"``) use the shared origin, so undo never takes them back.
        """
        if source != "run" and not person:
            self.check_document("edit")
        origin = self.actor.origin if self.actor is not None and source in UNDOABLE else AGENT_ORIGIN
        record = JournalEdit(self.path, "notebook", self.actor, summary, source, cell_id, offset)
        if cells:
            record.details["cells"] = cells[:MAX_EDIT_CELLS]  # the cells it touched, for the activity log
        record.touched = list(cells) if cells else [cell_id] if cell_id else []
        self._index.editing(True)  # positions move inside the transaction, before any event says so
        try:
            with self.journal.recording(self._nb.ydoc, record), self._nb.ydoc.transaction(origin=origin):
                yield record
        finally:
            self._index.editing(False)

    def transaction(self, summary: str = "wrote outputs", *, cell_id: str | None = None) -> Any:
        """One transaction writing execution state and outputs (history shows it as the agent's run);
        ``cell_id`` when it starts a cell's run (presence shows people which cell the agent runs)."""
        return self.edit(summary, source="run", cell_id=cell_id)

    def set_metadata(
        self, values: dict[str, Any], summary: str, *, unless_same: dict[str, tuple[str, Any]] | None = None
    ) -> None:
        """Set notebook-level metadata keys in one agent edit, key by key as JupyterLab's ``setMetadata`` does (a
        collaborator's concurrent change of another key is kept). ``unless_same`` maps a key to ``(field, value)``:
        the value is written only when the current one's ``field`` differs from ``value[field]``."""
        meta = self._nb.ydoc.get("meta", type=Map)
        writes = dict(values)
        metadata = meta.get("metadata")
        current_of = metadata if isinstance(metadata, Map | dict) else {}
        for key, (field_name, value) in (unless_same or {}).items():
            current: Any = current_of.get(key)
            if hasattr(current, "to_py"):
                current = current.to_py()
            if not (isinstance(current, dict) and current.get(field_name) == value.get(field_name)):
                writes[key] = value
        with self.edit(summary):
            if not isinstance(metadata, Map):  # absent, or a plain value: make it the map JupyterLab expects
                meta["metadata"] = Map({**(metadata if isinstance(metadata, dict) else {}), **writes})
                return
            for key, value in writes.items():
                metadata[key] = value

    # -- edits ------------------------------------------------------------------------------------
    def insert(self, cells: list[NewCell], at: int | list[int]) -> list[tuple[int, str, str]]:
        """Insert cells in one transaction: all from index ``at``, or each at its own index of ``at`` (applied
        in order, each counting the cells inserted before it). Returns (final index, id, type) per cell."""
        count = self.cell_count
        positions = insert_positions(count, cells, at)
        ids = [str(uuid.uuid4()) for _ in cells]
        ycells = [
            self._nb.create_ycell({**nbformat_cell(c.cell_type, c.source, c.metadata), "id": cell_id})
            for c, cell_id in zip(cells, ids, strict=True)
        ]
        summary = f"inserted {cells_text(ids)} at {positions[0] if positions else count}"
        final: list[int] = []
        with self.edit(
            summary, cell_id=ids[-1] if ids else None, offset=len(cells[-1].source) if cells else None, cells=ids
        ) as record:
            for position, ycell in zip(positions, ycells, strict=True):
                self._cells.insert(position, ycell)
                final = [i + 1 if i >= position else i for i in final] + [position]
            record.text = ycells[-1]["source"] if ycells else None
        return [(final[k], ids[k], cells[k].cell_type) for k in range(len(cells))]

    def update(self, changes: list[CellChange], bases: BaseFinder | None = None) -> list[CellUpdate]:
        """Apply a batch of cell updates in one transaction, each merged from its base; all or nothing."""
        plan: list[tuple[int, Any, str, CellChange, list[Hunk], str]] = []
        seen: set[int] = set()
        with self.ydoc.transaction():  # one transaction for all the reads: each of its own costs ~0.1 ms to end
            for change in changes:
                self._plan_update(change, bases, seen, plan)
        ids = [self._index.ids[i] for i, *_ in plan]
        offset = end_of_change(plan[-1][4]) if plan else None
        last = ids[-1] if ids else None
        budgets = shared_budgets([live for _, _, live, *_ in plan], [len(hunks) for *_, hunks, _ in plan])
        with self.edit(f"updated {cells_text(ids)}", cell_id=last, offset=offset, cells=ids) as record:
            for (index, ycell, live, change, hunks, _), most in zip(plan, budgets, strict=True):
                if change.cell_type is not None and change.cell_type != ycell.get("cell_type"):
                    record.text = self._retype(index, change.cell_type, apply(live, hunks))["source"]
                else:
                    if hunks:
                        apply_hunks(ycell["source"], live, hunks, most)
                    record.text = ycell["source"]
        return [CellUpdate(index, cell_id, text) for (index, *_, text), cell_id in zip(plan, ids, strict=True)]

    def _plan_update(
        self,
        change: CellChange,
        bases: BaseFinder | None,
        seen: set[int],
        plan: list[tuple[int, Any, str, CellChange, list[Hunk], str]],
    ) -> None:
        """Check one update of a batch and add what it will apply to ``plan`` (nothing is applied here)."""
        index = self.resolve(change.cell_id, change.index)
        if index in seen:
            raise InvalidArgument(f"cell at index {index} is updated twice in one batch: merge the updates")
        seen.add(index)
        if change.cell_type is not None:
            check_type(change.cell_type)
        if change.source is not None and change.operations is not None:
            raise InvalidArgument(f"update of cell {index} gives both content and operations: give one")
        if change.source is None and change.operations is None and change.cell_type is None:
            raise InvalidArgument(f"update of cell {index} changes nothing: give content, operations or cell_type")
        ycell = self._live(index)
        self.check_cell(index, "edit", ycell)
        cell_id = self._index.ids[index]
        live = str(ycell["source"])
        if change.expected_source is not None and live != change.expected_source:
            raise Conflict(
                f"cell {cell_id!r} changed since read (its source is not expected_source): "
                "re-read the cell and retry; nothing was applied"
            )
        # A retype needs no base; expected_source (without a revision) says the agent read the live text.
        edits = change.source is not None or change.operations is not None
        read_live = change.expected_source is not None and change.base_revision is None
        base = bases(change.base_revision, live, cell_id) if bases is not None and edits and not read_live else None
        hunks, text = merged_change(cell_id, live, change, base)
        plan.append((index, ycell, live, change, hunks, text))

    def delete(self, indexes: list[int]) -> list[tuple[int, str, str]]:
        """Delete the cells at ``indexes``: (index, id, source) of each, by index. Ids come from the index, only
        sources are read, and each run of adjacent cells is removed in one step, from the last run back."""
        unique = sorted(set(indexes))
        gone = [self._index.ids[i] for i in unique]
        removed = list(zip(unique, gone, self.deletable(unique), strict=True))
        runs: list[list[int]] = []
        for i in unique:
            if runs and runs[-1][1] == i:
                runs[-1][1] = i + 1
            else:
                runs.append([i, i + 1])
        with self.edit(f"deleted {cells_text(gone)}", cells=gone):
            for start, stop in reversed(runs):
                del self._cells[start:stop]
        return removed

    def move(self, index: int, to_index: int) -> str:
        to_index = self.check_index(to_index)
        self.check_cell(index, "move", self._live(index))
        cell = self._live(index).to_py() or {}
        cell.pop("execution_state", None)
        if index == to_index:
            return str(cell.get("id", ""))
        # pycrdt 0.14 has no Array.move: delete and re-insert the same content and id together.
        ycell = self._nb.create_ycell(cell)
        cell_id = str(cell.get("id", ""))
        with self.edit(f"moved cell {cell_id} from {index} to {to_index}", cell_id=cell_id, offset=0) as record:
            del self._cells[index]
            self._cells.insert(to_index, ycell)
            record.text = ycell["source"]
        return str(cell.get("id", ""))

    def fetch_cells(self, indexes: list[int], into: list[Any], walk_budget: int) -> None:
        """Append to ``into`` the live cells at the next ``indexes`` (where a snapshot saw them), until
        about ``walk_budget`` cells of the array were walked (each fetch walks the array up to its cell): the
        caller fetches the rest in later loop turns, so 10,000 cells never cost one step O(cells²)."""
        count, walked = self.cell_count, 0
        with self.ydoc.transaction():  # one transaction for all the reads: each of its own costs ~0.3 ms to end
            while len(into) < len(indexes) and walked <= walk_budget:
                index = indexes[len(into)]
                walked += index + 64  # the walk, and the fetch's own cost
                into.append(self._cells[index] if index < count else None)

    def apply_replacements(self, plan: list[Replacement], cells: list[Any]) -> list[tuple[int, str, int]]:
        """Apply a replace planned off the loop (``replace.py``) in one transaction; (index, id, count) per cell.

        ``cells`` are the live cells :meth:`fetch_cells` found where the snapshot saw each planned cell (a cell
        deleted since reads as empty: it is looked up again). A cell whose source changed since the snapshot
        gets the plan moved onto its live text, past what was typed meanwhile; :class:`MergeConflict` (typing
        inside a match) or :class:`NotFound` (the cell was deleted) means the caller plans again from a new
        snapshot. Nothing is applied then.
        """
        if not plan:
            return []
        targets: list[tuple[int, Any, str, list[Hunk], Replacement]] = []
        with self.ydoc.transaction():  # one transaction for all the reads: each of its own costs ~0.3 ms to end
            for planned, ycell in zip(plan, cells, strict=True):
                index = planned.index
                if ycell is None or ycell.get("id") != planned.cell_id:  # moved or deleted meanwhile: look it up
                    index = self.resolve(cell_id=planned.cell_id)
                    ycell = self._live(index)
                self.check_cell(index, "replace text in", ycell)
                live = str(ycell["source"])
                hunks = planned.hunks if live == planned.source else rebase(planned.source, planned.hunks, live)
                targets.append((index, ycell, live, hunks, planned))
        count = sum(p.count for p in plan)
        ids = [p.cell_id for p in plan]
        budgets = shared_budgets([live for _, _, live, _, _ in targets], [len(t[3]) for t in targets])
        with self.edit(f"replaced {count} match{'es' if count != 1 else ''} in {cells_text(ids)}", cells=ids):
            for (_, ycell, live, hunks, _), most in zip(targets, budgets, strict=True):
                apply_hunks(ycell["source"], live, hunks, most)
        return [(index, planned.cell_id, planned.count) for index, *_, planned in targets]

    def _retype(self, index: int, cell_type: str, source: str) -> Any:
        old = self._live(index).to_py() or {}
        cell = nbformat_cell(cell_type, source, dict(old.get("metadata") or {}))
        cell["id"] = old.get("id")
        if cell_type == "code" and old.get("cell_type") == "code":
            cell["outputs"] = old.get("outputs", [])
        ycell = self._nb.create_ycell(cell)
        self._cells[index] = ycell
        return ycell
