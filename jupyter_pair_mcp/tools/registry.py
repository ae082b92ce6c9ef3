"""How a tool function becomes an MCP tool: grouping, annotations, authorization, errors.

This is the single boundary between our code and the client. Every registered tool is wrapped so
that, before it runs, the Jupyter authorizer is asked for the permission the tool declares (read or
write on ``contents``, execute on ``kernels``); and so that, when it fails, a
:class:`~jupyter_pair_mcp.errors.PairMCPError` becomes an ``isError`` result carrying its
message while anything unexpected is logged here with its traceback and reaches the client only
as "internal error" plus a reference to find it in the log: any :func:`~jupyter_pair_mcp.errors.is_fault`,
``BaseException`` included (a Rust panic in pycrdt), so one failing call never ends more than itself.
"""

from __future__ import annotations

import asyncio
import functools
import inspect
import logging
import os
import secrets
import stat
import time
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from jupyter_core.utils import ensure_async
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.shared.exceptions import MCPError
from mcp_types import ToolAnnotations

from jupyter_pair_mcp.adapters.contents.adapter import ContentsAdapter
from jupyter_pair_mcp.adapters.contents.listing import matcher
from jupyter_pair_mcp.adapters.kernels.adapter import KernelsAdapter
from jupyter_pair_mcp.adapters.rooms import RoomsAdapter
from jupyter_pair_mcp.errors import PairMCPError, PermissionDenied, is_fault
from jupyter_pair_mcp.groups import GROUPS
from jupyter_pair_mcp.render import ImageLimits
from jupyter_pair_mcp.request_state import STATE_GRANT, STATE_HANDLER, STATE_USER
from jupyter_pair_mcp.revisions import Revisions
from jupyter_pair_mcp.services.actors import Actors, name_person
from jupyter_pair_mcp.services.audit import error_kind
from jupyter_pair_mcp.services.execution import ExecutionService

log = logging.getLogger(__name__)

__all__ = [
    "GROUPS",
    "READ",
    "TASK_TOOLS",
    "WRITE",
    "Backends",
    "ToolSpec",
    "authorize",
    "authorize_request",
    "check_folder",
    "in_folders",
    "register",
]

#: A per-call hook: runs as an authorized call starts; what it returns (if anything) runs when the call ends.
OnCall = Callable[[Context], "Callable[[], None] | None"]
#: ``admit(ctx, tool name, arguments)``: raises a PairMCPError to refuse the call.
Admit = Callable[[Context, str, dict[str, Any]], None]
#: ``audit(ctx, tool name, arguments, outcome, error kind, milliseconds)``: told how every audited call ended.
Audit = Callable[[Context | None, str, dict[str, Any], str, "str | None", float], None]

READ = ("read", "contents")
WRITE = ("write", "contents")

#: Arguments naming a document or folder: a grant limited to folders is checked against each.
PATH_ARGUMENTS = ("path", "document_path", "new_path", "copy_path", "directory")
#: Arguments that filter a listing ('' = the whole server): checked by the folder they start the walk in.
LISTING_ARGUMENTS = ("path_filter", "path_prefix")
#: The grant level that covers each permission a tool asks for (for the refusal's wording).
_LEVEL_FOR = {("write", "contents"): "write", ("execute", "kernels"): "execute"}

#: The tools that run code in a kernel, which a client may run as an MCP task (a run it polls by id instead of
#: waiting on: protocol/tasks.py). The edit tools among them become tasks only when they run what they edit.
TASK_TOOLS = frozenset(
    {
        "execute_notebook_cell",
        "batch_execute_notebook_cells",
        "restart_notebook_kernel",
        "execute_code",
        "batch_insert_notebook_cells",
        "batch_update_notebook_cells",
    }
)


@dataclass(frozen=True)
class Backends:
    """The adapters tools call, and the output limits they shape results with."""

    contents: ContentsAdapter
    rooms: RoomsAdapter
    kernels: KernelsAdapter
    execution: ExecutionService
    max_output_length: int = 2000
    max_resource_length: int = 100_000  # characters of text one resources/read returns
    image_limits: ImageLimits = field(default_factory=ImageLimits)  # images one result carries as image content
    execution_enabled: bool = True  # the admin's choice: edit tools' exec runs nothing when off
    actors: Actors = field(default_factory=Actors)
    history: Any = None  # jupyter_pair_mcp.services.history.HistoryService
    forks: Any = None  # jupyter_pair_mcp.services.forks.ForkService
    presence: Any = None  # jupyter_pair_mcp.services.presence.PresenceService
    stops: Any = None  # jupyter_pair_mcp.services.stops.Stops: agents people stopped, by document
    suggestions: Any = None  # jupyter_pair_mcp.services.suggestions.SuggestionService: review mode
    revisions: Revisions = field(default_factory=Revisions)
    audit: Any = None  # jupyter_pair_mcp.services.audit.AuditTrail: write and execute calls as Jupyter events
    show: Any = None  # jupyter_pair_mcp.services.show.ShowRequests: show_in_jupyterlab's requests to people's tabs


@dataclass(frozen=True)
class ToolSpec:
    """A tool function and what the server needs to know to expose it safely."""

    fn: Callable[..., Awaitable[Any]]
    group: str
    title: str  # for people reading docs/tools.md; not listed (tools/list is a budget: the name says it)
    permission: tuple[str, str]  # (action, resource) for Jupyter's authorizer
    read_only: bool
    destructive: bool = False
    idempotent: bool = True

    @property
    def name(self) -> str:
        return self.fn.__name__

    @property
    def audited(self) -> bool:
        """Whether its calls go to the audit trail: those that need write on contents or execute on kernels."""
        return self.permission[0] in ("write", "execute")

    def annotations(self) -> ToolAnnotations:
        """The MCP hints, each left out where it equals the spec's default (same meaning, fewer bytes listed).

        The defaults: not read-only, destructive, not idempotent, open world. The destructive and idempotent
        hints mean something only when a tool is not read-only (MCP spec, ``ToolAnnotations``), so read-only
        tools leave them out. No ``title`` here: the tool's own title says it.
        """
        writes = not self.read_only
        return ToolAnnotations(
            read_only_hint=True if self.read_only else None,
            destructive_hint=False if writes and not self.destructive else None,
            idempotent_hint=True if writes and self.idempotent else None,
            open_world_hint=False,
        )


def register(
    server: MCPServer,
    specs: Iterable[ToolSpec],
    *,
    groups: Iterable[str],
    read_only: bool,
    on_call: OnCall | None = None,
    admit: Admit | None = None,
    audit: Audit | None = None,
) -> list[str]:
    """Add the tools of the enabled groups (only read-only ones when ``read_only``); return their names.

    ``on_call(ctx)`` runs for every authorized call (presence counts any call as the agent being active); the
    function it returns, if any, runs when the call ends, however it ends (the agent is active until then).
    ``admit(ctx, tool name, arguments)`` runs before it and refuses a call by raising (a stopped agent).
    ``audit(...)`` is told how every call of an :attr:`ToolSpec.audited` tool ended, refusals included.
    """
    enabled = set(groups)
    names = []
    for spec in specs:
        if spec.group not in enabled or (read_only and not spec.read_only):
            continue
        server.add_tool(
            _guarded(spec, on_call, admit, audit if spec.audited else None),
            name=spec.name,
            description=describe(spec.fn),
            annotations=spec.annotations(),
            structured_output=True,
        )
        names.append(spec.name)
    return names


def describe(fn: Callable[..., Any]) -> str:
    """A tool's description as clients see it: its docstring on one line (no indentation, no wrapping)."""
    return " ".join(inspect.cleandoc(fn.__doc__ or "").split())


async def _own_cancellation_only(call: Awaitable[Any]) -> Any:
    """Await a tool's body; a cancellation that is not the call's own is a failure of the call.

    The SDK takes a ``CancelledError`` out of a tool for the request's (or the server's) cancellation: in the
    handshake era it ends the client's MCP session (-32000 "Connection closed", then 404 for every later
    request). One raised by a future someone else cancelled (a kernel client's sockets closed under a run's
    await) while this call's task is not being cancelled becomes a ``RuntimeError``: an internal tool error.
    """
    try:
        return await call
    except asyncio.CancelledError as exc:
        task = asyncio.current_task()
        if task is None or task.cancelling():
            raise  # the call itself was cancelled: the client gave up, or the server is stopping
        raise RuntimeError("a cancellation from inside the server, not the call's") from exc


def _guarded(
    spec: ToolSpec, on_call: OnCall | None = None, admit: Admit | None = None, audit: Audit | None = None
) -> Callable[..., Awaitable[Any]]:
    """Wrap a tool: authorize first, translate errors after, tell ``audit`` how it ended. Keeps the signature."""

    paths = [name for name in inspect.signature(spec.fn).parameters if name in PATH_ARGUMENTS + LISTING_ARGUMENTS]

    @functools.wraps(spec.fn)
    async def tool(**kwargs: Any) -> Any:
        ctx = next((v for v in kwargs.values() if isinstance(v, Context)), None)
        done: Callable[[], None] | None = None
        started = time.perf_counter()
        outcome: str = "error"
        error: str | None = "cancelled"  # until the call ends otherwise
        try:
            try:
                await authorize(ctx, *spec.permission)
                for name in paths:
                    value = kwargs.get(name) or ""
                    if name in LISTING_ARGUMENTS and isinstance(value, str):
                        value = matcher(value)[0]
                    check_folder(ctx.request_context.request if ctx is not None else None, value)
                if admit is not None and ctx is not None:
                    admit(ctx, spec.name, kwargs)
            except PairMCPError as exc:
                outcome, error = "refused", error_kind(exc)
                raise
            if on_call is not None and ctx is not None:
                try:
                    done = on_call(ctx)
                except Exception:  # bookkeeping must never fail the call
                    log.exception("per-call hook failed for %s", spec.name)
            result = await _own_cancellation_only(spec.fn(**kwargs))
            outcome, error = "ok", None
            return result
        except PairMCPError as exc:
            if outcome != "refused":
                outcome, error = "error", error_kind(exc)
            raise ToolError(str(exc)) from None
        except (ToolError, MCPError):
            outcome, error = "error", "tool_error"
            raise  # already shaped for the client (tool error or JSON-RPC error)
        except BaseException as exc:
            if not is_fault(exc):  # cancelled, or the process is ending
                raise
            outcome, error = "error", "internal"
            ref = secrets.token_hex(4)
            log.error("MCP tool %s failed (ref %s)", spec.name, ref, exc_info=exc)
            raise ToolError(
                f"internal error in {spec.name} (ref {ref}); the Jupyter server log has the details"
            ) from None
        finally:
            if done is not None:
                try:
                    done()
                except Exception:
                    log.exception("per-call end hook failed for %s", spec.name)
            if audit is not None:
                try:
                    audit(ctx, spec.name, kwargs, outcome, error, 1000 * (time.perf_counter() - started))
                except Exception:
                    log.exception("audit hook failed for %s", spec.name)

    return tool


async def authorize(ctx: Context | None, action: str, resource: str) -> None:
    """Ask Jupyter's authorizer whether the caller behind this tool call may ``action`` ``resource``."""
    request = ctx.request_context.request if ctx is not None else None
    await authorize_request(request, action, resource)


async def authorize_request(request: Any, action: str, resource: str) -> None:
    """The same check for a raw protocol request (its ASGI scope carries the Jupyter handler and user)."""
    state = getattr(request, "scope", {}).get("state", {}) if request is not None else {}
    handler = state.get(STATE_HANDLER)
    user = state.get(STATE_USER)
    if handler is None or user is None:
        raise PermissionDenied("this tool can only be called through the Jupyter server's /mcp endpoint")
    allowed = await ensure_async(handler.authorizer.is_authorized(handler, user, action, resource))
    grant = state.get(STATE_GRANT)
    if not allowed and grant is not None:
        needed = _LEVEL_FOR.get((action, resource), "read")
        raise PermissionDenied(
            f"this client's grant has the level {grant.level!r}, which does not allow {action} on {resource}: "
            f"the person who approved it can connect the client again and choose the level {needed!r} in Jupyter"
        )
    if not allowed:
        explain = getattr(handler.authorizer, "explain_refusal", None)  # HubScopesAuthorizer: the scope it lacks
        message = explain(user, action, resource) if callable(explain) else None
        raise PermissionDenied(
            message or f"{name_person(user)} (this credential's user) is not authorized to {action} {resource} here"
        )


def check_folder(request: Any, path: Any) -> None:
    """Refuse ``path`` (as an argument names it, "" = the root) to a grant limited to other folders.

    Both the path as named and where it really leads are checked: a symbolic link inside a granted folder to
    another one would otherwise carry the grant out of it (the contents manager follows links inside its root).
    A file with more than one hard link is refused too: its other names cannot be found without a walk of the
    whole disk, and one of them may be outside the folders — through the name inside, the grant would read and
    edit the file outside (docs/authorization.md).
    """
    state = getattr(request, "scope", {}).get("state", {}) if request is not None else {}
    grant = state.get(STATE_GRANT)
    if grant is None or grant.whole_server:
        return
    parts = [p for p in str(path).split("/") if p not in ("", ".")] if isinstance(path, str) else [".."]
    named = "/".join(parts)
    folders = ", ".join(repr(f) for f in grant.folders)
    if ".." not in parts and grant.covers(named):
        real, links = _real(state.get(STATE_HANDLER), named)
        if grant.covers(real) and links <= 1:
            return
        if grant.covers(real):
            raise PermissionDenied(
                f"this client's grant reaches only the folders {folders}: {str(path)!r} is a file with other names "
                "(hard links), which may be outside them, so a grant limited to folders may not use it (a person "
                "can replace it with a copy)"
            )
    raise PermissionDenied(
        f"this client's grant reaches only the folders {folders}: {str(path)!r} is outside them "
        "(give a path inside one of them)"
    )


@dataclass(frozen=True)
class Scope:
    """The folders a grant limited to folders reaches, for listings: a name outside them is not listed at all,
    and a walk enters only the folders and the directories on the way to them."""

    folders: tuple[str, ...]

    def covers(self, path: str) -> bool:
        return any(path == f or path.startswith(f + "/") for f in self.folders)

    def enters(self, directory: str) -> bool:
        """Whether a walk goes into ``directory``: it is in a folder, or a folder is under it."""
        return self.covers(directory) or any(f.startswith(directory + "/") for f in self.folders)


def in_folders(request: Any) -> Scope | None:
    """The caller's :class:`Scope` when it holds a grant limited to folders; None for every other caller."""
    state = getattr(request, "scope", {}).get("state", {}) if request is not None else {}
    grant = state.get(STATE_GRANT)
    if grant is None or grant.whole_server:
        return None
    return Scope(tuple(grant.folders))


def _real(handler: Any, path: str) -> tuple[str, int]:
    """``path`` with its symbolic links resolved, relative to the contents root (itself when there is none),
    and how many hard links its file has (0 when it is not a regular file, or does not exist yet)."""
    root = getattr(getattr(handler, "contents_manager", None), "root_dir", None)
    if not isinstance(root, str) or not path:
        return path, 0
    real_root = os.path.realpath(root)
    real = os.path.realpath(os.path.join(real_root, *path.split("/")))
    if os.path.commonpath([real_root, real]) != real_root:
        return "..", 0  # outside the root: in no folder
    try:
        st = os.stat(real)
        links = st.st_nlink if stat.S_ISREG(st.st_mode) else 0
    except OSError:
        links = 0
    relative = os.path.relpath(real, real_root)
    return ("" if relative == "." else relative.replace(os.sep, "/")), links
