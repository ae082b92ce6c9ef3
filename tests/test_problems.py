"""get_notebook_problems: failed, never-run and out-of-order cells and names used before any cell above defines
them, read from the live room without running anything; paged past its bounds; shaped off the loop (the loop-side
cost does not grow with the notebook: counted, not timed)."""

from __future__ import annotations

from typing import Any

import pycrdt
import pytest

from jupyter_pair_mcp.adapters.rooms.names import cell_names, notebook_names
from jupyter_pair_mcp.tools.notebook import MAX_PROBLEM_ROWS

from .conftest import call_tool, tool_error
from .test_scaling import Accesses, counting

pytestmark = pytest.mark.usefixtures("jp_serverapp")

#: An error output as IPython 8 writes it: colored, the cell's own frame first, then a library frame.
TRACEBACK = [
    "\x1b[0;31m---------------------------------------------------------------------------\x1b[0m",
    "\x1b[0;31mKeyError\x1b[0m                                  Traceback (most recent call last)",
    "Cell \x1b[0;32mIn[4], line 3\x1b[0m\n\x1b[1;32m      1\x1b[0m x \x1b[38;5;241m=\x1b[39m \x1b[38;5;241m1\x1b[39m\n"
    "\x1b[0;32m----> 3\x1b[0m \x1b[43mlookup\x1b[49m\x1b[43m(\x1b[49m\x1b[43m)\x1b[49m\n",
    "File \x1b[0;32m/lib/site.py:10\x1b[0m, in \x1b[0;36mlookup\x1b[0;34m()\x1b[0m\n\x1b[0;32m---> 10\x1b[0m d['k']\n",
    "\x1b[0;31mKeyError\x1b[0m: 'k'",
]
ERROR = {"output_type": "error", "ename": "KeyError", "evalue": "'k'", "traceback": TRACEBACK}


def code(cell_id: str, source: str, count: int | None = None, outputs: list[Any] | None = None) -> dict[str, Any]:
    return {"id": cell_id, "cell_type": "code", "source": source, "execution_count": count, "outputs": outputs or []}


CELLS = [
    {"id": "title", "cell_type": "markdown", "source": "# Uses `undefined_in_markdown`"},
    code("imports", "import pandas as pd\n%matplotlib inline\nfiles = !ls", 1),
    code("load", "df = pd.read_csv(path)\nx = 1\n\nlookup()", 4, [ERROR]),
    code("early", "print(total, df)\nsquares = [i * i for i in range(3)]", 2),
    code("defines", "path = 'data.csv'\ntotal = sum(squares)", 5),
    code("functions", "def show(a=df):\n    return later_only + a\nclass Frame(pd.DataFrame):\n    n = x", 6),
    code("unrun", "show()"),
    code("empty", "   "),
    code("magic", "%%bash\necho $HOME"),
    code("broken", "y = (", 7),
    code("after", "print(never_defined)", 8),
]


async def test_problems_at_a_glance(mcp_client: Any, make_notebook: Any) -> None:
    path = make_notebook("problems.ipynb", CELLS)
    async with mcp_client() as client:
        found = await call_tool(client, "get_notebook_problems", path=path)
    rows = {row["id"]: row for row in found["problems"]}
    assert found["cell_count"] == len(CELLS) and found["next_index"] is None
    assert rows["load"] == {
        "i": 2,
        "id": "load",
        "error": "KeyError",
        "message": "'k'",
        "line": 3,  # the cell's own frame, not the library's below it
        "undefined": {"path": 4, "lookup": None},  # path: the first cell below that defines it
    }
    # Ran second, after a cell above that ran fourth; uses a name only a cell below defines, and one the failed
    # cell above defines (a definition, whether or not its run got that far: nothing is run to know).
    assert rows["early"] == {"i": 3, "id": "early", "ran": 2, "ran_before": {"i": 2, "n": 4}, "undefined": {"total": 4}}
    assert rows["unrun"] == {"i": 6, "id": "unrun", "never_run": True}
    assert rows["magic"] == {"i": 8, "id": "magic", "never_run": True}
    assert rows["broken"] == {"i": 9, "id": "broken", "syntax": "line 1: '(' was never closed"}
    # Function bodies run when called (names there are not judged); magics, builtins, comprehension variables,
    # imports and the markdown cell are no problem; an empty cell was never run and that is fine.
    assert set(rows) == {"load", "early", "unrun", "magic", "broken"}
    # What a cell that does not parse defines is unknown: names below it are not checked.
    assert found["names_checked"] is True and found["names_unchecked_from"] == 9
    assert found["totals"] == {"failed": 1, "never_run": 2, "out_of_order": 1, "undefined": 2, "syntax": 1}


async def test_a_real_failed_run_and_a_fix_are_seen_live(mcp_client: Any, make_notebook: Any, extension: Any) -> None:
    path = make_notebook("live.ipynb", [code("a", "x = 1\n\ny = x / 0"), code("b", "print(z)")])
    async with mcp_client() as client:
        ran = await call_tool(client, "execute_notebook_cell", path=path, cell_id="a", timeout=60)
        assert ran["status"] == "error"
        offloaded = extension.rooms.scanner.offloaded["_scan_update"]
        found = await call_tool(client, "get_notebook_problems", path=path)
        # Parsing holds the GIL in one C call per cell: in the scan process even for a two-cell notebook.
        assert extension.rooms.scanner.offloaded["_scan_update"] == offloaded + 1
        assert found["problems"][0] == {
            "i": 0,
            "id": "a",
            "error": "ZeroDivisionError",
            "message": "division by zero",
            "line": 3,  # read from the kernel's own traceback, colors and all
        }
        assert found["problems"][1] == {"i": 1, "id": "b", "never_run": True, "undefined": {"z": None}}
        scans = extension.rooms.problems.scans
        again = await call_tool(client, "get_notebook_problems", path=path, start_index=1)
        assert again["problems"] == found["problems"][1:] and extension.rooms.problems.scans == scans  # kept
        await call_tool(
            client, "batch_update_notebook_cells", path=path, updates=[{"cell_id": "b", "content": "z = 2"}], exec=False
        )
        fixed = await call_tool(client, "get_notebook_problems", path=path)
    assert fixed["problems"][1] == {"i": 1, "id": "b", "never_run": True}  # the edit is a new version: scanned again


async def test_past_its_bound_the_answer_pages_with_next_index(mcp_client: Any, make_notebook: Any) -> None:
    count = MAX_PROBLEM_ROWS * 2 + 10
    path = make_notebook("many.ipynb", [code(f"c{i}", f"v{i} = {i}") for i in range(count)])
    seen: list[int] = []
    start: int | None = 0
    async with mcp_client() as client:
        while start is not None:
            found = await call_tool(client, "get_notebook_problems", path=path, start_index=start)
            assert len(found["problems"]) <= MAX_PROBLEM_ROWS
            assert found["totals"]["never_run"] == count  # the whole notebook's, on every page
            seen += [row["i"] for row in found["problems"]]
            start = found["next_index"]
        middle = await call_tool(client, "get_notebook_problems", path=path, start_index=count - 3)
    assert seen == list(range(count))
    assert [row["i"] for row in middle["problems"]] == [count - 3, count - 2, count - 1]


async def test_names_are_not_checked_in_another_language(mcp_client: Any, jp_root_dir: Any) -> None:
    from .conftest import notebook_json

    cells = [code("r", "print(undefined_r_thing)", 1), code("s", "x <- (", 2)]
    (jp_root_dir / "r.ipynb").write_text(notebook_json(cells, language_info={"name": "R"}))
    async with mcp_client() as client:
        found = await call_tool(client, "get_notebook_problems", path="r.ipynb")
    assert found["problems"] == [] and found["names_checked"] is False


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
    found: dict[int, tuple[int, int, int]] = {}
    async with mcp_client() as client:
        for count in (50, 5000):
            path = make_notebook(f"flat-{count}.ipynb", [code(f"c{i}", f"y{i} = x{i}") for i in range(count)])
            await call_tool(client, "get_notebook_info", path=path)  # opens the room, builds its cell index
            accesses.docs.append(extension.rooms.live_ydoc(path, "notebook"))
            accesses.n, conversions, scans = 0, 0, extension.rooms.problems.scans
            rows = (await call_tool(client, "get_notebook_problems", path=path))["problems"]
            assert len(rows) == min(count, MAX_PROBLEM_ROWS) and rows[-1]["undefined"]
            found[count] = (accesses.n, conversions, extension.rooms.problems.scans - scans)
    assert found[50] == found[5000] == (0, 0, 1), found


async def test_bad_input_is_a_tool_error(make_notebook: Any, mcp_client: Any) -> None:
    path = make_notebook("small.ipynb", count=3)
    async with mcp_client() as client:
        assert "no notebook at" in await tool_error(client, "get_notebook_problems", path="nope.ipynb")
        message = await tool_error(client, "get_notebook_problems", path=path, start_index=4)
        assert "not within the notebook's 3 cells" in message
        assert "not within" in await tool_error(client, "get_notebook_problems", path=path, start_index=-1)
        assert (await call_tool(client, "get_notebook_problems", path=path, start_index=3))["problems"] == []


# -- the name check's rules (pure logic) -----------------------------------------------------------------------
def undefined(*sources: str) -> dict[int, dict[str, int | None]]:
    return notebook_names(list(enumerate(sources))).undefined


def test_what_counts_as_a_definition() -> None:
    assert undefined(
        "import os.path, numpy as np\nfrom json import loads",
        "for i, (a, b) in enumerate([]): pass\nwith open('f') as fh: pass\ntry: pass\nexcept Exception as err: pass",
        "(w := 1)\nmatch w:\n    case {'k': v, **rest}: pass\n    case [first, *others]: pass\n"
        "    case Point(x=px) as p: pass",
        "def f(): global g; g = 1\nclass C: pass\nasync def h(): pass\nn = 0\nn += 1",
        "print(os, np, loads, i, a, b, fh, err, w, v, rest, first, others, px, p, g, f, C, h, n, Point)",
    ) == {2: {"Point": None}, 4: {"Point": None}}


def test_ipython_names_magics_and_deferred_code_are_never_reported() -> None:
    assert (
        undefined(
            "display(In, Out, _, __, _1, _i2, get_ipython, __name__, __file__)",
            "%time t = 1\nr = %sx ls\n!echo hi\nobj?\n??obj",
            "print(t, r)\nfn = lambda q: q + later\ndef g(x: Later) -> Later: return later",
            "%%time\nprint(t)",
            "later = 1",
        )
        == {}
    )
    assert cell_names("%%capture out\nprint(1)").defines == {"out"}


def test_automagic_lines_are_magics_not_syntax_errors() -> None:
    """IPython runs ``pip install x`` or a bare ``ls`` as the magic of that name (automagic, on by default)."""
    assert undefined("pip install pandas\nimport pandas as pd\ncd data\nls\npwd", "print(pd)") == {}
    assert cell_names("pip install pandas").syntax is None
    assert notebook_names(list(enumerate(["run helper.py", "print(q)"]))).unchecked_from == 0  # %run, unseen
    assert cell_names("print x").syntax == "line 1: Missing parentheses in call to 'print'. Did you mean print(...)?"


@pytest.mark.parametrize(
    "opaque",
    ["from os import *", "exec('q = 1')", "globals()['q'] = 1", "%run a.py", "%%sql\nselect 1", "x = (", "y" * 100_001],
)
def test_what_may_define_names_unseen_stops_the_check(opaque: str) -> None:
    report = notebook_names(list(enumerate(["print(a)", opaque, "print(q)"])))
    assert report.undefined == {0: {"a": None}} and report.unchecked_from == 1


def test_a_hostile_cell_is_reported_not_raised() -> None:
    assert cell_names("(" * 1000 + ")" * 1000).syntax == "line 1: too many nested parentheses"
    assert cell_names("-" * 50_000 + "1").syntax == "not parsed (MemoryError)"  # past the parser's limits
    assert cell_names("x = 1\0").syntax is not None
    long_name = "n" * 5000
    [(name, later)] = undefined(f"print({long_name})")[0].items()
    assert len(name) == 80 and name.endswith("…") and later is None
