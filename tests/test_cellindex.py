"""The cell index follows inserts, deletes, moves, type changes and runs (ours and remote ones) without
rebuilding per lookup: positions and counts stay exact."""

from __future__ import annotations

import random

import pycrdt
import pytest

from jupyter_pair_mcp.adapters.rooms.cellindex import CellIndex


def cell(cell_id: str, kind: str = "code", ran: bool = False) -> pycrdt.Map:  # type: ignore[type-arg]
    return pycrdt.Map(
        {"id": cell_id, "cell_type": kind, "source": pycrdt.Text(cell_id), "execution_count": 1 if ran else None}
    )


def test_positions_stay_exact_through_random_structure_changes() -> None:
    rng = random.Random(7)
    doc = pycrdt.Doc()
    cells = doc.get("cells", type=pycrdt.Array)
    truth = [f"c{i}" for i in range(300)]
    with doc.transaction():
        cells.extend([cell(c) for c in truth])
    remote = pycrdt.Doc()
    remote.apply_update(doc.get_update())
    remote_cells = remote.get("cells", type=pycrdt.Array)
    index = CellIndex(cells)
    assert index.position("c150") == 150
    rebuilds = 0
    original = index._rebuild

    def counted() -> None:
        nonlocal rebuilds
        rebuilds += 1
        original()

    index._rebuild = counted  # type: ignore[method-assign]
    fresh = 0
    kinds = dict.fromkeys(truth, "code")
    ran: set[str] = set()
    for step in range(400):
        op = rng.choice(["insert", "delete", "move", "remote", "retype", "run"])
        if op == "insert":
            at = rng.randrange(len(truth) + 1)
            fresh += 1
            truth.insert(at, f"n{fresh}")
            kinds[f"n{fresh}"] = "code"
            cells.insert(at, cell(f"n{fresh}"))
        elif op == "delete" and truth:
            at = rng.randrange(len(truth))
            del truth[at]
            del cells[at]
        elif op == "move" and truth:
            at, to = rng.randrange(len(truth)), rng.randrange(len(truth))
            moved = truth.pop(at)
            truth.insert(to, moved)
            with doc.transaction():
                del cells[at]
                cells.insert(to, cell(moved, kinds[moved], moved in ran))
        elif op == "retype" and truth:
            at = rng.randrange(len(truth))
            kinds[truth[at]] = rng.choice(["code", "markdown", "raw"])
            cells[at]["cell_type"] = kinds[truth[at]]
        elif op == "run" and truth:
            at = rng.randrange(len(truth))
            ran.symmetric_difference_update({truth[at]})
            cells[at]["execution_count"] = 3 if truth[at] in ran else None
        else:  # a collaborator's insert arrives as an update
            remote.apply_update(doc.get_update(remote.get_state()))
            at = rng.randrange(len(truth) + 1)
            fresh += 1
            truth.insert(at, f"r{fresh}")
            kinds[f"r{fresh}"] = "code"
            remote_cells.insert(at, cell(f"r{fresh}"))
            doc.apply_update(remote.get_update(doc.get_state()))
        for probe in rng.sample(truth, min(5, len(truth))):
            assert index.position(probe) == truth.index(probe), (step, op, probe)
        assert index.position("gone-or-never") is None
        expected = {k: sum(1 for c in truth if kinds[c] == k) for k in ("code", "markdown", "raw")}
        assert index.counts() == {**expected, "executed": sum(1 for c in truth if c in ran)}, (step, op)
    assert index.ids == truth
    assert rebuilds == 0  # every lookup was answered from the maintained list, never by a rebuild
    index.close()


def test_shown_positions_never_walk_the_array() -> None:
    """The activity panel asks where up to a thousand cells are: the index answers without touching the array
    (a verified lookup reads the cell at its index, a walk from the start), and stays exact as cells move."""
    doc = pycrdt.Doc()
    cells = doc.get("cells", type=pycrdt.Array)
    with doc.transaction():
        cells.extend([cell(f"c{i}") for i in range(2000)])
    index = CellIndex(cells)
    index.ids  # noqa: B018  (built once, as a room's first call does)
    reads = 0
    original = pycrdt.Array.__getitem__

    def counted(self: pycrdt.Array, key: object) -> object:  # type: ignore[type-arg]
        nonlocal reads
        reads += 1
        return original(self, key)  # type: ignore[index]

    pycrdt.Array.__getitem__ = counted  # type: ignore[method-assign, assignment]
    try:
        assert [index.shown_position(f"c{i}") for i in range(0, 2000, 2)] == list(range(0, 2000, 2))
        assert index.shown_position("nope") is None
        assert reads == 0
        index.position("c1999")
        assert reads == 1, "a verified lookup does read the cell: the counter sees array reads"
        reads = 0
        cells.insert(0, cell("new"))
        assert index.shown_position("c1999") == 2000 and index.shown_position("new") == 0
        assert reads == 0
    finally:
        pycrdt.Array.__getitem__ = original  # type: ignore[method-assign]


def test_a_fork_index_is_seeded_from_the_live_one_without_a_rebuild() -> None:
    """A suggestion's fork is a copy of the live notebook: its index starts from the live index's lists
    (copied at the moment of the copy) instead of parsing the whole copy on the loop, and stays exact."""
    live = pycrdt.Doc()
    cells = live.get("cells", type=pycrdt.Array)
    with live.transaction():
        cells.extend([cell(f"c{i}", "markdown" if i % 3 == 0 else "code", ran=i % 2 == 0) for i in range(500)])
    live_index = CellIndex(cells)
    seed, update = live_index.seed(), live.get_update()
    fork = pycrdt.Doc()
    fork.apply_update(update)
    fork_cells = fork.get("cells", type=pycrdt.Array)
    index = CellIndex.seeded(fork_cells, seed)
    index._rebuild = lambda: pytest.fail("a seeded index must not rebuild")  # type: ignore[method-assign]
    assert index.counts() == live_index.counts()
    assert index.position("c499") == 499
    fork_cells.insert(0, cell("new"))
    assert index.position("c499") == 500 and index.position("new") == 0
    assert live_index.position("c499") == 499, "the live index is not the fork's"


def test_cell_types_are_held_once_per_type_not_once_per_cell() -> None:
    """A big room's index holds one string per cell type (100 000 cells: ~5 MB less than a str per cell), from
    a build, a worker's rows, inserted cells and retyped ones alike."""
    from jupyter_pair_mcp.adapters.rooms.cellindex import index_rows

    doc = pycrdt.Doc()
    cells = doc.get("cells", type=pycrdt.Array)
    with doc.transaction():
        cells.extend([cell(f"c{i}", "markdown" if i % 3 else "code") for i in range(200)])
    index = CellIndex(cells)
    assert index.position("c10") == 10
    cells.append(cell("late", "raw"))
    cells[5]["cell_type"] = "raw"
    assert index.position("late") == 200
    assert len({id(kind) for kind in index._kinds}) == 3, "a str object per cell type"
    _, kinds, _ = index_rows('[{"id": "a", "cell_type": "code"}, {"id": "b", "cell_type": "code"}]')
    assert kinds[0] is kinds[1]
