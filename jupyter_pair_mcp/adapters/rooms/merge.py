"""Three-way merge of an agent's text edit onto the live text: what a person typed since the agent's read survives.

An agent reads a cell (or a text file) — the *base* — and later sends the text it wants, or operations
relative to what it read. Meanwhile a person may have typed into the same text: the live text is no
longer the base. Writing the agent's text as a minimal edit against the live text would delete every
keystroke that arrived in between. Instead the agent's changes (base → agent) are expressed as
:class:`Hunk` s of the base, the person's changes (base → live) likewise, and the agent's hunks are
moved onto the live text past the person's. Where the two touch the same characters the merge refuses
(:class:`MergeConflict`) rather than guess — an insertion at the edge of a replaced span counts as
touching it; two insertions at the same point are both kept, the person's first (it is already there).

The merge runs on the event loop, so its cost is bounded at any size: the diff first strips the common
prefix and suffix (one pass, in C), then runs Myers' O(ND) diff on what is left with its runs of equal text
compared in C and a bound on its steps (:data:`MAX_DIFF_WORK`) and on the characters it compares
(:data:`MAX_DIFF_CHARS`); past a bound it falls back to one coarse hunk, which can only make the merge more
careful (a conflict), never lose text. A megabyte-long source changed at both ends is two hunks found in a
few milliseconds.
"""

from __future__ import annotations

import asyncio
import heapq
import itertools
from dataclasses import dataclass
from typing import Any

from jupyter_pair_mcp.adapters.rooms.text import Edit, common_affixes
from jupyter_pair_mcp.errors import InvalidArgument

#: Steps (diagonals tried, each a few microseconds of Python) the fine diff may spend before it settles for one
#: coarse hunk: ~10 ms at most, on the event loop.
MAX_DIFF_WORK = 10_000
#: Characters the fine diff may compare along runs of equal text (in C, a block at a time: ~10 ms).
MAX_DIFF_CHARS = 32 * 1024 * 1024
#: Steps all the fine diffs run in one turn of the event loop may spend together: a batch of 1,000 whole-source
#: cell updates must not cost the loop 1,000 times one diff. Past it, the turn's diffs settle for one coarse
#: hunk each (found in C); the next turn has the whole budget again.
MAX_DIFF_WORK_PER_TURN = 20_000
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
    fine, spent = _myers(a, b, _TURN.allowed(max_work))
    _TURN.spend(spent)
    if fine is None:
        return coarse
    return [Hunk(prefix + h.start, prefix + h.end, h.insert) for h in _coalesce(fine, a)]


class _TurnBudget:
    """What is left of :data:`MAX_DIFF_WORK_PER_TURN` in the running loop's current turn (a diff run where no
    loop runs, in a worker thread, holds no loop: only its own ``max_work`` bounds it)."""

    def __init__(self) -> None:
        self.left = MAX_DIFF_WORK_PER_TURN
        self.loop: asyncio.AbstractEventLoop | None = None  # whose next turn refills it (None: nothing spent)

    def allowed(self, max_work: int) -> int:
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            return max_work
        if self.loop is not loop:  # first spending in this turn (or a refill lost with a closed loop)
            self.left, self.loop = MAX_DIFF_WORK_PER_TURN, loop
            loop.call_soon(self._refill)
        return min(max_work, self.left)

    def spend(self, work: int) -> None:
        if self.loop is not None:
            self.left -= work

    def _refill(self) -> None:
        self.left, self.loop = MAX_DIFF_WORK_PER_TURN, None


_TURN = _TurnBudget()


def _coalesce(hunks: list[Hunk], old: str) -> list[Hunk]:
    merged: list[Hunk] = []
    for hunk in hunks:
        if merged:
            last = merged[-1]
            gap = old[last.end : hunk.start] if hunk.start - last.end < MIN_GAP else "\n"
            if "\n" not in gap:
                merged[-1] = Hunk(last.start, hunk.end, last.insert + gap + hunk.insert)
                continue
        merged.append(hunk)
    return merged


def _myers(a: str, b: str, max_work: int) -> tuple[list[Hunk] | None, int]:
    """Myers' shortest edit script as hunks of ``a`` (None when it would cost more than ``max_work`` steps or
    compare more than :data:`MAX_DIFF_CHARS` characters), and the steps it spent.

    Runs of equal characters (the snakes) are compared a block at a time in C (:func:`_snake`) and the
    script is kept as its edits only, never character by character: a megabyte of unchanged text between
    two changes costs a few slice comparisons, not a million steps of Python.
    """
    n, m = len(a), len(b)
    v: dict[int, int] = {1: 0}
    trace: list[dict[int, int]] = []
    work = chars = 0
    for d in range(n + m + 1):
        trace.append(dict(v))
        work += d + 1
        for k in range(-d, d + 1, 2):
            x = v[k + 1] if k == -d or (k != d and v[k - 1] < v[k + 1]) else v[k - 1] + 1
            y = x - k
            run = _snake(a, b, x, y, MAX_DIFF_CHARS - chars)
            chars += run
            x += run
            v[k] = x
            if x >= n and y + run >= m:
                return _edits(trace, n, m, b), work
            if chars >= MAX_DIFF_CHARS:
                return None, work
        if work > max_work:
            return None, work
    return None, work  # pragma: no cover - the loop always finds the script by d = n + m


def _snake(a: str, b: str, x: int, y: int, limit: int) -> int:
    """How many characters ``a[x:]`` and ``b[y:]`` share from their start (at most ``limit``), compared in C:
    blocks that double in size, then a binary search inside the first block that differs."""
    most = min(len(a) - x, len(b) - y, limit)
    if most <= 0 or a[x] != b[y]:
        return 0
    done, size = 0, 16
    while done < most:
        size = min(size, most - done)
        if a[x + done : x + done + size] != b[y + done : y + done + size]:
            low, high = 0, size - 1
            while low < high:
                middle = (low + high + 1) // 2
                if a[x + done : x + done + middle] == b[y + done : y + done + middle]:
                    low = middle
                else:
                    high = middle - 1
            return done + low
        done += size
        size = min(size * 2, 4096)
    return most


def _edits(trace: list[dict[int, int]], n: int, m: int, b: str) -> list[Hunk]:
    """The script's edits, walked back from the end, as hunks of ``a``: one per run of adjacent edits."""
    edits: list[Hunk] = []
    x, y = n, m
    for d in range(len(trace) - 1, 0, -1):
        v = trace[d]
        k = x - y
        prev_k = k + 1 if k == -d or (k != d and v[k - 1] < v[k + 1]) else k - 1
        prev_x = v[prev_k]
        prev_y = prev_x - prev_k
        # (prev_x, prev_y) -> one edit -> a snake of equal characters -> (x, y)
        edits.append(Hunk(prev_x, prev_x, b[prev_y]) if prev_k == k + 1 else Hunk(prev_x, prev_x + 1, ""))
        x, y = prev_x, prev_y
    hunks: list[Hunk] = []
    for edit in reversed(edits):
        if hunks and hunks[-1].end == edit.start:  # no equal character in between: one hunk
            last = hunks[-1]
            hunks[-1] = Hunk(last.start, edit.end, last.insert + edit.insert)
        else:
            hunks.append(edit)
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


#: Y text operations one edit may make, in one text or in all the texts of one transaction together. pycrdt
#: finds an operation's place by walking the text's blocks from the start and copies the block it splits; and
#: yrs keeps every block a client made in one array per client, so a split inserts into the middle of that
#: array, moving every block the client made after it (every cell of a notebook loaded by the room's client):
#: each operation costs more the more were made before it, in any text of the document. 100 000 operations
#: spread over 200 cells (500 each) held the loop 25-42 s; one edit stays within ~10 ms only with a bounded
#: number for the whole transaction (:func:`shared_budgets`).
MAX_TEXT_OPS = 500
#: Operations times the text's UTF-8 length (each may copy up to the rest of the text) one edit may cost.
TEXT_OP_BYTES = 256 * 1024 * 1024


def ops_budget(text: str) -> int:
    """How many separate Y text operations an edit of ``text`` may make (at least one)."""
    return max(1, min(MAX_TEXT_OPS, TEXT_OP_BYTES // max(1, len(text.encode("utf-8")))))


def shared_budgets(texts: list[str], wanted: list[int], total: int = MAX_TEXT_OPS) -> list[int]:
    """How many Y text operations each of ``texts``, edited in one transaction, may make (:func:`apply_hunks`'s
    ``most``): each at least one and at most its own :func:`ops_budget` and what it ``wanted``, all together
    about ``total`` (one each when there are more texts than that). What is left over after one each is shared
    in proportion to what each wanted: a replace of 500 matches in each of 200 cells makes ~500 operations, not
    100 000. Linear in the number of texts."""
    caps = [max(1, min(want, ops_budget(text))) for text, want in zip(texts, wanted, strict=True)]
    if sum(caps) <= total:
        return caps
    spare = max(0, total - len(caps))
    extra = sum(cap - 1 for cap in caps)
    return [1 + (cap - 1) * spare // extra for cap in caps]


def bounded(text: str, hunks: list[Hunk], most: int) -> list[Hunk]:
    """``hunks`` of ``text`` (ordered, not overlapping) as at most ``most`` hunks with the same result.

    Where there are more, the hunks closest together are joined (the text between them rewritten as part
    of the change), keeping the widest stretches of unchanged text untouched: a person typing there while
    the edit is applied keeps their text in place. O(n log most).
    """
    if len(hunks) <= most:
        return hunks
    gaps = ((hunks[i + 1].start - hunks[i].end, i) for i in range(len(hunks) - 1))
    cuts = {i for _, i in heapq.nlargest(most - 1, gaps)} if most > 1 else set()
    joined: list[Hunk] = []
    parts: list[str] = []
    start = hunks[0].start
    for i, hunk in enumerate(hunks):
        parts.append(hunk.insert)
        if i in cuts or i == len(hunks) - 1:
            joined.append(Hunk(start, hunk.end, "".join(parts)))
            parts = []
            if i + 1 < len(hunks):
                start = hunks[i + 1].start
        else:
            parts.append(text[hunk.end : hunks[i + 1].start])
    return joined


def apply_hunks(ytext: Any, text: str, hunks: list[Hunk], most: int | None = None) -> None:
    """Apply character ``hunks`` of ``text`` (the Y text's content now) as UTF-8 byte edits, first first.

    Byte offsets are found in one pass over the text. First to last, each operation splits the short block
    the previous one left (last first, each would split, and scan, the whole text before it); more than
    :func:`ops_budget` hunks (or ``most``: this text's share of a transaction's, :func:`shared_budgets`) are
    joined into that many (:func:`bounded`).
    """
    limit = ops_budget(text) if most is None else max(1, min(most, ops_budget(text)))
    ordered = bounded(text, sorted(hunks, key=lambda h: (h.start, h.end)), limit)
    at_char = at_byte = shift = 0
    for hunk in ordered:
        at_byte += len(text[at_char : hunk.start].encode("utf-8"))
        at_char = hunk.start
        edit = Edit(at_byte, at_byte + len(text[hunk.start : hunk.end].encode("utf-8")), hunk.insert)
        if edit.end > edit.start:
            del ytext[edit.start + shift : edit.end + shift]
        if edit.insert:
            ytext.insert(edit.start + shift, edit.insert)
        shift += len(edit.insert.encode("utf-8")) - (edit.end - edit.start)
