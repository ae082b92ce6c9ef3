"""The ``{base_url}mcp`` handler: Jupyter's auth in front, the MCP SDK behind.

The handler is thin on purpose. It answers what must be answered before the SDK sees a byte:
Jupyter authentication and authorization on every verb, a 403 for an Origin Jupyter's CORS settings
do not allow (Jupyter itself waves token requests through and answers 404 otherwise, which MCP
clients read as "session gone"), an early 413 for an oversized body (Tornado would otherwise
buffer up to its own 512 MiB limit before the SDK's 4 MiB check), and a 400 for a body with a key repeated
in an object or a JSON-RPC id that is neither a string nor an integer (:mod:`.requestbody`).
Everything MCP — sessions, SSE, protocol versions, JSON-RPC errors — is the SDK's, reached through the
ASGI bridge.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Awaitable, Callable
from typing import Any, Protocol, cast
from urllib.parse import urlparse

from jupyter_server.auth.decorator import authorized
from jupyter_server.base.handlers import APIHandler
from jupyter_server.utils import origin_matches_pat
from tornado import web

from jupyter_pair_mcp.request_state import GRANT_TOKEN_PREFIX, STATE_GRANT, STATE_HANDLER, STATE_USER, fingerprint
from jupyter_pair_mcp.transport.asgi import TornadoASGIBridge
from jupyter_pair_mcp.transport.hub import hub_server, hub_user_refused
from jupyter_pair_mcp.transport.oauth import (
    GrantAuthorizer,
    GrantIdentity,
    grant_is_for,
    grant_user,
    resource_metadata_url,
)
from jupyter_pair_mcp.transport.ratelimit import RateLimiter
from jupyter_pair_mcp.transport.requestbody import check as check_body
from jupyter_pair_mcp.transport.scrub import ScrubbedLogs


class Runner(Protocol):
    """The running MCP endpoint, as the handler uses it."""

    def user(self, principal: str) -> Any: ...

    async def handle(self, scope: Any, receive: Any, send: Any) -> None: ...


class MCPHost(Protocol):
    """What the handler needs of the extension app (a protocol, so this module never imports the app)."""

    max_request_body_size: int
    principal_key: bytes
    grants_only: bool
    rate_limiter: RateLimiter | None

    def endpoint(self) -> Awaitable[Runner]: ...

    def grant_of(self, token: str) -> Any: ...

    def chat_grant(self, remote_ip: str | None, headers: Any) -> Any: ...

    @property
    def grants(self) -> Any: ...


_Verb = Callable[..., Awaitable[None]]
#: Jupyter's authorization of the request for read on the handler's resource (typed for mypy).
_needs_read = cast(Callable[[_Verb], _Verb], authorized("read"))

#: The 401 body: how to authenticate (never echoing what was sent).
UNAUTHENTICATED = (
    "missing or invalid credentials: send the Jupyter server's token as the header "
    "'Authorization: Bearer <token>' (jupyter server list shows it)"
)

#: The 401 body when only grants are accepted (``grants_only``): the WWW-Authenticate header says where to start.
GRANTS_ONLY = (
    "this server accepts only grants on its MCP endpoint, not the server's token nor a login: connect through "
    "MCP authorization (the client opens a browser on Jupyter, where the person approves it)"
)


#: The 403 body for the Jupyter AI credential used from elsewhere, or for no chat persona open now.
JUPYTER_AI_REFUSED = (
    "this credential is Jupyter AI's: it works only from this server's host, for a persona of a chat open now "
    "(the X-Jupyter-Chat-Id and X-JupyterAI-Persona-Id headers)"
)


#: The verbs the handler serves: a refusal of one of them waits for its (bounded) body, see MCPHandler.prepare.
_VERBS = frozenset({"POST", "GET", "DELETE"})


def _refused_first(verb: Callable[..., Awaitable[None] | None]) -> _Verb:
    """Answer the refusal prepare() deferred until the body was read, before anything else runs."""

    @functools.wraps(verb)
    async def answer(self: MCPHandler, *args: Any, **kwargs: Any) -> None:
        if self._refusal is not None:
            raise self._refusal
        result = verb(self, *args, **kwargs)
        if result is not None:
            await result

    return answer


@web.stream_request_body
class MCPHandler(ScrubbedLogs, APIHandler):
    """Serves the MCP Streamable HTTP endpoint (POST, GET, DELETE)."""

    auth_resource = "contents"

    def initialize(self, extension: MCPHost) -> None:
        self.extension = extension
        self._chunks: list[bytes] = []
        self._received = 0
        self._too_large = False
        self._bridge: TornadoASGIBridge | None = None
        self._principal_name: str | None = None
        self._retry_after = 1
        self._refusal: web.HTTPError | None = None  # answered once the body is read (prepare)
        self._close_connection = False
        self._grant: Any = None  # the grant whose access token authenticated this request, if any
        self._grant_refused = False  # a grant token was sent and is not (or no longer) valid

    async def prepare(self) -> None:  # type: ignore[override]
        """Admit the request, or refuse it without breaking its kept-alive connection.

        Tornado drops a connection whose request body it never read, after writing headers that promise to
        keep it: a client retrying on 429 then met a broken pipe. So a refusal of a request whose body is
        bounded (no body, or a Content-Length within ``max_request_body_size``) waits for the body, drops
        it and then answers (:meth:`_refused_first`); any other refusal is answered at once with
        ``Connection: close``, so the client knows to open a new connection.
        """
        try:
            await self._admit()
        except web.HTTPError as exc:
            if self.request.method in _VERBS and self._body_bounded():
                self._refusal = exc
                return
            self._close_connection = True
            raise

    @property
    def identity_provider(self) -> Any:
        """Jupyter's, except for a request carrying a grant's access token: then the grant is the caller."""
        real = super().identity_provider
        return real if self._grant is None else GrantIdentity(real, grant_user(self._grant))

    @property
    def authorizer(self) -> Any:
        """Jupyter's, except that a grant may do what its level allows and nothing else (whatever Jupyter's
        authorizer would let the person who approved it do)."""
        return super().authorizer if self._grant is None else GrantAuthorizer(self._grant)

    def check_xsrf_cookie(self) -> None:
        """A grant's token is a bearer token, never a cookie: no XSRF check applies. Jupyter's own check asks
        the identity provider (:class:`GrantIdentity` says so); a JupyterHub single-user server's replaces it
        with one that asks whether the hub authenticated a token (it never saw the grant's), so say it here."""
        if self._grant is not None:
            return None
        return super().check_xsrf_cookie()

    def _bearer_grant(self) -> None:
        """Recognize a grant's access token (``Authorization: Bearer jpmcp_at_...``) before Jupyter looks."""
        scheme, _, token = self.request.headers.get("Authorization", "").strip().partition(" ")
        token = token.strip()
        if scheme.lower() not in ("bearer", "token") or not token.startswith(GRANT_TOKEN_PREFIX):
            return
        self._grant = self.extension.grant_of(token)
        if self._grant is not None and not grant_is_for(self._grant, self.base_url):
            self._grant = None  # another server's grant, in a grants file they share (grants_path)
        if self._grant is None:
            self._grant_refused = True
            raise web.HTTPError(401, "the grant token is invalid, expired or revoked: refresh it, or connect again")
        if getattr(self._grant, "loopback_only", False):  # the credential minted for Jupyter AI (docs/jupyter-ai.md)
            self._grant = self.extension.chat_grant(self.request.remote_ip, self.request.headers)
            if self._grant is None:
                raise web.HTTPError(403, JUPYTER_AI_REFUSED)

    async def _unauthenticated(self) -> web.HTTPError:
        """401 saying how to authenticate; under JupyterHub, with a hub token, and 403 for another user's."""
        hub = hub_server()
        if hub is None:
            return web.HTTPError(401, UNAUTHENTICATED)
        if await hub_user_refused(self):
            return web.HTTPError(403, hub.forbidden)
        return web.HTTPError(401, hub.unauthenticated)

    def _refuse_explained(self) -> None:
        """403 naming what is missing when the authorizer can tell (HubScopesAuthorizer: the scope a hub token
        lacks), before Jupyter's check of the same permission refuses with a bare "Forbidden"."""
        explain = getattr(self.authorizer, "explain_refusal", None)
        message = explain(self.current_user, "read", self.auth_resource) if callable(explain) else None
        if message:
            raise web.HTTPError(403, message)

    def _body_bounded(self) -> bool:
        headers = self.request.headers
        if "chunked" in headers.get("Transfer-Encoding", "").lower():
            return False
        length = headers.get("Content-Length", "0").strip()
        return length.isdigit() and int(length) <= self.extension.max_request_body_size

    async def _admit(self) -> None:
        """Every check before the body: Origin, credentials, rate, media type and announced size."""
        if not self._origin_allowed():
            self.log.warning("MCP: refused request from a disallowed Origin")
            raise web.HTTPError(403, "Origin not allowed")
        self._bearer_grant()
        if self._grant is None and self.extension.grants_only:
            # Before Jupyter looks: the person's token, cookie or hub token is their full key, not an agent's.
            raise web.HTTPError(401, GRANTS_ONLY)
        try:
            await super().prepare()
        except web.HTTPError as exc:
            # A POST without credentials fails Jupyter's XSRF check ("'_xsrf' argument missing"), which
            # tells an MCP client nothing: no credentials (or a wrong token) is a 401 it understands.
            if exc.status_code == 403 and self.current_user is None and self.check_host():
                raise await self._unauthenticated() from None
            raise
        if self.current_user is None:
            raise await self._unauthenticated()
        self._refuse_explained()
        limiter = self.extension.rate_limiter
        if limiter is not None:
            wait, first = limiter.acquire(self._principal())
            if wait:
                if first:  # once per burst: a flood must not flood the log too
                    self.log.warning("MCP: rate limit reached for a caller; refusing its requests for now (429)")
                self._retry_after = wait
                raise web.HTTPError(429, f"rate limit: retry after {wait} s")
        if self.request.method != "POST":
            return
        media_type = self.request.headers.get("Content-Type", "").split(";")[0].strip().lower()
        if media_type != "application/json":
            # text/plain and form posts are CORS "simple requests": never let them reach the SDK.
            raise web.HTTPError(415, "Content-Type must be application/json")
        length = self.request.headers.get("Content-Length", "")
        if length.isdigit() and int(length) > self.extension.max_request_body_size:
            # Answer 413 without buffering: the body is drained and dropped (data_received), so the
            # client reads a clean 413 instead of a reset connection.
            self._too_large = True

    def data_received(self, chunk: bytes) -> None:
        """Collect the body ourselves; past the limit (or a too-large Content-Length) drop it."""
        if self._refusal is not None:
            return  # refused already: the body is read only to keep the connection usable
        self._received += len(chunk)
        if self._received > self.extension.max_request_body_size:
            self._too_large = True
        if self._too_large:
            self._chunks.clear()
        else:
            self._chunks.append(chunk)

    # Opening and using a session needs read on contents: each tool then asks for its own permission, so
    # a principal that may only read can call the read tools (and nothing else).
    @_refused_first
    @web.authenticated
    @_needs_read
    async def post(self) -> None:
        if self._too_large:
            raise web.HTTPError(413, "Request body too large")
        body = b"".join(self._chunks)
        self._chunks = [body]
        refusal = await check_body(body)
        if refusal is not None:
            # A repeated key, or an id the SDK's handshake-era transport would take for a notification's.
            self.set_status(400)
            self.set_header("Content-Type", "application/json")
            self.finish(json.dumps(refusal.response()))
            return
        await self._serve()

    @_refused_first
    @web.authenticated
    @_needs_read
    async def get(self) -> None:
        await self._serve()

    @_refused_first
    @web.authenticated
    @_needs_read
    async def delete(self) -> None:
        await self._serve()

    def on_connection_close(self) -> None:
        if self._bridge is not None:
            self._bridge.connection_closed()
        super().on_connection_close()

    def write_error(self, status_code: int, **kwargs: Any) -> None:
        if self._close_connection:  # set here: send_error clears the headers set before it
            self.set_header("Connection", "close")
        if status_code == 401:
            # What MCP clients expect (RFC 6750, RFC 9728 §5.1): where to find how to get a token; the body says
            # how to pass the Jupyter token instead.
            sent = "Authorization" in self.request.headers  # RFC 6750 §3.1: no error code without credentials
            challenge = 'Bearer realm="jupyter"' + (', error="invalid_token"' if sent else "")
            if self.extension.grants is not None:  # MCP authorization is on: where a client starts it
                challenge += f', resource_metadata="{resource_metadata_url(self)}"'
            self.set_header("WWW-Authenticate", challenge)
        elif status_code == 429:
            # Written here: Jupyter's write_error logs every error it writes, and a flood is logged once.
            self.set_header("Retry-After", str(self._retry_after))
            self.set_header("Content-Type", "application/json")
            self.finish(json.dumps({"message": f"rate limit: retry after {self._retry_after} s"}))
            return
        super().write_error(status_code, **kwargs)

    def _log(self) -> None:
        # Jupyter's access log warns about every 4xx, and Tornado about every HTTPError: a flood of 429s
        # would flood the log. The refusal is logged once per burst instead (prepare).
        if self.get_status() != 429:
            super()._log()

    def log_exception(self, typ: Any, value: Any, tb: Any) -> None:
        if not (isinstance(value, web.HTTPError) and value.status_code == 429):
            super().log_exception(typ, value, tb)

    def finish(self, *args: Any, **kwargs: Any) -> Any:
        # APIHandler.finish forces application/json; keep the SDK's text/event-stream.
        kwargs.setdefault("set_content_type", self._headers.get("Content-Type", "application/json"))
        return super().finish(*args, **kwargs)

    async def _serve(self) -> None:
        # Built (and the SDK imported, in a worker thread) on first use. Import nothing from the SDK here
        # before that is done: two threads importing the same package deadlock.
        runner = await self.extension.endpoint()
        user = runner.user(self._principal())
        self._bridge = TornadoASGIBridge(
            self,
            b"".join(self._chunks),
            extra_scope={
                "user": user,
                "state": {STATE_HANDLER: self, STATE_USER: self.current_user, STATE_GRANT: self._grant},
            },
        )
        try:
            await self._bridge.run(runner.handle)
        finally:
            # The bridge refers to this handler: left here, the pair (with the request, its connection and headers,
            # ~50 objects) would wait for a full garbage collection instead of going when the request does.
            self._bridge = None

    def _principal(self) -> str:
        """A stable, non-reversible name for the credential behind this request.

        With Jupyter's default identity provider a token request without a cookie gets a new random
        anonymous user every time, so the username alone cannot bind a session to its creator; the
        token can. The SDK answers 404 when a session is used by any other principal.
        """
        if self._principal_name is not None:
            return self._principal_name
        token = self.identity_provider.get_token(self) or ""
        username = getattr(self.current_user, "username", "")
        if self._grant is not None:
            material = f"grant:{self._grant.id}"  # its access tokens rotate; its sessions outlive each one
        elif token:
            material = f"token:{token}"
        elif not self.identity_provider.auth_enabled:
            # No authentication at all: every request gets a new random anonymous user, but they
            # are all the same (unauthenticated) principal.
            material = "unauthenticated"
        else:
            material = f"user:{username}"
        self._principal_name = fingerprint(self.extension.principal_key, material)
        return self._principal_name

    def _origin_allowed(self) -> bool:
        """Jupyter's CORS policy, applied to token requests too (MCP requires 403 for a bad Origin)."""
        origin = self.request.headers.get("Origin")
        if origin is None or self.allow_origin == "*":
            return True
        origin = origin.lower()
        if urlparse(origin).netloc == self.request.headers.get("Host", "").lower():
            return True
        if self.allow_origin:
            return bool(self.allow_origin == origin)
        if self.allow_origin_pat:
            return bool(origin_matches_pat(self.allow_origin_pat, origin))
        return False
