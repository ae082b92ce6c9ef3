"""A proposal's cell changes, read from the cells its edit touched, and an accept's position bookkeeping.

Pure logic on real pycrdt documents (no server): random edits of a fork (source edits, inserts, deletes,
retypes, moves) must be reported exactly as comparing every cell would report them, and accepting every
reported change must leave the live notebook with the fork's cells.
"""

from __future__ import annotations

import random
from typing import Any

import pytest
from jupyter_ydoc import YNotebook

from jupyter_pair_mcp.adapters.rooms import review
from jupyter_pair_mcp.adapters.rooms.cellindex import CellIndex
from jupyter_pair_mcp.adapters.rooms.forks import ForkDocument, copy_of
from jupyter_pair_mcp.adapters.rooms.notebook import NotebookView
from jupyter_pair_mcp.adapters.rooms.review import Touched, _runs, apply_cells, proposed_cells


def notebook(count: int) -> Any:
    nb = YNotebook()
    cells = [
        {
            "id": f"c{i}",
            "cell_type": "code",
            "source": f"x = {i}",
            "metadata": {},
            "outputs": [],
            "execution_count": None,
        }
        for i in range(count)
    ]
    nb.set({"cells": cells, "metadata": {}, "nbformat": 4, "nbformat_minor": 5})
    return nb


def listed(view: NotebookView) -> list[tuple[str, str, str]]:
    return view.sources()


def everything(before: list[tuple[str, str, str]], after: list[tuple[str, str, str]]) -> list[tuple[Any, ...]]:
    """The reference: every cell compared (what a proposal reported before it read only touched cells)."""
    old = {cid: (i, kind, source) for i, (cid, kind, source) in enumerate(before)}
    new_ids = {cid for cid, _, _ in after}
    found: list[tuple[Any, ...]] = []
    previous = ""
    for i, (cid, kind, source) in enumerate(after):
        if cid not in old:
            found.append((cid, "insert", None, source, kind, i, previous))
        elif old[cid][1:] != (kind, source):
            found.append((cid, "update", old[cid][2], source, kind, i, None))
        previous = cid
    found += [
        (cid, "delete", source, None, kind, i, None) for cid, (i, kind, source) in old.items() if cid not in new_ids
    ]
    return found


def edit_randomly(rng: random.Random, view: NotebookView, fork: Any, serial: list[int], moved: list[bool]) -> None:
    ycells = fork.document.ycells
    with view.edit("random"):
        for _ in range(rng.randint(1, 6)):
            n = len(ycells)
            what = rng.choice(["type", "insert", "delete", "retype", "move", "metadata"])
            if what == "type" and n:
                source = ycells[rng.randrange(n)]["source"]
                source.insert(len(source), rng.choice(["!", "\nmore", ""]))
            elif what == "insert":
                serial[0] += 1
                new = fork.document.create_ycell(
                    {"id": f"n{serial[0]}", "cell_type": "markdown", "source": f"new {serial[0]}", "metadata": {"k": 1}}
                )
                ycells.insert(rng.randint(0, n), new)
            elif what == "delete" and n:
                start = rng.randrange(n)
                del ycells[start : min(n, start + rng.randint(1, 3))]
            elif what == "retype" and n:
                view._retype(rng.randrange(n), "markdown", "retyped")
            elif what == "move" and n > 1:
                moved.append(True)
                cell = ycells[rng.randrange(n)].to_py()
                del ycells[[c["id"] for c in ycells.to_py()].index(cell["id"])]
                ycells.insert(rng.randrange(n), fork.document.create_ycell(cell))
            elif what == "metadata" and n:
                ycells[rng.randrange(n)]["metadata"]["seen"] = True


@pytest.mark.parametrize("walked", [64, 0], ids=["walked", "one pass"])
@pytest.mark.parametrize("seed", range(40))
def test_touched_cells_report_what_comparing_every_cell_reports_and_accepting_them_gives_the_fork(
    seed: int, walked: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(review, "_WALKED", walked)
    rng = random.Random(seed)
    live = notebook(rng.randint(0, 30))
    live_view = NotebookView(live, CellIndex(live.ycells), "n.ipynb")
    index = CellIndex(live.ycells)
    base = live.ydoc.get_update()
    fork = ForkDocument(live, "notebook", "n.ipynb", synchronize=False, doc=copy_of(base), seed=index.seed())
    fork_view = fork.notebook_view(None)
    before = listed(fork_view)
    assert fork.index is not None
    touched = Touched(fork.document.ycells, fork.index)
    moved: list[bool] = []
    edit_randomly(rng, fork_view, fork, [0], moved)
    touched.close()
    after = listed(fork_view)
    found = proposed_cells(base, fork.ydoc, [c for c, _, _ in before], fork_view.ids, touched.ids)
    # an event that could not be read: every cell is compared, to the same result
    assert proposed_cells(base, fork.ydoc, [c for c, _, _ in before], fork_view.ids, None) == found
    shown = [(c.cell_id, c.change, c.before, c.after, c.cell_type, c.index, c.after_cell) for c in found]
    assert shown == everything(before, after)
    assert all(c.metadata.get("k") == 1 for c in found if c.change == "insert")
    # Accepting it all gives the fork's cells; a move is no change, so after one only each cell's content and
    # each inserted cell's place (after the cell it followed in the fork) are the fork's.
    outcome, _ = apply_cells(live_view, found, "accepted")
    assert all(why is None for why in outcome.values()), outcome
    got = listed(live_view)
    if not moved:
        assert got == after
    assert sorted(got) == sorted(after)
    order = [cid for cid, _, _ in got]
    for c in found:
        if c.change == "insert":
            assert order.index(c.cell_id) == (order.index(c.after_cell) + 1 if c.after_cell else 0)


def test_runs_of_positions() -> None:
    assert _runs([]) == []
    assert _runs([1, 2, 3, 7, 9, 10]) == [(1, 4), (7, 8), (9, 11)]
