"""Review mode on a big notebook: proposing and accepting cost what they change, not the notebook's size.

A proposal records the cells its edit touches (never a copy of the document); an accept applies the chosen cells
by id. Neither may read or copy the whole notebook: the first test counts whole-notebook reads and copies and array
accesses (they must not grow with the notebook), the second drives a 20,000-cell notebook under
the loop monitor (tests/loopmonitor.py), which alone fails it when a step holds the loop.
"""

from __future__ import annotations

import sys
from typing import Any

import pycrdt
import pytest

from jupyter_pair_mcp.adapters.rooms import cellindex, notebook, notebook_reads, scanning

from .conftest import call_tool, notebook_json, within
from .test_review import People
from .test_scaling import Accesses, counting

pytestmark = pytest.mark.usefixtures("jp_serverapp")

HUGE = 20_000

#: Opening a big notebook's room (in setup) and saving it when the server stops (teardown) are jupyter_server's
#: and jupyter-collaboration's work on the loop: reading the file and checking its trust signature (~80 ms at
#: 5,000 cells), applying the loaded document to the room, writing it back.
OPENED_AND_SAVED = pytest.mark.loop_bound(
    10.0, reason="jupyter_server reads and signs a big notebook file on the loop", phases=("setup", "teardown")
)


@pytest.fixture
def people(http: Any, server_root: str, jp_base_url: str, auth: dict[str, str]) -> People:
    return People(http, f"{server_root}{jp_base_url}api/mcp", auth)


@pytest.fixture
def accesses(monkeypatch: pytest.MonkeyPatch) -> Accesses:
    return counting(monkeypatch)


class WholeReads:
    """Counts reads of every cell at once (a snapshot, a sources list, the cells as JSON) and copies of the whole
    document (its update encoded, as a fork's copy takes it) under our code."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.n = 0
        self.names: list[str] = []
        get_update = pycrdt.Doc.get_update

        def whole_update(doc: Any, state: Any = None) -> Any:  # the whole document encoded: a copy of it
            if state is None and _proposing_or_accepting(sys._getframe(1)):
                self.n += 1
                self.names.append(f"get_update in {sys._getframe(1).f_code.co_name}")
            return get_update(doc, state) if state is not None else get_update(doc)

        monkeypatch.setattr(pycrdt.Doc, "get_update", whole_update)
        for owner, name in [
            (scanning, "cells_snapshot"),
            (notebook.NotebookView, "sources"),
            (notebook.NotebookView, "all_cells"),
            (cellindex, "cells_json"),
            (notebook_reads, "cells_json"),
        ]:
            original = getattr(owner, name)
            monkeypatch.setattr(owner, name, self._counted(original, name))

    def _counted(self, original: Any, name: str) -> Any:
        def counted(*args: Any, **kwargs: Any) -> Any:
            self.n += 1
            self.names.append(f"{name} in {sys._getframe(1).f_code.co_name}")
            return original(*args, **kwargs)

        return counted


#: Where a proposal and an accept run (a save or a room's keep-alive sizing after them is any edit's, not theirs).
REVIEW_PATH = ("tools/notebook_edit.py", "services/suggestions.py", "services/forks.py", "rooms/review.py")


def _proposing_or_accepting(frame: Any) -> bool:
    for _ in range(40):
        if frame is None:
            return False
        if frame.f_code.co_filename.endswith(REVIEW_PATH):
            return True
        frame = frame.f_back
    return False


def big(jp_root_dir: Any, name: str, count: int) -> str:
    cells = [{"cell_type": "code", "source": f"x = {i}", "id": f"c{i}"} for i in range(count)]
    (jp_root_dir / name).write_text(notebook_json(cells))
    return name


async def _propose_and_accept(client: Any, people: People, path: str, count: int) -> list[str]:
    """An update, an insert, a delete and a second update of the first one's cell, proposed; then accepted."""
    last, middle = f"c{count - 1}", f"c{count // 2}"
    made = []
    for tool, arguments in [
        ("batch_update_notebook_cells", {"updates": [{"cell_id": last, "content": f"x = {count - 1}  # checked"}]}),
        ("batch_insert_notebook_cells", {"after_cell_id": middle, "cells": [{"content": "new = 1"}]}),
        ("batch_delete_notebook_cells", {"cell_ids": [f"c{count - 2}"]}),
        ("batch_update_notebook_cells", {"updates": [{"cell_id": last, "content": f"# first\nx = {count - 1}"}]}),
    ]:
        extra = {} if tool == "batch_delete_notebook_cells" else {"exec": False}
        result = await call_tool(client, tool, path=path, propose=True, **extra, **arguments)
        made.append(result["suggestion"]["id"])
    for suggestion_id in made:
        response = await people.decide(suggestion_id, "accept")
        assert response.status_code == 200, response.text
        assert response.json()["state"] == "accepted"
    return made


@pytest.fixture
def opened(jp_root_dir: Any, mcp_client: Any, jp_asyncio_loop: Any) -> dict[int, str]:
    """A 50- and a 5,000-cell notebook whose rooms are open, with their cell indexes (not the test's subject)."""
    paths = {count: big(jp_root_dir, f"review-{count}.ipynb", count) for count in (50, 5_000)}

    async def open_rooms() -> None:
        async with mcp_client() as client:
            for path in paths.values():
                result = await within(client.call_tool("get_notebook_info", {"path": path}), 120)
                assert not result.is_error, result

    jp_asyncio_loop.run_until_complete(open_rooms())
    return paths


@OPENED_AND_SAVED
async def test_proposing_and_accepting_do_not_read_the_whole_notebook(
    mcp_client: Any,
    people: People,
    opened: dict[int, str],
    extension: Any,
    monkeypatch: pytest.MonkeyPatch,
    accesses: Accesses,
) -> None:
    whole = WholeReads(monkeypatch)
    found: dict[int, tuple[int, int]] = {}
    for count, path in opened.items():
        async with mcp_client() as client:
            await call_tool(client, "get_notebook_info", path=path)  # the room is open: its index is reused
            accesses.docs.append(extension.rooms.live_ydoc(path, "notebook"))
            whole.n, accesses.n, accesses.steps = 0, 0, 0
            whole.names.clear()
            await _propose_and_accept(client, people, path, count)
            found[count] = (whole.n, accesses.n)
            read = await call_tool(client, "get_notebook", path=path, start_index=count - 4, end_index=count)
        sources = [c["source"] for c in read["cells"]]
        assert sources[-2:] == [f"x = {count - 3}", f"# first\nx = {count - 1}  # checked"], sources
    assert found[50][0] == found[5_000][0] == 0, f"whole-notebook reads on the loop: {found} {whole.names}"
    assert found[50][1] == found[5_000][1], f"array accesses grow with the notebook: {found}"


@pytest.fixture
def huge(jp_root_dir: Any, mcp_client: Any, jp_asyncio_loop: Any) -> str:
    """A 20,000-cell notebook whose room is open (opening it is not the test's subject)."""
    path = big(jp_root_dir, "huge-review.ipynb", HUGE)

    async def open_room() -> None:
        async with mcp_client() as client:
            # Opens the room and builds its cell index: seconds, more on a loaded machine, so it gets a longer
            # deadline than a call.
            result = await within(client.call_tool("get_notebook_info", {"path": path}), 300)
            assert not result.is_error, result

    jp_asyncio_loop.run_until_complete(open_room())
    return path


@pytest.mark.loop_bound(
    10.0,
    reason="opening and saving a big room is jupyter_server's and jupyter-collaboration's work on the loop, and our "
    "cell index's first build",
    phases=("setup", "teardown"),
)
async def test_a_proposal_on_a_huge_notebook_keeps_the_loop_free(mcp_client: Any, people: People, huge: str) -> None:
    async with mcp_client() as client:
        await _propose_and_accept(client, people, huge, HUGE)
        read = await call_tool(client, "get_notebook", path=huge, start_index=HUGE - 1, end_index=HUGE)
    assert read["cells"][-1]["source"] == f"# first\nx = {HUGE - 1}  # checked"
