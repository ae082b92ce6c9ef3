"""The SDK's session manager, with per-session event stores, run for the life of the server.

:class:`ScopedSessionManager` gives each stateful session its own view of the shared event store,
so resumption never crosses sessions (see :mod:`jupyter_pair_mcp.protocol.event_store`), and releases
the view when the session ends; its :class:`SessionTransport` keeps a failure that ends one session
from ending the others. :class:`ManagerRunner` owns the manager's ``run()`` context: the SDK allows
entering it once, inside one task, so it lives in a dedicated task started lazily on the first
request (pytest-jupyter never calls the extension's start hook), started again with a new manager
should it ever end on its own, and closed with a bounded wait when the extension stops.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import secrets
from collections.abc import AsyncGenerator, Callable
from typing import Any
from uuid import uuid4

from mcp.server.auth.middleware.bearer_auth import AuthenticatedUser, authorization_context
from mcp.server.auth.provider import AccessToken
from mcp.server.streamable_http import GET_STREAM_KEY, StreamableHTTPServerTransport
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from mcp.shared._stream_protocols import ReadStream, WriteStream
from mcp.shared.message import SessionMessage
from mcp_types import INTERNAL_ERROR, ErrorData, JSONRPCError
from starlette.responses import Response
from starlette.types import Receive, Scope, Send

from jupyter_pair_mcp.errors import is_fault
from jupyter_pair_mcp.protocol.event_store import MemoryEventStore, ScopedEventStore
from jupyter_pair_mcp.protocol.wholebody import WholeAnswers

log = logging.getLogger(__name__)


class SessionTransport(WholeAnswers):
    """Our transport for one session: a failure that ends the session ends only it.

    The SDK runs each session in a task of the manager's one task group and contains ``Exception`` there: any
    other ``BaseException`` (a pycrdt panic in a handler, or in our event store as the session's message router
    stores an answer) would cancel the group, every session and the manager with it. Every such failure passes
    through this context (the session's streams), so here it is logged under a reference and goes no further:
    the session is discarded as after any crash (its id answers 404), the others carry on.
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._calls_done = asyncio.Event()  # set whenever no POST of this session is answering

    async def answers_sent(self) -> None:
        """Return once no POST of the session is still answering (the GET stream is not one): a session ended
        while a call's answer is on its way would drop the answer, which may say why the call ended."""
        while any(key != GET_STREAM_KEY for key in self._request_streams):
            self._calls_done.clear()
            await self._calls_done.wait()

    async def _clean_up_memory_streams(self, request_id: Any) -> None:
        await super()._clean_up_memory_streams(request_id)
        self._calls_done.set()

    @contextlib.asynccontextmanager
    async def connect(
        self,
    ) -> AsyncGenerator[tuple[ReadStream[SessionMessage | Exception], WriteStream[SessionMessage]], None]:
        try:
            async with super().connect() as streams:
                yield streams
        except BaseException as exc:
            if not is_fault(exc):
                raise
            ref = secrets.token_hex(4)
            log.error("An MCP session ended on a failure (ref %s); the other sessions carry on", ref, exc_info=exc)


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

    async def end(self, session_id: str, *, grace: float = 5.0) -> bool:
        """End a session, as its client's DELETE would (a person stopped its agent); False: no such session.

        Its id answers 404 from here on, and its server task winds down, ending the session's actor. The
        answers of its calls in flight go out first (at most ``grace`` seconds): the caller stopped its runs,
        and their answers carry the stop's message, which a session ended under them would drop."""
        transport = self._server_instances.get(session_id)
        if transport is None:
            return False
        if isinstance(transport, SessionTransport):
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(transport.answers_sent(), grace)
            if self._server_instances.get(session_id) is not transport:
                return True  # ended meanwhile (its client's DELETE, or another stop)
        await self._discard_session(session_id, transport)
        return True

    async def end_principal(self, principal: str, *, grace: float = 10.0) -> int:
        """End every session of a credential (its grant was revoked); how many were ended.

        Each ends once the answers of its calls in flight are sent (at most ``grace`` seconds): the caller
        stopped those calls first, and their answers say why."""
        ended = [
            (sid, t)
            for sid, t in list(self._server_instances.items())
            if (owner := self._session_owners.get(sid)) is not None and owner["client_id"] == principal
        ]
        for session_id, transport in ended:
            if isinstance(transport, SessionTransport):
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(transport.answers_sent(), grace)
            await self._discard_session(session_id, transport)
        return len(ended)

    def _admit_session(self, requestor: Any) -> StreamableHTTPServerTransport | None:
        """The SDK's ``_admit_session`` (mcp 2.3), with our transport: requests that stream nothing are answered
        with one JSON body (protocol/wholebody.py)."""
        if self.max_sessions is not None and len(self._server_instances) >= self.max_sessions:
            return None
        transport = SessionTransport(
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
    """Keeps a session manager's ``run()`` context open in one long-lived task, and a new one if it ever ends.

    The SDK's manager runs every session in one task group: a failure that escapes a session's task (the SDK
    contains ``Exception`` only) cancels the group and ends the manager, and a manager runs only once. Calls
    are contained below it (protocol/faults.py, tools/registry.py), so this is the last line: the failure is
    logged under a reference and the next request starts a new manager from ``build`` (the old one's sessions
    are gone: their ids answer 404, and clients open new ones). A manager that fails to start is reported to
    the requests waiting for it, and the next request tries again.
    """

    def __init__(self, build: Callable[[], ScopedSessionManager], *, shutdown_timeout: float = 5.0) -> None:
        self.build = build
        self.manager = build()
        self.shutdown_timeout = shutdown_timeout
        self.restarts = 0  # managers started again after one ended on its own
        self._task: asyncio.Task[None] | None = None
        self._ready = asyncio.Event()
        self._stop = asyncio.Event()
        self._failure: BaseException | None = None

    @property
    def running(self) -> bool:
        return self._task is not None and not self._task.done()

    async def ensure_started(self) -> None:
        """Start the manager once (again if it ended on its own); later calls wait for that start to finish."""
        if self._task is not None and self._task.done() and not self._stop.is_set():
            self._discard()  # it ended on its own (or failed to start): a new one
        if self._task is None:
            self._task = asyncio.get_running_loop().create_task(self._run(self._ready), name="jupyter-pair-mcp")
        ready = self._ready
        await ready.wait()
        if self._failure is not None and ready is self._ready:
            raise RuntimeError("the MCP session manager failed to start") from self._failure

    def _discard(self) -> None:
        """Forget the ended manager: release its sessions' event-store views; the next one is built afresh."""
        for view in self.manager._views.values():
            view.release()
        self.manager._views.clear()
        self.manager = self.build()
        self.restarts += 1
        self._task, self._failure, self._ready = None, None, asyncio.Event()

    def user(self, principal: str) -> AuthenticatedUser:
        """The SDK's user for a request: sessions are bound to it, so another principal gets 404."""
        return AuthenticatedUser(AccessToken(token=principal, client_id=principal, scopes=[]))

    async def handle(self, scope: Scope, receive: Receive, send: Send) -> None:
        await self.ensure_started()
        await self.manager.handle_request(scope, receive, send)

    async def stop(self, timeout: float | None = None) -> None:
        """End every session and stream; never waits longer than ``timeout`` (default ``shutdown_timeout``)."""
        self._stop.set()
        task = self._task
        if task is None or task.done():
            return
        bound = self.shutdown_timeout if timeout is None else timeout
        try:
            await asyncio.wait_for(asyncio.shield(task), bound)
        except TimeoutError:
            log.warning("MCP session manager did not stop within %.1fs; cancelling it", bound)
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task

    async def _run(self, ready: asyncio.Event) -> None:
        started = False
        try:
            async with self.manager.run():
                started = True
                ready.set()
                await self._stop.wait()
        except BaseException as exc:
            if not started:
                self._failure = exc
                ready.set()  # the requests waiting for the start are told
            if not is_fault(exc):
                raise  # cancelled (a stop that ran out of time), or the process is ending
            ref = secrets.token_hex(4)
            if started:
                log.error(
                    "The MCP session manager stopped (ref %s): its sessions ended; the next request starts a new one",
                    ref,
                    exc_info=exc,
                )
            else:
                log.error("The MCP session manager failed to start (ref %s)", ref, exc_info=exc)


def _opens_session(scope: Scope) -> bool:
    """A POST of the handshake era without a session id: the request that would open a session (requests
    of the 2026-07-28 era carry that version in a header and open none)."""
    if scope.get("method") != "POST":
        return False
    headers = dict(scope.get("headers") or [])
    return b"mcp-session-id" not in headers and headers.get(b"mcp-protocol-version", b"") < b"2026"
