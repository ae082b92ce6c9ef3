"""One call's view of a live text document (``.py``, ``.md``, ``.txt``, ...): its ``source`` Y text.

Positions given by agents are characters in the text they read: the text before the batch, or — with
a base revision — the text as it was at that read, the agent's operations then being moved past what
others typed since (adapters/rooms/merge.py). A batch is validated completely (in range, not overlapping) and
applied in one agent transaction from the end of the text backwards, so earlier operations never
shift later ones; each becomes a UTF-8 byte-offset edit, so a person typing elsewhere keeps their text.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

from pycrdt import Text

from jupyter_pair_mcp.adapters.rooms.edits import Edit, EditJournal
from jupyter_pair_mcp.adapters.rooms.merge import Hunk, MergeConflict, TextOp, apply, apply_hunks, hunks_of, rebase
from jupyter_pair_mcp.adapters.rooms.notebook import AGENT_ORIGIN
from jupyter_pair_mcp.adapters.rooms.replace import Replacement
from jupyter_pair_mcp.adapters.rooms.text import minimal_edit
from jupyter_pair_mcp.errors import Conflict
from jupyter_pair_mcp.render import cut
from jupyter_pair_mcp.revisions import Base, revision_of

__all__ = ["TextOp", "TextView"]


class TextView:
    def __init__(self, document: Any, path: str, *, journal: EditJournal | None = None, actor: Any = None) -> None:
        self._doc = document.ydoc
        self._text: Text = document.ydoc.get("source", type=Text)
        self.path = path
        self.journal = journal or EditJournal()
        self.actor = actor

    @property
    def ydoc(self) -> Any:
        return self._doc

    @contextlib.contextmanager
    def _edit(self, summary: str, offset: int | None, source: str = "agent") -> Iterator[Edit]:
        """One agent transaction, announced to the journal (history, undo, presence) around its commit."""
        origin = self.actor.origin if self.actor is not None else AGENT_ORIGIN
        record = Edit(self.path, "file", self.actor, summary, source, None, offset)
        with self.journal.recording(self._doc, record), self._doc.transaction(origin=origin):
            yield record

    @property
    def text(self) -> str:
        return str(self._text)

    def apply(self, ops: list[TextOp], summary: str | None = None, *, base: Base | None = None) -> tuple[int, str]:
        """Apply a batch atomically, merged from ``base`` when given; returns the new length in characters
        and the text as the agent's edit defines it (its base with its operations)."""
        live, hunks, wanted, summary = self.planned(ops, summary, base)
        shift = sum(len(h.insert) - (h.end - h.start) for h in hunks[:-1])
        with self._edit(summary, hunks[-1].start + shift + len(hunks[-1].insert) if hunks else None):
            apply_hunks(self._text, live, hunks)
        return len(self.text), wanted

    def planned(self, ops: list[TextOp], summary: str | None, base: Base | None) -> tuple[str, list[Hunk], str, str]:
        """What :meth:`apply` would do, applying nothing: the live text, the hunks of it that carry out the batch
        (merged from ``base``), the text as the agent's edit defines it, and the edit's summary."""
        live = self.text
        reference = base.text if base is not None else live
        agent = hunks_of(ops, reference)
        wanted = apply(reference, agent)
        hunks = agent
        if base is not None and base.text != live:
            try:
                hunks = rebase(base.text, agent, live)
            except MergeConflict as conflict:
                now = revision_of(live)
                raise Conflict(
                    f"{self.path} changed where your edit applies: since your read (revision {base.revision}) "
                    f"characters {conflict.other.start}-{conflict.other.end} of what you read were changed, and "
                    f"your operations change characters {conflict.agent.start}-{conflict.agent.end}; nothing was "
                    f"applied. The text now reads (revision {now}):\n{cut(live, 2000)}\n"
                    f"Redo your change on this text and send it with base_revision {now!r}."
                ) from None
        inserted = sum(len(h.insert) for h in agent)
        removed = sum(h.end - h.start for h in agent)
        summary = summary or f"edited the text ({len(agent)} operation{'s' if len(agent) != 1 else ''}: " + (
            f"+{inserted} -{removed} characters)"
        )
        return live, hunks, wanted, summary

    def set_text(self, wanted: str, summary: str, *, source: str = "agent") -> bool:
        """Make the text ``wanted`` with one minimal replacement (text typed elsewhere survives); False when equal."""
        current = self.text
        if current == wanted:
            return False
        edit = minimal_edit(current, wanted)
        with self._edit(summary, None, source):
            if edit.end > edit.start:
                del self._text[edit.start : edit.end]
            if edit.insert:
                self._text.insert(edit.start, edit.insert)
        return True

    def apply_replacement(self, planned: Replacement, old: str) -> None:
        """Apply a replace of ``old`` planned off the loop (adapters/rooms/replace.py) as one agent edit.

        Text typed since the snapshot moves the plan past it; :class:`MergeConflict` (typing inside a match)
        means the caller plans again from a new snapshot. Nothing is applied then.
        """
        live = self.text
        hunks = planned.hunks if live == planned.source else rebase(planned.source, planned.hunks, live)
        count = planned.count
        with self._edit(f"replaced {count} occurrence{'s' if count != 1 else ''} of {old[:40]!r}", None):
            apply_hunks(self._text, live, hunks)
