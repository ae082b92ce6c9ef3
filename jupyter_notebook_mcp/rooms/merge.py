"""Three-way merge of an agent's text edit onto the live text: what a person typed since the agent's read survives.

An agent reads a cell (or a text file) — the *base* — and later sends the text it wants, or operations
relative to what it read. Meanwhile a person may have typed into the same text: the live text is no
longer the base. Writing the agent's text as a minimal edit against the live text would delete every
keystroke that arrived in between. Instead the agent's changes (base → agent) are expressed as
:class:`Hunk` s of the base, the person's changes (base → live) likewise, and the agent's hunks are
moved onto the live text past the person's. Where the two touch the same characters the merge refuses
(:class:`MergeConflict`) rather than guess — an insertion at the edge of a replaced span counts as
touching it; two insertions at the same point are both kept, the person's first (it is already there).

Costs stay linear in practice: the diff first strips the common prefix and suffix (one pass), then
runs Myers' O(ND) diff on what is left with a bound on its work; past the bound it falls back to one
coarse hunk, which can only make the merge more careful (a conflict), never lose text.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from typing import Any

from ..errors import InvalidArgument
from .text import Edit, common_affixes

#: Character comparisons the fine diff may spend before it settles for one coarse hunk.
MAX_DIFF_WORK = 50_000
#: Hunks closer than this many unchanged characters (on one line) are one change: a rewritten word is
#: one hunk, not the letters it happens to share with the old word, so typing inside it conflicts.
MIN_GAP = 8


@dataclass(frozen=True)
class Hunk:
    """Replace ``text[start:end]`` (character offsets) by ``insert``."""

    start: int
    end: int
    insert: str = ""


@dataclass(frozen=True)
class TextOp:
    """Replace ``length`` characters at ``position`` with ``insert`` (position -1: the end)."""

    position: int
    length: int
    insert: str


def hunks_of(ops: list[TextOp], text: str) -> list[Hunk]:
    """An agent's operations on ``text`` as ordered hunks; all are checked before any is used.

    Positions refer to ``text`` as it was before the batch; operations must not overlap (two
    insertions at one point are kept in the order given).
    """
    size = len(text)
    spans: list[tuple[Hunk, int]] = []
    for n, op in enumerate(ops):
        position = size if op.position == -1 else op.position
        if position < 0 or position > size:
            raise InvalidArgument(f"operation {n}: position {op.position} is outside the text (0-{size} characters)")
        if op.length < 0 or position + op.length > size:
            raise InvalidArgument(
                f"operation {n}: length {op.length} at position {position} runs past the end ({size} characters)"
            )
        spans.append((Hunk(position, position + op.length, op.insert), n))
    spans.sort(key=lambda s: (s[0].start, s[0].end, s[1]))
    for (a, an), (b, bn) in itertools.pairwise(spans):
        if b.start < a.end:
            raise InvalidArgument(f"operations {an} and {bn} overlap: give non-overlapping ranges")
    return [hunk for hunk, _ in spans]


class MergeConflict(Exception):
    """The agent's change and a concurrent change touch the same characters of the base."""

    def __init__(self, agent: Hunk, other: Hunk) -> None:
        super().__init__(f"characters {agent.start}-{agent.end} of the base were changed by both")
        self.agent = agent
        self.other = other


def diff(old: str, new: str, *, max_work: int = MAX_DIFF_WORK) -> list[Hunk]:
    """Hunks of ``old`` that turn it into ``new``, in order and not overlapping."""
    prefix, suffix = common_affixes(old, new)
    a, b = old[prefix : len(old) - suffix], new[prefix : len(new) - suffix]
    if not a and not b:
        return []
    coarse = [Hunk(prefix, prefix + len(a), b)]
    if not a or not b:
        return coarse
    fine = _myers(a, b, max_work)
    if fine is None:
        return coarse
    return [Hunk(prefix + h.start, prefix + h.end, h.insert) for h in _coalesce(fine, a)]


def _coalesce(hunks: list[Hunk], old: str) -> list[Hunk]:
    merged: list[Hunk] = []
    for hunk in hunks:
        if merged:
            last = merged[-1]
            gap = old[last.end : hunk.start]
            if len(gap) < MIN_GAP and "\n" not in gap:
                merged[-1] = Hunk(last.start, hunk.end, last.insert + gap + hunk.insert)
                continue
        merged.append(hunk)
    return merged


def _myers(a: str, b: str, max_work: int) -> list[Hunk] | None:
    """Myers' shortest edit script as hunks of ``a``; None when it would cost more than ``max_work``."""
    n, m = len(a), len(b)
    v: dict[int, int] = {1: 0}
    trace: list[dict[int, int]] = []
    work = 0
    for d in range(n + m + 1):
        trace.append(dict(v))
        work += d + 1
        for k in range(-d, d + 1, 2):
            x = v[k + 1] if k == -d or (k != d and v[k - 1] < v[k + 1]) else v[k - 1] + 1
            y = x - k
            start = x
            while x < n and y < m and a[x] == b[y]:
                x += 1
                y += 1
            work += x - start
            v[k] = x
            if x >= n and y >= m:
                return _hunks(_backtrack(trace, n, m), b)
        if work > max_work:
            return None
    return None  # pragma: no cover - the loop always finds the script by d = n + m


def _backtrack(trace: list[dict[int, int]], n: int, m: int) -> list[tuple[str, int, int]]:
    """The edit script, first step first: ("=", x, y), ("-", x, y) deletes a[x], ("+", x, y) inserts b[y]."""
    steps: list[tuple[str, int, int]] = []
    x, y = n, m
    for d in range(len(trace) - 1, -1, -1):
        v = trace[d]
        k = x - y
        prev_k = k + 1 if k == -d or (k != d and v[k - 1] < v[k + 1]) else k - 1
        prev_x = v[prev_k]
        prev_y = prev_x - prev_k
        while x > prev_x and y > prev_y:
            steps.append(("=", x - 1, y - 1))
            x, y = x - 1, y - 1
        if d > 0:
            steps.append(("+", prev_x, prev_y) if x == prev_x else ("-", prev_x, prev_y))
        x, y = prev_x, prev_y
    steps.reverse()
    return steps


def _hunks(steps: list[tuple[str, int, int]], b: str) -> list[Hunk]:
    hunks: list[Hunk] = []
    start = end = -1
    inserted: list[str] = []
    for kind, x, y in steps:
        if kind == "=":
            if start >= 0:
                hunks.append(Hunk(start, end, "".join(inserted)))
                start, inserted = -1, []
            continue
        if start < 0:
            start = end = x
        if kind == "-":
            end = x + 1
        else:
            inserted.append(b[y])
    if start >= 0:
        hunks.append(Hunk(start, end, "".join(inserted)))
    return hunks


def _conflict(agent: Hunk, other: Hunk) -> bool:
    if agent.start < agent.end and other.start < other.end:
        return max(agent.start, other.start) < min(agent.end, other.end)
    if agent.start == agent.end and other.start == other.end:
        return False  # two insertions at one point: both kept, the other's first
    # An insertion inside or at the edge of text the other side replaced: "compute" -> "other" by the
    # agent while the person typed "compute_fast" must not become "other_fast".
    if agent.start == agent.end:
        return other.start <= agent.start <= other.end
    return agent.start <= other.start <= agent.end


def rebase(base: str, agent: list[Hunk], live: str) -> list[Hunk]:
    """The agent's hunks of ``base``, moved onto ``live`` past the changes that made ``base`` into ``live``.

    Raises :class:`MergeConflict` when an agent hunk and a concurrent change touch the same characters.
    """
    others = diff(base, live)
    if not others:
        return list(agent)
    moved: list[Hunk] = []
    j, shift = 0, 0
    for hunk in sorted(agent, key=lambda h: (h.start, h.end)):
        same = False
        # The other changes wholly before this hunk shift it (an insertion at the point where the agent
        # inserts too counts as before); one equal to it means both made this very change.
        while j < len(others) and (
            others[j].end < hunk.start or (others[j].end == hunk.start and not _conflict(hunk, others[j]))
        ):
            same = same or others[j] == hunk
            shift += len(others[j].insert) - (others[j].end - others[j].start)
            j += 1
        for k in range(j, len(others)):
            other = others[k]
            if other.start > hunk.end:
                break
            if other == hunk:
                same = True
            elif _conflict(hunk, other):
                raise MergeConflict(hunk, other)
        if not same:
            moved.append(Hunk(hunk.start + shift, hunk.end + shift, hunk.insert))
    return moved


def apply(text: str, hunks: list[Hunk]) -> str:
    """``text`` with non-overlapping ``hunks`` applied (what the agent's side of a merge looks like)."""
    parts, at = [], 0
    for hunk in sorted(hunks, key=lambda h: (h.start, h.end)):
        parts.append(text[at : hunk.start])
        parts.append(hunk.insert)
        at = hunk.end
    parts.append(text[at:])
    return "".join(parts)


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
