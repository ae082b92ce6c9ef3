"""A file changed on disk under its open room is merged into it in linear time, whatever changed (rooms/resync.py).

The merge's result is applied to the live cells as edits (reload.py). Each edit found its cell at its index, a
walk of the array from its start, so a change of every cell (a git checkout, a reformatting tool) walked N²/2
cells (20,000 cells: minutes of CPU on the loop, and calls refused meanwhile). The walks are counted, never
timed: twice the cells, at most about twice the walks.
"""

from __future__ import annotations

import copy
import random
import threading
import time
from pathlib import Path
from typing import Any

import pycrdt
import pytest
from jupyter_ydoc import YNotebook

from jupyter_pair_mcp.adapters.rooms import linear_ydoc, reload, resync

from .conftest import call_tool, document_room, notebook_json, stored
from .test_disk_changes import rewrite


class Walks:
    """Cells pycrdt walks under our code: each index read, insert and delete walks from the array's start."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.walked = 0
        getitem, insert, delitem = pycrdt.Array.__getitem__, pycrdt.Array._set, pycrdt.Array.__delitem__

        def counted_getitem(array: Any, key: Any) -> Any:
            self.walked += key if isinstance(key, int) and key > 0 else 0
            return getitem(array, key)

        def counted_insert(array: Any, index: int, value: Any) -> None:
            self.walked += index
            insert(array, index, value)

        def counted_delitem(array: Any, key: Any) -> None:
            self.walked += key if isinstance(key, int) else (key.start or 0)
            delitem(array, key)

        monkeypatch.setattr(pycrdt.Array, "__getitem__", counted_getitem)
        monkeypatch.setattr(pycrdt.Array, "_set", counted_insert)
        monkeypatch.setattr(pycrdt.Array, "__delitem__", counted_delitem)


def cell(i: int, source: str | None = None) -> dict[str, Any]:
    return {
        "id": f"c{i}",
        "cell_type": "code",
        "source": source if source is not None else f"x = {i}",
        "metadata": {},
        "outputs": [],
        "execution_count": None,
    }


def notebook(cells: list[dict[str, Any]]) -> dict[str, Any]:
    meta = {"kernelspec": {"name": "python3", "display_name": "Python 3"}, "language_info": {"name": "python"}}
    return {"cells": cells, "metadata": meta, "nbformat": 4, "nbformat_minor": 5}


def changed(before: dict[str, Any], rng: random.Random, edits: int) -> dict[str, Any]:
    after = copy.deepcopy(before)
    cells = after["cells"]
    for n in range(edits):
        op = rng.choice("dicmtk")
        if op == "i" or not cells:
            cells.insert(rng.randint(0, len(cells)), cell(10_000 + n, f"new {n}"))
        elif op == "d":
            cells.pop(rng.randrange(len(cells)))
        elif op == "c":
            cells[rng.randrange(len(cells))]["source"] = f"changed {n}"
        elif op == "m":
            cells.insert(rng.randint(0, len(cells) - 1), cells.pop(rng.randrange(len(cells))))
        elif op == "t":
            target = cells[rng.randrange(len(cells))]
            target.update(cell_type="markdown", source=f"# {n}")
            for key in ("outputs", "execution_count"):
                target.pop(key, None)
        else:
            cells[rng.randrange(len(cells))]["metadata"] = {"tags": [str(n)]}
    return after


async def live(value: dict[str, Any]) -> YNotebook:
    nb = YNotebook(pycrdt.Doc())
    await linear_ydoc._aset(nb, copy.deepcopy(value))
    return nb


@pytest.mark.parametrize("budget", [0, 2, resync.WALK_BUDGET])
async def test_the_merge_is_applied_exactly(budget: int, monkeypatch: pytest.MonkeyPatch) -> None:
    """Whatever the merge changed, the live notebook becomes it: in place, or rebuilt past the walk budget."""
    monkeypatch.setattr(resync, "WALK_BUDGET", budget)
    rng = random.Random(budget)
    for _ in range(80):
        ours = notebook([cell(i) for i in range(rng.randint(1, 15))])
        target = changed(ours, rng, rng.randint(0, 8))
        nb = await live(ours)
        reload._apply_notebook(nb, [c["id"] for c in ours["cells"]], nb.get(), target)
        assert nb.get()["cells"] == target["cells"]


@pytest.mark.parametrize("budget", [0, 2, resync.WALK_BUDGET])
async def test_a_merge_made_on_a_copy_comes_back_in_bounded_updates(
    budget: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A big notebook's merge is made on its copy (adapters/rooms/replicas.py), one transaction per few cells made,
    changed or deleted, deleted ranges included: each update it sends back is one loop step of the room. Applied
    to the room one by one, they make it the merge."""
    from jupyter_pair_mcp.adapters.rooms import replicas

    monkeypatch.setattr(resync, "WALK_BUDGET", budget)
    rng = random.Random(budget)
    for n in range(40):
        ours = notebook([cell(i) for i in range(rng.randint(1, 40))])
        target = changed(ours, rng, rng.randint(0, 12))
        target["cells"] = target["cells"][: rng.randint(0, len(target["cells"]))]  # a tail deleted on disk
        room = await live(ours)
        key = f"merge{n}"
        replicas._COPIES[key] = YNotebook(pycrdt.Doc())
        replicas._COPIES[key].ydoc.apply_update(room.ydoc.get_update())
        status, made, _ = replicas._merge(key, [], room.get(), target, 3)
        del replicas._COPIES[key]
        assert status == "merged"
        for update in made:
            cells = Walks(monkeypatch)
            room.ydoc.apply_update(update)
            assert cells.walked == 0
        assert room.get()["cells"] == target["cells"]
        assert len(made) >= (len(ours["cells"]) - len(target["cells"])) // 3, "deletions by 3 cells too"


@pytest.mark.parametrize("budget", [0, resync.WALK_BUDGET])
async def test_what_changed_in_the_room_since_the_read_stays(budget: int, monkeypatch: pytest.MonkeyPatch) -> None:
    """A person's typing and a cell added while the merge ran off the loop survive it, moved or rebuilt."""
    monkeypatch.setattr(resync, "WALK_BUDGET", budget)
    ours = notebook([cell(i) for i in range(6)])
    nb = await live(ours)
    read = nb.get()
    source = nb.ycells[4]["source"]
    source += " # typed"  # since the read
    nb.ycells.insert(2, nb.create_ycell(cell(99, "added in the room")))
    target = copy.deepcopy(read)
    target["cells"][4]["source"] = "y = 4"
    target["cells"].insert(0, target["cells"].pop(4))  # and moved first
    del target["cells"][5]
    reload._apply_notebook(nb, [c["id"] for c in nb.get()["cells"]], read, target)
    assert [(c["id"], c["source"]) for c in nb.get()["cells"]] == [
        ("c4", "y = 4 # typed"),
        ("c0", "x = 0"),
        ("c1", "x = 1"),
        ("c99", "added in the room"),
        ("c2", "x = 2"),
        ("c3", "x = 3"),
    ]


@pytest.mark.parametrize("kind", ["one cell", "every cell", "a tenth moved or deleted"])
async def test_a_change_on_disk_of_an_open_room_walks_linearly(
    kind: str, mcp_client: Any, jp_root_dir: Path, jp_serverapp: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The agent's next call merges the file in (DiskWatch.settle): its walks grow with the notebook, not its
    square, for one changed cell and for all of them."""
    monkeypatch.setattr(resync, "WALK_BUDGET", 8)  # small notebooks (the loop monitor's bound): a small budget
    walks = Walks(monkeypatch)
    counted = []
    async with mcp_client() as client:
        for cells in (300, 600):
            path = f"{kind.replace(' ', '_')}_{cells}.ipynb"
            before = notebook([cell(i) for i in range(cells)])
            (jp_root_dir / path).write_text(notebook_json(before["cells"]))
            assert (await call_tool(client, "get_notebook_info", path=path))["cell_count"] == cells
            after = copy.deepcopy(before)
            if kind == "one cell":
                after["cells"][cells // 2]["source"] = "changed on disk"
            elif kind == "every cell":
                for c in after["cells"]:
                    c["source"] += " # reformatted"
            else:
                rng = random.Random(cells)
                for _ in range(cells // 10):
                    moved = after["cells"].pop(rng.randrange(len(after["cells"])))
                    if rng.random() < 0.5:
                        after["cells"].insert(rng.randrange(len(after["cells"])), moved)
            walks.walked = 0
            rewrite(jp_root_dir / path, notebook_json(after["cells"]))
            info = await call_tool(client, "get_notebook_info", path=path)  # merges the file first
            counted.append(walks.walked)
            assert info["cell_count"] == len(after["cells"])
            room = document_room(jp_serverapp, path)
            assert [c["source"] for c in room._document.get()["cells"]] == [c["source"] for c in after["cells"]]
    small, big = counted
    assert big <= 2.5 * small + 1000 and big <= 16 * 600, counted


async def test_a_call_waits_for_a_reload_as_long_as_it_runs(
    mcp_client: Any, jp_root_dir: Path, jp_serverapp: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A call finding the room reloading its file waits for the reload to end, however long it takes (it is
    linear in the notebook): it was refused ("being loaded from disk") once a fixed wait ran out."""
    from jupyter_pair_mcp.adapters.rooms import disk, saving

    monkeypatch.setattr(saving, "LOAD_WAIT", 0.05)
    monkeypatch.setattr(disk, "LOAD_WAIT", 0.05, raising=False)  # main's name of it
    waited = threading.Event()
    still_loading = saving.still_loading
    answers: list[bool] = []

    def counted(room: Any) -> bool:
        answers.append(still_loading(room))
        if answers.count(True) >= 3:  # the call has waited three times the wait, the reload running
            waited.set()
        return answers[-1]

    monkeypatch.setattr(saving, "still_loading", counted)
    merge = reload.merge_notebook

    def slow_merge(*args: Any) -> Any:  # in the merge's worker thread: the reload runs until the call waited
        waited.wait(60)
        return merge(*args)

    monkeypatch.setattr(reload, "merge_notebook", slow_merge)
    path = "slow.ipynb"
    before = notebook([cell(i) for i in range(20)])
    (jp_root_dir / path).write_text(notebook_json(before["cells"]))
    async with mcp_client() as client:
        await call_tool(client, "get_notebook_info", path=path)
        after = copy.deepcopy(before)
        after["cells"][3]["source"] = "changed on disk"
        rewrite(jp_root_dir / path, notebook_json(after["cells"]))
        read = await call_tool(client, "get_notebook", path=path, cell_ids=["c3"])
        assert read["cells"][0]["source"] == "changed on disk"
        assert waited.is_set()


async def test_a_file_changed_while_its_room_was_closed_reopens_linearly(
    mcp_client: Any, jp_root_dir: Path, jp_serverapp: Any, extension: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The room reopens from its stored history, which is not the file's now (a git checkout while the server was
    down): the file is loaded into the room's cells (jupyter_server_ydoc's ``aset``) with bounded walks."""
    monkeypatch.setattr(resync, "WALK_BUDGET", 8)
    rooms = extension.rooms
    monkeypatch.setattr(rooms.kept, "idle_timeout", 1.0)
    walks = Walks(monkeypatch)
    counted = []
    async with mcp_client() as client:
        for cells in (300, 600):
            path = f"closed_{cells}.ipynb"
            before = notebook([cell(i) for i in range(cells)])
            (jp_root_dir / path).write_text(notebook_json(before["cells"]))
            await call_tool(client, "get_notebook_info", path=path)
            room_id = rooms.room_id(path, "notebook")
            await stored(jp_serverapp, path)
            assert room_id in await rooms.evict_idle(now=time.monotonic() + 3600)
            after = copy.deepcopy(before)
            for c in after["cells"]:
                c["source"] += " # checked out"
            rewrite(jp_root_dir / path, notebook_json(after["cells"]))
            walks.walked = 0
            await call_tool(client, "get_notebook_info", path=path)
            counted.append(walks.walked)
            room = document_room(jp_serverapp, path)
            assert [c["source"] for c in room._document.get()["cells"]] == [c["source"] for c in after["cells"]]
    small, big = counted
    assert big <= 2.5 * small + 1000 and big <= 16 * 600, counted
