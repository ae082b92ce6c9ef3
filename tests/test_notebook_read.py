"""Reading notebooks through the live room: slices, ids, outputs, limits, info, search, errors."""

from __future__ import annotations

from typing import Any

import pytest

from .conftest import call_tool, tool_error

pytestmark = pytest.mark.usefixtures("jp_serverapp")

OUTPUT_CELLS = [
    {"cell_type": "markdown", "source": "# Title", "id": "md"},
    {
        "cell_type": "code",
        "source": "print('hi')\n1 + 1",
        "id": "run",
        "execution_count": 3,
        "outputs": [
            {"output_type": "stream", "name": "stdout", "text": "hi\n"},
            {"output_type": "execute_result", "execution_count": 3, "metadata": {}, "data": {"text/plain": "2"}},
        ],
    },
    {
        "cell_type": "code",
        "source": "1/0",
        "id": "err",
        "execution_count": 4,
        "outputs": [
            {
                "output_type": "error",
                "ename": "ZeroDivisionError",
                "evalue": "division by zero",
                "traceback": ["\x1b[0;31mZeroDivisionError\x1b[0m: division by zero"],
            }
        ],
    },
    {
        "cell_type": "code",
        "source": "plot()",
        "id": "img",
        "execution_count": 5,
        "outputs": [
            {
                "output_type": "display_data",
                "metadata": {},
                "data": {"image/png": "iVBORw0KGgo=", "text/plain": "<Figure>"},
            },
            {
                "output_type": "display_data",
                "metadata": {},
                "data": {"text/html": "<table><tr><td>a</td></tr></table>"},
            },
        ],
    },
    {"cell_type": "raw", "source": "raw text", "id": "raw"},
    {
        "cell_type": "code",
        "source": "long()",
        "id": "long",
        "outputs": [{"output_type": "stream", "name": "stdout", "text": "x" * 5000}],
    },
]


@pytest.fixture
def nb(make_notebook: Any) -> str:
    return make_notebook("work/outputs.ipynb", OUTPUT_CELLS)


async def test_get_notebook_renders_cells_and_outputs(mcp_client: Any, nb: str) -> None:
    async with mcp_client() as client:
        data = await call_tool(client, "get_notebook", path=nb)
    assert data["path"] == nb
    assert data["cell_count"] == 6
    assert [c["id"] for c in data["cells"]] == ["md", "run", "err", "img", "raw", "long"]
    assert [c["index"] for c in data["cells"]] == [0, 1, 2, 3, 4, 5]
    run = data["cells"][1]
    assert run["execution_count"] == 3
    assert [o["text"] for o in run["outputs"]] == ["hi\n", "2"]
    err = data["cells"][2]["outputs"][0]["text"]
    assert err.startswith("ZeroDivisionError: division by zero")
    assert "\x1b" not in err
    image, html = data["cells"][3]["outputs"]
    assert image["mime"] == "image/png"
    assert "image/png image" in image["text"]
    assert "<Figure>" in image["text"]
    assert html["text"] == "a"
    long_text = data["cells"][5]["outputs"][0]["text"]
    assert long_text.startswith("x" * 2000)
    assert "3000 more characters cut" in long_text
    assert data["metadata"]["kernelspec"]["name"] == "python3"
    assert data["metadata"]["nbformat"] == "4.5"
    assert data["truncated"] is True  # an output was cut: the result says so, and names the cell
    assert data["cut_cells"] == ["long"]
    assert data["next_index"] is None
    assert all(len(c["revision"]) == 12 for c in data["cells"])
    assert data["collaboration"]["room_id"].startswith("json:notebook:")


async def test_slices_ids_and_no_outputs(mcp_client: Any, nb: str) -> None:
    async with mcp_client() as client:
        part = await call_tool(client, "get_notebook", path=nb, start_index=1, end_index=3, include_outputs=False)
        assert [c["id"] for c in part["cells"]] == ["run", "err"]
        assert all(c["outputs"] == [] for c in part["cells"])
        by_id = await call_tool(client, "get_notebook", path=nb, cell_ids=["raw", "md"])
        assert [c["id"] for c in by_id["cells"]] == ["raw", "md"]
        assert [c["index"] for c in by_id["cells"]] == [4, 0]
        empty = await call_tool(client, "get_notebook", path=nb, start_index=6)
        assert empty["cells"] == []
        quiet = await call_tool(client, "get_notebook", path=nb, include_collaboration_state=False)
        assert quiet["collaboration"] is None


async def test_max_content_length_truncates_with_next_index(mcp_client: Any, make_notebook: Any) -> None:
    path = make_notebook("big.ipynb", [{"cell_type": "code", "source": "y" * 100} for _ in range(20)])
    async with mcp_client() as client:
        first = await call_tool(client, "get_notebook", path=path, max_content_length=350)
        assert len(first["cells"]) == 3
        assert first["truncated"] is True
        assert first["next_index"] == 3
        rest = await call_tool(
            client, "get_notebook", path=path, start_index=first["next_index"], max_content_length=10_000
        )
        assert len(rest["cells"]) == 17
        assert rest["truncated"] is False
        huge = await call_tool(client, "get_notebook", path=path, max_content_length=40)
        assert len(huge["cells"]) == 1
        assert "more characters cut" in huge["cells"][0]["source"]


async def test_get_notebook_info(mcp_client: Any, nb: str) -> None:
    async with mcp_client() as client:
        info = await call_tool(client, "get_notebook_info", path=nb)
    assert info == {
        "path": nb,
        "name": "outputs.ipynb",
        "cell_count": 6,
        "code_count": 4,
        "markdown_count": 1,
        "raw_count": 1,
        "executed_count": 3,
        "nbformat": "4.5",
        "kernelspec": "python3",
        "kernel": None,
        "last_modified": info["last_modified"],
        "collaborators": 0,
    }
    assert info["last_modified"].startswith("20")


async def test_search_notebook(mcp_client: Any, make_notebook: Any) -> None:
    cells = [
        {"cell_type": "code", "source": "import pandas as pd\ndf = pd.read_csv('x')", "id": "a"},
        {"cell_type": "markdown", "source": "We use Pandas here", "id": "b"},
        {"cell_type": "code", "source": "df.head()", "id": "c"},
    ]
    path = make_notebook("search.ipynb", cells)
    async with mcp_client() as client:
        found = await call_tool(client, "search_notebook", path=path, query="pandas")
        assert [(m["cell_id"], m["line"], m["column"]) for m in found["matches"]] == [("a", 1, 8), ("b", 1, 8)]
        sensitive = await call_tool(client, "search_notebook", path=path, query="Pandas", case_sensitive=True)
        assert [m["cell_id"] for m in sensitive["matches"]] == ["b"]
        code_only = await call_tool(client, "search_notebook", path=path, query="pandas", cell_type="code")
        assert [m["cell_id"] for m in code_only["matches"]] == ["a"]
        rx = await call_tool(client, "search_notebook", path=path, query=r"(pd|df)\.\w+", regex=True)
        assert [(m["cell_id"], m["line"], m["column"], m["text"]) for m in rx["matches"]] == [
            ("a", 2, 6, "df = pd.read_csv('x')"),
            ("c", 1, 1, "df.head()"),
        ]
        capped = await call_tool(client, "search_notebook", path=path, query="d", max_results=2)
        assert len(capped["matches"]) == 2
        assert capped["truncated"] is True
        assert "invalid regular expression" in await tool_error(
            client, "search_notebook", path=path, query="(", regex=True
        )


@pytest.mark.parametrize(
    ("args", "words"),
    [
        ({"path": "missing.ipynb"}, "no notebook at 'missing.ipynb'"),
        ({"path": "work"}, "is a directory, not a notebook"),
        ({"path": "notes.md"}, "is a file, not a notebook"),
        ({"path": "../x.ipynb"}, "leaves the Jupyter root"),
        ({"path": "work/outputs.ipynb", "start_index": -1}, "must not be negative"),
        ({"path": "work/outputs.ipynb", "start_index": 7}, "not within the notebook's 6 cells"),
        ({"path": "work/outputs.ipynb", "start_index": 3, "end_index": 2}, "not within"),
        ({"path": "work/outputs.ipynb", "cell_ids": ["nope"]}, "no cell with id 'nope'"),
        ({"path": "work/outputs.ipynb", "max_content_length": 0}, "max_content_length"),
    ],
)
async def test_read_errors_name_the_problem(
    mcp_client: Any, nb: str, jp_root_dir: Any, args: dict[str, Any], words: str
) -> None:
    (jp_root_dir / "notes.md").write_text("hello")
    async with mcp_client() as client:
        assert words in await tool_error(client, "get_notebook", **args)


async def test_missing_notebook_leaves_no_ghost_room(mcp_client: Any, jp_root_dir: Any, make_notebook: Any) -> None:
    """Asking for a missing notebook must not leave a room that later serves an empty document."""
    async with mcp_client() as client:
        await tool_error(client, "get_notebook", path="later.ipynb")
        make_notebook("later.ipynb", count=2)
        data = await call_tool(client, "get_notebook", path="later.ipynb")
    assert [c["source"] for c in data["cells"]] == ["x = 0", "x = 1"]


async def test_create_notebook_session(mcp_client: Any, nb: str, collaborator: Any, make_notebook: Any) -> None:
    async with mcp_client() as client:
        created = await call_tool(client, "create_notebook_session", path=nb)
        assert created["status"] == "created"
        assert created["room_id"] == f"json:notebook:{created['file_id']}"
        assert created["collaborators"] == 0
        assert created["session_id"]
        other = make_notebook("open.ipynb", count=1)
        async with collaborator(other):
            joined = await call_tool(client, "create_notebook_session", path=other)
        assert joined["status"] == "joined"
        assert joined["collaborators"] == 1
