"""A proposal's view of the live document: it reads the room as it is and records its edit instead of making it.

A suggestion holds what it changes, never a copy of the document: the agent's edit tool runs against this view
exactly as against the live one (same addressing, same checks, the same three-way merge from the text the agent
read), but where the live view would write, this one records per cell the text it changes (``before``: the live
text the change applies to; ``after``: that text with the change) in :class:`~.review.CellProposal` entries, and
for a text document the text before and after. What it reads costs the cells it touches, found through the room's
cell index, so a proposal on a 100,000-cell notebook costs what a plain edit of the same cells costs, and nothing
is copied, served or synchronized. Accepting applies the recorded cells (``review.py``).

One edit per view: the proposing tools make one (insert, update or delete a batch; a text batch). Every other
write path goes through :meth:`NotebookView.edit`, which refuses here, so nothing reaches the live room.
"""

from __future__ import annotations

import bisect
import contextlib
import json
import sys
import uuid
from collections.abc import Iterator
from typing import Any

from jupyter_pair_mcp.adapters.rooms.cells import BaseFinder, CellChange, CellUpdate, NewCell, cells_text
from jupyter_pair_mcp.adapters.rooms.edits import Edit, EditJournal
from jupyter_pair_mcp.adapters.rooms.merge import TextOp, apply
from jupyter_pair_mcp.adapters.rooms.notebook import NotebookView, insert_positions
from jupyter_pair_mcp.adapters.rooms.review import CellProposal
from jupyter_pair_mcp.adapters.rooms.textdoc import TextView
from jupyter_pair_mcp.errors import InvalidArgument
from jupyter_pair_mcp.revisions import Base

_ONE_EDIT = "a proposal is one edit: propose the next change with another call"


def held_bytes(cells: list[CellProposal], text: tuple[str, str] | None = None) -> int:
    """Bytes of memory a suggestion's recorded texts hold (``sys.getsizeof`` of each string, O(1) each), which the
    bounds count: what it changes, whatever the document's size."""
    size = 0
    for cell in cells:
        size += sys.getsizeof(cell.before or "") + sys.getsizeof(cell.after or "") + sys.getsizeof(cell.cell_id)
        if cell.metadata:
            size += len(json.dumps(cell.metadata, default=str))
    if text is not None:
        size += sys.getsizeof(text[0]) + sys.getsizeof(text[1])
    return size


class ProposedNotebook(NotebookView):
    """The live notebook behind one proposing call: reads as :class:`NotebookView`, edits recorded in ``changes``."""

    def __init__(self, live: NotebookView) -> None:
        super().__init__(live._nb, live._index, live.path, journal=EditJournal(), actor=live.actor)
        self.changes: list[CellProposal] = []
        self.summary = ""
        self._grown = 0  # cells the recorded edit adds (negative: removes), for cell_count after it

    @property
    def cell_count(self) -> int:
        return len(self._cells) + self._grown

    @contextlib.contextmanager
    def edit(self, summary: str, **_: Any) -> Iterator[Edit]:
        raise InvalidArgument(f"this edit cannot be proposed ({summary}); {_ONE_EDIT}")
        yield  # pragma: no cover - a generator for contextmanager

    def _recording(self, summary: str) -> None:
        if self.summary:
            raise InvalidArgument(_ONE_EDIT)
        self.check_document("propose changes to")
        self.summary = summary

    def insert(self, cells: list[NewCell], at: int | list[int]) -> list[tuple[int, str, str]]:
        """Record inserting ``cells`` (checked as :meth:`NotebookView.insert` does): each new cell with the cell it
        follows in the proposal, its anchor when it is accepted."""
        count = self.cell_count
        positions = insert_positions(count, cells, at)
        ids = [str(uuid.uuid4()) for _ in cells]
        final: list[int] = []
        for position in positions:
            final = [i + 1 if i >= position else i for i in final] + [position]
        self._recording(f"inserted {cells_text(ids)} at {positions[0] if positions else count}")
        taken = sorted(final)
        new_at = {p: cid for p, cid in zip(final, ids, strict=True)}
        for k in sorted(range(len(cells)), key=final.__getitem__):  # anchors first: an accept inserts in order
            place, cell = final[k], cells[k]
            previous = place - 1
            if previous < 0:
                anchor = ""
            elif previous in new_at:
                anchor = new_at[previous]
            else:  # a live cell: its live position is its place less the new cells before it
                anchor = self._index.ids[previous - bisect.bisect_left(taken, previous)]
            metadata = dict(cell.metadata or {})
            self.changes.append(
                CellProposal(
                    ids[k], "insert", None, cell.source, cell.cell_type, place, after_cell=anchor, metadata=metadata
                )
            )
        self._grown += len(cells)
        return [(final[k], ids[k], cells[k].cell_type) for k in range(len(cells))]

    def update(self, changes: list[CellChange], bases: BaseFinder | None = None) -> list[CellUpdate]:
        """Record a batch of cell updates, each planned exactly as a live update (merged from its base onto the
        live text): ``before`` is the live text, ``after`` the live text with the change."""
        plan: list[Any] = []
        seen: set[int] = set()
        with self.ydoc.transaction():  # one transaction for all the reads
            for change in changes:
                self._plan_update(change, bases, seen, plan)
            kinds = [str(ycell.get("cell_type", "code")) for _, ycell, *_ in plan]
        ids = [self._index.ids[i] for i, *_ in plan]
        self._recording(f"updated {cells_text(ids)}")
        for (index, _, live, change, hunks, _), cell_id, kind in zip(plan, ids, kinds, strict=True):
            after = apply(live, hunks) if hunks else live
            wanted_kind = change.cell_type or kind
            if (wanted_kind, after) != (kind, live):
                self.changes.append(CellProposal(cell_id, "update", live, after, wanted_kind, index))
        return [CellUpdate(index, cell_id, text) for (index, *_, text), cell_id in zip(plan, ids, strict=True)]

    def delete(self, indexes: list[int]) -> list[tuple[int, str, str]]:
        """Record deleting the cells at ``indexes``, with the text each has now (an accept deletes it only while
        it still has that text)."""
        unique = sorted(set(indexes))
        gone = [self._index.ids[i] for i in unique]
        sources = self.deletable(unique)
        self._recording(f"deleted {cells_text(gone)}")
        for at, cell_id, source in zip(unique, gone, sources, strict=True):
            self.changes.append(CellProposal(cell_id, "delete", source, None, self._index.kind(at), at))
        self._grown -= len(unique)
        return list(zip(unique, gone, sources, strict=True))


class ProposedText(TextView):
    """The live text document behind one proposing call: its batch recorded as ``text`` (before, after)."""

    def __init__(self, live: TextView) -> None:
        super().__init__(_Holder(live.ydoc), live.path, journal=EditJournal(), actor=live.actor)
        self.text_change: tuple[str, str] | None = None
        self.summary = ""

    @contextlib.contextmanager
    def _edit(self, summary: str, offset: int | None, source: str = "agent") -> Iterator[Edit]:
        raise InvalidArgument(f"this edit cannot be proposed ({summary}); {_ONE_EDIT}")
        yield  # pragma: no cover - a generator for contextmanager

    def apply(self, ops: list[TextOp], summary: str | None = None, *, base: Base | None = None) -> tuple[int, str]:
        if self.summary:
            raise InvalidArgument(_ONE_EDIT)
        live, hunks, wanted, self.summary = self.planned(ops, summary, base)
        after = apply(live, hunks)
        self.text_change = (live, after)
        return len(after), wanted


class _Holder:
    """What :class:`TextView` is built from (a document with a ``ydoc``)."""

    def __init__(self, ydoc: Any) -> None:
        self.ydoc = ydoc
