"""Making a live cells array into a given list of cells in linear time (a reload of a changed file, a stale store).

pycrdt finds a cell by walking the array from its start (~20 ns a cell), for an index read, an insert and a
delete alike, so reconciling a notebook cell by cell at each cell's index, as jupyter_ydoc's ``_set`` does,
costs O(cells²) (a one-cell change on disk of an open 20,000-cell notebook: 130 CPU-s). Here the cells that
stay where they are (ids both lists have, the longest run in the same order) are found in Python lists, the
changes between them grouped into ranges, and the ranges applied from the last to the first, so every walk
counts once and the walks of a whole reload are bounded by :data:`WALK_BUDGET` cells per cell of the notebook:
past it (a file rewritten throughout: a git checkout), the part of the array before the changes applied so far
is rebuilt from its last cell at index 0, which walks nothing, as a fresh open does, and the cells it replaces
deleted in one range. (New cells go in before the ones they replace: pycrdt walks deleted cells too, so an insert
after a deleted range would walk it.)
Either way the cost is at most about a fresh open's.

Pure planning (:func:`plan`) and one application (:func:`apply`), which yields between steps so a caller may
let the loop run (inside one transaction, as jupyter_ydoc's own ``aset`` does).
"""

from __future__ import annotations

import bisect
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

#: Cells walked per cell of the notebook a reload may spend on positioned edits before it rebuilds the rest
#: (creating a cell costs ~1,000-3,000 walked cells, so the edits stay well under a fresh open's cost).
WALK_BUDGET = 16


@dataclass
class Gap:
    """Live cells ``[start, stop)`` replaced by the ``insert`` ids, before the anchor at live index ``stop``."""

    start: int
    stop: int
    insert: list[str]


@dataclass
class Plan:
    """What turns the live ids into the final ones: anchors kept in place (live index, id), gaps between them."""

    anchors: list[tuple[int, str]] = field(default_factory=list)
    gaps: list[Gap] = field(default_factory=list)  # gaps[i] comes before anchors[i]; one more after the last


def _longest_increasing(positions: list[int]) -> list[int]:
    """Indexes into ``positions`` of a longest strictly increasing subsequence (O(n log n))."""
    tails: list[int] = []  # positions[tail index] of the best subsequence of each length
    tail_at: list[int] = []
    previous = [-1] * len(positions)
    for i, value in enumerate(positions):
        k = bisect.bisect_left(tails, value)
        if k:
            previous[i] = tail_at[k - 1]
        if k == len(tails):
            tails.append(value)
            tail_at.append(i)
        else:
            tails[k], tail_at[k] = value, i
    out: list[int] = []
    i = tail_at[-1] if tail_at else -1
    while i >= 0:
        out.append(i)
        i = previous[i]
    return out[::-1]


def plan(live: list[str | None], final: list[str], keep: Callable[[str], bool]) -> Plan:
    """Anchors: cells of ``final`` that ``live`` has (first occurrence) and ``keep(id)`` allows, the longest run
    in the same order; every other live cell is deleted and every other final cell inserted."""
    first: dict[str, int] = {}
    for i, cell_id in enumerate(live):
        if cell_id is not None and cell_id not in first:
            first[cell_id] = i
    candidates = [(first[c], c) for c in final if c in first and keep(c)]
    chosen = [candidates[i] for i in _longest_increasing([p for p, _ in candidates])]
    result = Plan(anchors=chosen)
    anchored = {c for _, c in chosen}
    at = 0  # the next final id not placed yet
    start = 0  # the first live index after the previous anchor
    for position, cell_id in [*chosen, (len(live), "")]:
        inserts = []
        while at < len(final) and final[at] != cell_id:
            if final[at] not in anchored:
                inserts.append(final[at])
            at += 1
        at += 1
        result.gaps.append(Gap(start, position, inserts))
        start = position + 1
    return result


def _step_cost(gap: Gap, anchor: tuple[int, str] | None, changed: set[str]) -> int:
    """The most cells one step walks: a changed anchor's read (and, if it cannot change in place, its delete and
    insert), the gap's inserts and its delete."""
    walks = 3 * anchor[0] if anchor is not None and anchor[1] in changed else 0
    return walks + gap.start * (len(gap.insert) + (gap.stop > gap.start))


def cost(steps: Plan, changed: set[str]) -> int:
    """The most cells :func:`apply` walks for ``steps`` with no budget: past its budget, it rebuilds."""
    anchors: list[tuple[int, str] | None] = [*steps.anchors, None]
    return sum(_step_cost(gap, anchor, changed) for gap, anchor in zip(steps.gaps, anchors, strict=True))


def _delete(ycells: Any, start: int, stop: int, chunk: int | None, deleted: Callable[[int], None]) -> Iterator[None]:
    """``del ycells[start:stop]``, by ``chunk`` cells from the last (None: at once), yielding after each."""
    while stop > start:
        first = max(start, stop - chunk) if chunk else start
        del ycells[first:stop]
        deleted(stop - first)
        stop = first
        yield None


def apply(
    ycells: Any,
    steps: Plan,
    create: Callable[[str], Any],
    update: Callable[[Any, str], bool],
    changed: set[str],
    budget: int,
    delete_chunk: int | None = None,
    deleted: Callable[[int], None] = lambda count: None,
) -> Iterator[int]:
    """Apply ``steps`` to ``ycells`` from the last gap to the first; yields the cells walked so far after each step.

    ``create(id)`` makes a new cell (a ``pycrdt.Map``) with its final content; ``update(ycell, id)`` changes a
    kept cell whose id is in ``changed`` in place (False: it cannot, it is replaced). Once the walks would pass
    ``budget`` cells, everything before the current point is rebuilt from index 0 instead. A range of cells is
    deleted ``delete_chunk`` cells at a time (``deleted(count)`` after each, then a yield): a copy of a room
    commits its edits in bounded updates (:mod:`.replicas`), and a deletion costs the room a step per cell.
    """
    walked = 0
    index = len(steps.anchors)
    while index >= 0:
        gap = steps.gaps[index]
        anchor = steps.anchors[index] if index < len(steps.anchors) else None
        cost = _step_cost(gap, anchor, changed)
        if cost and walked + cost > budget and gap.start > 0:
            break  # the rest is rebuilt from index 0
        walked += cost
        if anchor is not None and anchor[1] in changed:
            position, cell_id = anchor
            if not update(ycells[position], cell_id):
                del ycells[position]
                ycells.insert(position, create(cell_id))
        for cell_id in reversed(gap.insert):  # before the cells they replace: an insert walks no deleted cell
            ycells.insert(gap.start, create(cell_id))
        if gap.stop > gap.start:
            start, stop = gap.start + len(gap.insert), gap.stop + len(gap.insert)
            for _ in _delete(ycells, start, stop, delete_chunk, deleted):
                yield walked
        yield walked
        index -= 1
    else:
        return
    # Rebuild: live cells [0, stop of this gap) go, and every final cell before it is created, from the last.
    gap = steps.gaps[index]
    anchors_before = [cell_id for _, cell_id in steps.anchors[:index]]
    rebuilt: list[str] = []
    for i, cell_id in enumerate(anchors_before):
        rebuilt.extend(steps.gaps[i].insert)
        rebuilt.append(cell_id)
    rebuilt.extend(gap.insert)
    if anchor is not None and anchor[1] in changed:  # the anchor after the gap is rebuilt too
        rebuilt.append(anchor[1])
        stop = anchor[0] + 1
    else:
        stop = gap.stop
    for cell_id in reversed(rebuilt):  # at index 0, before the cells they replace: no walk
        ycells.insert(0, create(cell_id))
        yield walked
    for _ in _delete(ycells, len(rebuilt), len(rebuilt) + stop, delete_chunk, deleted):
        yield walked


__all__ = ["WALK_BUDGET", "Gap", "Plan", "apply", "cost", "plan"]
