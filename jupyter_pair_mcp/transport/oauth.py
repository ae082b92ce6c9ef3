"""MCP authorization over Jupyter's HTTP: the SDK's OAuth routes, the consent page, what a grant may do.

``OAuthRouteHandler`` hands each OAuth request (metadata, register, authorize, token, revoke) to the MCP
SDK's Starlette route through the ASGI bridge: no protocol code here. Those endpoints authenticate clients,
never people, so they take no cookie and need no XSRF token; Jupyter's Host check still applies.

``ConsentHandler`` is the page the SDK's ``authorize`` sends the browser to: behind Jupyter's own login
(token, password, JupyterHub), its form XSRF-protected, it shows who asks and where the answer goes, and the
person picks the level, the folders, "propose only" and an expiry. Approving makes the grant and sends the
browser back to the client with a code.

``GrantIdentity`` and ``GrantAuthorizer`` are what ``{base_url}mcp`` uses for a request carrying a grant's
access token: the grant is the caller, and its level is all it may do. Only that handler uses them: to
every other Jupyter handler a grant token is an unknown token.
"""

from __future__ import annotations

import html
import logging
import re
from collections.abc import Awaitable
from typing import Any, Protocol
from urllib.parse import urlparse

from jupyter_core.utils import ensure_async
from jupyter_server.auth import User
from jupyter_server.auth.decorator import allow_unauthenticated
from jupyter_server.base.handlers import JupyterHandler
from tornado import web

from jupyter_pair_mcp.services.actors import person_name
from jupyter_pair_mcp.services.grant_records import LEVELS, Grant, normalize_folder
from jupyter_pair_mcp.transport.asgi import TornadoASGIBridge
from jupyter_pair_mcp.transport.hub import browser_protocol, hub_server
from jupyter_pair_mcp.transport.scrub import ScrubbedLogs

log = logging.getLogger(__name__)

#: Expiry choices on the consent page (label, seconds); the first is preselected.
EXPIRIES = (("30 days", 30 * 86400), ("7 days", 7 * 86400), ("1 day", 86400), ("8 hours", 8 * 3600))

#: What each level needs of the approving person, asked of Jupyter's authorizer.
LEVEL_NEEDS = {"read": ("read", "contents"), "write": ("write", "contents"), "execute": ("execute", "kernels")}


class OAuthHost(Protocol):
    """What the handlers need of the extension app."""

    def authorization_server(self) -> Awaitable[Any]: ...


def origin(handler: web.RequestHandler) -> str:
    """The address the client used: the Host it sent (proxies keep it, JupyterHub's included) and its scheme.

    The scheme is Tornado's (``X-Forwarded-Proto`` counts only where Jupyter trusts it: ``trust_xheaders``),
    except on a JupyterHub single-user server, which always trusts it: there the browser's, the first of the
    chain (:func:`~jupyter_pair_mcp.transport.hub.browser_protocol`)."""
    protocol = handler.request.protocol
    if hub_server() is not None:
        protocol = browser_protocol(handler.request.headers, protocol)
    return f"{protocol}://{handler.request.host}"


def normalized_base(base_url: str) -> str:
    return "/" + base_url.strip("/") + "/" if base_url.strip("/") else "/"


def resource_metadata_url(handler: JupyterHandler) -> str:
    """Where a 401 of ``{base_url}mcp`` sends clients (RFC 9728 §5.1).

    At the host's root (RFC 9728 §3.1's path) when base_url is the root; otherwise under base_url, where a
    proxy in front of Jupyter forwards it (the root form is served too, when Jupyter owns the host's root)."""
    base = normalized_base(handler.base_url)
    if base == "/":
        return f"{origin(handler)}/.well-known/oauth-protected-resource/mcp"
    return f"{origin(handler)}{base}mcp/.well-known/oauth-protected-resource"


def grant_is_for(grant: Grant, base_url: str) -> bool:
    """Whether a grant's tokens are for this server's endpoint (RFC 8707 audience), whatever name the client
    reached it by: the path is this server's own (a hub user's servers differ by theirs, one host for all)."""
    return not grant.resource or urlparse(grant.resource).path.rstrip("/") == f"{normalized_base(base_url)}mcp"


#: Largest body an OAuth request needs (a registration's metadata, a token request's form).
MAX_OAUTH_BODY = 64 * 1024


@web.stream_request_body
class OAuthRouteHandler(ScrubbedLogs, JupyterHandler):
    """One of the SDK's OAuth routes, for the origin the request came to.

    The body is read here, at most :data:`MAX_OAUTH_BODY`: these endpoints answer anyone, and Tornado would
    otherwise buffer up to Jupyter's own (512 MiB) limit before the SDK's 4 MiB check."""

    def initialize(self, host: OAuthHost, route: str) -> None:
        self.host = host
        self.route = route
        self._chunks: list[bytes] = []
        self._received = 0

    async def prepare(self) -> None:  # type: ignore[override]
        await super().prepare()
        length = self.request.headers.get("Content-Length", "0").strip()
        if not length.isdigit() or int(length) > MAX_OAUTH_BODY:
            raise web.HTTPError(413, "request body too large")

    def data_received(self, chunk: bytes) -> None:
        self._received += len(chunk)
        if self._received <= MAX_OAUTH_BODY:
            self._chunks.append(chunk)

    def check_xsrf_cookie(self) -> None:
        """OAuth clients authenticate with their own credentials in the body, never with a cookie."""
        return None

    @allow_unauthenticated
    async def get(self, *args: Any) -> None:
        await self._serve()

    @allow_unauthenticated
    async def post(self, *args: Any) -> None:
        await self._serve()

    @allow_unauthenticated
    async def options(self, *args: Any) -> None:
        await self._serve()

    async def _serve(self) -> None:
        server = await self.host.authorization_server()
        try:
            routes = server.routes(origin(self))
        except ValueError:
            raise web.HTTPError(
                400, "MCP authorization needs https, or plain http on a loopback address (localhost, 127.0.0.1)"
            ) from None
        if self._received > MAX_OAUTH_BODY:  # chunked past the limit
            raise web.HTTPError(413, "request body too large")
        await TornadoASGIBridge(self, b"".join(self._chunks)).run(routes[self.route].handle)


def oauth_handlers(host: OAuthHost, base_url: str) -> tuple[list[tuple[str, Any, dict[str, Any]]], list[Any]]:
    """(handlers under base_url, handlers at the host's root) for the OAuth routes and the consent page."""
    base = normalized_base(base_url)
    inside: list[tuple[str, Any, dict[str, Any]]] = [
        (f"/mcp/{name}", OAuthRouteHandler, {"host": host, "route": name})
        for name in ("authorize", "token", "register", "revoke")
    ]
    inside += [
        (
            r"/mcp/\.well-known/(?:oauth-authorization-server|openid-configuration)",
            OAuthRouteHandler,
            {"host": host, "route": "as-metadata"},
        ),
        (r"/mcp/\.well-known/oauth-protected-resource", OAuthRouteHandler, {"host": host, "route": "pr-metadata"}),
        (r"/mcp/consent", ConsentHandler, {"host": host}),
    ]
    # RFC 8414 §3.1 and RFC 9728 §3.1: the well-known prefix goes before the issuer's and resource's path;
    # clients of the 2025-03-26 revision look only at the root's authorization-server metadata.
    path = re.escape(f"{base}mcp")
    as_meta = {"host": host, "route": "as-metadata"}
    root: list[tuple[str, Any, dict[str, Any]]] = [
        (rf"/\.well-known/oauth-protected-resource{path}", OAuthRouteHandler, {"host": host, "route": "pr-metadata"}),
        (rf"/\.well-known/oauth-authorization-server{path}", OAuthRouteHandler, as_meta),
        (rf"/\.well-known/openid-configuration{path}", OAuthRouteHandler, as_meta),
        (r"/\.well-known/oauth-authorization-server", OAuthRouteHandler, as_meta),
    ]
    if base == "/":  # the host's root is Jupyter's base_url: served like any handler of the extension
        return inside + root, []
    return inside, root


class ConsentHandler(ScrubbedLogs, JupyterHandler):
    """The page where a person lets an MCP client in, with a level, folders and an expiry."""

    def initialize(self, host: OAuthHost) -> None:
        self.host = host

    def _refuse_others(self) -> None:
        """On a JupyterHub single-user server only its owner answers (docs/jupyterhub.md says why)."""
        hub = hub_server()
        refusal = hub.grant_refusal(self.current_user) if hub is not None else None
        if refusal:
            raise web.HTTPError(403, refusal)

    async def _pending(self) -> tuple[Any, Any]:
        self._refuse_others()
        server = await self.host.authorization_server()
        pending = server.store.pending.get(self.get_argument("request", ""))
        if pending is None:
            raise web.HTTPError(404, "this authorization request is unknown or expired: start again from the client")
        return server, pending

    @web.authenticated
    async def get(self) -> None:
        _, pending = await self._pending()
        self.set_header("Cache-Control", "no-store")
        self.set_header("X-Frame-Options", "DENY")  # no clickjacking of the approve button
        self.finish(self._page(pending))

    @web.authenticated
    async def post(self) -> None:
        server, pending = await self._pending()
        if self.get_argument("decision", "") != "approve":
            try:
                self.redirect(server.denied_redirect(pending.id))
            except KeyError:
                raise web.HTTPError(404, "this authorization request was answered already") from None
            return
        level = self.get_argument("level", "")
        if level not in LEVELS:
            raise web.HTTPError(400, f"level must be one of {', '.join(LEVELS)}")
        action, resource = LEVEL_NEEDS[level]
        if not await ensure_async(self.authorizer.is_authorized(self, self.current_user, action, resource)):
            raise web.HTTPError(403, f"you may not {action} {resource} on this server, so you cannot grant it")
        folders = [""]
        if self.get_argument("where", "all") == "folders":
            try:
                folders = [normalize_folder(f) for f in self.get_argument("folders", "").splitlines() if f.strip()]
            except ValueError as exc:
                raise web.HTTPError(400, str(exc)) from None
            if not folders or "" in folders:
                raise web.HTTPError(400, "name at least one folder (one per line), or choose the whole server")
        try:
            lifetime = int(self.get_argument("expires", str(EXPIRIES[0][1])))
        except ValueError:
            raise web.HTTPError(400, "expires must be a number of seconds") from None
        if lifetime not in {seconds for _, seconds in EXPIRIES}:
            raise web.HTTPError(400, "expires must be one of the page's choices")
        user = self.current_user
        try:
            target = server.approved_redirect(
                pending.id,
                person=str(getattr(user, "username", "")),
                person_name=person_name(user),
                level=level,
                folders=folders,
                propose_only=self.get_argument("propose_only", "") == "on",
                lifetime=float(lifetime),
            )
        except KeyError:  # answered meanwhile (a second click)
            raise web.HTTPError(404, "this authorization request was answered already") from None
        self.redirect(target)

    def _page(self, pending: Any) -> str:
        e = html.escape
        target = urlparse(pending.redirect_uri)
        where = target.hostname or target.scheme
        levels = "".join(
            f'<label><input type="radio" name="level" value="{lv}"{" checked" if lv == "read" else ""}> '
            f"<b>{lv}</b> — {e(text)}</label><br>"
            for lv, text in (
                ("read", "read notebooks and files"),
                ("write", "also edit and create them"),
                ("execute", "also run code in kernels (code reaches everything the server can)"),
            )
        )
        expiries = "".join(f'<option value="{s}">{e(label)}</option>' for label, s in EXPIRIES)
        return f"""<!doctype html><html><head><meta charset="utf-8"><title>Connect an MCP client</title>
<style>body{{font-family:sans-serif;max-width:40em;margin:2em auto}}fieldset{{margin:1em 0}}</style></head>
<body><h1>Connect <q>{e(pending.client_name)}</q> to Jupyter?</h1>
<p>An MCP client named <b>{e(pending.client_name)}</b> asks to work on this server as you. If you approve, it
gets its own key, which reaches only the MCP endpoint; your answer goes back to <b>{e(where)}</b>.</p>
<form method="post">{self.xsrf_form_html()}
<input type="hidden" name="request" value="{e(pending.id)}">
<fieldset><legend>What it may do</legend>{levels}</fieldset>
<fieldset><legend>Where</legend>
<label><input type="radio" name="where" value="all" checked> the whole server</label><br>
<label><input type="radio" name="where" value="folders"> only these folders (one per line):</label><br>
<textarea name="folders" rows="3" cols="40"></textarea></fieldset>
<fieldset><legend>Edits</legend><label><input type="checkbox" name="propose_only">
propose only: every edit becomes a suggestion you accept or reject</label></fieldset>
<fieldset><legend>Expires after</legend><select name="expires">{expiries}</select></fieldset>
<button type="submit" name="decision" value="approve">Approve</button>
<button type="submit" name="decision" value="deny">Deny</button>
</form></body></html>"""


class GrantIdentity:
    """Jupyter's identity provider, as ``{base_url}mcp`` sees it for a request carrying a grant token."""

    def __init__(self, real: Any, user: User) -> None:
        self._real = real
        self._user = user

    def get_user(self, handler: Any) -> User:
        return self._user

    def is_token_authenticated(self, handler: Any) -> bool:
        return True  # a bearer token, never a cookie: no XSRF check applies

    def get_token(self, handler: Any) -> str:
        return ""

    def __getattr__(self, name: str) -> Any:
        return getattr(self._real, name)


class GrantAuthorizer:
    """A grant's level, as Jupyter's authorizer interface."""

    def __init__(self, grant: Grant) -> None:
        self.grant = grant

    def is_authorized(self, handler: Any, user: Any, action: str, resource: str) -> bool:
        return self.grant.allows(action, resource)


def grant_user(grant: Grant) -> User:
    """The Jupyter user a grant's requests run as: named after the client, never a person's account."""
    return User(username=f"mcp-grant-{grant.id}", name=grant.client_name, display_name=grant.client_name)
