"""Running a notebook's cells: the kernel's messages written into the live room as they arrive.

This is the one place that combines two adapters — the kernel that runs the code and the room that
shows it — so that tools stay thin. Each output message re-fetches the room's document before writing
(a room can be deleted mid-run when its last browser leaves), progress is reported per output, a
timeout interrupts the kernel, and a cancelled call (the client gave up or its stream dropped)
interrupts the run it started.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

import anyio

from .errors import InvalidArgument, NotFound
from .kernels import Kernel, KernelsAdapter
from .render import output_images, render_outputs
from .rooms import RoomsAdapter
from .rooms.outputs import RunState, begin, end, write

log = logging.getLogger(__name__)

Progress = Callable[[int, str], Awaitable[None]]


@dataclass
class CellRun:
    id: str
    status: str
    execution_count: int | None
    outputs: list[dict[str, Any]]
    images: list[tuple[str, str]]


class ExecutionService:
    def __init__(
        self, rooms: RoomsAdapter, kernels: KernelsAdapter, *, max_output_length: int, include_images: bool = True
    ) -> None:
        self.rooms = rooms
        self.kernels = kernels
        self.max_output_length = max_output_length
        self.include_images = include_images

    async def kernel(self, path: str) -> Kernel:
        """The notebook's kernel, started from its kernelspec when none runs."""
        view = await self.rooms.notebook(path)
        spec = view.notebook_metadata().get("kernelspec") or {}
        return await self.kernels.ensure_kernel(path, spec.get("name") if isinstance(spec, dict) else None)

    async def run_cells(
        self,
        path: str,
        cell_ids: list[str],
        *,
        timeout: float,
        stop_on_error: bool,
        progress: Progress | None = None,
        actor: Any = None,
    ) -> list[CellRun]:
        """Run code cells in order; stop after the first failing one when ``stop_on_error``.

        ``actor`` (who asked) is the author of the output writes in history and activity.
        """
        view = await self.rooms.notebook(path)
        codes = []
        for cell_id in cell_ids:
            cell = view.cell(view.resolve(cell_id=cell_id))
            if cell.cell_type != "code":
                raise InvalidArgument(f"cell {cell_id!r} is a {cell.cell_type} cell: only code cells run")
            codes.append((cell_id, cell.source))
        kernel = await self.kernel(path)
        runs: list[CellRun] = []
        for cell_id, code in codes:
            run = await self._run_one(path, kernel, cell_id, code, timeout, progress, actor)
            runs.append(run)
            if stop_on_error and run.status != "ok":
                break
        return runs

    async def _run_one(
        self,
        path: str,
        kernel: Kernel,
        cell_id: str,
        code: str,
        timeout: float,
        progress: Progress | None,
        actor: Any = None,
    ) -> CellRun:
        state = RunState(cell_id)
        async with self.kernels.lock(kernel.id):
            begin(await self.rooms.notebook(path, actor), state)

            async def on_output(kind: str, content: dict[str, Any]) -> None:
                with contextlib.suppress(NotFound):  # the cell was deleted mid-run: keep running, stop writing
                    write(await self.rooms.notebook(path, actor), state, kind, content)
                if progress is not None and kind != "clear_output":
                    await progress(state.outputs_written, f"{kind} from cell {cell_id}")

            count: int | None = None
            try:
                execution = await self.kernels.execute(kernel.id, code, on_output, timeout)
                status, count = execution.status, execution.execution_count
            except asyncio.CancelledError:
                log.info("MCP execution of a cell was cancelled by the client; the kernel was interrupted")
                raise
            finally:
                # Also after a cancellation (anyio re-cancels every await): the cell must not stay "running".
                with anyio.CancelScope(shield=True), contextlib.suppress(Exception):
                    end(await self.rooms.notebook(path, actor), state, count)
        view = await self.rooms.notebook(path)
        try:
            outputs = view.cell(view.resolve(cell_id=cell_id)).outputs
        except NotFound:
            outputs = []
        rendered = render_outputs(outputs, self.max_output_length)
        return CellRun(cell_id, status, count, rendered, output_images(outputs) if self.include_images else [])
