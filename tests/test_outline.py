"""get_notebook_outline: a notebook's shape without its text, whole in one answer for 2000 cells, paged past
its bounds, and shaped off the loop (the loop-side cost does not grow with the notebook: counted, not timed)."""

from __future__ import annotations

import json
import uuid
from typing import Any

import pycrdt
import pytest

from jupyter_pair_mcp.adapters.rooms.outline import LINE_CHARS, outline

from .conftest import call_tool, notebook_json, tool_error
from .test_scaling import Accesses, counting

ERROR = {"output_type": "error", "ename": "ZeroDivisionError", "evalue": "division by zero", "traceback": ["1/0", "!"]}


def stream(text: str) -> dict[str, Any]:
    return {"output_type": "stream", "name": "stdout", "text": text}


def cells_of(count: int) -> list[dict[str, Any]]:
    """Every 10th cell a markdown heading (levels 1-6), the others code; every code cell printed, one errored."""
    cells: list[dict[str, Any]] = []
    for i in range(count):
        cell_id = str(uuid.UUID(int=i))  # ids as long as JupyterLab's
        if i % 10 == 0:
            level = i // 10 % 6 + 1
            cells.append({"id": cell_id, "cell_type": "markdown", "source": f"{'#' * level} Section {i}\n\nText."})
        else:
            outputs = [stream(f"value {i}\n" * (i % 4 + 1))] + ([ERROR] if i == 1234 else [])
            source = f"result_{i} = compute(data, step={i})  # a comment long enough to be cut off here\nmore()"
            cells.append({"id": cell_id, "cell_type": "code", "source": source, "outputs": outputs})
            cells[-1]["execution_count"] = i
    return cells


def compact(value: Any) -> int:
    return len(json.dumps(value, separators=(",", ":"), ensure_ascii=False).encode())


async def test_a_2000_cell_notebook_is_outlined_whole_in_one_answer(mcp_client: Any, jp_root_dir: Any) -> None:
    cells = cells_of(2000)
    (jp_root_dir / "big.ipynb").write_text(notebook_json(cells))
    async with mcp_client() as client:
        found = await call_tool(client, "get_notebook_outline", path="big.ipynb")
    rows = found["cells"]
    assert found["cell_count"] == 2000 and len(rows) == 2000 and found["next_index"] is None
    assert compact(found) / 2000 <= 150, compact(found) / 2000
    assert [r["i"] for r in rows] == list(range(2000))
    assert [r["id"] for r in rows] == [c["id"] for c in cells]
    assert rows[30] == {"i": 30, "id": cells[30]["id"], "t": "md", "l": "#### Section 30", "h": 4}
    code = rows[7]
    assert code["t"] == "code" and code["n"] == 7 and "h" not in code and "err" not in code
    assert code["l"] == cells[7]["source"].splitlines()[0][: LINE_CHARS - 1] + "…"
    assert code["o"] == {"stream": 1} and code["b"] == compact(cells[7]["outputs"])
    errored = rows[1234]
    assert errored["err"] is True and errored["o"] == {"stream": 1, "error": 1}
    assert errored["b"] == compact(cells[1234]["outputs"])
    assert sum(1 for r in rows if r.get("err")) == 1
    assert {r["h"] for r in rows if "h" in r} == {1, 2, 3, 4, 5, 6}


@pytest.fixture
def long(make_notebook: Any, mcp_client: Any, jp_asyncio_loop: Any) -> str:
    """A 6,000-cell notebook whose room is open: opening it is jupyter-collaboration's step on the loop (it applies
    the loaded file to the room in one pycrdt call, ~40 ms idle), not the test's subject."""
    path = make_notebook("long.ipynb", count=6000)

    async def open_room() -> None:
        async with mcp_client() as client:
            await call_tool(client, "get_notebook_info", path=path)

    jp_asyncio_loop.run_until_complete(open_room())
    return str(path)


@pytest.mark.loop_bound(
    10.0,
    reason="jupyter-collaboration opens (setup) and saves (teardown) a 6,000-cell room",
    phases=("setup", "teardown"),
)
async def test_past_its_bound_the_outline_pages_with_next_index(long: str, mcp_client: Any) -> None:
    path = long
    async with mcp_client() as client:
        first = await call_tool(client, "get_notebook_outline", path=path)
        assert len(first["cells"]) == 5000 and first["next_index"] == 5000
        rest = await call_tool(client, "get_notebook_outline", path=path, start_index=first["next_index"])
    assert [r["i"] for r in rest["cells"]] == list(range(5000, 6000)) and rest["next_index"] is None
    assert rest["cells"][-1]["l"] == "x = 5999"


def test_the_byte_bound_pages_too_and_the_first_row_always_comes_back() -> None:
    snapshot = json.dumps([{"id": f"c{i}", "cell_type": "code", "source": "y" * 100} for i in range(10)])
    paged = outline(snapshot, 2, None, 300, 5000)
    assert [r["i"] for r in paged.rows] == [2, 3, 4] and paged.next_index == 5
    assert [r["i"] for r in outline(snapshot, 0, None, 1, 5000).rows] == [0]


@pytest.fixture
def accesses(monkeypatch: pytest.MonkeyPatch) -> Accesses:
    return counting(monkeypatch)


@pytest.mark.loop_bound(
    0.5, reason="opening a 5000-cell room: jupyter_server reads and signs the file, the room applies it, on the loop"
)
async def test_the_loop_side_cost_does_not_grow_with_the_notebook(
    make_notebook: Any, mcp_client: Any, extension: Any, accesses: Accesses, monkeypatch: pytest.MonkeyPatch
) -> None:
    conversions = 0
    to_py = pycrdt.Map.to_py

    def counted_to_py(self: Any) -> Any:
        nonlocal conversions
        conversions += 1
        return to_py(self)

    monkeypatch.setattr(pycrdt.Map, "to_py", counted_to_py)
    found: dict[int, tuple[int, int]] = {}
    async with mcp_client() as client:
        for count in (50, 5000):
            path = make_notebook(f"flat-{count}.ipynb", count=count)
            await call_tool(client, "get_notebook_info", path=path)  # opens the room, builds its cell index
            accesses.docs.append(extension.rooms.live_ydoc(path, "notebook"))
            accesses.n, conversions = 0, 0
            rows = (await call_tool(client, "get_notebook_outline", path=path))["cells"]
            assert len(rows) == count
            found[count] = (accesses.n, conversions)
    assert found[50] == found[5000] == (0, 0), found


async def test_bad_input_is_a_tool_error(make_notebook: Any, mcp_client: Any) -> None:
    path = make_notebook("small.ipynb", count=3)
    async with mcp_client() as client:
        assert "no notebook at" in await tool_error(client, "get_notebook_outline", path="nope.ipynb")
        assert "not within the notebook's 3 cells" in await tool_error(
            client, "get_notebook_outline", path=path, start_index=4
        )
        assert "not within" in await tool_error(client, "get_notebook_outline", path=path, start_index=-1)
        assert (await call_tool(client, "get_notebook_outline", path=path, start_index=3))["cells"] == []
