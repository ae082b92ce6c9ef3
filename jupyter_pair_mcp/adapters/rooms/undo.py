"""Undo for agents: each actor can take back its own edits and nobody else's.

One pycrdt ``UndoManager`` per (live document, actor), created just before the actor's first edit in
that document (a manager only sees transactions made after it exists), tracking only that actor's
transaction origin, with ``capture_timeout_millis=0`` so each tool call is one undo step. A restore is
one of those steps: it runs under the actor's origin too, so undo never reaches past it to an older
edit (which would re-apply that edit's inverse onto the restored content). Undoing is a
CRDT operation on the actor's own items: what people typed elsewhere since survives. The document's
built-in undo manager tracks the humans' edits; we never use it. Managers die with their document
(a room that closed and reopened starts with a fresh stack: use history restore for older edits).
"""

from __future__ import annotations

import weakref
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from pycrdt import Array, Map, Text, UndoManager

from jupyter_pair_mcp.adapters.rooms.cellindex import cells_json
from jupyter_pair_mcp.adapters.rooms.edits import UNDOABLE, Edit, EditJournal


@dataclass
class _Stack:
    manager: UndoManager
    summaries: list[str] = field(default_factory=list)
    serials: list[str] = field(default_factory=list)  # the journal serials of the steps, as ``summaries``
    touched: list[list[str]] = field(default_factory=list)  # the cells each step changed, as ``summaries``
    path: str = ""  # the document's path at the actor's last edit


@dataclass(frozen=True)
class UndoResult:
    undone: list[str]  # summaries of the edits taken back, newest first
    removed_cells: list[str]  # notebook cells that disappeared (inserted by the undone edits)
    remaining: int = 0  # the actor's edits still undoable in the document


class UndoTracker:
    def __init__(self, journal: EditJournal) -> None:
        self._stacks: weakref.WeakKeyDictionary[Any, dict[str, _Stack]] = weakref.WeakKeyDictionary()
        journal.before_edit(self._prepare)
        journal.on_edit(self._recorded)
        self._journal = journal
        self._last_doc: dict[str, Any] = {}  # actor origin -> a weak ref to the doc of its last edit
        self._observers: weakref.WeakKeyDictionary[Any, Any] = weakref.WeakKeyDictionary()

    def _committed(self, ydoc: Any) -> None:
        edit = self._journal.current(ydoc) if ydoc is not None else None
        if edit is not None:
            edit.changed = True

    def _prepare(self, ydoc: Any, edit: Edit) -> None:
        if edit.source not in UNDOABLE or edit.actor is None:
            return
        if ydoc not in self._stacks:
            # One observer per document: a transaction that changed anything (inserts or only deletes) fires
            # it, an empty one does not - so the edit committing now knows whether it added an undo step.
            ref = weakref.ref(ydoc)  # the observer must not keep its document alive
            self._observers[ydoc] = ydoc.observe(lambda _event: self._committed(ref()))
        stacks = self._stacks.setdefault(ydoc, {})
        origin = edit.actor.origin
        if origin not in stacks:
            scopes: list[Any] = (
                [ydoc.get("cells", type=Array), ydoc.get("meta", type=Map)]
                if edit.kind == "notebook"
                else [ydoc.get("source", type=Text)]
            )
            manager = UndoManager(scopes=scopes, capture_timeout_millis=0)
            manager.include_origin(origin)
            stacks[origin] = _Stack(manager)
        self._last_doc[origin] = weakref.ref(ydoc)

    def _recorded(self, edit: Edit) -> None:
        """Name the undo step the edit added, if it added one.

        Never asks the manager for its stack here: pycrdt builds the whole stack as a list for that, so asking
        on every edit made a session's edits cost O(edits so far) each. An edit that changed the document
        under the actor's origin is one step (``capture_timeout_millis=0``); ``undo``
        reconciles the names with the real stack, once per undo.
        """
        if edit.source not in UNDOABLE or edit.actor is None or edit.details.get("undo"):
            return
        ref = self._last_doc.get(edit.actor.origin)
        ydoc = ref() if ref is not None else None
        stack = self._stacks.get(ydoc, {}).get(edit.actor.origin) if ydoc is not None else None
        if stack is not None and edit.changed:
            stack.summaries.append(edit.summary)
            stack.serials.append(edit.serial)
            stack.touched.append(edit.touched)
            stack.path = edit.path

    def next_undo(self, path: str) -> dict[str, str]:
        """For each actor that can undo in the live document at ``path``: the journal serial of the edit its next
        undo takes back (what the panel's Undo button sits on). Asks each such stack for its size: O(its steps),
        once per actor per read of the activity."""
        found: dict[str, str] = {}
        for stacks in list(self._stacks.values()):
            for origin, stack in stacks.items():
                if stack.path != path or not stack.serials:
                    continue
                available = len(stack.manager.undo_stack)
                _trim(stack, available)
                if available and stack.serials:
                    found[origin] = stack.serials[-1]
        return found

    def undo(
        self,
        ydoc: Any,
        actor: Any,
        count: int,
        *,
        path: str,
        kind: str,
        ids: Callable[[], list[str]] | None = None,
        check: Callable[[list[str]], None] | None = None,
    ) -> UndoResult:
        """Undo the actor's last ``count`` edits in ``ydoc`` as one recorded agent edit. ``ids``: the notebook's
        cell ids in order, now (a cell index's; else every cell is read, O(cells) on the loop). ``check`` is given
        the cells those edits changed first, and may refuse (a person locked one of them since)."""
        cell_ids = ids or (lambda: _cell_ids(ydoc))
        stack = self._stacks.get(ydoc, {}).get(actor.origin)
        available = len(stack.manager.undo_stack) if stack is not None else 0
        if stack is not None:  # the names of the steps the stack really holds: the newest ``available``
            _trim(stack, available)
        count = min(count, available)
        if stack is None or count == 0:
            return UndoResult([], [], available)
        if check is not None:
            check([cell_id for step in stack.touched[-count:] for cell_id in step])
        before = cell_ids() if kind == "notebook" else []
        undone = list(reversed(stack.summaries[-count:]))
        summary = f"undid {count} edit{'s' if count != 1 else ''}: " + "; ".join(undone)
        # pycrdt's undo opens its own transaction, so the journal records it without an outer one.
        record = Edit(path, kind, actor, summary[:500], "agent", details={"undo": True})
        with self._journal.recording(ydoc, record):
            for _ in range(count):
                stack.manager.undo()
        del stack.summaries[len(stack.summaries) - count :]
        del stack.serials[max(0, len(stack.serials) - count) :]
        del stack.touched[max(0, len(stack.touched) - count) :]
        after = set(cell_ids()) if kind == "notebook" else set()
        removed = [cell_id for cell_id in before if cell_id not in after]
        return UndoResult(undone, removed, len(stack.manager.undo_stack))

    def forget(self, actor: Any) -> None:
        """Drop an ended session's undo stacks."""
        self._last_doc.pop(actor.origin, None)
        for stacks in list(self._stacks.values()):
            stacks.pop(actor.origin, None)


def _trim(stack: _Stack, available: int) -> None:
    """Keep the names of the steps the stack really holds: the newest ``available``."""
    del stack.summaries[: max(0, len(stack.summaries) - available)]
    del stack.serials[: max(0, len(stack.serials) - available)]
    del stack.touched[: max(0, len(stack.touched) - available)]


def _cell_ids(ydoc: Any) -> list[str]:
    return [str(c.get("id", "")) for c in cells_json(ydoc.get("cells", type=Array))]
