"""Per-call work does not grow with the notebook: counted structurally, never timed.

pycrdt's ``Array`` index access walks from the start and its iteration goes through index access, so a
path that scans the cells array costs O(N) accesses (O(N²) steps) per call. Counting the server room's
array accesses one edit makes, on a small and on a large notebook, shows such a scan at once.
"""

from __future__ import annotations

import sys
from typing import Any

import pycrdt
import pytest

from .conftest import call_tool


def _from_our_code() -> bool:
    """Whether the access happens under a call of this package (the tool, or observers its transaction fires).

    Rooms save themselves on their own task: jupyter_ydoc's save reads every cell by index, and one that lands
    during a measured call (the small notebook's, seen on a loaded machine) is upstream work, not the call's.
    """
    frame = sys._getframe(2)
    while frame is not None:
        if "jupyter_pair_mcp" in frame.f_code.co_filename:
            return True
        frame = frame.f_back
    return False


class Accesses:
    """Counts index accesses and iterations, made under our code, of arrays of the documents in ``docs``."""

    def __init__(self) -> None:
        self.n = 0
        self.steps = 0  # elements walked: index access to position i walks i elements
        self.docs: list[Any] = []

    def count(self, array: Any, key: Any = None) -> None:
        doc = getattr(array, "_doc", None)
        if any(doc is d for d in self.docs) and _from_our_code():
            self.n += 1
            self.steps += key if isinstance(key, int) and key >= 0 else 0


@pytest.fixture
def accesses(monkeypatch: pytest.MonkeyPatch) -> Accesses:
    return counting(monkeypatch)


def counting(monkeypatch: pytest.MonkeyPatch) -> Accesses:
    """An :class:`Accesses` counting from now until the test ends."""
    counter = Accesses()
    getitem, iterate = pycrdt.Array.__getitem__, pycrdt.Array.__iter__

    def counted_getitem(self: Any, key: Any) -> Any:
        counter.count(self, key)
        return getitem(self, key)

    def counted_iter(self: Any) -> Any:
        counter.count(self)
        return iterate(self)

    monkeypatch.setattr(pycrdt.Array, "__getitem__", counted_getitem)
    monkeypatch.setattr(pycrdt.Array, "__iter__", counted_iter)
    return counter


async def _per_edit(client: Any, extension: Any, path: str, counter: Accesses) -> dict[str, int]:
    read = await call_tool(client, "get_notebook", path=path, include_outputs=False, max_content_length=1_000_000)
    last = read["cells"][-1]["id"]  # the far end: a scan from the start would walk every cell
    await call_tool(
        client, "batch_update_notebook_cells", path=path, exec=False, updates=[{"cell_id": last, "content": "w"}]
    )
    counter.docs.append(extension.rooms.live_ydoc(path, "notebook"))
    found: dict[str, int] = {}
    for name, tool, arguments in [
        ("update", "batch_update_notebook_cells", {"updates": [{"cell_id": last, "content": "warm = 2"}]}),
        ("append", "batch_update_notebook_cells", {"updates": [{"cell_id": last, "operations": [{"content": "\n#"}]}]}),
        ("insert", "batch_insert_notebook_cells", {"after_cell_id": last, "cells": [{"content": "new"}]}),
        ("read", "get_notebook", {"cell_ids": [last]}),
    ]:
        if tool != "get_notebook":
            arguments["exec"] = False
        before = counter.n
        await call_tool(client, tool, path=path, **arguments)
        found[name] = counter.n - before
    return found


@pytest.mark.loop_bound(
    0.5, reason="opening and saving a 1500-cell room: jupyter_server reads and signs the file, the room applies it"
)
async def test_a_call_touches_the_cells_array_a_fixed_number_of_times(
    mcp_client: Any, make_notebook: Any, collaborator: Any, extension: Any, accesses: Accesses
) -> None:
    """With a person in the room (the agent then shows its cursor where it edited)."""
    small = make_notebook("small.ipynb", count=10)
    large = make_notebook("large.ipynb", count=1500)
    async with collaborator(small), collaborator(large), mcp_client() as client:
        at_small = await _per_edit(client, extension, small, accesses)
        at_large = await _per_edit(client, extension, large, accesses)
    assert at_large == at_small, (at_small, at_large)
    assert max(at_large.values()) < 20, at_large


@pytest.mark.loop_bound(
    0.5, reason="opening and saving a 1500-cell room: jupyter_server reads and signs the file, the room applies it"
)
async def test_reading_many_cells_walks_the_array_linearly(
    mcp_client: Any, make_notebook: Any, extension: Any, accesses: Accesses
) -> None:
    """A whole-notebook read: index access per cell would walk N²/2 elements; past a linear budget the rest
    comes from one snapshot of the array."""
    n = 1500
    path = make_notebook("range.ipynb", count=n)
    async with mcp_client() as client:
        await call_tool(client, "get_notebook_info", path=path)  # opens the room
        accesses.docs.append(extension.rooms.live_ydoc(path, "notebook"))
        read = await call_tool(client, "get_notebook", path=path, max_content_length=1_000_000)
    assert len(read["cells"]) == n and read["cells"][-1]["source"] == f"x = {n - 1}"
    assert accesses.steps <= 4 * n, accesses.steps  # linear (per-cell access: ~1,100,000)
