"""A notebook room is written with exactly what jupyter_ydoc's ``YNotebook.get()`` gives, in linear time.

The saves of a room (``save_notebook``, the save at the server's stop) read the notebook through
:mod:`jupyter_pair_mcp.adapters.rooms.snapshot` instead of ``get()``, which reads cell ``i`` by index on
the loop (seconds for 10,000 cells). These tests hold the two equal — on every kind of cell and output, on
an array fragmented by edits, on nbformat 4.4 (no cell ids) — and the file nbformat writes from them
identical; and they count that a save never goes through ``get()``'s per-cell path.
"""

from __future__ import annotations

import asyncio
import copy
from typing import Any

import nbformat
import pytest
from jupyter_ydoc import YNotebook

from jupyter_pair_mcp.adapters.rooms.snapshot import document_content, notebook_content, notebook_json

OUTPUTS: list[dict[str, Any]] = [
    {"output_type": "stream", "name": "stdout", "text": "a\nb\n"},
    {"output_type": "stream", "name": "stderr", "text": "warn\n"},
    {
        "output_type": "execute_result",
        "execution_count": 3,
        "data": {"text/plain": "42", "text/html": "<b>42</b>"},
        "metadata": {"width": 2.0, "scale": 1.5},
    },
    {"output_type": "display_data", "data": {"image/png": "iVBORw0KGgo=", "text/plain": "<Figure>"}, "metadata": {}},
    {"output_type": "error", "ename": "ValueError", "evalue": "bad", "traceback": ["\x1b[31mValueError\x1b[0m", "x"]},
]


def cells(minor: int = 5) -> list[dict[str, Any]]:
    made: list[dict[str, Any]] = [
        {
            "cell_type": "code",
            "id": "code-1",
            "source": "import math\nprint(math.pi)",
            "execution_count": 3,
            "metadata": {"tags": ["keep"], "collapsed": False, "jupyter": {"source_hidden": True}, "n": 1.0},
            "outputs": copy.deepcopy(OUTPUTS),
        },
        {"cell_type": "code", "id": "code-2", "source": "", "execution_count": None, "metadata": {}, "outputs": []},
        {"cell_type": "markdown", "id": "md-1", "source": "# Title\n\n*text* ünïcode ✓", "metadata": {}},
        {
            "cell_type": "markdown",
            "id": "md-2",
            "source": "![x](attachment:x.png)",
            "metadata": {},
            "attachments": {"x.png": {"image/png": "iVBORw0KGgo="}},
        },
        {"cell_type": "raw", "id": "raw-1", "source": "raw text", "metadata": {"format": "text/plain"}},
    ]
    if minor <= 4:
        for cell in made:
            del cell["id"]
    return made


def notebook(minor: int = 5, count: int = 0) -> YNotebook:
    doc = YNotebook()
    more = [
        {"cell_type": "code", "id": f"n{i}", "source": f"x = {i}", "execution_count": i, "metadata": {}, "outputs": []}
        for i in range(count)
    ]
    doc.set(
        {
            "cells": cells(minor) + more,
            "metadata": {
                "kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"},
                "language_info": {"name": "python", "version": "3.11.0"},
                "custom": {"ratio": 0.5, "whole": 2},
            },
            "nbformat": 4,
            "nbformat_minor": minor,
        }
    )
    return doc


def ours(doc: YNotebook) -> dict[str, Any] | None:
    return notebook_content(*notebook_json(doc))


@pytest.mark.parametrize("minor", [5, 4])
def test_the_content_is_what_ydoc_get_gives(minor: int) -> None:
    doc = notebook(minor)
    mine = ours(doc)
    assert mine == doc.get()
    assert mine is not None
    written = nbformat.writes(nbformat.from_dict(mine))
    assert written == nbformat.writes(nbformat.from_dict(doc.get()))
    assert nbformat.validate(nbformat.reads(written, as_version=4)) is None


def test_a_notebook_fragmented_by_edits_gives_the_same_content() -> None:
    doc = notebook(count=300)
    for i in range(0, 250, 7):  # inserts, deletes, edits of sources, outputs and metadata scattered over it
        doc.ycells.insert(i, doc.create_ycell({"cell_type": "markdown", "id": f"ins{i}", "source": f"m{i}"}))
        del doc.ycells[i + 3]
        doc.ycells[i + 1]["source"] += " # edited"
        doc.ycells[i + 2]["metadata"] = {"edited": float(i)}
    doc.ycells[0]["execution_state"] = "busy"  # live-only state is not written
    assert ours(doc) == doc.get()


def test_repeated_cell_ids_are_left_to_ydoc() -> None:
    """``get()`` gives a repeated id a new one in the live document; the snapshot declines instead."""
    doc = notebook()
    doc.ycells.append(doc.create_ycell({"cell_type": "code", "id": "code-2", "source": "twin"}))
    assert ours(doc) is None
    with pytest.warns(UserWarning, match="Non-unique cell ID"):
        content = asyncio.run(document_content(doc, asyncio.Lock(), 1))
    assert content == doc.get() and len({c["id"] for c in content["cells"]}) == len(content["cells"])


def test_a_save_reads_no_cell_through_ydoc(monkeypatch: pytest.MonkeyPatch) -> None:
    """Structural: no per-cell read of the live array (``get()``'s ``_cell_to_py``), whatever the size."""
    doc = notebook(count=2000)
    expected = doc.get()
    reads = 0
    original = YNotebook._cell_to_py

    def counted(self: YNotebook, *args: Any) -> Any:
        nonlocal reads
        reads += 1
        return original(self, *args)

    monkeypatch.setattr(YNotebook, "_cell_to_py", counted)
    assert asyncio.run(document_content(doc, asyncio.Lock(), 1)) == expected
    assert reads == 0
