"""Group ``notebook``, editing: every edit is one agent transaction on the live room, all or nothing."""

from __future__ import annotations

import asyncio
import re
from typing import Annotated, Any

from mcp.server.mcpserver import Context
from pydantic import Field

from jupyter_pair_mcp.adapters.rooms import (
    CellChange,
    MergeConflict,
    NewCell,
    NotebookView,
    Replacement,
    TextOp,
    plan_notebook,
)
from jupyter_pair_mcp.errors import Conflict, InvalidArgument, NotFound
from jupyter_pair_mcp.models.results import (
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
from jupyter_pair_mcp.tools.execution import results, run_after_edit, run_images, with_images
from jupyter_pair_mcp.tools.notebook import compile_query
from jupyter_pair_mcp.tools.outputs import output_tools
from jupyter_pair_mcp.tools.params import CellId, CellIndex, ForkId, NotebookPath, Propose, RunCells, StartIndex
from jupyter_pair_mcp.tools.registry import WRITE, Backends, ToolSpec
from jupyter_pair_mcp.tools.suggestions import PROPOSED, Proposal, refuse_in_review
from jupyter_pair_mcp.tools.views import Reads, notebook_view

#: Entries one batch call may carry: a batch is one transaction, planned and applied in one loop step (each cell
#: found by id, diffed, and each of its events converted by every observer of the room: jupyter_ydoc's, history's,
#: the cell index's), ~0.15-0.2 ms a cell: 200 keep a call's step near 40 ms (500 took 70-155 ms).
MAX_BATCH = 200
#: Times a replace is planned again when people changed the matched text while it was being planned.
REPLAN_ATTEMPTS = 3
#: Cells of the array a replace may walk in one loop turn to reach the cells it changes (~15 ns each).
CELL_WALK_PER_TURN = 1_000_000


def _check_batch(name: str, items: list[object]) -> None:
    if not items:
        raise InvalidArgument(f"{name} is empty: give at least one")
    if len(items) > MAX_BATCH:
        raise InvalidArgument(f"{name} has {len(items)} entries; at most {MAX_BATCH} per call")


def _addresses(
    view: NotebookView,
    updates: list[CellUpdateInput],
    cell_ids: list[str] | None,
    start_index: int | None,
    end_index: int | None,
) -> list[tuple[str | None, int | None] | None]:
    """Per update, the cell that top-level cell_ids or start_index/end_index give it (None: its own address)."""
    if cell_ids is None and start_index is None:
        if end_index is not None:
            raise InvalidArgument("end_index needs start_index")
        return [None] * len(updates)
    if cell_ids is not None and start_index is not None:
        raise InvalidArgument("give cell_ids or start_index (and end_index), not both")
    if any(u.cell_id is not None or u.index is not None for u in updates):
        raise InvalidArgument(
            "the updates carry their own cell_id or index: with top-level cell_ids or start_index, leave them out"
        )
    if cell_ids is not None:
        if len(cell_ids) != len(updates):
            raise InvalidArgument(
                f"cell_ids has {len(cell_ids)} entries for {len(updates)} updates: give one per update"
            )
        return [(cid, None) for cid in cell_ids]
    assert start_index is not None
    view.check_index(start_index)
    end = start_index + len(updates)
    if end_index is not None and end_index != end:
        raise InvalidArgument(
            f"end_index {end_index} does not fit {len(updates)} updates from start_index {start_index}: "
            f"end_index is exclusive, so it is {end} (or leave it out)"
        )
    if end > view.cell_count:
        raise InvalidArgument(
            f"{len(updates)} updates from start_index {start_index} run past the notebook's {view.cell_count} cells"
        )
    return [(None, i) for i in range(start_index, end)]


def notebook_edit_tools(b: Backends) -> list[ToolSpec]:
    async def batch_insert_notebook_cells(
        ctx: Context,
        path: NotebookPath,
        cells: Annotated[list[CellInput], Field(description="Cells, in order.")],
        start_position: Annotated[int | None, Field(description="Index; default: append.")] = None,
        positions: Annotated[list[int] | None, Field(description="Or an index per cell.")] = None,
        after_cell_id: Annotated[str | None, Field(description="Or after this cell.")] = None,
        exec: RunCells = True,
        fork_id: ForkId = None,
        propose: Propose = None,
    ) -> InsertResult:
        """Insert cells live; runs code unless exec=false."""
        _check_batch("cells", list(cells))
        path = await b.contents.require(path, "notebook")
        async with Proposal(b, ctx, path, "notebook", propose, fork_id) as proposal:
            return await insert(ctx, path, cells, start_position, positions, after_cell_id, exec, fork_id, proposal)

    async def insert(
        ctx: Context,
        path: str,
        cells: list[CellInput],
        start_position: int | None,
        positions: list[int] | None,
        after_cell_id: str | None,
        exec: bool,
        fork_id: str | None,
        proposal: Proposal,
    ) -> InsertResult:
        view = await proposal.notebook_view() or await notebook_view(b, ctx, path, fork_id)
        if positions is not None and (after_cell_id is not None or start_position is not None):
            raise InvalidArgument("give one of after_cell_id, start_position or positions")
        if after_cell_id is not None:
            at: int | list[int] = view.resolve(cell_id=after_cell_id) + 1
            if start_position is not None and start_position != at:
                raise Conflict(
                    f"after_cell_id {after_cell_id!r} means position {at}, not start_position {start_position}: "
                    "give one of them"
                )
        elif positions is not None:
            if len(positions) != len(cells):
                raise InvalidArgument(
                    f"positions has {len(positions)} entries for {len(cells)} cells: give one per cell"
                )
            at = list(positions)
        elif start_position is not None:
            at = view.check_index(start_position, allow_end=True)
        else:
            at = view.cell_count
        new = [NewCell(source=c.content, cell_type=c.cell_type, metadata=dict(c.metadata)) for c in cells]
        inserted = view.insert(new, at)
        cell_count = view.cell_count
        if proposal.draft is not None:
            return InsertResult(
                inserted=[
                    InsertedCell(index=i, id=cid, cell_type=kind, revision=b.revisions.served(cell.source))
                    for (i, cid, kind), cell in zip(inserted, new, strict=True)
                ],
                cell_count=cell_count,
                execution_skipped=PROPOSED if exec else None,
                suggestion=await proposal.finish(),
            )
        runs, skipped = (
            await run_after_edit(b, ctx, path, [cid for _, cid, _ in inserted], fork_id) if exec else (None, None)
        )
        reads = Reads(b, ctx, path, fork_id)
        result = InsertResult(
            inserted=[
                InsertedCell(index=i, id=cid, cell_type=kind, revision=reads.served(cell.source, cid))
                for (i, cid, kind), cell in zip(inserted, new, strict=True)
            ],
            cell_count=cell_count,
            executions=None if runs is None else results(runs),
            execution_skipped=skipped,
        )
        return with_images(result, run_images(runs or []), b.image_limits)  # type: ignore[return-value]

    async def batch_update_notebook_cells(
        ctx: Context,
        path: NotebookPath,
        updates: Annotated[list[CellUpdateInput], Field(description="One per cell.")],
        cell_ids: Annotated[list[str] | None, Field(description="Or their cell ids.")] = None,
        start_index: Annotated[int | None, Field(description="Or from this cell on.")] = None,
        end_index: Annotated[int | None, Field(description="End (exclusive).")] = None,
        exec: RunCells = True,
        fork_id: ForkId = None,
        propose: Propose = None,
    ) -> UpdateResult:
        """Change cells live, merged from base_revision (typing kept); runs code unless exec=false."""
        _check_batch("updates", list(updates))
        path = await b.contents.require(path, "notebook")
        async with Proposal(b, ctx, path, "notebook", propose, fork_id) as proposal:
            return await update(ctx, path, updates, cell_ids, start_index, end_index, exec, fork_id, proposal)

    async def update(
        ctx: Context,
        path: str,
        updates: list[CellUpdateInput],
        cell_ids: list[str] | None,
        start_index: int | None,
        end_index: int | None,
        exec: bool,
        fork_id: str | None,
        proposal: Proposal,
    ) -> UpdateResult:
        view = await proposal.notebook_view() or await notebook_view(b, ctx, path, fork_id)
        addresses = _addresses(view, updates, cell_ids, start_index, end_index)
        changes = [
            CellChange(
                cell_id=u.cell_id if address is None else address[0],
                index=u.index if address is None else address[1],
                source=u.content,
                cell_type=u.cell_type,
                expected_source=u.expected_source,
                operations=[TextOp(o.position, o.length, o.content) for o in u.operations]
                if u.operations is not None
                else None,
                base_revision=u.base_revision,
            )
            for u, address in zip(updates, addresses, strict=True)
        ]
        reads = Reads(b, ctx, path, fork_id)
        done = view.update(changes, lambda revision, live, cell_id: reads.base(revision, live, cell_id))
        if proposal.draft is not None:
            updated = [UpdatedCell(index=u.index, id=u.id, revision=b.revisions.served(u.text)) for u in done]
            suggestion = await proposal.finish()
            return UpdateResult(updated=updated, execution_skipped=PROPOSED if exec else None, suggestion=suggestion)
        updated = [UpdatedCell(index=u.index, id=u.id, revision=reads.served(u.text, u.id)) for u in done]
        runs, skipped = await run_after_edit(b, ctx, path, [u.id for u in done], fork_id) if exec else (None, None)
        executions = None if runs is None else results(runs)
        result = UpdateResult(updated=updated, executions=executions, execution_skipped=skipped)
        return with_images(result, run_images(runs or []), b.image_limits)  # type: ignore[return-value]

    async def batch_delete_notebook_cells(
        ctx: Context,
        path: NotebookPath,
        cell_ids: Annotated[list[str] | None, Field(description="Cells.")] = None,
        start_index: StartIndex = None,
        end_index: Annotated[int | None, Field(description="End (exclusive); default: one cell.")] = None,
        fork_id: ForkId = None,
        propose: Propose = None,
    ) -> DeleteResult:
        """Delete cells live; returns their sources (to re-insert)."""
        path = await b.contents.require(path, "notebook")
        async with Proposal(b, ctx, path, "notebook", propose, fork_id) as proposal:
            return await delete(ctx, path, cell_ids, start_index, end_index, fork_id, proposal)

    async def delete(
        ctx: Context,
        path: str,
        cell_ids: list[str] | None,
        start_index: int | None,
        end_index: int | None,
        fork_id: str | None,
        proposal: Proposal,
    ) -> DeleteResult:
        view = await proposal.notebook_view() or await notebook_view(b, ctx, path, fork_id)
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
            deleted=[DeletedCell(index=i, id=cid, source=source) for i, cid, source in removed],
            cell_count=view.cell_count,
            suggestion=await proposal.finish() if proposal.draft is not None else None,
        )

    async def move_notebook_cell(
        ctx: Context,
        path: NotebookPath,
        to_index: Annotated[int, Field(description="Index after the move.")],
        cell_id: CellId = None,
        index: CellIndex = None,
        fork_id: ForkId = None,
    ) -> MoveResult:
        """Move a cell (keeps its id, outputs, metadata)."""
        path = await b.contents.require(path, "notebook")
        refuse_in_review(b, ctx, fork_id, "move_notebook_cell")
        view = await notebook_view(b, ctx, path, fork_id)
        from_index = view.resolve(cell_id, index)
        moved_id = view.move(from_index, to_index)
        return MoveResult(id=moved_id, from_index=from_index, to_index=to_index)

    async def live_cells(
        ctx: Context, path: str, fork_id: str | None, plan: list[Replacement]
    ) -> tuple[NotebookView | None, list[Any]]:
        """The live cell of each planned replacement, a bounded walk of the cells array per loop turn, and the
        view to apply them on (None: the room changed meanwhile, so the cells fetched belong to no room)."""
        cells: list[Any] = []
        view = await notebook_view(b, ctx, path, fork_id)
        ydoc = view.ydoc
        while True:
            view.fetch_cells([p.index for p in plan], cells, CELL_WALK_PER_TURN)
            if len(cells) == len(plan):
                return view, cells
            await asyncio.sleep(0)
            view = await notebook_view(b, ctx, path, fork_id)
            if view.ydoc is not ydoc:
                return None, []

    async def replace_in_notebook(
        ctx: Context,
        path: NotebookPath,
        find: Annotated[str, Field(description="Text (case-sensitive).")],
        replace: Annotated[str, Field(description="Replacement (regex: may use \\1, \\g<name>).")],
        regex: Annotated[bool, Field(description="find is a regex.")] = False,
        cell_ids: Annotated[list[str] | None, Field(description="Only these cells.")] = None,
        expected_count: Annotated[int | None, Field(description="Expected matches, else none replaced.")] = None,
        fork_id: ForkId = None,
    ) -> ReplaceResult:
        """Replace text in cell sources live."""
        pattern = compile_query(find, regex, case_sensitive=True)
        path = await b.contents.require(path, "notebook")
        refuse_in_review(b, ctx, fork_id, "replace_in_notebook")
        for _ in range(REPLAN_ATTEMPTS):
            # Planned in a worker thread from a snapshot (finding 650,000 matches is seconds of Python), then
            # applied on a view taken again after the await, moved past what people typed meanwhile.
            view = await notebook_view(b, ctx, path, fork_id)
            for cid in cell_ids or []:
                view.resolve(cell_id=cid)
            try:
                plan = await b.rooms.scanner.scan(
                    view.ydoc,
                    plan_notebook,
                    pattern,
                    replace,
                    literal=not regex,
                    cell_ids=set(cell_ids) if cell_ids is not None else None,
                )
            except re.error as exc:  # a bad group reference in replace, found before anything is applied
                raise InvalidArgument(f"invalid replacement {replace!r}: {exc}") from None
            found = sum(planned.count for planned in plan)
            if expected_count is not None and found != expected_count:
                raise Conflict(
                    f"found {found} matches of {find!r}, not the expected {expected_count}: nothing was replaced; "
                    "search again and retry"
                )
            if len(plan) > MAX_BATCH:  # one transaction, converted by every observer on the loop, as a batch is
                raise InvalidArgument(
                    f"{find!r} matches in {len(plan)} cells; one replace changes at most {MAX_BATCH} cells: "
                    "name them with cell_ids (search_notebook lists where it matches); nothing was replaced"
                )
            live, cells = await live_cells(ctx, path, fork_id, plan)
            if live is None:  # the room was replaced while its cells were fetched: plan again
                continue
            try:
                done = live.apply_replacements(plan, cells)
            except (MergeConflict, NotFound):  # typed into a match, or a cell deleted, meanwhile: plan again
                continue
            return ReplaceResult(
                replacements=sum(count for _, _, count in done),
                cells=[ReplacedCell(id=cid, index=i, count=count) for i, cid, count in done[:MAX_BATCH]],
                cells_left_out=max(0, len(done) - MAX_BATCH),
            )
        raise Conflict(
            f"the cells of {path} kept changing where {find!r} matches while the replacement was prepared: "
            "nothing was replaced; retry"
        )

    return [
        ToolSpec(batch_insert_notebook_cells, "notebook", "Insert cells", WRITE, read_only=False, idempotent=False),
        ToolSpec(batch_update_notebook_cells, "notebook", "Update cells", WRITE, read_only=False, idempotent=False),
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
        *output_tools(b),
    ]
