"""Find-and-replace planned off the event loop, applied on it in bounded time.

Finding tens of thousands of matches and building their replacements is Python work per match: on the
event loop, 650,000 matches froze Jupyter for minutes. So a replace is planned in a worker thread from a
snapshot of the text (the functions here touch no live document), as hunks already joined down to what one
Y text edit may cost (:func:`merge.bounded`); the view then applies the plan synchronously, after checking
the live text is still the snapshot — or moving the plan onto what a person typed meanwhile
(:func:`merge.rebase`), exactly like an agent's edit from an earlier read.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass

from jupyter_pair_mcp.adapters.rooms.cells import source_text
from jupyter_pair_mcp.adapters.rooms.merge import Hunk, bounded, ops_budget


@dataclass(frozen=True)
class Replacement:
    """The planned replacement of ``count`` matches in one text (a cell's source, or a text document)."""

    cell_id: str  # "" for a text document
    index: int  # the cell's position in the snapshot (0 for a text document)
    source: str  # the text the hunks are of (the snapshot)
    hunks: list[Hunk]
    count: int


def plan_text(
    source: str, pattern: re.Pattern[str], replacement: str, *, literal: bool, cell_id: str = "", index: int = 0
) -> Replacement:
    """Every match of ``pattern`` in ``source`` replaced, as at most :func:`ops_budget` hunks. Linear in the
    source plus the regex's cost; raises :class:`re.error` for a bad group reference in ``replacement``."""
    hunks = [
        Hunk(found.start(), found.end(), replacement if literal else found.expand(replacement))
        for found in pattern.finditer(source)
    ]
    return Replacement(cell_id, index, source, bounded(source, hunks, ops_budget(source)), len(hunks))


def plan_notebook(
    snapshot: str, pattern: re.Pattern[str], replacement: str, *, literal: bool, cell_ids: set[str] | None
) -> list[Replacement]:
    """The replacements in the cells of a :meth:`NotebookView.snapshot` (only ``cell_ids`` when given)
    that have a match, in notebook order."""
    plan = []
    for index, cell in enumerate(json.loads(snapshot)):
        if not isinstance(cell, dict):
            continue
        cell_id = str(cell.get("id", ""))
        if cell_ids is not None and cell_id not in cell_ids:
            continue
        source = source_text(cell.get("source", ""))
        planned = plan_text(source, pattern, replacement, literal=literal, cell_id=cell_id, index=index)
        if planned.count:
            plan.append(planned)
    return plan
