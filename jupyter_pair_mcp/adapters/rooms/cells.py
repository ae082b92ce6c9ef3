"""What a notebook view reads and takes, as plain values, and the pure helpers around cells.

Kept apart from :mod:`.notebook` (the live view and its edits): cell data, requested changes, search over a
snapshot (safe in a worker thread), and the nbformat shape of a new cell.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from jupyter_pair_mcp.adapters.rooms.merge import TextOp
from jupyter_pair_mcp.adapters.rooms.text import Edit, line_column
from jupyter_pair_mcp.errors import InvalidArgument
from jupyter_pair_mcp.revisions import Base

CELL_TYPES = ("code", "markdown", "raw")


@dataclass
class CellData:
    index: int
    id: str
    cell_type: str
    source: str
    execution_count: int | None
    outputs: list[dict[str, Any]]
    metadata: dict[str, Any]


@dataclass
class NewCell:
    source: str
    cell_type: str = "code"
    metadata: dict[str, Any] = field(default_factory=dict)


@dataclass
class CellChange:
    """One requested update; ``cell_id`` wins over ``index`` when both are given.

    ``source`` (the whole new source) or ``operations`` (edits at character positions) say what the
    agent wants; both are relative to the text it read (named by ``base_revision``, or the one its
    session was last served) when that is known, else to the live text.
    """

    cell_id: str | None = None
    index: int | None = None
    source: str | None = None
    cell_type: str | None = None
    expected_source: str | None = None
    operations: list[TextOp] | None = None
    base_revision: str | None = None


#: Finds the base of an update: ``(base_revision or None, live source, cell id) -> Base or None``.
BaseFinder = Callable[[str | None, str, str], Base | None]


@dataclass
class CellUpdate:
    """What an update did to one cell: ``text`` is the source as the agent's edit defines it (its base
    with its change), the base its next update may name."""

    index: int
    id: str
    text: str


@dataclass
class Match:
    cell_id: str
    index: int
    line: int
    column: int
    text: str


def search_snapshot(
    snapshot: str, pattern: re.Pattern[str], cell_type: str | None, max_results: int
) -> tuple[list[Match], bool]:
    """Matches of ``pattern`` in the cell sources of a :meth:`NotebookView.snapshot` (safe in any thread: it
    touches no live document). Linear in the notebook plus the regex's own cost."""
    matches: list[Match] = []
    cells = json.loads(snapshot)
    for i, cell in enumerate(cells):
        if not isinstance(cell, dict) or (cell_type is not None and cell.get("cell_type", "code") != cell_type):
            continue
        source = source_text(cell.get("source", ""))
        for found in pattern.finditer(source):
            if len(matches) >= max_results:
                return matches, True
            line, column = line_column(source, found.start())
            text = source.splitlines()[line - 1] if source else ""
            matches.append(Match(str(cell.get("id", "")), i, line, column, text[:200]))
    return matches, False


def cell_digests(snapshot: str, cell_ids: list[str]) -> dict[str, str]:
    """A digest of each of ``cell_ids`` in a :meth:`NotebookView.snapshot`, ``"<deleted>"`` for one not there
    (safe in any process: a cell of a 12 MB figure is converted and serialized there, not on the loop)."""
    wanted = set(cell_ids)
    found = dict.fromkeys(cell_ids, "<deleted>")
    for cell in json.loads(snapshot):
        if isinstance(cell, dict) and str(cell.get("id", "")) in wanted:
            text = json.dumps(cell, sort_keys=True, default=str).encode()
            found[str(cell["id"])] = hashlib.blake2b(text, digest_size=16).hexdigest()
    return found


def cell_data(index: int, raw: dict[str, Any]) -> CellData:
    count = raw.get("execution_count")
    return CellData(
        index=index,
        id=str(raw.get("id", "")),
        cell_type=str(raw.get("cell_type", "code")),
        source=source_text(raw.get("source", "")),
        execution_count=int(count) if isinstance(count, int | float) else None,
        outputs=list(raw.get("outputs") or []),
        metadata=dict(raw.get("metadata") or {}),
    )


def type_and_source(ycell: Any) -> tuple[str, str]:
    """A live cell's type and source, read key by key: its outputs (a 50 MB image, a 12 MB figure) are not
    converted, as :meth:`NotebookView.cell` would convert them, to learn what runs."""
    source = ycell.get("source")
    text = source if isinstance(source, str | list) else "" if source is None else str(source)
    return str(ycell.get("cell_type") or "code"), source_text(text)


def cells_text(ids: list[str]) -> str:
    """ "cell abc" / "3 cells (a, b, c)" / "12 cells (a, b, c, ...)" for history summaries."""
    if len(ids) == 1:
        return f"cell {ids[0]}"
    shown = ", ".join(ids[:3]) + (", ..." if len(ids) > 3 else "")
    return f"{len(ids)} cells ({shown})"


def source_text(source: Any) -> str:
    """A cell source as one string (nbformat allows a list of lines)."""
    return "".join(source) if isinstance(source, list) else str(source)


def check_type(cell_type: str) -> None:
    if cell_type not in CELL_TYPES:
        raise InvalidArgument(f"cell_type {cell_type!r} is not one of {', '.join(CELL_TYPES)}")


def nbformat_cell(cell_type: str, source: str, metadata: dict[str, Any]) -> dict[str, Any]:
    cell: dict[str, Any] = {"cell_type": cell_type, "source": source, "metadata": metadata}
    if cell_type == "code":
        cell.update(outputs=[], execution_count=None)
    return cell


def apply_edit(ytext: Any, edit: Edit) -> None:
    if edit.is_noop:
        return
    if edit.end > edit.start:
        del ytext[edit.start : edit.end]
    if edit.insert:
        ytext.insert(edit.start, edit.insert)
