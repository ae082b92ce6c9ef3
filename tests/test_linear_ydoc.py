"""The linear notebook open and save (adapters/rooms/linear_ydoc.py) give jupyter_ydoc's notebook exactly.

The override's load is compared with upstream's by the whole document it builds (cells, metadata, state), its
read by the value, on every kind of cell: these fail when jupyter_ydoc changes under the override. (Bytes are
not compared: upstream's own update for the same file differs between loads, a cell map's plain values being
integrated in a Rust hash map's order.) The cost is counted, not timed: the walks of the load and of the read
(the sum of the indexes pycrdt is asked for, each a walk from the array's start) are zero at every size,
where upstream's load walks N²/2 cells. A real server opens and saves a notebook through it, the save in
the scanner's worker process.
"""

from __future__ import annotations

import copy
import json
import random
import warnings
from typing import Any

import pycrdt
import pytest
from jupyter_ydoc import YNotebook

from jupyter_pair_mcp.adapters.rooms import linear_ydoc

from .conftest import autosaved, call_tool

PNG = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=="


def code(i: int, **extra: Any) -> dict[str, Any]:
    return {
        "id": f"c{i}",
        "cell_type": "code",
        "source": [f"x = {i}\n", "print(x)"],
        "metadata": {"scale": 0.5, "n": i, "tags": ["a"]},
        "outputs": [
            {"output_type": "stream", "name": "stdout", "text": f"{i}\n"},
            {"output_type": "stream", "name": "stderr", "text": ["warn\n", "more\n"]},
            {"output_type": "execute_result", "execution_count": i, "data": {"text/plain": "1"}, "metadata": {}},
            {"output_type": "display_data", "data": {"image/png": PNG}, "metadata": {"width": 1.5}},
            {"output_type": "error", "ename": "E", "evalue": "v", "traceback": ["t1", "t2"]},
        ],
        "execution_count": i,
        **extra,
    }


def notebook(cells: list[dict[str, Any]], minor: int = 5) -> dict[str, Any]:
    meta = {"kernelspec": {"name": "python3", "display_name": "Python 3"}, "ratio": 2.5, "count": 3}
    return {"cells": cells, "metadata": meta, "nbformat": 4, "nbformat_minor": minor}


MARKDOWN = {"id": "m", "cell_type": "markdown", "source": "# Title", "metadata": {}, "attachments": {}}
ATTACHED = {
    "id": "a",
    "cell_type": "markdown",
    "source": "![x](attachment:x.png)",
    "metadata": {},
    "attachments": {"x.png": {"image/png": PNG}},
}
RAW = {"id": "r", "cell_type": "raw", "source": "raw", "metadata": {"format": "text/plain"}}
CASES = {
    "cells of every kind": notebook([code(0), MARKDOWN, ATTACHED, RAW, code(1, execution_count=None, outputs=[])]),
    "nbformat 4.4 (ids stripped on read)": notebook([code(0), MARKDOWN], minor=4),
    "an identical duplicate": notebook([code(0), code(0), RAW]),
    "a non-identical duplicate": notebook([code(0), {**code(0), "source": "other"}]),
    "no cells (a default cell)": notebook([]),
    "many cells": notebook([code(i) for i in range(300)]),
}


@pytest.fixture(autouse=True)
def uuids(monkeypatch: pytest.MonkeyPatch) -> None:
    """The same id on both sides wherever one is made up (a default cell, a renamed duplicate)."""
    import jupyter_ydoc.ynotebook

    for module in (jupyter_ydoc.ynotebook, linear_ydoc):
        monkeypatch.setattr(module, "uuid4", lambda: "00000000-0000-0000-0000-000000000000")


def whole(nb: YNotebook) -> str:
    """The whole document as canonical JSON: cells, notebook metadata, state."""
    with nb.ydoc.transaction() as txn:
        cells = json.loads(nb.ycells.integrated.to_json(txn._txn))
    return json.dumps({"cells": cells, "meta": nb._ymeta.to_py(), "state": nb._ystate.to_py()}, sort_keys=True)


async def loaded(aset: Any, value: dict[str, Any]) -> YNotebook:
    """A notebook loaded as jupyter_server_ydoc loads a file: ``aset`` into a fresh document of client id 0."""
    nb = YNotebook(pycrdt.Doc(client_id=0))
    await aset(nb, copy.deepcopy(value))
    return nb


def read(get: Any, nb: YNotebook) -> tuple[dict[str, Any], list[str]]:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        *_, value = get(nb, True)
    return value, [str(w.message) for w in caught]


@pytest.mark.parametrize("case", CASES)
@pytest.mark.loop_bound(
    0.5,
    reason="the reference is jupyter_ydoc's own O(cells²) load, run in the test's step (>100 ms at 300 cells loaded)",
    phases=("the test",),
)
async def test_the_load_is_upstreams(case: str) -> None:
    upstream = await loaded(linear_ydoc.UPSTREAM_ASET, CASES[case])
    ours = await loaded(linear_ydoc._aset, CASES[case])
    assert whole(ours) == whole(upstream)
    # and a person's JupyterLab, syncing the room, gets the same notebook
    replica = YNotebook(pycrdt.Doc())
    replica.ydoc.apply_update(ours.ydoc.get_update())
    assert whole(replica) == whole(upstream)


@pytest.mark.parametrize("case", CASES)
@pytest.mark.loop_bound(
    0.5,
    reason="the reference is jupyter_ydoc's own O(cells²) read, run in the test's step (~100 ms at 300 cells loaded)",
    phases=("the test",),
)
async def test_the_read_is_upstreams(case: str) -> None:
    upstream = await loaded(linear_ydoc.UPSTREAM_ASET, CASES[case])
    ours = await loaded(linear_ydoc.UPSTREAM_ASET, CASES[case])
    expected, warned = read(linear_ydoc.UPSTREAM_GET, upstream)
    got, ours_warned = read(linear_ydoc._get, ours)
    assert json.dumps(got, sort_keys=True) == json.dumps(expected, sort_keys=True)
    assert ours_warned == warned
    # the worker process's read: the same value, or "read it in place" where upstream rewrites an id
    copied = linear_ydoc.read_update((await loaded(linear_ydoc.UPSTREAM_ASET, CASES[case])).ydoc.get_update(), True)
    if warned:
        assert copied is None
    else:
        assert json.dumps(copied, sort_keys=True) == json.dumps(expected, sort_keys=True)


async def test_a_reload_into_a_notebook_with_cells_is_upstreams() -> None:
    """Loading into a document that has cells (a file changed on disk) is upstream's reconciliation."""
    before, after = notebook([code(0), MARKDOWN, code(1)]), notebook([code(1), RAW, {**code(0), "source": "changed"}])
    upstream = await loaded(linear_ydoc.UPSTREAM_ASET, before)
    ours = await loaded(linear_ydoc.UPSTREAM_ASET, before)
    await linear_ydoc.UPSTREAM_ASET(upstream, copy.deepcopy(after))
    await linear_ydoc._aset(ours, copy.deepcopy(after))
    assert whole(ours) == whole(upstream)


async def test_numbers_a_collaborator_wrote_read_as_upstreams() -> None:
    """Yjs clients write numbers as floats: the read casts them back, as upstream's does."""
    nb = await loaded(linear_ydoc.UPSTREAM_ASET, notebook([code(0), code(1)]))
    nb.ycells[0]["execution_count"] = 7.0
    nb.ycells[1]["metadata"]["scale"] = 0.25
    assert read(linear_ydoc._get, nb) == read(linear_ydoc.UPSTREAM_GET, nb)


class Walks:
    """The cells pycrdt walks: each index it is asked for (an insert's, an index read's) is a walk from the
    array's start past that many items."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.walked = 0
        getitem, insert = pycrdt.Array.__getitem__, pycrdt.Array._set

        def counted_getitem(array: Any, key: Any) -> Any:
            if isinstance(key, int):
                self.walked += key
            return getitem(array, key)

        def counted_insert(array: Any, index: int, value: Any) -> None:
            self.walked += index
            insert(array, index, value)

        monkeypatch.setattr(pycrdt.Array, "__getitem__", counted_getitem)
        monkeypatch.setattr(pycrdt.Array, "_set", counted_insert)

    async def of(self, work: Any) -> int:
        self.walked = 0
        await work()
        return self.walked


class AllWalks(Walks):
    """:class:`Walks`, and a delete's walk to the start of what it deletes."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        super().__init__(monkeypatch)
        delitem = pycrdt.Array.__delitem__

        def counted_delitem(array: Any, key: Any) -> None:
            self.walked += key if isinstance(key, int) else (key.start or 0)
            delitem(array, key)

        monkeypatch.setattr(pycrdt.Array, "__delitem__", counted_delitem)


def edited(value: dict[str, Any], rng: random.Random, edits: int) -> dict[str, Any]:
    """``value`` with ``edits`` random changes: cells deleted, inserted, changed (source, metadata, outputs that a
    cell cannot take in place), moved."""
    after = copy.deepcopy(value)
    cells = after["cells"]
    for n in range(edits):
        op = rng.choice("dicmot")
        if op == "i" or not cells:
            cells.insert(rng.randint(0, len(cells)), code(1000 + n))
        elif op == "d":
            cells.pop(rng.randrange(len(cells)))
        elif op == "c":
            cells[rng.randrange(len(cells))]["source"] = f"changed {n}"
        elif op == "m":
            cells.insert(rng.randint(0, len(cells) - 1), cells.pop(rng.randrange(len(cells))))
        elif op == "o":
            cells[rng.randrange(len(cells))]["outputs"] = [{"output_type": "stream", "name": "stdout", "text": "o"}]
        else:
            cells[rng.randrange(len(cells))]["metadata"] = {"tags": [str(n)]}
    return after


@pytest.mark.parametrize("budget", [0, 64])
async def test_a_reload_is_upstreams_whatever_changed(budget: int, monkeypatch: pytest.MonkeyPatch) -> None:
    """Random changes of a file loaded into a notebook with cells give upstream's document, whether the cells are
    changed in place or (past the walk budget: budget 0) the notebook rebuilt."""
    from jupyter_pair_mcp.adapters.rooms import resync

    monkeypatch.setattr(resync, "WALK_BUDGET", budget)
    rng = random.Random(budget)
    for _ in range(60):
        before = notebook([code(i) if i % 3 else {**MARKDOWN, "id": f"m{i}"} for i in range(rng.randint(0, 12))])
        after = edited(before, rng, rng.randint(0, 6))
        upstream = await loaded(linear_ydoc.UPSTREAM_ASET, before)
        ours = await loaded(linear_ydoc.UPSTREAM_ASET, before)
        await linear_ydoc.UPSTREAM_ASET(upstream, copy.deepcopy(after))
        await linear_ydoc._aset(ours, copy.deepcopy(after))
        assert read(linear_ydoc.UPSTREAM_GET, ours) == read(linear_ydoc.UPSTREAM_GET, upstream)
        assert as_read(ours) == as_read(upstream)


def as_read(nb: YNotebook) -> str:
    """:func:`whole`, but for an empty ``attachments`` of a markdown or raw cell, which a read drops: upstream's
    update of a kept cell adds it from the file where a new cell leaves it out, and which cells are kept and which
    moved (made anew) differs between upstream's greedy reordering and ours."""
    value = json.loads(whole(nb))
    for cell in value["cells"]:
        if cell.get("cell_type") in ("markdown", "raw") and cell.get("attachments") == {}:
            del cell["attachments"]
    return json.dumps(value, sort_keys=True)


@pytest.mark.parametrize("edits", [1, 10, "all"])
async def test_a_reload_walks_linearly(edits: int | str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Loading a changed file into a notebook with cells (a room whose stored history is not its file's; a file
    changed on disk) walks a bounded number of cells per cell: twice the cells, at most twice the walks (upstream:
    four times, each cell found at its index)."""
    walks = AllWalks(monkeypatch)
    counted = []
    for cells in (400, 800):
        before = notebook([{**MARKDOWN, "id": f"m{i}"} for i in range(cells)])
        if edits == "all":
            after = copy.deepcopy(before)
            for cell in after["cells"]:
                cell["source"] += " changed"
        else:
            after = edited(before, random.Random(cells), int(edits))
        nb = await loaded(linear_ydoc._aset, before)
        counted.append(await walks.of(lambda nb=nb, after=after: linear_ydoc._aset(nb, copy.deepcopy(after))))
        assert as_read(nb) == as_read(await loaded(linear_ydoc._aset, after))
    small, big = counted
    assert big <= 2.5 * small + 800 and big <= 100 * 800, counted


@pytest.mark.parametrize("cells", [10, 1000])
async def test_the_walks_do_not_grow_with_the_notebook(cells: int, monkeypatch: pytest.MonkeyPatch) -> None:
    value = notebook([{**MARKDOWN, "id": f"m{i}"} for i in range(cells)])
    walks = Walks(monkeypatch)
    assert await walks.of(lambda: loaded(linear_ydoc._aset, value)) == 0
    nb = await loaded(linear_ydoc._aset, value)

    async def read_it() -> None:
        read(linear_ydoc._get, nb)

    assert await walks.of(read_it) == 0
    # upstream's, for contrast: each cell inserted past all the cells before it
    assert await walks.of(lambda: loaded(linear_ydoc.UPSTREAM_ASET, value)) >= cells * (cells - 1) // 2


def test_only_tested_versions_are_overridden() -> None:
    assert linear_ydoc.tested("4.2.1") and linear_ydoc.tested("4.9.0")
    assert not linear_ydoc.tested("4.1.3") and not linear_ydoc.tested("5.0.0")


async def test_a_server_opens_and_saves_a_big_notebook_linearly(
    mcp_client: Any,
    make_notebook: Any,
    extension: Any,
    jp_serverapp: Any,
    jp_root_dir: Any,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    assert YNotebook.aset is linear_ydoc._aset and YNotebook._get is linear_ydoc._get
    monkeypatch.setattr(extension.rooms.scanner, "in_place_bytes", 0)  # every save reads in the worker process
    cells = [code(i) for i in range(600)]
    path = make_notebook("big.ipynb", cells)
    async with mcp_client() as client:
        info = await call_tool(client, "get_notebook_info", path=path)
        assert info["cell_count"] == 600
        await call_tool(
            client,
            "batch_update_notebook_cells",
            path=path,
            exec=False,
            updates=[{"cell_id": "c599", "content": "last"}],
        )
        await autosaved(jp_serverapp, path)
    assert extension.rooms._reader.replicas.reads >= 1  # read from the notebook's copy in its worker process
    model = await jp_serverapp.contents_manager.get(path)  # the saved file, through Jupyter (not mid-write)
    saved = model["content"]["cells"]
    assert [c["id"] for c in saved] == [f"c{i}" for i in range(600)]
    assert saved[599]["source"] == "last" and saved[0]["outputs"][3]["data"]["image/png"] == PNG
