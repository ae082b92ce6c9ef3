"""Group ``notebook``, editing: every edit is one agent transaction on the live room, all or nothing."""

from __future__ import annotations

import re

from mcp.server.mcpserver import Context

from ..errors import Conflict, InvalidArgument
from ..models import (
    CellInput,
    CellUpdateInput,
    DeletedCell,
    DeleteResult,
    InsertedCell,
    InsertResult,
    MoveResult,
    ReplacedCell,
    ReplaceResult,
    UpdatedCell,
    UpdateResult,
)
from ..rooms import CellChange, NewCell
from .execution import run_after_edit
from .notebook import compile_query
from .registry import WRITE, Backends, ToolSpec
from .views import notebook_view

MAX_BATCH = 1000


def _check_batch(name: str, items: list[object]) -> None:
    if not items:
        raise InvalidArgument(f"{name} is empty: give at least one")
    if len(items) > MAX_BATCH:
        raise InvalidArgument(f"{name} has {len(items)} entries; at most {MAX_BATCH} per call")


def notebook_edit_tools(b: Backends) -> list[ToolSpec]:
    async def batch_insert_notebook_cells(
        ctx: Context,
        path: str,
        cells: list[CellInput],
        start_position: int | None = None,
        after_cell_id: str | None = None,
        exec: bool = True,
        fork_id: str | None = None,
    ) -> InsertResult:
        """Insert cells, in order, live in the notebook; people with it open see them appear.

        Where: after_cell_id (preferred: stays right when others move cells), or start_position
        (0-based index to insert at), or appended at the end when neither is given. With exec (the
        default) the inserted code cells then run in order, stopping at the first error.
        """
        _check_batch("cells", list(cells))
        path = await b.contents.require(path, "notebook")
        view = await notebook_view(b, ctx, path, fork_id)
        if after_cell_id is not None:
            at = view.resolve(cell_id=after_cell_id) + 1
            if start_position is not None and start_position != at:
                raise Conflict(
                    f"after_cell_id {after_cell_id!r} means position {at}, not start_position {start_position}: "
                    "give one of them"
                )
        elif start_position is not None:
            at = view.check_index(start_position, allow_end=True)
        else:
            at = view.cell_count
        new = [NewCell(source=c.content, cell_type=c.cell_type, metadata=dict(c.metadata)) for c in cells]
        inserted = view.insert(new, at)
        cell_count = view.cell_count
        executions, skipped = (
            await run_after_edit(b, ctx, path, [cid for _, cid, _ in inserted], fork_id) if exec else (None, None)
        )
        return InsertResult(
            inserted=[InsertedCell(index=i, id=cid, cell_type=kind) for i, cid, kind in inserted],
            cell_count=cell_count,
            executions=executions,
            execution_skipped=skipped,
        )

    async def batch_update_notebook_cells(
        ctx: Context, path: str, updates: list[CellUpdateInput], exec: bool = True, fork_id: str | None = None
    ) -> UpdateResult:
        """Change cells' source and/or type live, as minimal text edits so others' typing survives.

        content becomes the cell's source: only the changed span is rewritten, so what a person types
        at the same moment elsewhere in the cell is kept. Text that reached the cell after your read
        and before this call would be replaced: pass expected_source (the source you read) to refuse
        the edit instead, and nothing in the batch is applied. Address cells by cell_id (preferred) or index.
        With exec (the default) the updated code cells then run in order, stopping at the first error.
        """
        _check_batch("updates", list(updates))
        path = await b.contents.require(path, "notebook")
        view = await notebook_view(b, ctx, path, fork_id)
        changes = [
            CellChange(
                cell_id=u.cell_id,
                index=u.index,
                source=u.content,
                cell_type=u.cell_type,
                expected_source=u.expected_source,
            )
            for u in updates
        ]
        done = view.update(changes)
        executions, skipped = (
            await run_after_edit(b, ctx, path, [cid for _, cid in done], fork_id) if exec else (None, None)
        )
        return UpdateResult(
            updated=[UpdatedCell(index=i, id=cid) for i, cid in done], executions=executions, execution_skipped=skipped
        )

    async def batch_delete_notebook_cells(
        ctx: Context,
        path: str,
        cell_ids: list[str] | None = None,
        start_index: int | None = None,
        end_index: int | None = None,
        fork_id: str | None = None,
    ) -> DeleteResult:
        """Delete cells live: by cell_ids, or the range start_index..end_index (end exclusive; default one cell).

        The result returns each deleted cell's source, so a mistake can be undone by re-inserting it.
        """
        path = await b.contents.require(path, "notebook")
        view = await notebook_view(b, ctx, path, fork_id)
        if cell_ids is not None:
            if start_index is not None or end_index is not None:
                raise InvalidArgument("give cell_ids or a range (start_index, end_index), not both")
            _check_batch("cell_ids", list(cell_ids))
            indexes = [view.resolve(cell_id=cid) for cid in cell_ids]
        elif start_index is not None:
            end = start_index + 1 if end_index is None else end_index
            view.check_index(start_index)
            if end <= start_index or end > view.cell_count:
                raise InvalidArgument(
                    f"end_index {end} must be after start_index {start_index} and at most {view.cell_count}"
                )
            indexes = list(range(start_index, end))
        else:
            raise InvalidArgument("name the cells to delete: cell_ids, or start_index (and end_index)")
        removed = view.delete(indexes)
        return DeleteResult(
            deleted=[DeletedCell(index=c.index, id=c.id, source=c.source) for c in removed],
            cell_count=view.cell_count,
        )

    async def move_notebook_cell(
        ctx: Context,
        path: str,
        to_index: int,
        cell_id: str | None = None,
        index: int | None = None,
        fork_id: str | None = None,
    ) -> MoveResult:
        """Move one cell to to_index (its index after the move), keeping its id, source, outputs and metadata."""
        path = await b.contents.require(path, "notebook")
        view = await notebook_view(b, ctx, path, fork_id)
        from_index = view.resolve(cell_id, index)
        moved_id = view.move(from_index, to_index)
        return MoveResult(id=moved_id, from_index=from_index, to_index=to_index)

    async def replace_in_notebook(
        ctx: Context,
        path: str,
        find: str,
        replace: str,
        regex: bool = False,
        cell_ids: list[str] | None = None,
        expected_count: int | None = None,
        fork_id: str | None = None,
    ) -> ReplaceResult:
        """Replace text in cells' sources (all cells, or those in cell_ids), match by match.

        With regex, replace may use \\1 or \\g<name>. Pass expected_count (how many matches you expect)
        to refuse the whole replacement when the live notebook has a different number.
        """
        pattern = compile_query(find, regex, case_sensitive=True)
        path = await b.contents.require(path, "notebook")
        view = await notebook_view(b, ctx, path, fork_id)
        indexes = [view.resolve(cell_id=cid) for cid in cell_ids] if cell_ids is not None else None
        if expected_count is not None:
            found = sum(
                len(pattern.findall(source))
                for i, (_, _, source) in enumerate(view.sources())
                if indexes is None or i in indexes
            )
            if found != expected_count:
                raise Conflict(
                    f"found {found} matches of {find!r}, not the expected {expected_count}: nothing was replaced; "
                    "search again and retry"
                )
        try:
            done = view.replace(pattern, replace, literal=not regex, indexes=indexes)
        except re.error as exc:  # a bad group reference in replace, found before anything is applied
            raise InvalidArgument(f"invalid replacement {replace!r}: {exc}") from None
        return ReplaceResult(
            replacements=sum(count for _, _, count in done),
            cells=[ReplacedCell(id=cid, index=i, count=count) for i, cid, count in done],
        )

    return [
        ToolSpec(batch_insert_notebook_cells, "notebook", "Insert cells", WRITE, read_only=False, idempotent=False),
        ToolSpec(batch_update_notebook_cells, "notebook", "Update cells", WRITE, read_only=False),
        ToolSpec(
            batch_delete_notebook_cells,
            "notebook",
            "Delete cells",
            WRITE,
            read_only=False,
            destructive=True,
            idempotent=False,
        ),
        ToolSpec(move_notebook_cell, "notebook", "Move a cell", WRITE, read_only=False),
        ToolSpec(replace_in_notebook, "notebook", "Replace text", WRITE, read_only=False, idempotent=False),
    ]
