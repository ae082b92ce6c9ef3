"""Text edits as CRDTs need them: minimal, and in pycrdt's UTF-8 byte offsets.

pycrdt ``Text`` indexes are UTF-8 byte offsets (``len(Text("héllo")) == 6``) while agents think in
characters. Replacing a whole source would delete and re-insert every character, destroying a
collaborator's concurrent typing anywhere in the cell; an edit that keeps the common prefix and
suffix only touches what really changed, so concurrent edits elsewhere in the text survive.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass


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


def common_affixes(old: str, new: str) -> tuple[int, int]:
    """Lengths of the common prefix and (not overlapping it) common suffix of two texts.

    Compared block by block (slice comparisons run in C), then by binary search inside the first block
    that differs: linear in the common part, where a character loop in Python would hold the event loop
    for a tenth of a second on a megabyte-long source.
    """
    limit = min(len(old), len(new))
    prefix = _common_run(old, new, limit, lambda text, at, size: text[at : at + size])
    suffix = _common_run(old, new, limit - prefix, lambda text, at, size: text[len(text) - at - size : len(text) - at])
    return prefix, suffix


_BLOCK = 4096


def _common_run(old: str, new: str, limit: int, piece: Callable[[str, int, int], str]) -> int:
    """How many characters, up to ``limit``, ``piece`` finds equal in both texts, walking from one end."""
    done = 0
    while done < limit:
        size = min(_BLOCK, limit - done)
        if piece(old, done, size) != piece(new, done, size):
            low, high = 0, size - 1  # the difference is inside this block: binary search it
            while low < high:
                middle = (low + high + 1) // 2
                if piece(old, done, middle) == piece(new, done, middle):
                    low = middle
                else:
                    high = middle - 1
            return done + low
        done += size
    return limit


def minimal_edit(old: str, new: str) -> Edit:
    """The single replacement turning ``old`` into ``new`` that keeps their common prefix and suffix."""
    prefix, suffix = common_affixes(old, new)
    start = byte_offset(old, prefix)
    end = len(old[: len(old) - suffix].encode("utf-8"))
    return Edit(start, end, new[prefix : len(new) - suffix])


def line_column(text: str, char_index: int) -> tuple[int, int]:
    """1-based line and column of a character offset (what search results report)."""
    line = text.count("\n", 0, char_index) + 1
    column = char_index - (text.rfind("\n", 0, char_index) + 1) + 1
    return line, column
