"""A notebook's shape without its text, from one snapshot.

It works on a :meth:`NotebookView.snapshot` (the cells array as JSON, taken on the loop in one Rust pass)
and touch no live document, so they run in a worker thread: parsing and shaping 10,000 cells is Python work
per cell the event loop must not hold. An outline row has short keys (``tools/list`` documents them) so that a
2000-cell notebook comes back whole in one answer at about 150 bytes a cell.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from dataclasses import dataclass
from typing import Any

from jupyter_pair_mcp.adapters.rooms.cells import source_text

#: Characters of a cell's first line an outline row keeps.
LINE_CHARS = 48
_HEADING = re.compile(r"(#{1,6})(?:\s|$)")
_TYPES = {"code": "code", "markdown": "md", "raw": "raw"}


@dataclass(frozen=True)
class Outline:
    rows: list[dict[str, Any]]
    cell_count: int
    next_index: int | None  # where to go on (start_index) when rows were left out past a bound


def first_line(source: str) -> str:
    """The first non-blank line, right-stripped and cut at :data:`LINE_CHARS` (an ellipsis says so)."""
    for line in source.splitlines():
        line = line.rstrip()
        if line:
            return line if len(line) <= LINE_CHARS else line[: LINE_CHARS - 1] + "…"
    return ""


def row(index: int, cell: dict[str, Any]) -> dict[str, Any]:
    """One cell's outline row; keys with nothing to say are left out."""
    kind = str(cell.get("cell_type", "code"))
    line = first_line(source_text(cell.get("source", "")))
    found: dict[str, Any] = {"i": index, "id": str(cell.get("id", "")), "t": _TYPES.get(kind, kind), "l": line}
    heading = _HEADING.match(line) if kind == "markdown" else None
    if heading:
        found["h"] = len(heading.group(1))
    count = cell.get("execution_count")
    if isinstance(count, int | float):
        found["n"] = int(count)
    outputs = [o for o in cell.get("outputs") or [] if isinstance(o, dict)]
    if outputs:
        found["o"] = dict(Counter(str(o.get("output_type", "")) for o in outputs))
        found["b"] = len(json.dumps(outputs, separators=(",", ":"), ensure_ascii=False).encode())
        if "error" in found["o"]:
            found["err"] = True
    return found


def outline(snapshot: str, start: int, end: int | None, max_bytes: int, max_cells: int) -> Outline:
    """The rows of cells ``start:end`` of the snapshot, until ``max_bytes`` of row JSON or ``max_cells`` rows
    (the first row always comes back). Raises ValueError for a range outside the notebook."""
    cells = [c for c in json.loads(snapshot) if isinstance(c, dict)]
    count = len(cells)
    stop = count if end is None else end
    if start < 0 or stop < 0 or start > count or stop > count or start > stop:
        raise ValueError(f"range {start}..{stop} is not within the notebook's {count} cells (0-{count}, end exclusive)")
    rows: list[dict[str, Any]] = []
    used = 0
    for index in range(start, stop):
        found = row(index, cells[index])
        size = len(json.dumps(found, separators=(",", ":"), ensure_ascii=False).encode()) + 1
        if rows and (used + size > max_bytes or len(rows) >= max_cells):
            return Outline(rows, count, index)
        rows.append(found)
        used += size
    return Outline(rows, count, None)
