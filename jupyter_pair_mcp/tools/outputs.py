"""Group ``notebook``: clearing cells' outputs live, as agent edits the undo tool takes back.

A clear of a few cells is one edit (one undo step); a bigger one is made of edits of bounded cost
(adapters/rooms/clearing.py), and the answer says how many (``undo_agent_edits`` with that count, at most 100 a
call, takes the whole clear back).
"""

from __future__ import annotations

from typing import Annotated

from mcp.server.mcpserver import Context
from pydantic import Field

from jupyter_pair_mcp.adapters.rooms.clearing import clear_in_edits
from jupyter_pair_mcp.errors import InvalidArgument
from jupyter_pair_mcp.models.results import ClearResult
from jupyter_pair_mcp.tools.params import NotebookPath
from jupyter_pair_mcp.tools.registry import WRITE, Backends, ToolSpec
from jupyter_pair_mcp.tools.suggestions import refuse_in_review
from jupyter_pair_mcp.tools.views import notebook_view

#: Cell ids an answer lists at most (the count says how many were cleared).
MAX_LISTED = 500


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
        wanted = set(cell_ids) if cell_ids is not None else None
        cleared, edits = await clear_in_edits(lambda: notebook_view(b, ctx, path), b.rooms.scanner, wanted)
        count = (await notebook_view(b, ctx, path)).cell_count
        return ClearResult(cleared=len(cleared), cell_ids=cleared[:MAX_LISTED], edits=edits, cell_count=count)

    return [
        ToolSpec(clear_notebook_outputs, "notebook", "Clear outputs", WRITE, read_only=False, idempotent=True),
    ]
