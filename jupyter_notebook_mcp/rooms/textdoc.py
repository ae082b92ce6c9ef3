"""One call's view of a live text document (``.py``, ``.md``, ``.txt``, ...): its ``source`` Y text.

Positions given by agents are characters in the text as it was before the batch. A batch is validated
completely (in range, not overlapping) and applied in one agent transaction from the end of the text
backwards, so earlier operations never shift later ones; each becomes a UTF-8 byte-offset edit, so a
person typing elsewhere in the file keeps their text.
"""

from __future__ import annotations

import contextlib
import itertools
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from pycrdt import Text

from ..errors import InvalidArgument
from .edits import Edit, EditJournal
from .notebook import AGENT_ORIGIN
from .text import minimal_edit


@dataclass(frozen=True)
class TextOp:
    """Replace ``length`` characters at ``position`` with ``insert`` (position -1: the end)."""

    position: int
    length: int
    insert: str


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
    def _edit(self, summary: str, offset: int | None) -> Iterator[Edit]:
        """One agent transaction, announced to the journal (history, undo, presence) around its commit."""
        origin = self.actor.origin if self.actor is not None else AGENT_ORIGIN
        record = Edit(self.path, "file", self.actor, summary, "agent", None, offset)
        with self.journal.recording(self._doc, record), self._doc.transaction(origin=origin):
            yield record

    @property
    def text(self) -> str:
        return str(self._text)

    def apply(self, ops: list[TextOp], summary: str | None = None) -> int:
        """Apply a batch atomically; returns the new length in characters."""
        text = self.text
        size = len(text)
        spans = []
        for n, op in enumerate(ops):
            position = size if op.position == -1 else op.position
            if position < 0 or position > size:
                raise InvalidArgument(
                    f"operation {n}: position {op.position} is outside the text (0-{size} characters)"
                )
            if op.length < 0 or position + op.length > size:
                raise InvalidArgument(
                    f"operation {n}: length {op.length} at position {position} runs past the end ({size} characters)"
                )
            spans.append((position, position + op.length, op.insert, n))
        spans.sort(key=lambda s: (s[0], s[1]))
        for (_, a1, _, an), (b0, _, _, bn) in itertools.pairwise(spans):
            if b0 < a1:
                raise InvalidArgument(f"operations {an} and {bn} overlap: give non-overlapping ranges")
        inserted = sum(len(s[2]) for s in spans)
        removed = sum(s[1] - s[0] for s in spans)
        summary = summary or f"edited the text ({len(spans)} operation{'s' if len(spans) != 1 else ''}: " + (
            f"+{inserted} -{removed} characters)"
        )
        last = spans[-1] if spans else None
        with self._edit(summary, last[0] + len(last[2]) if last else None):
            for start, end, insert, _ in reversed(spans):
                byte_start = len(text[:start].encode("utf-8"))
                byte_end = byte_start + len(text[start:end].encode("utf-8"))
                if byte_end > byte_start:
                    del self._text[byte_start:byte_end]
                if insert:
                    self._text.insert(byte_start, insert)
        return len(self.text)

    def set_text(self, wanted: str, summary: str) -> bool:
        """Make the text ``wanted`` with one minimal replacement (text typed elsewhere survives); False when equal."""
        current = self.text
        if current == wanted:
            return False
        edit = minimal_edit(current, wanted)
        with self._edit(summary, None):
            if edit.end > edit.start:
                del self._text[edit.start : edit.end]
            if edit.insert:
                self._text.insert(edit.start, edit.insert)
        return True

    def replace(self, old: str, new: str, replace_all: bool) -> int:
        if not old:
            raise InvalidArgument("old_text is empty")
        text = self.text
        count = text.count(old)
        if count == 0:
            raise InvalidArgument(f"old_text not found in {self.path}: read the document and copy the text exactly")
        if count > 1 and not replace_all:
            raise InvalidArgument(
                f"old_text occurs {count} times in {self.path}: give more context to make it unique, or replace_all"
            )
        positions, start = [], 0
        while (found := text.find(old, start)) != -1:
            positions.append(found)
            start = found + len(old)
        summary = f"replaced {len(positions)} occurrence{'s' if len(positions) != 1 else ''} of {old[:40]!r}"
        self.apply([TextOp(p, len(old), new) for p in positions], summary)
        return len(positions)
