"""Group ``notebook``: clearing cells' outputs live, as agent edits the undo tool takes back.

A clear of a few cells is one edit (one undo step). pycrdt builds every change event of a transaction for the
room's deep observers (jupyter_ydoc's, the cell index's) with its path, a walk of the cells array, so one
transaction clearing 10,000 cells holds the loop for seconds; a bigger clear is therefore made of edits bounded
by :func:`batches`, each in its own loop turns, and the answer says how many (``undo_agent_edits`` with that
count, at most 100 a call, takes the whole clear back).
"""

from __future__ import annotations

import asyncio
from typing import Annotated, Any

from mcp.server.mcpserver import Context
from pydantic import Field

from jupyter_pair_mcp.adapters.rooms.clearing import clear, to_clear
from jupyter_pair_mcp.errors import InvalidArgument, NotFound
from jupyter_pair_mcp.models.results import ClearResult
from jupyter_pair_mcp.tools.params import NotebookPath
from jupyter_pair_mcp.tools.registry import WRITE, Backends, ToolSpec
from jupyter_pair_mcp.tools.suggestions import refuse_in_review
from jupyter_pair_mcp.tools.views import notebook_view

#: Cells one clear edit empties at most.
CLEAR_BATCH = 100
#: Sum of the positions of one edit's cells, at most: fetching each cell walks the array up to it, and pycrdt
#: builds each change event's path, for each deep observer of the room, with a walk too (~3 ms of loop per
#: cell cleared at the end of 10,000 cells, where this budget gives ~6 cells an edit: ~20-25 ms, half the loop
#: target, as a loaded machine can double it).
POSITIONS_PER_EDIT = 60_000
#: Cell ids an answer lists at most (the count says how many were cleared).
MAX_LISTED = 500


def batches(targets: list[tuple[int, str]]) -> list[list[tuple[int, str]]]:
    """``targets`` cut into edits of at most :data:`CLEAR_BATCH` cells whose positions (plus a fixed cost each)
    add up to :data:`POSITIONS_PER_EDIT` at most; a lone cell further on is an edit of its own."""
    found: list[list[tuple[int, str]]] = []
    walked = 0
    for target in targets:
        cost = target[0] + 64
        if not found or len(found[-1]) >= CLEAR_BATCH or walked + cost > POSITIONS_PER_EDIT:
            found.append([])
            walked = 0
        found[-1].append(target)
        walked += cost
    return found


def output_tools(b: Backends) -> list[ToolSpec]:
    async def clear_notebook_outputs(
        ctx: Context,
        path: NotebookPath,
        cell_ids: Annotated[list[str] | None, Field(description="Only these cells; default: all.")] = None,
    ) -> ClearResult:
        """Clear code cells' outputs and counts live; undoable."""
        path = await b.contents.require(path, "notebook")
        refuse_in_review(b, ctx, None, "clear_notebook_outputs")
        if cell_ids is not None and not cell_ids:
            raise InvalidArgument("cell_ids is empty: give at least one, or leave it out to clear every cell")
        # Finding what to clear (and ids no cell has) reads every cell: a scan, off the loop.
        wanted = set(cell_ids) if cell_ids is not None else None
        first = await notebook_view(b, ctx, path)
        targets, missing = await b.rooms.scanner.scan(first.ydoc, to_clear, wanted)
        if missing:
            shown = ", ".join(repr(cid[:40]) for cid in missing[:5]) + (", ..." if len(missing) > 5 else "")
            raise NotFound(f"no cell with id {shown} in {path}: read the notebook for current cell ids")
        cleared: list[str] = []
        edits = 0
        for batch in batches(targets):
            view = await notebook_view(b, ctx, path)
            cells: list[Any] = []
            view.fetch_cells([index for index, _ in batch], cells, 2 * POSITIONS_PER_EDIT)
            await asyncio.sleep(0)  # the fetch and the edit in separate loop turns
            live = await notebook_view(b, ctx, path)
            if live.ydoc is not view.ydoc:  # the room was replaced: its cells are looked up again by id
                cells = [None] * len(batch)
            done = clear(live, batch, cells)
            edits += bool(done)
            cleared.extend(done)
            await asyncio.sleep(0)
        count = (await notebook_view(b, ctx, path)).cell_count
        return ClearResult(cleared=len(cleared), cell_ids=cleared[:MAX_LISTED], edits=edits, cell_count=count)

    return [
        ToolSpec(clear_notebook_outputs, "notebook", "Clear outputs", WRITE, read_only=False, idempotent=True),
    ]
