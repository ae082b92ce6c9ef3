"""Long runs as MCP tasks, in both eras: the wire side of :mod:`jupyter_pair_mcp.services.tasks`.

Which calls become tasks: a ``tools/call`` of a tool that runs code
(:data:`~jupyter_pair_mcp.tools.registry.TASK_TOOLS`) from a client that opted in —

- 2025-11-25: the request's ``params.task`` (``{"ttl": ms}``); tools list ``execution.taskSupport:
  "optional"``, the handshake advertises ``capabilities.tasks``; ``tasks/get``, ``tasks/result`` (waits for the
  end), ``tasks/list`` and ``tasks/cancel`` answer with the 2025-11-25 shapes;
- 2026-07-28: the Tasks extension (``io.modelcontextprotocol/tasks``, SEP-2663) named in the request's
  per-request client capabilities; the answer is a ``CreateTaskResult`` (``resultType: "task"``), and
  ``tasks/get`` (with ``result`` or ``error`` inlined at the end), ``tasks/update`` and ``tasks/cancel`` (empty
  acknowledgements) follow that extension.

Any other call is untouched. A caller the authorizer refuses the tool's permission is not given a task: its
call goes down the chain and is refused (and audited) as any call is. Otherwise the task is created and the
call started at once, before the kernel is even asked; the call then runs down the same middleware and tool
chain as any call (argument checks, authorization, stops, notices, audit), in a task no request owns.

What the SDK (mcp 2.3) lacks, and this module adds: the SDK has the 2025-11-25 task types but dispatches no
``tasks/*`` method and has no task store; its result sieve would strip a ``CreateTaskResult`` from a
2025-11-25 ``tools/call``, so the task is created in a server middleware (which owns its result), not in the
extension's ``intercept_tool_call``; and it does not advertise ``capabilities.tasks``. The methods are
served through the SDK's extension hook (:class:`TasksExtension`), which also advertises the 2026 extension.
Status notifications (``notifications/tasks/status``) are not sent: clients poll, as both specs require them
to be able to.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from datetime import UTC, datetime
from typing import Any, cast

from mcp.server.extension import Extension, MethodBinding
from mcp.shared.exceptions import MCPError
from mcp_types import (
    INVALID_PARAMS,
    INVALID_REQUEST,
    METHOD_NOT_FOUND,
    PaginatedRequestParams,
    RequestParams,
    ServerTasksCapability,
    ServerTasksRequestsCapability,
    TasksCallCapability,
    TasksCancelCapability,
    TasksListCapability,
    TasksToolsCapability,
)
from mcp_types.version import MODERN_PROTOCOL_VERSIONS
from pydantic import BaseModel

from jupyter_pair_mcp.errors import PairMCPError
from jupyter_pair_mcp.services.tasks import Task, TaskFailed, TaskStore
from jupyter_pair_mcp.tools.registry import authorize_request

EXTENSION = "io.modelcontextprotocol/tasks"
CLIENT_CAPABILITIES = "io.modelcontextprotocol/clientCapabilities"
RELATED_TASK = "io.modelcontextprotocol/related-task"
#: ``_meta`` key of a running task's poll: the outputs its run has written so far.
PROGRESS_META = "jupyter-pair-mcp/progress"


class TaskIdParams(RequestParams):
    task_id: str
    request_state: str | None = None


class TaskUpdateParams(TaskIdParams):
    input_responses: dict[str, Any] | None = None


def principal_of(ctx: Any) -> str:
    """The credential fingerprint the endpoint gave the SDK as the request's user: whose tasks these are."""
    request = getattr(ctx, "request", None)
    user = getattr(request, "scope", {}).get("user") if request is not None else None
    return str(getattr(getattr(user, "access_token", None), "client_id", "") or "")


def _modern(ctx: Any) -> bool:
    return getattr(ctx, "protocol_version", None) in MODERN_PROTOCOL_VERSIONS


def _stamp(t: float) -> str:
    return datetime.fromtimestamp(t, UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def task_fields(store: TaskStore, task: Task, *, modern: bool) -> dict[str, Any]:
    """The ``Task`` object of either era (TTL and poll interval are named and unit-ed differently)."""
    out: dict[str, Any] = {
        "taskId": task.id,
        "status": task.status,
        "statusMessage": task.message,
        "createdAt": _stamp(task.created),
        "lastUpdatedAt": _stamp(task.updated),
    }
    if modern:
        out.update(ttlSeconds=round(task.ttl), pollIntervalMilliseconds=round(store.poll_interval * 1000))
    else:
        out.update(ttl=round(task.ttl * 1000), pollInterval=round(store.poll_interval * 1000))
    return out


def task_view(store: TaskStore, task: Task) -> dict[str, Any]:
    """The 2026 task as ``tasks/get`` and ``notifications/tasks`` give it: with its result or error once ended."""
    out = task_fields(store, task, modern=True)
    if task.status == "completed":
        out["result"] = task.result
    elif task.status == "failed":
        out["error"] = task.error
    return out


class TaskSession:
    """The request's session as the background call sees it: a run's progress goes to its task (the request
    that started it may be gone); everything else is the session's."""

    def __init__(self, session: Any, task: Task) -> None:
        self._session = session
        self._task = task

    async def report_progress(self, progress: float, total: float | None = None, message: str | None = None) -> None:
        await self._task.progress(int(progress), message or "")

    def __getattr__(self, name: str) -> Any:
        return getattr(self._session, name)


class TaskCalls:
    """Server middleware: a ``tools/call`` a client asked to run as a task answers with the task at once."""

    def __init__(self, store: TaskStore, permissions: Mapping[str, tuple[str, str]]) -> None:
        self.store = store
        self.permissions = permissions  # task tool name -> (action, resource) its calls need

    async def __call__(self, ctx: Any, call_next: Any) -> Any:
        params = ctx.params if ctx.method == "tools/call" else None
        ttl = self._wanted(ctx, params) if isinstance(params, Mapping) else None
        if ttl is None:
            return await call_next(ctx)
        assert isinstance(params, Mapping)
        name = str(params.get("name"))
        try:
            await authorize_request(ctx.request, *self.permissions[name])
        except PairMCPError:
            return await call_next(ctx)  # refused (and audited) as any call is
        arguments = params.get("arguments")
        path = arguments.get("path") if isinstance(arguments, Mapping) else None
        try:
            task = self.store.create(principal_of(ctx), name, path if isinstance(path, str) else None, ttl)
        except PairMCPError as exc:
            return {"content": [{"type": "text", "text": f"{name}: {exc}; nothing was done"}], "isError": True}
        background = replace(ctx, session=cast(Any, TaskSession(ctx.session, task)))

        async def run() -> dict[str, Any]:
            try:
                result = await call_next(background)
            except MCPError as exc:
                raise TaskFailed({"code": exc.code, "message": exc.message}) from None
            if isinstance(result, BaseModel):
                return result.model_dump(by_alias=True, mode="json", exclude_none=True)
            return dict(result)

        self.store.start(task, run)
        fields = task_fields(self.store, task, modern=_modern(ctx))
        return {"resultType": "task", **fields} if _modern(ctx) else {"task": fields}

    def _wanted(self, ctx: Any, params: Mapping[str, Any]) -> float | None:
        """The TTL (seconds; 0 for the default) a task of this call should have, or None: not a task.

        2026-07-28: the server decides, and an edit that runs nothing needs no task. 2025-11-25: the client
        does, and asking it of a tool not listed with task support is refused (-32601, as the spec says).
        """
        name, arguments = params.get("name"), params.get("arguments")
        if _modern(ctx):
            if name not in self.permissions or (isinstance(arguments, Mapping) and arguments.get("exec") is False):
                return None
            meta = params.get("_meta")
            capabilities = meta.get(CLIENT_CAPABILITIES) if isinstance(meta, Mapping) else None
            extensions = capabilities.get("extensions") if isinstance(capabilities, Mapping) else None
            return 0.0 if isinstance(extensions, Mapping) and EXTENSION in extensions else None
        task = params.get("task")
        if not isinstance(task, Mapping):
            return None
        if name not in self.permissions:
            refusal = f"{name} does not run as a task (no execution.taskSupport): call it without task"
            raise MCPError(METHOD_NOT_FOUND, refusal)
        ttl = task.get("ttl")
        return ttl / 1000 if isinstance(ttl, int | float) and not isinstance(ttl, bool) and ttl > 0 else 0.0


class TasksExtension(Extension):
    """``tasks/*`` of both eras, through the SDK's extension hook (which advertises the 2026 extension too)."""

    identifier = EXTENSION

    def __init__(self, store: TaskStore) -> None:
        self.store = store

    def methods(self) -> Sequence[MethodBinding]:
        return [
            MethodBinding("tasks/get", TaskIdParams, self.get),
            MethodBinding("tasks/cancel", TaskIdParams, self.cancel),
            MethodBinding("tasks/update", TaskUpdateParams, self.update, frozenset(MODERN_PROTOCOL_VERSIONS)),
            MethodBinding("tasks/result", TaskIdParams, self.result, frozenset({"2025-11-25"})),
            MethodBinding("tasks/list", PaginatedRequestParams, self.list, frozenset({"2025-11-25"})),
        ]

    def _task(self, ctx: Any, task_id: str) -> Task:
        try:
            return self.store.get(principal_of(ctx), task_id)
        except PairMCPError as exc:
            raise MCPError(INVALID_PARAMS, str(exc)) from None

    async def get(self, ctx: Any, params: TaskIdParams) -> dict[str, Any]:
        """The task's state; while it runs, ``_meta`` carries the outputs of the cell it is on."""
        task = self._task(ctx, params.task_id)
        modern = _modern(ctx)
        out = task_view(self.store, task) if modern else task_fields(self.store, task, modern=False)
        if not task.terminal:
            outputs = await self.store.outputs(task)
            progress = {"outputs_written": task.outputs_written, "cell_id": task.cell_id, "outputs": outputs}
            out["_meta"] = {PROGRESS_META: progress}
        return out

    async def cancel(self, ctx: Any, params: TaskIdParams) -> dict[str, Any]:
        """Cancel the run (the kernel is interrupted). 2026: an empty acknowledgement, whatever the id."""
        if _modern(ctx):
            try:
                await self.store.cancel(principal_of(ctx), params.task_id)
            except PairMCPError:
                pass  # the extension acknowledges an unknown id as any other
            return {}
        task = self._task(ctx, params.task_id)
        if task.terminal:
            raise MCPError(INVALID_PARAMS, f"task {task.id!r} is already {task.status}: it cannot be cancelled")
        await self.store.cancel(task.principal, task.id)
        return task_fields(self.store, task, modern=False)

    async def update(self, ctx: Any, params: TaskUpdateParams) -> dict[str, Any]:
        """Input for a task: none of ours ever asks for any, so this only acknowledges (as the extension says)."""
        return {}

    async def result(self, ctx: Any, params: TaskIdParams) -> dict[str, Any]:
        """2025-11-25: the call's result, once the task has ended (this request waits for it)."""
        task = self._task(ctx, params.task_id)
        await task.done.wait()
        related = {RELATED_TASK: {"taskId": task.id}}
        if task.status == "failed" and task.error is not None:
            raise MCPError(int(task.error.get("code", INVALID_REQUEST)), str(task.error.get("message", "failed")))
        if task.status != "completed" or task.result is None:
            raise MCPError(INVALID_REQUEST, f"task {task.id!r} was {task.status}: it has no result")
        meta = task.result.get("_meta")
        return {**task.result, "_meta": {**(meta if isinstance(meta, Mapping) else {}), **related}}

    async def list(self, ctx: Any, params: PaginatedRequestParams) -> dict[str, Any]:
        """2025-11-25: this credential's tasks, newest first (bounded per principal: one page)."""
        return {"tasks": [task_fields(self.store, t, modern=False) for t in self.store.owned(principal_of(ctx))]}


def advertise_legacy(server: Any) -> None:
    """Add ``capabilities.tasks`` to the 2025-11-25 handshake (the SDK builds capabilities without it)."""
    lowlevel = server._lowlevel_server
    original = lowlevel.get_capabilities
    tasks = ServerTasksCapability(
        list=TasksListCapability(),
        cancel=TasksCancelCapability(),
        requests=ServerTasksRequestsCapability(tools=TasksToolsCapability(call=TasksCallCapability())),
    )

    def capabilities(*args: Any, **kwargs: Any) -> Any:
        result = original(*args, **kwargs)
        if kwargs.get("protocol_version") in MODERN_PROTOCOL_VERSIONS:
            return result
        return result.model_copy(update={"tasks": tasks})

    lowlevel.get_capabilities = capabilities
