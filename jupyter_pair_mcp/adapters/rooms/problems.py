"""A notebook's problems at a glance, from what its live room holds: nothing runs.

Per code cell: its last run failed (the error's name, message and the line of the cell it stopped at, read from
the traceback), it never ran, it ran before a cell above it did (out of order), it uses names no cell above
defines (names.py), it does not parse. Like the outline (outline.py) this reads a :meth:`Scanner.scan` snapshot in
a worker, once per version of the notebook: every row is shaped by one scan and kept, each page is a slice.
Rows are compact JSON that start with their cell's index (``{"i":12,...``), so a page finds its first row by
bisection without parsing any; the first entry is the notebook's totals.
"""

from __future__ import annotations

import bisect
import json
import re
from typing import Any

from jupyter_pair_mcp.adapters.rooms.cells import source_text
from jupyter_pair_mcp.adapters.rooms.names import notebook_names
from jupyter_pair_mcp.adapters.rooms.outline import Outline

_ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]|\x1b\].*?(?:\x07|\x1b\\)")
#: The cell's own frame in IPython's tracebacks, old and new: "Cell In[3], line 2", "Input In [3], in <cell
#: line: 2>()", "<ipython-input-3-…> in <module>\n----> 2 …"; and a syntax error's "File <…>, line 2".
_CELL_LINE = re.compile(
    r"Cell In\s*\[[^\]]*\],\s*line (\d+)|<cell line: (\d+)>|<ipython-input-[^>]*>[^\n]*\n-+> (\d+)"
    r"|File \"?<[^>]*>\"?, line (\d+)"
)
#: Characters of an error message kept, and of a traceback read for its line.
MESSAGE_CHARS = 160
TRACEBACK_CHARS = 20_000
_CODE = "code"


def clean(text: str) -> str:
    """``text`` without terminal color codes."""
    return _ANSI.sub("", text)


def error_line(traceback: Any) -> int | None:
    """The line of the cell a run stopped at, from its traceback (the first frame of the cell), or None."""
    if not isinstance(traceback, list):
        return None
    text = clean("\n".join(str(t) for t in traceback[:50])[:TRACEBACK_CHARS])
    found = _CELL_LINE.search(text)
    if found is None:
        return None
    return int(next(g for g in found.groups() if g is not None))


def _failed(outputs: list[Any]) -> dict[str, Any] | None:
    for output in outputs:
        if isinstance(output, dict) and output.get("output_type") == "error":
            message = clean(str(output.get("evalue", "")))
            if len(message) > MESSAGE_CHARS:
                message = message[: MESSAGE_CHARS - 1] + "…"
            found: dict[str, Any] = {"error": clean(str(output.get("ename", "")))[:MESSAGE_CHARS] or "Error"}
            found["message"] = message
            line = error_line(output.get("traceback"))
            if line is not None:
                found["line"] = line
            return found
    return None


def problem_rows(snapshot: str, python: bool = True) -> list[str]:
    """The totals, then one compact JSON row per code cell with a problem (in the scan worker). ``python``: the
    notebook's language is Python (names and syntax are only checked then)."""
    cells = [c for c in json.loads(snapshot) if isinstance(c, dict)]
    code: list[tuple[int, dict[str, Any], str]] = []
    for index, cell in enumerate(cells):
        if cell.get("cell_type", _CODE) == _CODE:
            code.append((index, cell, source_text(cell.get("source", ""))))
    names = notebook_names([(i, s) for i, _, s in code]) if python else None
    rows: list[str] = []
    totals = {"failed": 0, "never_run": 0, "out_of_order": 0, "undefined": 0, "syntax": 0}
    latest: tuple[int, int] | None = None  # (execution count, index) of the cell above that ran last
    for index, cell, source in code:
        row: dict[str, Any] = {"i": index, "id": str(cell.get("id", ""))}
        failed = _failed(cell.get("outputs") or [])
        if failed is not None:
            row.update(failed)
            totals["failed"] += 1
        count = cell.get("execution_count")
        if isinstance(count, int | float) and not isinstance(count, bool):
            if latest is not None and latest[0] > count:
                row["ran"] = int(count)
                row["ran_before"] = {"i": latest[1], "n": latest[0]}  # a cell above ran after this one
                totals["out_of_order"] += 1
            if latest is None or count > latest[0]:
                latest = (int(count), index)
        elif source.strip() and not cell.get("outputs"):  # outputs without a count: it ran, in some way
            row["never_run"] = True
            totals["never_run"] += 1
        if names is not None:
            if index in names.syntax:
                row["syntax"] = names.syntax[index]
                totals["syntax"] += 1
            if index in names.undefined:
                row["undefined"] = names.undefined[index]
                totals["undefined"] += 1
        if len(row) > 2:
            rows.append(json.dumps(row, separators=(",", ":"), ensure_ascii=False))
    head = {"cells": len(cells), "totals": totals, "names_from": names.unchecked_from if names else None}
    head["names"] = python
    return [json.dumps(head, separators=(",", ":")), *rows]


def _index(row: str) -> int:
    """The cell index a row starts with (``{"i":12,``), without parsing the row."""
    return int(row[5 : row.index(",", 5)])


def page(rows: list[str], start: int, max_bytes: int, max_rows: int) -> tuple[dict[str, Any], Outline]:
    """The totals, and the rows of cells from index ``start`` on until ``max_bytes`` of row JSON or ``max_rows``
    rows (the first row always comes back); ``next_index``: the cell to go on from. Raises ValueError for a
    start outside the notebook."""
    head: dict[str, Any] = json.loads(rows[0])
    count = int(head["cells"])
    if start < 0 or start > count:
        raise ValueError(f"start_index {start} is not within the notebook's {count} cells (0-{count})")
    first = bisect.bisect_left(rows, start, lo=1, key=_index)  # rows[0], the totals, is never compared
    used, stop, next_index = 0, first, None
    while stop < len(rows):
        size = len(rows[stop].encode()) + 1
        if stop > first and (used + size > max_bytes or stop - first >= max_rows):
            next_index = _index(rows[stop])
            break
        used += size
        stop += 1
    found: list[dict[str, Any]] = json.loads("[" + ",".join(rows[first:stop]) + "]")
    return head, Outline(found, count, next_index)
