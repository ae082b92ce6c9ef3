"""A proposal records exactly what the edit would do, and accepting it does it: the proposal's view and an accept's
position bookkeeping.

Pure logic on real pycrdt documents (no server): a random batch (inserts at random positions, updates with new
text or a new type, deletes of random cells) is made live on one copy of a notebook and proposed on another
(``adapters/rooms/proposing.py``: recorded, nothing written); the proposal's view answers the tool exactly as the
live view did, leaves its notebook untouched, and accepting every recorded change gives the live edit's cells.
"""

from __future__ import annotations

import itertools
import random
import uuid
from typing import Any

import pytest
from jupyter_ydoc import YNotebook

from jupyter_pair_mcp.adapters.rooms.cellindex import CellIndex
from jupyter_pair_mcp.adapters.rooms.cells import CellChange, NewCell
from jupyter_pair_mcp.adapters.rooms.notebook import NotebookView
from jupyter_pair_mcp.adapters.rooms.proposing import ProposedNotebook
from jupyter_pair_mcp.adapters.rooms.review import _runs, apply_cells
from jupyter_pair_mcp.errors import InvalidArgument


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


def batch(rng: random.Random, view: NotebookView) -> Any:
    """One random edit call on ``view``: what it returns."""
    n = view.cell_count
    what = rng.choice(["insert", "insert_at", "update", "delete"]) if n else "insert"
    if what == "insert":
        new = [NewCell(f"new {k}", rng.choice(["code", "markdown"]), {"k": 1}) for k in range(rng.randint(1, 4))]
        return view.insert(new, rng.randint(0, n))
    if what == "insert_at":
        count = rng.randint(1, 4)
        positions = [rng.randint(0, n + k) for k in range(count)]
        return view.insert([NewCell(f"at {k}", "code", {}) for k in range(count)], positions)
    if what == "update":
        chosen = rng.sample(range(n), rng.randint(1, min(n, 4)))
        changes = [
            CellChange(
                index=i,
                source=rng.choice([f"x = {i}", f"x = {i}!", "changed"]),
                cell_type=rng.choice([None, "markdown"]),
            )
            for i in chosen
        ]
        return view.update(changes)
    return view.delete(rng.sample(range(n), rng.randint(1, min(n, 4))))


@pytest.mark.parametrize("seed", range(60))
def test_a_proposal_answers_as_the_live_edit_and_accepting_it_gives_the_live_edits_cells(
    seed: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    rng = random.Random(seed)
    size = rng.randint(1, 30)  # (an empty notebook gets a cell of a random id)
    made, proposed = notebook(size), notebook(size)
    made_view = NotebookView(made, CellIndex(made.ycells), "n.ipynb")
    live_view = NotebookView(proposed, CellIndex(proposed.ycells), "n.ipynb")
    before = listed(live_view)
    serial = itertools.count()
    monkeypatch.setattr(uuid, "uuid4", lambda: f"u{next(serial)}")
    answer = batch(random.Random(seed), made_view)
    serial = itertools.count()
    proposal = ProposedNotebook(live_view)
    assert batch(random.Random(seed), proposal) == answer  # the same answer to the tool
    assert proposal.cell_count == made_view.cell_count
    assert listed(live_view) == before  # nothing was written
    with pytest.raises(InvalidArgument):  # one edit per proposal
        proposal.delete([0]) if proposal.cell_count else proposal.insert([NewCell("y", "code", {})], 0)
    outcome, _ = apply_cells(live_view, proposal.changes, "accepted")
    assert all(why is None for why in outcome.values()), outcome
    assert listed(live_view) == listed(made_view)
    for c in proposal.changes:
        if c.change == "insert":
            assert made_view.ycell(c.cell_id)["metadata"].to_py() == c.metadata


def test_runs_of_positions() -> None:
    assert _runs([]) == []
    assert _runs([1, 2, 3, 7, 9, 10]) == [(1, 4), (7, 8), (9, 11)]
