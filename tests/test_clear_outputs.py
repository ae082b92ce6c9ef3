"""clear_notebook_outputs: outputs and execution counts go, live (a person in the room sees them go), as one
agent edit undo_agent_edits takes back; the cells are fetched a bounded walk per loop turn (counted, not timed)."""

from __future__ import annotations

from typing import Any

import pycrdt
import pytest

from jupyter_pair_mcp.adapters.rooms import clearing
from jupyter_pair_mcp.adapters.rooms.notebook import NotebookView
from jupyter_pair_mcp.adapters.rooms.saving import state_of
from jupyter_pair_mcp.tools import outputs as outputs_tool

from .conftest import call_tool, document_room, notebook_json, tool_error, within
from .test_scaling import Accesses, counting

OUT = {"output_type": "stream", "name": "stdout", "text": "printed\n"}


def ran(i: int) -> dict[str, Any]:
    return {"id": f"c{i}", "cell_type": "code", "source": f"print({i})", "outputs": [OUT], "execution_count": i + 1}


CELLS = [ran(0), {"id": "m1", "cell_type": "markdown", "source": "# Title"}, ran(2), ran(3)]


def shown(human: Any) -> list[tuple[int, Any]]:
    """(outputs, execution_count) of each code cell as the person's document has them."""
    return [(len(c.get("outputs") or []), c.get("execution_count")) for c in human.cells() if c["cell_type"] == "code"]


async def test_a_person_sees_outputs_go_and_undo_brings_them_back(
    mcp_client: Any, make_notebook: Any, collaborator: Any
) -> None:
    path = make_notebook("ran.ipynb", CELLS)
    async with collaborator(path) as human, mcp_client() as client:
        assert shown(human) == [(1, 1), (1, 3), (1, 4)]
        result = await call_tool(client, "clear_notebook_outputs", path=path)
        assert result == {"cleared": 3, "cell_ids": ["c0", "c2", "c3"], "edits": 1, "cell_count": 4}
        await human.wait_until(lambda: shown(human) == [(0, None), (0, None), (0, None)])
        again = await call_tool(client, "clear_notebook_outputs", path=path)
        assert (again["cleared"], again["edits"]) == (0, 0)  # nothing left to clear: no edit
        undone = await call_tool(client, "undo_agent_edits", path=path)
        assert undone["undone"] == ["cleared outputs of 3 cells (c0, c2, c3)"]
        await human.wait_until(lambda: shown(human) == [(1, 1), (1, 3), (1, 4)])
        read = await call_tool(client, "get_notebook", path=path)
        assert [c["outputs"][0]["text"] for c in read["cells"] if c["outputs"]] == ["printed\n"] * 3


async def test_only_the_chosen_cells_are_cleared(mcp_client: Any, make_notebook: Any, collaborator: Any) -> None:
    path = make_notebook("chosen.ipynb", CELLS)
    async with collaborator(path) as human, mcp_client() as client:
        result = await call_tool(client, "clear_notebook_outputs", path=path, cell_ids=["c2", "m1"])
        assert result["cell_ids"] == ["c2"]
        await human.wait_until(lambda: shown(human) == [(1, 1), (0, None), (1, 4)])


async def test_bad_input_is_a_tool_error(mcp_client: Any, make_notebook: Any) -> None:
    path = make_notebook("bad.ipynb", CELLS)
    async with mcp_client() as client:
        assert "no cell with id 'nope'" in await tool_error(
            client, "clear_notebook_outputs", path=path, cell_ids=["nope"]
        )
        assert "cell_ids is empty" in await tool_error(client, "clear_notebook_outputs", path=path, cell_ids=[])
        assert "no notebook at" in await tool_error(client, "clear_notebook_outputs", path="missing.ipynb")
        read = await call_tool(client, "get_notebook", path=path)
    assert sum(len(c["outputs"]) for c in read["cells"]) == 3  # nothing was cleared


@pytest.fixture
def accesses(monkeypatch: pytest.MonkeyPatch) -> Accesses:
    return counting(monkeypatch)


HUGE = 10_000


@pytest.fixture
def huge(jp_root_dir: Any, mcp_client: Any, jp_asyncio_loop: Any) -> str:
    """A 10,000-cell notebook, every cell run, whose room is open (opening it is not the test's subject)."""
    (jp_root_dir / "huge.ipynb").write_text(notebook_json([ran(i) for i in range(HUGE)]))

    async def open_room() -> None:
        async with mcp_client() as client:
            # Opens the room and builds its index: seconds (the file read and signed, the room filled, the index).
            opened = await within(client.call_tool("get_notebook_info", {"path": "huge.ipynb"}), 300)
            assert not opened.is_error, opened

    jp_asyncio_loop.run_until_complete(open_room())
    return "huge.ipynb"


@pytest.mark.loop_bound(
    10.0,
    reason="opening and saving a 10,000-cell room: jupyter_server reads and signs the file, the room applies it",
    phases=("setup", "teardown"),
)
async def test_clearing_10000_cells_keeps_the_loop_free(
    mcp_client: Any, huge: str, extension: Any, accesses: Accesses, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each live cell is fetched once (index access walks the array to it), the walks of one edit stay within
    the tool's budget, so does each edit's transaction (the loop monitor fails any step past its bound); no cell
    is converted whole. Undo is tested on a small notebook: undo_agent_edits reads every cell id at once."""
    walked: list[int] = []
    original = NotebookView.fetch_cells

    def counted_fetch(self: Any, indexes: list[int], into: list[Any], budget: int) -> None:
        before = accesses.steps
        original(self, indexes, into, budget)
        walked.append(accesses.steps - before)

    conversions = 0
    to_py = pycrdt.Map.to_py

    def counted_to_py(self: Any) -> Any:
        nonlocal conversions
        conversions += 1
        return to_py(self)

    monkeypatch.setattr(NotebookView, "fetch_cells", counted_fetch)
    monkeypatch.setattr(pycrdt.Map, "to_py", counted_to_py)
    accesses.docs.append(extension.rooms.live_ydoc(huge, "notebook"))
    # The clear's hundreds of edits take ~20 s: the bounded save interval would write the room meanwhile, and
    # jupyter_server's save signs the whole notebook on the loop (~11 us a cell, ~110 ms here; upstream, see
    # docs/notebooks.md). The save is not this test's subject: it comes after the clear, as before.
    state = state_of(document_room(extension.serverapp, huge))
    assert state is not None
    state.max_interval = 0
    async with mcp_client() as client:
        # Hundreds of small edits, each paying pycrdt's per-event path walk for every observer (O(index) a cell):
        # about 20 s on an idle machine, so a longer deadline than a call's; the loop stays free meanwhile.
        cleared = await within(client.call_tool("clear_notebook_outputs", {"path": huge}), 300)
        assert not cleared.is_error, cleared
        result = cleared.structured_content
        assert result["cleared"] == HUGE and len(result["cell_ids"]) == outputs_tool.MAX_LISTED
        assert result["edits"] == len(clearing.batches([(i, f"c{i}") for i in range(HUGE)])) > 100
        assert accesses.n == HUGE, "each cleared cell is fetched once"
        assert conversions == 0
        assert max(walked) <= clearing.POSITIONS_PER_EDIT, max(walked)
        tail = await call_tool(client, "get_notebook", path=huge, start_index=HUGE - 2)
        assert [(c["outputs"], c["execution_count"]) for c in tail["cells"]] == [([], None), ([], None)]


def test_edits_hold_at_most_a_batch_and_a_walk_budget() -> None:
    far = [(clearing.POSITIONS_PER_EDIT + i, f"c{i}") for i in range(5)]
    assert [len(b) for b in clearing.batches([(i, f"c{i}") for i in range(250)])] == [100, 100, 50]
    assert [len(b) for b in clearing.batches(far)] == [1, 1, 1, 1, 1]


class TestReviewMode:
    @pytest.fixture
    def mcp_config(self) -> dict[str, Any]:
        return {"review_mode": True}

    async def test_a_clear_is_refused_and_changes_nothing(self, mcp_client: Any, make_notebook: Any) -> None:
        path = make_notebook("review.ipynb", CELLS)
        async with mcp_client() as client:
            assert "review mode is on" in await tool_error(client, "clear_notebook_outputs", path=path)
            read = await call_tool(client, "get_notebook", path=path)
        assert sum(len(c["outputs"]) for c in read["cells"]) == 3
