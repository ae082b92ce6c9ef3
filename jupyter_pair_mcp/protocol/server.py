"""Build the MCP server: tools of the enabled groups, instructions, and the session manager."""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable
from typing import Any

from mcp.server.mcpserver import MCPServer
from mcp.server.transport_security import TransportSecuritySettings
from mcp_types import Tool as MCPTool
from mcp_types import (
    ToolExecution,
)

from jupyter_pair_mcp._version import __version__
from jupyter_pair_mcp.adapters.rooms import awareness as aw
from jupyter_pair_mcp.errors import PairMCPError
from jupyter_pair_mcp.notices import CallNotices, current
from jupyter_pair_mcp.protocol.event_store import MemoryEventStore
from jupyter_pair_mcp.protocol.faults import ContainFaults
from jupyter_pair_mcp.protocol.prompts import register_prompts
from jupyter_pair_mcp.protocol.resources import register_resources
from jupyter_pair_mcp.protocol.session_log import register as register_session_log
from jupyter_pair_mcp.protocol.sessions import ScopedSessionManager
from jupyter_pair_mcp.protocol.tasks import TaskCalls, TasksExtension, advertise_legacy
from jupyter_pair_mcp.services.tasks import TaskStore
from jupyter_pair_mcp.tools.arguments import StrictArguments, close
from jupyter_pair_mcp.tools.awareness import awareness_tools
from jupyter_pair_mcp.tools.documents import document_tools
from jupyter_pair_mcp.tools.execution import execution_tools
from jupyter_pair_mcp.tools.forks import fork_tools
from jupyter_pair_mcp.tools.history import history_tools
from jupyter_pair_mcp.tools.kernels import kernel_tools
from jupyter_pair_mcp.tools.listcache import CachedToolList
from jupyter_pair_mcp.tools.notebook import notebook_read_tools
from jupyter_pair_mcp.tools.notebook_edit import notebook_edit_tools
from jupyter_pair_mcp.tools.registry import TASK_TOOLS, Backends, ToolSpec, register
from jupyter_pair_mcp.tools.show import show_tools
from jupyter_pair_mcp.tools.suggestions import suggestion_tools
from jupyter_pair_mcp.tools.testing import conformance_tools
from jupyter_pair_mcp.tools.text import text_tools
from jupyter_pair_mcp.tools.variables import variable_tools

INSTRUCTIONS = """\
You are connected to a live Jupyter server. Paths are relative to the Jupyter root and use '/'.
Notebooks and files may be open in JupyterLab by people editing at the same time as you: read
before you edit, and address cells by id. Use list_notebooks or list_documents to find files.
Never write a notebook or an open file directly (shell, file APIs, another program): the live
document is reloaded from the file, replacing edits not yet saved, yours and people's. Edit with
these tools; a result's "notice" says when a file changed on disk or could not be saved.
Inserting or updating code cells runs them unless exec=false, in the notebook's kernel, shared
with the people on it (their variables, their runs); its working directory is the notebook's folder.
Notes that name other notebook tools mean these: read_notebook is get_notebook, insert_cell is
batch_insert_notebook_cells, edit_cell is batch_update_notebook_cells, delete_cell is
batch_delete_notebook_cells, execute_cell is execute_notebook_cell.
"""


#: Tool arguments that name a document: a call naming one where its agent was stopped is refused.
PATH_ARGUMENTS = ("path", "document_path", "new_path", "copy_path")


def build_server(
    backends: Backends,
    *,
    groups: Iterable[str],
    read_only: bool,
    test_fixtures: bool = False,
    output_schemas: bool = False,
    tasks: TaskStore | None = None,
) -> tuple[MCPServer, list[str]]:
    """The MCP server with the tools an admin enabled; returns it and the registered tool names.

    ``output_schemas`` lists each tool's output schema (``JupyterPairMCP.output_schemas``); results carry
    structured content either way. With ``tasks``, the tools that run code may run as MCP tasks (protocol/tasks.py).
    """
    server = _quiet_server(output_schemas=output_schemas, extensions=[TasksExtension(tasks)] if tasks else [])
    specs = tool_specs(backends)
    enabled = list(groups)
    if test_fixtures:
        specs.extend(conformance_tools(backends))
        enabled.append("testing")
    presence = backends.presence
    read_only_tools = {spec.name for spec in specs if spec.read_only}

    def touch(ctx: Any) -> Callable[[], None] | None:
        actor = backends.actors.of(ctx)
        call = current()
        if call is not None:
            call.principal = actor.key  # whom the call's news about a document is for
            news = backends.suggestions.news(actor.key) if backends.suggestions is not None else None
            if news:  # a person's accept made its suggestions conflict: told on its next call, in either era
                call.add(news)
        if not presence:
            return None
        presence.begin(actor)  # present while the call runs, however long
        return lambda: presence.end(actor)

    def admit(ctx: Any, name: str, arguments: dict[str, Any]) -> None:
        """Refuse the call of an agent a person stopped in a document the call names."""
        stops = backends.stops
        if not stops:
            return
        actor = None
        for argument in PATH_ARGUMENTS:
            raw = arguments.get(argument)
            if not isinstance(raw, str):
                continue
            try:
                path = backends.contents.normalize(raw)
            except PairMCPError:
                continue  # the tool says what is wrong with it
            actor = actor or backends.actors.of(ctx)
            stops.check(actor, path, name)
        session = arguments.get("session_id")  # join_session and leave_session name the room instead
        room = session if isinstance(session, str) and aw.room_kind(session) else None
        room_path = aw.room_path(backends.rooms, room) if room is not None else None
        if room_path is not None:
            stops.check(actor or backends.actors.of(ctx), room_path, name)

    def audit(ctx: Any, name: str, arguments: dict[str, Any], outcome: str, error: str | None, ms: float) -> None:
        """One audit event per write or execute call (services/audit.py)."""
        if backends.audit is not None:
            actor = backends.actors.of(ctx) if ctx is not None else None
            backends.audit.tool_call(actor, name, arguments, outcome, error, ms)

    names = register(server, specs, groups=enabled, read_only=read_only, on_call=touch, admit=admit, audit=audit)
    server.middleware.append(ContainFaults())  # first: a failure anywhere below ends its request only
    server.middleware.append(StrictArguments(server.input_schema))
    if tasks is not None:  # after the argument check (a bad call is refused at once), before the notices
        permissions = {spec.name: spec.permission for spec in specs if spec.name in TASK_TOOLS and spec.name in names}
        server.middleware.append(TaskCalls(tasks, permissions))
        server.task_tools = frozenset(permissions)
        advertise_legacy(server)
    # Product tools that only read and run no code answer with one JSON body (protocol/wholebody.py).
    product = {spec.name for spec in tool_specs(backends) if spec.read_only and spec.name not in TASK_TOOLS}
    server.quick_tools = frozenset(product & set(names))
    server.middleware.append(CallNotices(read_only_tools.__contains__))
    server.middleware.append(CachedToolList())
    root = getattr(getattr(backends.contents, "manager", None), "root_dir", "")
    register_session_log(server, root if isinstance(root, str) else "")  # innermost: a call's own log lines
    register_resources(server, backends)
    register_prompts(server, backends)
    return server, names


def tool_specs(backends: Backends) -> list[ToolSpec]:
    """Every product tool, in the order clients see them (fixtures excluded)."""
    return [
        *notebook_read_tools(backends),
        *notebook_edit_tools(backends),
        *execution_tools(backends),
        *kernel_tools(backends),
        *document_tools(backends),
        *text_tools(backends),
        *history_tools(backends),
        *fork_tools(backends),
        *suggestion_tools(backends),
        *awareness_tools(backends),
        *show_tools(backends),
        *variable_tools(backends),
    ]


def build_session_manager(
    server: MCPServer,
    *,
    event_store: MemoryEventStore | None,
    retry_interval_ms: int | None,
    session_idle_timeout: float | None,
    max_sessions: int | None,
    max_request_body_size: int,
    max_sessions_per_principal: int | None = None,
) -> ScopedSessionManager:
    """The SDK session manager for our endpoint; Jupyter, not the SDK, guards Host and Origin."""
    return ScopedSessionManager(
        server._lowlevel_server,  # MCPServer exposes no public accessor for its low-level server
        shared_store=event_store,
        retry_interval=retry_interval_ms,
        session_idle_timeout=session_idle_timeout,
        max_sessions=max_sessions,
        max_sessions_per_principal=max_sessions_per_principal,
        quick_tools=getattr(server, "quick_tools", frozenset()),
        max_request_body_size=max_request_body_size,
        security_settings=TransportSecuritySettings(enable_dns_rebinding_protection=False),
    )


class _Server(MCPServer):
    """MCPServer whose tool list is built once: lean, closed input schemas and, unless asked, no output schemas.

    The tools are fixed once the server is built, and ``tools/list`` sits in every agent's context: it must
    stay within its budget (tests/test_tool_budget.py). The per-field ``title`` keys pydantic generates
    ("Cell Id" for ``cell_id``) tell a client nothing the property name does not; an optional parameter's
    ``anyOf [..., null]`` and ``default: null`` say nothing "not required" does not. Output schemas are left
    out by default: the SDK clients validate results against them and build the validators on the first call
    of a tool (seconds in a fresh process), while results carry their structured content either way. Input
    schemas are closed (``additionalProperties: false``) and
    :class:`~jupyter_pair_mcp.tools.arguments.StrictArguments` holds calls to them.
    """

    _listed: list[MCPTool] | None = None
    _schemas: dict[str, Any] | None = None
    output_schemas: bool = False
    task_tools: frozenset[str] = frozenset()  # listed with execution.taskSupport "optional" (2025-11-25 only)
    quick_tools: frozenset[str] = frozenset()  # answered with one JSON body (protocol/wholebody.py)

    async def list_tools(self) -> list[MCPTool]:
        if self._listed is None:
            self._listed = [
                tool.model_copy(
                    update={
                        "input_schema": self.input_schema(tool.name),
                        "output_schema": (
                            compact_schema(tool.output_schema) if self.output_schemas and tool.output_schema else None
                        ),
                        "execution": ToolExecution(task_support="optional") if tool.name in self.task_tools else None,
                    }
                )
                for tool in await super().list_tools()
            ]
        return self._listed

    def input_schema(self, name: str) -> dict[str, Any] | None:
        """The input schema clients see for tool ``name`` (compact and closed), or None for no such tool."""
        if self._schemas is None:
            self._schemas = {}
        schema: dict[str, Any] | None = self._schemas.get(name)
        if schema is None:
            tool = self._tool_manager.get_tool(name)
            if tool is None:
                return None
            schema = self._schemas[name] = dict(close(drop_null_options(compact_schema(tool.parameters))))
        return schema

    def add_tool(self, *args: Any, **kwargs: Any) -> None:
        self._listed = self._schemas = None
        for middleware in getattr(self, "middleware", ()):
            if isinstance(middleware, CachedToolList):
                middleware.clear()  # the wire form of the list built so far is stale
        super().add_tool(*args, **kwargs)


def compact_schema(node: Any) -> Any:
    """A JSON schema without its annotation ``title`` keys (property names are kept, even "title")."""
    if not isinstance(node, dict):
        return node
    out: dict[str, Any] = {}
    for key, value in node.items():
        if key == "title" and isinstance(value, str):
            continue
        if key in ("properties", "$defs", "patternProperties") and isinstance(value, dict):
            out[key] = {name: compact_schema(sub) for name, sub in value.items()}
        elif key in ("items", "additionalProperties", "not"):
            out[key] = compact_schema(value)
        elif key in ("anyOf", "allOf", "oneOf", "prefixItems") and isinstance(value, list):
            out[key] = [compact_schema(sub) for sub in value]
        else:
            out[key] = value
    return out


def drop_null_options(node: Any) -> Any:
    """An input schema whose optional parameters (and fields) read ``{"type": "string"}``, not ``anyOf`` with null.

    Pydantic writes ``x: str | None = None`` as ``{"anyOf": [{"type": "string"}, {"type": "null"}], "default":
    null}``; leaving it out of ``required`` already says it may be omitted. Only schemas of properties whose
    default is null lose their null option; the tool's argument model still accepts an explicit null.
    """
    if isinstance(node, list):
        return [drop_null_options(item) for item in node]
    if not isinstance(node, dict):
        return node
    out = {key: drop_null_options(value) for key, value in node.items() if key != "properties"}
    if isinstance(node.get("properties"), dict):
        out["properties"] = {name: _without_null(drop_null_options(sub)) for name, sub in node["properties"].items()}
    return out


def _without_null(prop: Any) -> Any:
    options = prop.get("anyOf") if isinstance(prop, dict) else None
    if not (isinstance(options, list) and "default" in prop and prop["default"] is None):
        return prop
    kept = [option for option in options if option != {"type": "null"}]
    if len(kept) == len(options):
        return prop
    out = {key: value for key, value in prop.items() if key not in ("anyOf", "default")}
    if len(kept) == 1 and isinstance(kept[0], dict) and not set(kept[0]) & set(out):
        return {**kept[0], **out}
    return {**out, "anyOf": kept}


def _quiet_server(*, output_schemas: bool = False, extensions: list[Any] | None = None) -> _Server:
    """Construct MCPServer without letting it call ``logging.basicConfig`` on Jupyter's root logger."""
    root = logging.getLogger()
    guard: Any = None
    if not root.handlers:
        # basicConfig is a no-op when the root logger already has a handler.
        guard = logging.NullHandler()
        root.addHandler(guard)
    try:
        server = _Server(name="jupyter-pair-mcp", version=__version__, instructions=INSTRUCTIONS, extensions=extensions)
        server.output_schemas = output_schemas
        return server
    finally:
        if guard is not None:
            root.removeHandler(guard)
