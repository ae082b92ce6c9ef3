"""Group ``execution``: run cells in the notebook's own kernel, outputs streaming into the live room."""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Annotated

from mcp.server.mcpserver import Context
from mcp_types import CallToolResult, ImageContent, TextContent
from pydantic import BaseModel, Field

from jupyter_pair_mcp.adapters.rooms.cells import type_and_source
from jupyter_pair_mcp.adapters.rooms.clearing import clear_in_edits, refuse_locked_code
from jupyter_pair_mcp.errors import InvalidArgument, NotFound, PermissionDenied
from jupyter_pair_mcp.models.results import (
    ExecutionList,
    ExecutionResult,
    KernelInfo,
    KernelResult,
    NotRun,
    RenderedOutput,
)
from jupyter_pair_mcp.render import ImageLimits, PickedImages, pick_images
from jupyter_pair_mcp.services.execution import CellRun, Progress
from jupyter_pair_mcp.tools.params import CellId, CellIndex, EndIndex, NotebookPath, StartIndex, Timeout
from jupyter_pair_mcp.tools.registry import Backends, ToolSpec, authorize

EXECUTE = ("execute", "kernels")
MAX_TIMEOUT = 3600.0
#: Ids of cells a stopped run did not run that a result names (the rest are counted): a run-all of a long
#: notebook must not answer with thousands of ids.
NOT_RUN_IDS = 20
#: Images one tool result carries (count, base64 bytes each and in all); the rest are counted in its report.


class ImageReport(BaseModel):
    """Added as ``images`` to a result that found images in the outputs it returns."""

    returned: int = Field(description="Images in this result's content after the text, in order.")
    cell_ids: list[str] = Field(description="The cell of each returned image, in order.")
    omitted: int = Field(description="Images left out of this result.")
    omitted_reason: str | None = Field(default=None, description="Why they were left out, by count.")


def check_timeout(timeout: float) -> None:
    if not 0 < timeout <= MAX_TIMEOUT:
        raise InvalidArgument(f"timeout must be between 0 and {MAX_TIMEOUT:g} seconds, got {timeout}")


def progress_reporter(ctx: Context) -> Progress:
    async def report(done: int, message: str) -> None:
        await ctx.report_progress(done, None, message)

    return report


def results(runs: list[CellRun]) -> list[ExecutionResult]:
    return [
        ExecutionResult(
            id=r.id,
            status=r.status,  # type: ignore[arg-type]
            execution_count=r.execution_count,
            outputs=[RenderedOutput(**o) for o in r.outputs],
        )
        for r in runs
    ]


async def run_cells(
    b: Backends, ctx: Context, path: str, cell_ids: list[str], *, timeout: float, stop_on_error: bool
) -> list[CellRun]:
    """Run cells as the caller (the author of the outputs in history) and log each run as its activity."""
    actor = b.actors.of(ctx)
    runs = await b.execution.run_cells(
        path, cell_ids, timeout=timeout, stop_on_error=stop_on_error, progress=progress_reporter(ctx), actor=actor
    )
    if b.presence is not None:
        for run in runs:
            count = f" [{run.execution_count}]" if run.execution_count is not None else ""
            b.presence.record(actor, "execution", path, f"ran cell {run.id}{count}: {run.status}", cells=(run.id,))
    return runs


def not_run(runs: list[CellRun], targets: list[str]) -> NotRun | None:
    """The cells of ``targets`` a run stopped by an error did not run (runs are in order: the rest of them)."""
    if not runs or len(runs) >= len(targets):
        return None
    left = targets[len(runs) :]
    last = runs[-1]
    reason = f"{_stopped_at(last)}: these cells were not run"
    return NotRun(cell_ids=left[:NOT_RUN_IDS], count=len(left), reason=reason)


def _stopped_at(run: CellRun) -> str:
    return f"stopped at cell {run.id!r} ({run.status})"


def skipped(runs: list[CellRun], missed: NotRun) -> str:
    """``missed`` as the edit tools' ``execution_skipped`` text."""
    ids = ", ".join(repr(cid) for cid in missed.cell_ids)
    more = f" and {missed.count - len(missed.cell_ids)} more" if missed.count > len(missed.cell_ids) else ""
    cells = "1 cell was" if missed.count == 1 else f"{missed.count} cells were"
    return f"{_stopped_at(runs[-1])}: {cells} not run: {ids}{more}"


async def run_after_edit(
    b: Backends, ctx: Context, path: str, cell_ids: list[str], fork_id: str | None = None
) -> tuple[list[CellRun] | None, str | None]:
    """The ``exec`` of the edit tools: run the touched code cells in order, stopping at the first error.

    The edit has already applied; when running is not possible the result says why instead of failing.
    """
    if fork_id:
        return None, "edits in a fork are not run: merge the fork, then execute the cells"
    if not b.execution_enabled:
        return None, "execution is switched off on this server (tool group 'execution' is disabled)"
    try:
        await authorize(ctx, *EXECUTE)
    except PermissionDenied as exc:
        return None, str(exc)
    view = await b.rooms.notebook(path)
    code_ids = [cid for cid in cell_ids if type_and_source(view.ycell(cid))[0] == "code"]  # outputs not read
    if not code_ids:
        return [], None
    runs = await run_cells(b, ctx, path, code_ids, timeout=30, stop_on_error=True)
    missed = not_run(runs, code_ids)
    return runs, None if missed is None else skipped(runs, missed)


def run_images(runs: Iterable[CellRun]) -> list[tuple[str, str, str]]:
    """(cell id, MIME type, base64) of the runs' PNG/JPEG outputs, in order."""
    return [(run.id, mime, data) for run in runs for mime, data in run.images]


def with_images(
    result: BaseModel, found: Iterable[tuple[str, str, str]] | PickedImages, limits: ImageLimits
) -> BaseModel | CallToolResult:
    """The structured result, plus the images found (cell id, MIME type, base64) as MCP image content.

    At most ``limits`` of them (the admin's ``max_images_per_result``, ``max_image_bytes`` and
    ``max_image_bytes_total``): the result's ``images`` report says which cells they come from and how many were
    left out, why. Without any image the result is returned as it is.
    """
    picked = found if isinstance(found, PickedImages) else pick_images(found, limits)
    if not picked.images and not picked.omitted:
        return result
    report = ImageReport(
        returned=len(picked.images),
        cell_ids=[cell_id for cell_id, _, _ in picked.images],
        omitted=sum(picked.omitted.values()),
        omitted_reason=picked.reason(limits),
    )
    structured = result.model_dump(mode="json", by_alias=True)
    structured["images"] = report.model_dump(mode="json")
    text = TextContent(type="text", text=json.dumps(structured, indent=2))
    images = [ImageContent(type="image", data=data, mime_type=mime) for _, mime, data in picked.images]
    return CallToolResult(content=[text, *images], structured_content=structured)


def execution_tools(b: Backends) -> list[ToolSpec]:
    async def execute_notebook_cell(
        ctx: Context, path: NotebookPath, cell_id: CellId = None, index: CellIndex = None, timeout: Timeout = 30
    ) -> ExecutionResult:
        """Run a code cell in the shared kernel; outputs stream into it live."""
        check_timeout(timeout)
        path = await b.contents.require(path, "notebook")
        view = await b.rooms.notebook(path)
        target = view.id_at(view.resolve(cell_id, index))
        runs = await run_cells(b, ctx, path, [target], timeout=timeout, stop_on_error=True)
        return with_images(results(runs)[0], run_images(runs), b.image_limits)  # type: ignore[return-value]

    async def batch_execute_notebook_cells(
        ctx: Context,
        path: NotebookPath,
        cell_ids: Annotated[list[str] | None, Field(description="Cells to run, in order.")] = None,
        start_index: StartIndex = None,
        end_index: EndIndex = None,
        timeout: Timeout = 30,
        stop_on_error: Annotated[bool, Field(description="Stop at the first error.")] = True,
    ) -> ExecutionList:
        """Run code cells in order in the shared kernel: cell_ids, a range, or all."""
        check_timeout(timeout)
        path = await b.contents.require(path, "notebook")
        view = await b.rooms.notebook(path)
        if cell_ids is not None:
            if start_index is not None or end_index is not None:
                raise InvalidArgument("give cell_ids or a range (start_index, end_index), not both")
            targets = [view.id_at(view.resolve(cell_id=cid)) for cid in cell_ids]
        else:
            start = 0 if start_index is None else view.check_index(start_index, allow_end=True)
            end = view.cell_count if end_index is None else end_index
            if end < start or end > view.cell_count:
                raise InvalidArgument(f"end_index {end} must be between {start} and {view.cell_count}")
            targets = view.code_cell_ids(start, end)
        runs = await run_cells(
            b,
            ctx,
            path,
            targets,
            timeout=timeout,
            stop_on_error=stop_on_error,
        )
        result = ExecutionList(executions=results(runs), not_run=not_run(runs, targets))
        return with_images(result, run_images(runs), b.image_limits)  # type: ignore[return-value]

    async def restart_notebook_kernel(
        ctx: Context,
        path: NotebookPath,
        clear_outputs: Annotated[bool, Field(description="Clear every cell's outputs.")] = False,
        exec: Annotated[bool, Field(description="Then run all code cells; stops at an error.")] = False,
        timeout: Timeout = 30,
    ) -> KernelResult:
        """Restart the notebook's kernel (variables lost)."""
        check_timeout(timeout)
        path = await b.contents.require(path, "notebook")
        running = await b.kernels.kernel_for(path)
        if running is None:
            raise NotFound(f"no kernel is running for {path!r}: execute a cell to start one")
        if clear_outputs or exec:  # a person's locked cell is neither cleared nor run: refused before the restart
            doing = "clear and run" if clear_outputs and exec else "clear the outputs of" if clear_outputs else "run"
            await refuse_locked_code(await b.rooms.notebook(path), b.rooms.scanner, doing)
        kernel = await b.kernels.restart(running.id, b.actors.of(ctx).name)  # named in the runs it ends
        if clear_outputs:  # in edits of bounded cost, as clear_notebook_outputs; the run's, not undoable
            await clear_in_edits(lambda: b.rooms.notebook(path), b.rooms.scanner, None, source="run")
        runs: list[CellRun] = []
        targets: list[str] = []
        if exec:
            view = await b.rooms.notebook(path)
            targets = view.code_cell_ids(0, view.cell_count)
            runs = await run_cells(
                b,
                ctx,
                path,
                targets,
                timeout=timeout,
                stop_on_error=True,
            )
        info = KernelInfo(name=kernel.name, id=kernel.id, state=kernel.state)
        result = KernelResult(kernel=info, executions=results(runs), not_run=not_run(runs, targets))
        return with_images(result, run_images(runs), b.image_limits)  # type: ignore[return-value]

    async def interrupt_notebook_kernel(ctx: Context, path: NotebookPath) -> KernelResult:
        """Interrupt the notebook's kernel."""
        path = await b.contents.require(path, "notebook")
        running = await b.kernels.kernel_for(path)
        if running is None:
            raise NotFound(f"no kernel is running for {path!r}")
        await b.kernels.interrupt(running.id)
        return KernelResult(kernel=KernelInfo(name=running.name, id=running.id, state=running.state))

    return [
        ToolSpec(execute_notebook_cell, "execution", "Run a cell", EXECUTE, read_only=False, idempotent=False),
        ToolSpec(batch_execute_notebook_cells, "execution", "Run cells", EXECUTE, read_only=False, idempotent=False),
        ToolSpec(
            restart_notebook_kernel,
            "execution",
            "Restart the kernel",
            EXECUTE,
            read_only=False,
            destructive=True,
            idempotent=False,
        ),
        ToolSpec(interrupt_notebook_kernel, "execution", "Interrupt the kernel", EXECUTE, read_only=False),
    ]
