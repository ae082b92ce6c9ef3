"""Running a notebook's cells: the kernel's messages written into the live room as they arrive.

This is the one place that combines two adapters — the kernel that runs the code and the room that
shows it — so that tools stay thin. Outputs go through an ``OutputWriter`` (batched, never holding the
event loop long), which re-fetches the room's document before each batch (a room can be deleted mid-run
when its last browser leaves) and reports progress per batch; a timeout interrupts the kernel, and a
cancelled call (the client gave up or its stream dropped) interrupts the run it started.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections import deque
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass
from typing import Any, TypeVar

import anyio

from jupyter_pair_mcp.adapters.kernels.adapter import Kernel, KernelDied, KernelsAdapter
from jupyter_pair_mcp.adapters.rooms import RoomsAdapter
from jupyter_pair_mcp.adapters.rooms.cells import type_and_source
from jupyter_pair_mcp.adapters.rooms.outputs import RunState, begin, end, write_batch
from jupyter_pair_mcp.errors import AgentStopped, InvalidArgument, NotFound, Unavailable
from jupyter_pair_mcp.render import output_images, render_outputs

log = logging.getLogger(__name__)

Progress = Callable[[int, str], Awaitable[None]]

# One write (one transaction) takes at most this many messages / this much text, and a stream message is
# cut in pieces of SLICE_CHARS: each write holds the event loop a few milliseconds at most, even for a
# 100 MB line, and other requests are served between writes.
BATCH_MESSAGES = 256
BATCH_CHARS = 1 << 20
SLICE_CHARS = 1 << 18
# A run cut off (its kernel restarted or gone) says the last line it printed, this long at most.
LAST_LINE_CHARS = 120


class OutputWriter:
    """Writes one run's output messages into the room in batches, in order, yielding between batches.

    ``put`` (the kernel reader's callback) only queues a message; a task writes what is queued. The reader
    hands over every message the kernel's socket already holds before it yields (``kernels.drain``), so all
    of them go into one transaction (up to the bounds above): a flood of ``display()`` calls costs about a
    tenth of a transaction per message, and each collaborator gets one update per batch. Progress is
    reported once per batch.
    """

    def __init__(self, rooms: RoomsAdapter, path: str, actor: Any, state: RunState, progress: Progress | None) -> None:
        self.rooms = rooms
        self.path = path
        self.actor = actor
        self.state = state
        self.progress = progress
        self._queue: deque[tuple[str, dict[str, Any]]] = deque()
        self._wake = asyncio.Event()
        self._closing = False
        self._task: asyncio.Task[None] | None = None
        self.last_line = ""  # of the last text output it was given: how far a run that was cut off got

    async def put(self, kind: str, content: dict[str, Any]) -> None:
        if self._task is None:
            self._task = asyncio.ensure_future(self._run())
        elif self._task.done():
            self._task.result()  # the writer failed: stop the run with its error
        text = content.get("text")
        data = content.get("data")
        line = _last_line(text if isinstance(text, str) else data.get("text/plain") if isinstance(data, dict) else None)
        if line:
            self.last_line = line
        if kind == "stream" and isinstance(text, str) and len(text) > SLICE_CHARS:
            for i in range(0, len(text), SLICE_CHARS):
                piece = {**content, "text": text[i : i + SLICE_CHARS]}
                self._queue.append((kind, {**piece, "continued": True} if i else piece))
        else:
            self._queue.append((kind, content))
        self._wake.set()

    async def close(self) -> None:
        """Write what is still queued and stop the task (raises what the task raised)."""
        self._closing = True
        self._wake.set()
        if self._task is None:
            if self._queue:
                self._task = asyncio.ensure_future(self._run())
            else:
                return
        await self._task

    async def _run(self) -> None:
        while True:
            await self._wake.wait()
            self._wake.clear()
            while self._queue:
                batch = self._take()
                with contextlib.suppress(NotFound):  # the cell was deleted mid-run: keep running, stop writing
                    write_batch(await self.rooms.notebook(self.path, self.actor), self.state, batch)
                if self.progress is not None:
                    message = f"{batch[-1][0]} from cell {self.state.cell_id}"
                    try:
                        await self.progress(self.state.outputs_written, message)
                    except Exception:  # a client gone mid-run must not stop the outputs reaching the room
                        log.debug("progress notification failed", exc_info=True)
                await asyncio.sleep(0)  # let other requests in between two batches
            if self._closing:
                return

    def _take(self) -> list[tuple[str, dict[str, Any]]]:
        batch: list[tuple[str, dict[str, Any]]] = []
        chars = 0
        while self._queue and len(batch) < BATCH_MESSAGES and chars < BATCH_CHARS:
            kind, content = self._queue.popleft()
            batch.append((kind, content))
            chars += _size(content)
        return batch


def _last_line(text: Any) -> str:
    """The last non-empty line of an output's text, cut to :data:`LAST_LINE_CHARS` (its end kept)."""
    if not isinstance(text, str):
        return ""
    tail = text[-4 * LAST_LINE_CHARS :].rstrip()  # bounded, however long the text
    line = tail[tail.rfind("\n") + 1 :]
    return line if len(line) <= LAST_LINE_CHARS else f"…{line[-LAST_LINE_CHARS:]}"


def _stayed(writer: OutputWriter) -> str:
    """What a run that was cut off left in its cell, for its error: how many outputs, and the last line."""
    n = writer.state.outputs_written
    if not n:
        return ""
    last = f" (the last line: {writer.last_line!r})" if writer.last_line else ""
    return f". The {n} output{'s' if n != 1 else ''} it sent until then stayed in the cell{last}"


def _size(content: dict[str, Any]) -> int:
    """Roughly how much text a message writes (its stream text or its data values)."""
    text = content.get("text")
    if isinstance(text, str):
        return len(text)
    data = content.get("data")
    if isinstance(data, dict):
        return sum(len(v) if isinstance(v, str) else 64 for v in data.values())
    return 64


T = TypeVar("T")


@dataclass(eq=False)
class _Watch:
    """A run in flight, as a person's stop finds it: whose, where, and the event that stops it."""

    actor: Any
    path: str
    stopped: asyncio.Event
    reason: str = ""
    note: str = ""  # what the cell says of the stop, for the people looking at it


@dataclass
class CellRun:
    id: str
    status: str
    execution_count: int | None
    outputs: list[dict[str, Any]]
    images: list[tuple[str, str]]


class ExecutionService:
    def __init__(
        self,
        rooms: RoomsAdapter,
        kernels: KernelsAdapter,
        *,
        max_output_length: int,
        include_images: bool = True,
        max_per_principal: int = 0,
    ) -> None:
        self.rooms = rooms
        self.kernels = kernels
        self.max_output_length = max_output_length
        self.max_per_principal = max_per_principal
        self._running: dict[str, int] = {}  # principal -> run_cells calls in flight
        self._watches: set[_Watch] = set()  # runs in flight (bounded by the executions in flight)
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
        with self.claim(getattr(actor, "principal", "")):
            return await self._run_cells(path, cell_ids, timeout, stop_on_error, progress, actor)

    @contextlib.contextmanager
    def claim(self, principal: str) -> Iterator[None]:
        """Count a caller's executions in flight; past ``max_per_principal`` refuse one more (runs queue in
        their kernel, so a caller could otherwise park any number of them and starve everyone else's)."""
        held = self._running.get(principal, 0)
        if self.max_per_principal and held >= self.max_per_principal:
            raise Unavailable(
                f"you already have {held} executions in flight (max_executions_per_principal): wait for them "
                "to finish, or interrupt the kernel"
            )
        self._running[principal] = held + 1
        try:
            yield
        finally:
            left = self._running.pop(principal, 1) - 1
            if left:
                self._running[principal] = left

    async def _run_cells(
        self,
        path: str,
        cell_ids: list[str],
        timeout: float,
        stop_on_error: bool,
        progress: Progress | None,
        actor: Any,
    ) -> list[CellRun]:
        view = await self.rooms.notebook(path)
        codes = []
        for cell_id in cell_ids:
            cell_type, source = type_and_source(view.writable(cell_id, "run"))  # not its outputs: they may be huge
            if cell_type != "code":
                raise InvalidArgument(f"cell {cell_id!r} is a {cell_type} cell: only code cells run")
            codes.append((cell_id, source))
        kernel = await self.kernel(path)
        since = self.kernels.restarts.count(kernel.id)  # a restart after this ends the call's runs
        runs: list[CellRun] = []
        for cell_id, code in codes:
            try:
                one = self._run_one(path, kernel, cell_id, code, timeout, progress, actor, since)
                run = await self.stoppable(actor, path, one)
            except AgentStopped as exc:
                await self._mark_stopped(path, cell_id, exc.note)
                raise
            except KernelDied as exc:
                # Say which cell, and what this call ran before it (those results are not returned).
                before = ", ".join(f"{r.id!r} ({r.status})" for r in runs)
                ran = f" (this call ran {before} before it)" if before else ""
                raise KernelDied(f"cell {cell_id!r}: {exc}{ran}") from None
            runs.append(run)
            if stop_on_error and run.status != "ok":
                break
        return runs

    def interrupt(
        self, matches: Callable[[Any], bool], where: Callable[[str], bool] | None, reason: str, note: str = ""
    ) -> int:
        """Stop the runs, in the documents ``where`` accepts (None: anywhere), of the actors ``matches`` accepts
        (a person stopped that agent there, or its grant was revoked): each is cancelled as a call the client gave
        up is (the kernel is interrupted once it began the cell) and its call fails with ``reason``. Returns how
        many were stopped. ``note``: what the stopped cell says, for people (:func:`stopped_note`)."""
        stopped = 0
        for watch in list(self._watches):
            if (where is None or where(watch.path)) and not watch.stopped.is_set() and matches(watch.actor):
                watch.reason = reason
                watch.note = note or "the agent's run was stopped"
                watch.stopped.set()
                stopped += 1
        return stopped

    async def stoppable(self, actor: Any, path: str, run: Awaitable[T]) -> T:
        """Run one cell (or scratch code) in a task of its own that :meth:`interrupt` can cancel without
        cancelling the call: a stop or a revocation ends it, and the call (or its MCP task) says why."""
        watch = _Watch(actor, path, asyncio.Event())
        self._watches.add(watch)
        task = asyncio.ensure_future(run)
        waiter = asyncio.ensure_future(watch.stopped.wait())
        try:
            await asyncio.wait({task, waiter}, return_when=asyncio.FIRST_COMPLETED)
        except BaseException:  # the call itself was cancelled: the run goes with it, as before
            task.cancel()
            with anyio.CancelScope(shield=True):
                await asyncio.wait({task})
            raise
        finally:
            waiter.cancel()
            self._watches.discard(watch)
        if not watch.stopped.is_set():
            if task.cancelled():  # not by the caller (that is raised above): it must not end the MCP session
                log.warning("A run was cancelled inside the server, not by its caller; its call fails")
                raise Unavailable(
                    "the run was cut off inside the server before it finished (the server log says more); the "
                    "outputs it sent before stayed in the cell: run it again"
                )
            return task.result()
        task.cancel()
        with anyio.CancelScope(shield=True):
            await asyncio.wait({task})
        if not task.cancelled():
            task.exception()  # retrieved: the stop is what the caller hears of
        stopped = AgentStopped(watch.reason)
        stopped.note = watch.note
        raise stopped

    async def _mark_stopped(self, path: str, cell_id: str, note: str) -> None:
        """Say in the cell that its run was stopped: people looking at it see why its outputs end there (the
        agent's call says it too). A cell deleted meanwhile is left alone."""
        try:
            view = await self.rooms.notebook(path)
            text = f"[jupyter-pair-mcp] {note or 'the run was stopped'}; the outputs above are what it wrote before.\n"
            write_batch(view, RunState(cell_id), [("stream", {"name": "stderr", "text": text})])
        except (NotFound, Unavailable):
            log.info("A stopped run's cell is gone: no note written")

    async def _run_one(
        self,
        path: str,
        kernel: Kernel,
        cell_id: str,
        code: str,
        timeout: float,
        progress: Progress | None,
        actor: Any = None,
        since: int = 0,
    ) -> CellRun:
        state = RunState(cell_id)
        async with self.kernels.lock(kernel.id):
            self.kernels.restarts.check(kernel.id, since, began=False)  # queued behind a run the restart ended
            begin(await self.rooms.notebook(path, actor), state)
            writer = OutputWriter(self.rooms, path, actor, state, progress)
            count: int | None = None
            cut: Unavailable | None = None
            try:
                try:
                    execution = await self.kernels.execute(kernel.id, code, writer.put, timeout, since=since)
                    status, count = execution.status, execution.execution_count
                except Unavailable as exc:  # the kernel (or its gateway) went away or was restarted under the run
                    cut = exc
            except asyncio.CancelledError:
                log.info("MCP execution of a cell was cancelled by the client; the kernel was interrupted")
                raise
            finally:
                # Also after a cancellation (anyio re-cancels every await): the outputs received are written
                # and the cell must not stay "running".
                with anyio.CancelScope(shield=True):
                    try:
                        await writer.close()
                    finally:
                        with contextlib.suppress(Exception):
                            end(await self.rooms.notebook(path, actor), state, count)
        if cut is not None:
            cut.args = (f"{cut}{_stayed(writer)}",)  # how far it got: what it left in the cell
            raise cut
        view = await self.rooms.notebook(path)
        try:
            outputs = view.cell(view.resolve(cell_id=cell_id)).outputs
        except NotFound:
            outputs = []
        rendered = render_outputs(outputs, self.max_output_length)
        return CellRun(cell_id, status, count, rendered, output_images(outputs) if self.include_images else [])
