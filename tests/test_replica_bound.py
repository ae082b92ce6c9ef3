"""Big notebooks' copies in the copy worker are bounded by their encoded bytes together (``max_replica_bytes``).

Every open notebook past the in-place bound had a copy in the copy worker (adapters/rooms/replicas.py), ~23 times
its encoded size of that process's memory (563 MB at 100,000 cells), however many were open: no bound. Now the
least recently saved or edited copy is dropped past the bound (its room's save encodes it on the loop and copies it
again), a notebook past the bound alone gets none, and a closed room's copy is freed in the worker. Each save is
compared with a collaborator's replica once it completed.
"""

from __future__ import annotations

import logging
import time
from pathlib import Path
from typing import Any

import nbformat
import pytest

from jupyter_pair_mcp.adapters.rooms.copybudget import CopyBudget
from jupyter_pair_mcp.adapters.rooms.replicas import worker_rss

from .conftest import autosaved, call_tool, document_room, has_all_of, received, until


def _plain(cell: Any) -> tuple[str, str, str]:
    return str(cell["id"]), str(cell["cell_type"]), str(cell["source"])


async def _saved_as_the_room(client: Any, human: Any, jp_serverapp: Any, root: Path, n: int) -> None:
    """An agent's edit and a person's typing, saved: the file is the collaborator's replica."""
    path = human.path
    updates = [{"index": 1, "content": f"agent = {n}"}]
    await call_tool(client, "batch_update_notebook_cells", path=path, exec=False, updates=updates)
    human.type_into(2, 0, f"typed{n} ")
    await received(jp_serverapp, human)
    await human.wait_until(lambda: f"agent = {n}" in human.sources())
    assert (await call_tool(client, "save_notebook", path=path))["saved"] is True
    await autosaved(jp_serverapp, path)
    room = document_room(jp_serverapp, path)
    await human.wait_until(lambda: has_all_of(human.doc.get_state(), room.ydoc.get_state()))
    on_disk = nbformat.reads((root / path).read_text(), as_version=4)
    assert [_plain(c) for c in on_disk.cells] == [_plain(c) for c in human.cells()]
    assert f"typed{n} " in on_disk.cells[2].source and on_disk.cells[1].source == f"agent = {n}"


async def test_past_the_bound_the_least_recently_used_copy_goes(
    mcp_client: Any,
    make_notebook: Any,
    extension: Any,
    collaborator: Any,
    jp_serverapp: Any,
    jp_root_dir: Path,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """A bound that fits one copy, two big rooms: one copy is held, the least recently used one is dropped (freed
    in the worker, logged once at info), and a save of the room without its copy still writes the room's content
    (encoding it on the loop, counted as a seed, which copies it again and drops the other's)."""
    caplog.set_level(logging.INFO, logger="jupyter_pair_mcp")
    monkeypatch.setattr(extension.rooms.scanner, "in_place_bytes", 0)  # every notebook is big
    replicas = extension.rooms._reader.replicas
    first, second = make_notebook("first.ipynb", count=30), make_notebook("second.ipynb", count=30)
    async with collaborator(first) as one, mcp_client() as client:
        await call_tool(client, "get_notebook_info", path=first)
        await until(lambda: replicas.copies == 1, what="the first copy")
        size = replicas.copy_bytes
        assert size > 0 and replicas.seeds == 1
        replicas.budget.max_bytes = size * 3 // 2  # one copy fits (with its edits to come), two do not
        async with collaborator(second) as two:
            await call_tool(client, "get_notebook_info", path=second)
            await until(lambda: replicas.seeds == 2, what="the second copy")
            assert (replicas.copies, replicas.budget.evicted) == (1, 1), "the first copy dropped for the second"
            assert replicas.copy_bytes <= replicas.budget.max_bytes
            held = replicas.submit(worker_rss)
            await until(held.done, what="the worker's count")
            assert held.result()[1] == 1, "the worker freed the dropped copy"
            dropped = [r for r in caplog.records if "dropped to keep the copies" in r.getMessage()]
            assert len(dropped) == 1 and dropped[0].levelno == logging.INFO
            assert "/" not in dropped[0].getMessage()  # no path

            for n, (human, other) in enumerate([(one, two), (two, one), (one, two)]):
                seeds = replicas.seeds
                await _saved_as_the_room(client, human, jp_serverapp, jp_root_dir, n)
                assert replicas.seeds == seeds + 1, "the room without a copy encoded once, and copied again"
                assert replicas.copies == 1 and replicas.copy_bytes <= replicas.budget.max_bytes
                room = document_room(jp_serverapp, human.path)
                assert room is not None
                assert (
                    _state(room).replica.seeded()
                    and not _state(document_room(jp_serverapp, other.path)).replica.seeded()
                )
            assert replicas.lost == 0 and replicas.budget.evicted == 4
    # Logged once per copy, whatever the number of drops since.
    assert (
        len([r for r in caplog.records if "dropped to keep the copies" in r.getMessage() and r.levelno == logging.INFO])
        == 2
    )


async def test_a_notebook_past_the_bound_alone_gets_no_copy(
    mcp_client: Any,
    make_notebook: Any,
    extension: Any,
    collaborator: Any,
    jp_serverapp: Any,
    jp_root_dir: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A notebook bigger than the bound alone is never copied; its saves encode it on the loop and write the room."""
    monkeypatch.setattr(extension.rooms.scanner, "in_place_bytes", 0)
    replicas = extension.rooms._reader.replicas
    replicas.budget.max_bytes = 1000  # below any notebook of 30 cells
    path = make_notebook("alone.ipynb", count=30)
    async with collaborator(path) as human, mcp_client() as client:
        for n in range(2):
            await _saved_as_the_room(client, human, jp_serverapp, jp_root_dir, n)
        assert replicas.copies == 0 and replicas.seeds == 0 and replicas.budget.refused >= 2


async def test_a_closed_room_frees_its_copy(
    mcp_client: Any, make_notebook: Any, extension: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A big room closed (here: the adapter closes a room idle past room_idle_timeout) drops its copy: counted out,
    and freed in the worker."""
    monkeypatch.setattr(extension.rooms.scanner, "in_place_bytes", 0)
    replicas = extension.rooms._reader.replicas
    path = make_notebook("closed.ipynb", count=30)
    async with mcp_client() as client:
        await call_tool(client, "get_notebook_info", path=path)
        await until(lambda: replicas.copies == 1, what="the copy")
        room_id = extension.rooms.room_id(path, "notebook")
        assert await extension.rooms.evict_idle(now=time.monotonic() + 10**6) == [room_id]
        await until(lambda: replicas.copies == 0, what="the closed room's copy dropped")
        assert replicas.copy_bytes == 0
        held = replicas.submit(worker_rss)
        await until(held.done, what="the worker's count")
        assert held.result()[1] == 0, "the worker freed it"


def _state(room: Any) -> Any:
    from jupyter_pair_mcp.adapters.rooms.saving import state_of

    state = state_of(room)
    assert state is not None and state.replica is not None
    return state


def test_the_budget_drops_the_least_recently_used_first() -> None:
    budget = CopyBudget(max_bytes=100)
    assert budget.admit("a", 40) and budget.admit("b", 40)
    assert budget.used("a", 5, grown=True)  # a edited: b is the least recently used now
    assert budget.admit("c", 30) and "b" not in budget and (budget.copies, budget.bytes) == (2, 75)
    assert budget.used("c", 50, grown=False) and "a" in budget  # a save's exact size: 95 fits
    assert not budget.used("c", 120, grown=False) and (budget.copies, budget.bytes) == (1, 45)  # past it alone
    assert not budget.admit("d", 101) and budget.refused == 1 and "d" not in budget
    budget.gone("a")
    assert budget.take_drops() == ["b", "c", "d", "a"] and (budget.copies, budget.bytes) == (0, 0)
    assert budget.evicted == 2 and not budget.used("a", 1, grown=True)
    unbounded = CopyBudget(0)
    assert unbounded.admit("x", 10**12) and unbounded.admit("y", 10**12) and unbounded.copies == 2
