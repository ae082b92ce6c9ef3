"""A notebook's shape without its text, from one snapshot, paged from one scan per version of the notebook.

It works on a :meth:`NotebookView.snapshot` (the cells array as JSON, taken on the loop in one Rust pass)
and touch no live document, so they run in a worker thread: parsing and shaping 10,000 cells is Python work
per cell the event loop must not hold. An outline row has short keys (``tools/list`` documents them) so that a
2000-cell notebook comes back whole in one answer at about 150 bytes a cell.

A scan reads the whole notebook (~10 CPU-s at 100,000 cells), and an outline that long comes in 20 pages: so one
scan shapes every row (:func:`outline_rows`) and :class:`OutlineCache` keeps them, as compact JSON, for the
document version they were taken at (the cell index counts every change to the cells); each page is then a
slice of them (:func:`page`).
"""

from __future__ import annotations

import json
import re
import sys
from collections import Counter, OrderedDict
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from jupyter_pair_mcp.adapters.rooms.cells import source_text
from jupyter_pair_mcp.adapters.rooms.locks import cell_lock

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
    lock = cell_lock(cell)
    if lock is not None:  # a person locked it: agents learn where they may not write before they try
        found["lk"] = lock["by"]
    return found


def outline_rows(snapshot: str) -> list[str]:
    """Every cell's outline row as compact JSON (in the scan worker: Python work per cell)."""
    cells = [c for c in json.loads(snapshot) if isinstance(c, dict)]
    return [json.dumps(row(i, c), separators=(",", ":"), ensure_ascii=False) for i, c in enumerate(cells)]


def page(rows: list[str], start: int, max_bytes: int, max_cells: int) -> Outline:
    """The rows from ``start`` of :func:`outline_rows`, until ``max_bytes`` of row JSON or ``max_cells`` rows
    (the first row always comes back). Raises ValueError for a start outside the notebook."""
    count = len(rows)
    if start < 0 or start > count:
        within = f"the notebook's {count} cells (0-{count}, end exclusive)"
        raise ValueError(f"range {start}..{count} is not within {within}")
    used, stop, next_index = 0, start, None
    while stop < count:
        size = len(rows[stop].encode()) + 1
        if stop > start and (used + size > max_bytes or stop - start >= max_cells):
            next_index = stop
            break
        used += size
        stop += 1
    found: list[dict[str, Any]] = json.loads("[" + ",".join(rows[start:stop]) + "]")  # one C-speed parse
    return Outline(found, count, next_index)


class OutlineCache:
    """The rows of the last outline scans, by room, each valid for one version of its document; at most
    ``max_bytes`` in all (the least recently used go first; rows bigger than that are not kept)."""

    def __init__(self, max_bytes: int) -> None:
        self.max_bytes = max_bytes
        self.scans = 0  # scans made for outlines (tests count them)
        self._entries: OrderedDict[str, tuple[object, int, list[str], int]] = OrderedDict()
        self._bytes = 0

    def get(self, key: str, owner: object, version: int) -> list[str] | None:
        entry = self._entries.get(key)
        if entry is None or entry[0] is not owner or entry[1] != version:
            return None
        self._entries.move_to_end(key)
        return entry[2]

    def put(self, key: str, owner: object, version: int, rows: list[str]) -> None:
        self.drop(key)
        size = sum(map(len, rows)) + sys.getsizeof("") * len(rows)
        if size > self.max_bytes:
            return
        while self._entries and self._bytes + size > self.max_bytes:
            self.drop(next(iter(self._entries)))
        self._entries[key] = (owner, version, rows, size)
        self._bytes += size

    async def page(
        self, key: str, owner: Any, ydoc: Any, scan: Callable[..., Awaitable[Any]], start: int, bound: tuple[int, int]
    ) -> Outline:
        """A page of the outline of ``ydoc`` (the room ``key``'s document, whose cell index ``owner`` counts its
        changes in ``version``): from the rows kept for this version, else from a new scan (``scan``:
        :meth:`Scanner.scan`), kept. ``bound``: (max bytes, max cells) of the page."""
        return page(await self.rows(key, owner, ydoc, scan, outline_rows), start, *bound)

    async def rows(
        self, key: str, owner: Any, ydoc: Any, scan: Callable[..., Awaitable[Any]], shape: Callable[..., list[str]]
    ) -> list[str]:
        """The rows ``shape`` makes of ``ydoc``'s cells (see :meth:`page`): kept for this version, else scanned."""
        version = owner.version  # read before the scan takes its snapshot (no await in between)
        rows = self.get(key, owner, version)
        if rows is None:
            self.scans += 1
            rows = await scan(ydoc, shape)
            self.put(key, owner, version, rows)
        return rows

    def drop(self, key: str) -> None:
        entry = self._entries.pop(key, None)
        if entry is not None:
            self._bytes -= entry[3]


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
