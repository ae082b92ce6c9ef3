"""Text edits as CRDTs need them: minimal, and in pycrdt's UTF-8 byte offsets.

pycrdt ``Text`` indexes are UTF-8 byte offsets (``len(Text("héllo")) == 6``) while agents think in
characters. Replacing a whole source would delete and re-insert every character, destroying a
collaborator's concurrent typing anywhere in the cell; an edit that keeps the common prefix and
suffix only touches what really changed, so concurrent edits elsewhere in the text survive.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .merge import Hunk


@dataclass(frozen=True)
class Edit:
    """Replace ``old[start:end]`` (byte offsets into the old text) by ``insert``."""

    start: int
    end: int
    insert: str

    @property
    def is_noop(self) -> bool:
        return self.start == self.end and not self.insert


def byte_offset(text: str, char_index: int) -> int:
    """The UTF-8 byte offset of character ``char_index`` in ``text``."""
    return len(text[:char_index].encode("utf-8"))


def minimal_edit(old: str, new: str) -> Edit:
    """The single replacement turning ``old`` into ``new`` that keeps their common prefix and suffix."""
    limit = min(len(old), len(new))
    prefix = 0
    while prefix < limit and old[prefix] == new[prefix]:
        prefix += 1
    suffix = 0
    while suffix < limit - prefix and old[len(old) - 1 - suffix] == new[len(new) - 1 - suffix]:
        suffix += 1
    start = byte_offset(old, prefix)
    end = len(old[: len(old) - suffix].encode("utf-8"))
    return Edit(start, end, new[prefix : len(new) - suffix])


def line_column(text: str, char_index: int) -> tuple[int, int]:
    """1-based line and column of a character offset (what search results report)."""
    line = text.count("\n", 0, char_index) + 1
    column = char_index - (text.rfind("\n", 0, char_index) + 1) + 1
    return line, column


def apply_hunks(ytext: Any, text: str, hunks: list[Hunk]) -> None:
    """Apply character ``hunks`` of ``text`` (the Y text's content now) as UTF-8 byte edits, last first.

    Byte offsets are found in one pass over the text, so many hunks cost no more than one.
    """
    edits = []
    at_char = at_byte = 0
    for hunk in sorted(hunks, key=lambda h: (h.start, h.end)):
        at_byte += len(text[at_char : hunk.start].encode("utf-8"))
        at_char = hunk.start
        edits.append(Edit(at_byte, at_byte + len(text[hunk.start : hunk.end].encode("utf-8")), hunk.insert))
    for edit in reversed(edits):
        if edit.end > edit.start:
            del ytext[edit.start : edit.end]
        if edit.insert:
            ytext.insert(edit.start, edit.insert)
