"""The SDK's session manager, with per-session event stores, run for the life of the server.

:class:`ScopedSessionManager` gives each stateful session its own view of the shared event store,
so resumption never crosses sessions (see :mod:`jupyter_pair_mcp.protocol.event_store`), and releases
the view when the session ends. :class:`ManagerRunner` owns the manager's ``run()`` context: the
SDK allows entering it once, inside one task, so it lives in a dedicated task started lazily on
the first request (pytest-jupyter never calls the extension's start hook) and closed with a
bounded wait when the extension stops.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from typing import Any
from uuid import uuid4

from mcp.server.auth.middleware.bearer_auth import AuthenticatedUser, authorization_context
from mcp.server.auth.provider import AccessToken
from mcp.server.streamable_http import StreamableHTTPServerTransport
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from mcp_types import INTERNAL_ERROR, ErrorData, JSONRPCError
from starlette.responses import Response
from starlette.types import Receive, Scope, Send

from jupyter_pair_mcp.protocol.event_store import MemoryEventStore, ScopedEventStore
from jupyter_pair_mcp.protocol.wholebody import WholeAnswers

log = logging.getLogger(__name__)


class ScopedSessionManager(StreamableHTTPSessionManager):
    """A session manager whose sessions each replay only their own events."""

    def __init__(
        self,
        app: Any,
        *,
        shared_store: MemoryEventStore | None,
        max_sessions_per_principal: int | None = None,
        quick_tools: frozenset[str] = frozenset(),
        **kwargs: Any,
    ) -> None:
        super().__init__(app, event_store=None, **kwargs)
        self.quick_tools = quick_tools
        self.shared_store = shared_store
        self.max_sessions_per_principal = max_sessions_per_principal
        self._views: dict[str, ScopedEventStore] = {}

    async def handle_request(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Refuse a new session to a principal at its own limit (the SDK only knows the global one)."""
        limit = self.max_sessions_per_principal
        user = scope.get("user")
        if limit and isinstance(user, AuthenticatedUser) and _opens_session(scope):
            owner = authorization_context(user)
            held = sum(1 for o in self._session_owners.values() if o == owner)
            if held >= limit:
                log.warning("Refusing a new MCP session: its credential already holds %d (the limit)", held)
                body = JSONRPCError(
                    jsonrpc="2.0",
                    id=None,
                    error=ErrorData(
                        code=INTERNAL_ERROR,
                        message=f"this credential already holds {held} MCP sessions (max_sessions_per_principal): "
                        "end sessions you no longer use (HTTP DELETE) or wait for idle ones to expire",
                    ),
                )
                response = Response(
                    body.model_dump_json(by_alias=True, exclude_unset=True), 503, media_type="application/json"
                )
                await response(scope, receive, send)
                return
        await super().handle_request(scope, receive, send)

    @property
    def session_count(self) -> int:
        return len(self._server_instances)

    async def end(self, session_id: str) -> bool:
        """End a session now, as its client's DELETE would (a person stopped its agent); False: no such session.

        Its id answers 404 from here on, and its server task winds down, ending the session's actor."""
        transport = self._server_instances.get(session_id)
        if transport is None:
            return False
        await self._discard_session(session_id, transport)
        return True

    def _admit_session(self, requestor: Any) -> StreamableHTTPServerTransport | None:
        """The SDK's ``_admit_session`` (mcp 2.3), with our transport: requests that stream nothing are answered
        with one JSON body (protocol/wholebody.py)."""
        if self.max_sessions is not None and len(self._server_instances) >= self.max_sessions:
            return None
        transport = WholeAnswers(
            mcp_session_id=uuid4().hex,
            is_json_response_enabled=self.json_response,
            event_store=self.event_store,
            security_settings=self.security_settings,
            retry_interval=self.retry_interval,
            idle_timeout=self.session_idle_timeout,
            quick_tools=self.quick_tools,
        )
        assert transport.mcp_session_id is not None
        if requestor is not None:
            self._session_owners[transport.mcp_session_id] = requestor
        self._server_instances[transport.mcp_session_id] = transport
        if self.shared_store is not None:
            view = self.shared_store.scoped()
            self._views[transport.mcp_session_id] = view
            # The transport reads its store from this attribute (mcp 2.3); the manager hands every
            # transport the same store, which is exactly the cross-session leak we avoid.
            transport._event_store = view
        return transport

    async def _discard_session(self, session_id: str, transport: StreamableHTTPServerTransport) -> None:
        await super()._discard_session(session_id, transport)
        view = self._views.pop(session_id, None)
        if view is not None:
            view.release()


class ManagerRunner:
    """Keeps a session manager's ``run()`` context open in one long-lived task."""

    def __init__(self, manager: ScopedSessionManager, *, shutdown_timeout: float = 5.0) -> None:
        self.manager = manager
        self.shutdown_timeout = shutdown_timeout
        self._task: asyncio.Task[None] | None = None
        self._ready = asyncio.Event()
        self._stop = asyncio.Event()
        self._failure: BaseException | None = None

    @property
    def running(self) -> bool:
        return self._task is not None and not self._task.done()

    async def ensure_started(self) -> None:
        """Start the manager once; later calls wait for the first start to finish."""
        if self._task is None:
            self._task = asyncio.get_running_loop().create_task(self._run(), name="jupyter-pair-mcp")
        await self._ready.wait()
        if self._failure is not None:
            raise RuntimeError("the MCP session manager failed to start") from self._failure

    def user(self, principal: str) -> AuthenticatedUser:
        """The SDK's user for a request: sessions are bound to it, so another principal gets 404."""
        return AuthenticatedUser(AccessToken(token=principal, client_id=principal, scopes=[]))

    async def handle(self, scope: Scope, receive: Receive, send: Send) -> None:
        await self.ensure_started()
        await self.manager.handle_request(scope, receive, send)

    async def stop(self, timeout: float | None = None) -> None:
        """End every session and stream; never waits longer than ``timeout`` (default ``shutdown_timeout``)."""
        task = self._task
        if task is None or task.done():
            return
        self._stop.set()
        bound = self.shutdown_timeout if timeout is None else timeout
        try:
            await asyncio.wait_for(asyncio.shield(task), bound)
        except TimeoutError:
            log.warning("MCP session manager did not stop within %.1fs; cancelling it", bound)
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task

    async def _run(self) -> None:
        try:
            async with self.manager.run():
                self._ready.set()
                await self._stop.wait()
        except BaseException as exc:  # report to waiters, then let the task end
            self._failure = exc
            self._ready.set()
            if not isinstance(exc, Exception | asyncio.CancelledError):
                raise
            if not isinstance(exc, asyncio.CancelledError):
                log.error("MCP session manager stopped with an error: %s", exc)


def _opens_session(scope: Scope) -> bool:
    """A POST of the handshake era without a session id: the request that would open a session (requests
    of the 2026-07-28 era carry that version in a header and open none)."""
    if scope.get("method") != "POST":
        return False
    headers = dict(scope.get("headers") or [])
    return b"mcp-session-id" not in headers and headers.get(b"mcp-protocol-version", b"") < b"2026"
