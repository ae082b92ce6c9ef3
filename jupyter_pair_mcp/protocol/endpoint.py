"""The MCP side of the extension — server, tools, event store, session manager — built on first use.

Importing the MCP SDK takes about half a second, which every Jupyter server start would otherwise pay,
whether or not an agent ever connects. The extension app builds this module's :class:`Endpoint` after
start (the import runs in a worker thread, so the server keeps answering meanwhile) or on the first
request to ``/mcp``, whichever comes first.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol

from jupyter_pair_mcp.adapters.contents.adapter import ContentsAdapter
from jupyter_pair_mcp.adapters.kernels.adapter import KernelsAdapter
from jupyter_pair_mcp.adapters.rooms import RoomsAdapter
from jupyter_pair_mcp.protocol.event_store import MemoryEventStore
from jupyter_pair_mcp.protocol.listen import register_subscriptions
from jupyter_pair_mcp.protocol.server import build_server, build_session_manager
from jupyter_pair_mcp.protocol.sessions import ManagerRunner, ScopedSessionManager
from jupyter_pair_mcp.render import ImageLimits
from jupyter_pair_mcp.revisions import Revisions
from jupyter_pair_mcp.services.actors import Actors
from jupyter_pair_mcp.services.execution import ExecutionService
from jupyter_pair_mcp.services.tasks import TaskStore
from jupyter_pair_mcp.tools.registry import Backends


class EndpointHost(Protocol):
    """What the endpoint is built from: the extension app's adapters, services and settings.

    A protocol rather than the app class, so this module (below the app in the layers) never imports it.
    """

    contents: ContentsAdapter
    rooms: RoomsAdapter
    kernels: KernelsAdapter
    execution: ExecutionService
    actors: Actors
    history: Any
    forks: Any
    presence: Any
    stops: Any
    suggestions: Any
    subscriptions: Any
    audit: Any
    show: Any
    max_output_length: int
    max_resource_length: int
    max_images_per_result: int
    max_image_bytes: int
    max_image_bytes_total: int
    tool_groups: list[str]
    read_only: bool
    output_schemas: bool
    enable_test_fixtures: bool
    event_store_max_events_per_stream: int
    event_store_max_streams: int
    event_store_max_age: float
    event_store_max_event_bytes: int
    event_store_max_session_bytes: int
    event_store_max_bytes: int
    sse_retry_interval: int
    session_idle_timeout: float
    max_sessions: int
    max_sessions_per_principal: int
    max_request_body_size: int
    shutdown_timeout: float
    max_revision_bytes: int
    max_read_memory_per_principal: int
    task_ttl: float
    max_tasks: int
    max_tasks_per_principal: int
    task_max_bytes: int
    task_max_principal_bytes: int


@dataclass(frozen=True)
class Endpoint:
    mcp_server: Any
    tool_names: list[str]
    event_store: MemoryEventStore
    runner: ManagerRunner
    tasks: TaskStore


def build_endpoint(app: EndpointHost) -> Endpoint:
    """Wire the app's adapters and services into the MCP server and its session manager."""
    revisions = Revisions(max_bytes=app.max_revision_bytes, max_principal_bytes=app.max_read_memory_per_principal)
    app.actors.on_end(lambda actor: revisions.forget(actor.principal, actor.key))  # a session's own memory ends
    backends = Backends(
        contents=app.contents,
        rooms=app.rooms,
        kernels=app.kernels,
        execution=app.execution,
        max_output_length=app.max_output_length,
        max_resource_length=app.max_resource_length,
        image_limits=ImageLimits(app.max_images_per_result, app.max_image_bytes, app.max_image_bytes_total),
        execution_enabled="execution" in app.tool_groups,
        actors=app.actors,
        history=app.history,
        forks=app.forks,
        presence=app.presence,
        stops=app.stops,
        suggestions=app.suggestions,
        revisions=revisions,
        audit=app.audit,
        show=app.show,
    )
    tasks = TaskStore(
        ttl=app.task_ttl,
        max_tasks=app.max_tasks,
        max_tasks_per_principal=app.max_tasks_per_principal,
        max_bytes=app.task_max_bytes,
        max_principal_bytes=app.task_max_principal_bytes,
        rooms=app.rooms,
        max_output_length=app.max_output_length,
    )
    mcp_server, tool_names = build_server(
        backends,
        groups=app.tool_groups,
        read_only=app.read_only,
        test_fixtures=app.enable_test_fixtures,
        output_schemas=app.output_schemas,
        tasks=tasks,
    )
    register_subscriptions(mcp_server, app.subscriptions, tasks)
    event_store = MemoryEventStore(
        max_events_per_stream=app.event_store_max_events_per_stream,
        max_streams=app.event_store_max_streams,
        max_age=app.event_store_max_age,
        max_event_bytes=app.event_store_max_event_bytes,
        max_session_bytes=app.event_store_max_session_bytes,
        max_total_bytes=app.event_store_max_bytes,
    )

    def manager() -> ScopedSessionManager:  # the SDK runs a manager once: the runner builds another if one ends
        return build_session_manager(
            mcp_server,
            event_store=event_store,
            retry_interval_ms=app.sse_retry_interval or None,
            session_idle_timeout=app.session_idle_timeout or None,
            max_sessions=app.max_sessions or None,
            max_sessions_per_principal=app.max_sessions_per_principal or None,
            max_request_body_size=app.max_request_body_size,
        )

    runner = ManagerRunner(manager, shutdown_timeout=app.shutdown_timeout)
    return Endpoint(mcp_server, tool_names, event_store, runner, tasks)
