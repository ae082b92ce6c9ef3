"""The MCP side of the extension — server, tools, event store, session manager — built on first use.

Importing the MCP SDK takes about half a second, which every Jupyter server start would otherwise pay,
whether or not an agent ever connects. The extension app builds this module's :class:`Endpoint` after
start (the import runs in a worker thread, so the server keeps answering meanwhile) or on the first
request to ``/mcp``, whichever comes first.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from mcp.server.auth.middleware.bearer_auth import AuthenticatedUser
from mcp.server.auth.provider import AccessToken

from .event_store import MemoryEventStore
from .server import build_server, build_session_manager, register_subscriptions
from .sessions import ManagerRunner
from .tools.registry import Backends

if TYPE_CHECKING:
    from .app import JupyterNotebookMCP


@dataclass(frozen=True)
class Endpoint:
    mcp_server: Any
    tool_names: list[str]
    event_store: MemoryEventStore
    runner: ManagerRunner


def authenticated_user(principal: str) -> AuthenticatedUser:
    """The SDK's user for a request: sessions are bound to it, so another principal gets 404."""
    return AuthenticatedUser(AccessToken(token=principal, client_id=principal, scopes=[]))


def build_endpoint(app: JupyterNotebookMCP) -> Endpoint:
    """Wire the app's adapters and services into the MCP server and its session manager."""
    backends = Backends(
        contents=app.contents,
        rooms=app.rooms,
        kernels=app.kernels,
        execution=app.execution,
        max_output_length=app.max_output_length,
        execution_enabled="execution" in app.tool_groups,
        actors=app.actors,
        history=app.history,
        forks=app.forks,
        presence=app.presence,
    )
    mcp_server, tool_names = build_server(
        backends, groups=app.tool_groups, read_only=app.read_only, test_fixtures=app.enable_test_fixtures
    )
    register_subscriptions(mcp_server, app.subscriptions)
    event_store = MemoryEventStore(
        max_events_per_stream=app.event_store_max_events_per_stream,
        max_streams=app.event_store_max_streams,
        max_age=app.event_store_max_age,
    )
    manager = build_session_manager(
        mcp_server,
        event_store=event_store,
        retry_interval_ms=app.sse_retry_interval or None,
        session_idle_timeout=app.session_idle_timeout or None,
        max_sessions=app.max_sessions or None,
        max_request_body_size=app.max_request_body_size,
    )
    return Endpoint(mcp_server, tool_names, event_store, ManagerRunner(manager, shutdown_timeout=app.shutdown_timeout))
