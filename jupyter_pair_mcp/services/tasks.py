"""Long runs as tasks: a tool call that goes on in the background, polled by id, its result kept for a while.

An agent with a 60 s tool timeout cannot wait for a 20-minute cell; with a task it need not. The protocol
layer (:mod:`jupyter_pair_mcp.protocol.tasks`) starts such a call here, in an asyncio task of its own that no
request owns: the run goes on in the kernel and into the notebook whatever happens to the connection that
asked, and the task id comes back at once. Polling reads the task's status, the outputs the run has written
so far (read from the live room) and, at the end, the call's result; cancelling it cancels the call, which
interrupts the kernel as a call the client gave up does.

Every task belongs to the principal (credential) that created it: another one is told it does not exist.
What is kept is bounded by count and bytes, in total and per principal, like the event store: a finished
task is dropped once its time to live (from creation) has passed, or sooner, oldest first, to make room for
a new one; a running task is never dropped, so a principal at its count with every task running is refused
a new one. This module knows no MCP types: a result is the call's result as a JSON object, a failure a
JSON-RPC error object.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import secrets
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from jupyter_pair_mcp.errors import NotFound, PairMCPError, Unavailable, is_fault
from jupyter_pair_mcp.render import render_outputs

log = logging.getLogger(__name__)

TERMINAL = frozenset({"completed", "failed", "cancelled"})
#: The progress message of a cell run names its cell last (services/execution.py, ``OutputWriter``).
CELL_MARK = " from cell "
#: A poll shows the last outputs of the cell in flight, at most this many (a run may have written thousands).
TAIL_OUTPUTS = 8


class TaskFailed(Exception):
    """The call failed with a JSON-RPC error (not a tool error, which is a result): ``error`` is its object."""

    def __init__(self, error: dict[str, Any]) -> None:
        super().__init__(error.get("message", "failed"))
        self.error = error


@dataclass(eq=False)
class Task:
    """One call running or run in the background, and what its poller may read of it."""

    id: str
    principal: str
    tool: str
    path: str | None  # the notebook the call runs cells of, when it names one
    ttl: float  # seconds from creation the finished task is kept
    created: float = field(default_factory=time.time)
    updated: float = field(default_factory=time.time)
    status: str = "working"
    message: str | None = "started"
    result: dict[str, Any] | None = None
    error: dict[str, Any] | None = None
    outputs_written: int = 0
    cell_id: str | None = None  # the cell the run last wrote outputs of
    size: int = 0
    runner: asyncio.Task[None] | None = None
    done: asyncio.Event = field(default_factory=asyncio.Event)
    peeked: tuple[float, int, list[dict[str, Any]]] | None = None  # when, at which count, what a poll showed
    ending: str | None = None  # why the server ended it (its grant was revoked), when it did

    @property
    def terminal(self) -> bool:
        return self.status in TERMINAL

    async def progress(self, written: int, message: str) -> None:
        """A cell run's progress (outputs written so far, and where): kept for the next poll."""
        self.outputs_written = written
        self.updated = time.time()
        if CELL_MARK in message:
            self.cell_id = message.rpartition(CELL_MARK)[2]
        self.message = f"running: {written} outputs written; last: {message}"


class TaskStore:
    """The tasks of every principal, bounded; see the module docstring."""

    def __init__(
        self,
        *,
        ttl: float = 3600.0,
        max_tasks: int = 1000,
        max_tasks_per_principal: int = 64,
        max_bytes: int = 64 << 20,
        max_principal_bytes: int = 16 << 20,
        poll_interval: float = 1.0,
        rooms: Any = None,
        max_output_length: int = 2000,
    ) -> None:
        self.ttl = ttl
        self.max_tasks = max_tasks
        self.max_tasks_per_principal = max_tasks_per_principal
        self.max_bytes = max_bytes
        self.max_principal_bytes = max_principal_bytes
        self.poll_interval = poll_interval
        self.rooms = rooms  # the RoomsAdapter: where a running task's outputs so far are read
        self.max_output_length = max_output_length
        self._tasks: dict[str, Task] = {}  # in creation order
        self._watchers: dict[str, list[Callable[[Task], None]]] = {}  # by task id: told once, when it ends

    @property
    def count(self) -> int:
        return len(self._tasks)

    @property
    def bytes(self) -> int:
        return sum(task.size for task in self._tasks.values())

    def create(self, principal: str, tool: str, path: str | None, ttl: float | None = None) -> Task:
        """A new working task of ``principal`` (not started: :meth:`start` it); refused past the bounds."""
        self.expire()
        mine = [t for t in self._tasks.values() if t.principal == principal]
        if self.max_tasks_per_principal and len(mine) >= self.max_tasks_per_principal:
            self._make_room(mine, len(mine) - self.max_tasks_per_principal + 1, "max_tasks_per_principal")
        if self.max_tasks and len(self._tasks) >= self.max_tasks:
            self._make_room(list(self._tasks.values()), len(self._tasks) - self.max_tasks + 1, "max_tasks")
        kept = self.ttl if ttl is None or ttl <= 0 else min(ttl, self.ttl)
        task = Task(secrets.token_urlsafe(16), principal, tool, path, kept)
        self._tasks[task.id] = task
        return task

    def _make_room(self, tasks: list[Task], needed: int, bound: str) -> None:
        finished = [t for t in tasks if t.terminal]
        if len(finished) < needed:
            raise Unavailable(
                f"{len(tasks)} tasks are kept and still running ({bound}): wait for one to finish, or cancel one"
            )
        for task in finished[:needed]:  # oldest first
            self._tasks.pop(task.id, None)

    def start(self, task: Task, run: Callable[[], Awaitable[dict[str, Any]]]) -> None:
        """Run the call in a task no request owns: a dropped connection does not cancel it, :meth:`cancel` does."""
        task.runner = asyncio.get_running_loop().create_task(self._run(task, run), name=f"jnmcp-task-{task.tool}")
        task.runner.add_done_callback(lambda _: self._ended(task))

    def _ended(self, task: Task) -> None:
        """A runner cancelled before its first step never enters :meth:`_run`: it still ends its task."""
        if not task.terminal:
            self._finish(task, "cancelled", message="cancelled before the run began")

    async def _run(self, task: Task, run: Callable[[], Awaitable[dict[str, Any]]]) -> None:
        try:
            result = await run()
            # A result can be megabytes (images): measured off the event loop.
            size = len(await asyncio.to_thread(json.dumps, result, default=str))
        except asyncio.CancelledError:
            self._finish(task, "cancelled", message=task.ending or "cancelled: the run was interrupted")
        except TaskFailed as exc:
            self._finish(task, "failed", error=exc.error, message=str(exc))
        except BaseException as exc:
            if not is_fault(exc):  # the process is ending
                raise
            ref = secrets.token_hex(4)
            log.error("background task of %s failed (ref %s)", task.tool, ref, exc_info=exc)
            message = f"internal error (ref {ref}); the Jupyter server log has the details"
            self._finish(task, "failed", error={"code": -32603, "message": message}, message=message)
        else:
            failed = bool(result.get("isError"))
            message = "finished with a tool error" if failed else "done"
            self._finish(task, "completed", result=result, message=message, size=size)

    def _finish(
        self,
        task: Task,
        status: str,
        *,
        result: dict[str, Any] | None = None,
        error: dict[str, Any] | None = None,
        message: str,
        size: int | None = None,
    ) -> None:
        task.status, task.message, task.error, task.updated = status, message, error, time.time()
        task.size = len(json.dumps(error or {}, default=str)) if size is None else size
        if result is not None and task.size > min(self.max_principal_bytes, self.max_bytes):
            note = (
                f"the result of {task.tool} ({task.size} bytes) is larger than a task may keep "
                f"({min(self.max_principal_bytes, self.max_bytes)} bytes): read the cells' outputs instead"
            )
            result = {"content": [{"type": "text", "text": note}], "isError": True}
            task.size = len(note)
        task.result = result
        task.done.set()
        self._bound_bytes(task)
        self._tell(task)

    def watch(self, task: Task, watcher: Callable[[Task], None]) -> Callable[[], None]:
        """Tell ``watcher`` when ``task`` ends (at once if it has): a listen stream pushes ``notifications/tasks``
        so its client need not poll. Returns what stops watching (the stream ended first)."""
        if task.terminal:
            watcher(task)
            return lambda: None
        watchers = self._watchers.setdefault(task.id, [])
        watchers.append(watcher)

        def unwatch() -> None:
            with contextlib.suppress(ValueError):
                watchers.remove(watcher)

        return unwatch

    def _tell(self, task: Task) -> None:
        for watcher in self._watchers.pop(task.id, []):
            try:
                watcher(task)
            except Exception:  # a watcher's failure must not fail the task's end
                log.exception("task watcher failed")

    def _bound_bytes(self, keep: Task) -> None:
        """Drop the oldest finished tasks (not ``keep``) until the principal's and the total bytes fit."""
        for scope, bound in ((keep.principal, self.max_principal_bytes), (None, self.max_bytes)):
            tasks = [t for t in self._tasks.values() if scope is None or t.principal == scope]
            held = sum(t.size for t in tasks)
            for old in tasks:
                if held <= bound:
                    break
                if old is not keep and old.terminal:
                    held -= old.size
                    self._tasks.pop(old.id, None)

    def expire(self) -> None:
        """Forget finished tasks past their time to live."""
        now = time.time()
        for task in [t for t in self._tasks.values() if t.terminal and t.created + t.ttl <= now]:
            self._tasks.pop(task.id, None)

    def get(self, principal: str, task_id: str) -> Task:
        """The task of ``principal`` with that id; NotFound for an expired one or another principal's."""
        self.expire()
        task = self._tasks.get(task_id)
        if task is None or task.principal != principal:
            raise NotFound(f"no task {task_id!r}: it expired or was dropped, or this credential did not create it")
        return task

    def owned(self, principal: str) -> list[Task]:
        """The tasks of ``principal``, newest first."""
        self.expire()
        return [t for t in reversed(self._tasks.values()) if t.principal == principal]

    async def cancel(self, principal: str, task_id: str, wait: float = 5.0) -> Task:
        """Cancel the call (the kernel is interrupted); waits up to ``wait`` seconds for it to end."""
        task = self.get(principal, task_id)
        if not task.terminal and task.runner is not None:
            task.runner.cancel()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(asyncio.shield(task.done.wait()), wait)
        return task

    def end(self, principal: str, reason: str) -> int:
        """Cancel every running task of ``principal`` (its grant was revoked), each told ``reason``; how many."""
        ended = 0
        for task in self._tasks.values():
            if task.principal == principal and not task.terminal and task.runner is not None:
                task.ending = f"cancelled: {reason}"
                task.runner.cancel()
                ended += 1
        return ended

    async def outputs(self, task: Task) -> list[dict[str, Any]]:
        """The last outputs of the cell a running task is on, read from the live room (each cut at
        max_output_length). Read again only once the run wrote more and a poll interval passed: polls cost the
        room one read of a few outputs per interval, however often they come."""
        if self.rooms is None or task.terminal or task.path is None or task.cell_id is None:
            return []
        now = time.monotonic()
        if task.peeked is not None:
            when, count, shown = task.peeked
            if count == task.outputs_written or now - when < self.poll_interval:
                return shown
        try:
            view = await self.rooms.notebook(task.path)
            outputs = view.ycell(task.cell_id).get("outputs")
        except PairMCPError:
            return []
        total = len(outputs) if outputs is not None else 0
        tail = [outputs[i] for i in range(max(0, total - TAIL_OUTPUTS), total)] if outputs is not None else []
        shown = render_outputs([o.to_py() if hasattr(o, "to_py") else dict(o) for o in tail], self.max_output_length)
        task.peeked = (now, task.outputs_written, shown)
        return shown

    async def close(self, timeout: float = 5.0) -> None:
        """Cancel every running task (the server stops), waiting at most ``timeout`` seconds for them to end."""
        runners = [t.runner for t in self._tasks.values() if t.runner is not None and not t.runner.done()]
        for runner in runners:
            runner.cancel()
        if runners and timeout > 0:
            await asyncio.wait(runners, timeout=timeout)
