"""Jupyter as the MCP endpoint's OAuth authorization server, with the MCP SDK's ``mcp.server.auth``.

The protocol — metadata (RFC 8414, RFC 9728), dynamic client registration (RFC 7591), the authorization
code grant with PKCE S256, refresh, revocation (RFC 7009) — is the SDK's Starlette routes; this module is
their provider, over :class:`~jupyter_pair_mcp.services.grants.GrantStore`. Its ``authorize`` sends the
browser to Jupyter's consent page (``transport/consent.py``) instead of issuing a code: the code is made when
the person approves there.

Issuer and resource follow the address the client used (``http://localhost:8888`` and
``http://127.0.0.1:8888`` are two issuers, as a proxy's public URL is a third), so the routes are built per
origin and kept in a small table. The issuer is ``{origin}{base_url}mcp`` and the resource the same URL: the
endpoints are ``{base_url}mcp/authorize``, ``…/token``, ``…/register``, ``…/revoke``, all under Jupyter's
``base_url``, where a proxy (JupyterHub's) forwards them.
"""

from __future__ import annotations

import base64
import binascii
import secrets
import time
from contextvars import ContextVar
from typing import Any
from urllib.parse import parse_qs, unquote, urlencode, urlparse

from mcp.server.auth.provider import (
    AccessToken,
    AuthorizationCode,
    AuthorizationParams,
    AuthorizeError,
    RefreshToken,
    RegistrationError,
    TokenError,
    construct_redirect_uri,
)
from mcp.server.auth.routes import create_auth_routes, create_protected_resource_routes
from mcp.server.auth.settings import ClientRegistrationOptions, RevocationOptions
from mcp.shared.auth import OAuthClientInformationFull, OAuthToken
from pydantic import AnyHttpUrl
from starlette.routing import Route

from jupyter_pair_mcp.services.client_secrets import as_presented
from jupyter_pair_mcp.services.grant_records import Pending, clean_name, digest
from jupyter_pair_mcp.services.grants import GrantStore

#: Origins whose routes are kept at once (a server is reached by a handful of names).
MAX_ORIGINS = 16

_LOOPBACK = {"localhost", "127.0.0.1", "::1", "[::1]"}


def redirect_allowed(uri: str) -> bool:
    """RFC 8252: loopback http on any port, https anywhere, or a private-use scheme named by a reverse domain."""
    parsed = urlparse(uri)
    if parsed.fragment:
        return False
    if parsed.scheme == "https":
        return bool(parsed.hostname)
    if parsed.scheme == "http":
        return parsed.hostname in _LOOPBACK
    return "." in parsed.scheme  # com.example.app:/callback (RFC 8252 §7.1); never javascript:, data:, file:


#: The client secret the token or revocation request being served presents (None: none): the stored one is a
#: hash, so ``get_client`` hands the SDK's authenticator the presented secret only where its hash matches.
_presented: ContextVar[str | None] = ContextVar("presented_client_secret", default=None)


def presented_secret(headers: list[tuple[bytes, bytes]], body: bytes) -> str | None:
    """The secret of ``client_secret_basic`` (Authorization header) or else ``client_secret_post`` (form)."""
    for name, value in headers:
        if name.lower() == b"authorization" and value[:6].lower() == b"basic ":
            try:
                decoded = base64.b64decode(value[6:], validate=True).decode()
            except (binascii.Error, UnicodeDecodeError):
                return None
            return unquote(decoded.split(":", 1)[1]) if ":" in decoded else None
    try:
        form = parse_qs(body.decode(), keep_blank_values=True)
    except UnicodeDecodeError:
        return None
    values = form.get("client_secret", [])
    return values[0] if len(values) == 1 else None


def _with_presented_secret(app: Any) -> Any:
    """The SDK's token or revocation app, with the request's presented secret known to ``get_client``."""

    async def wrapped(scope: Any, receive: Any, send: Any) -> None:
        chunks: list[bytes] = []
        more = True
        while more:
            message = await receive()
            if message["type"] != "http.request":
                return
            chunks.append(message.get("body", b""))
            more = message.get("more_body", False)
        body = b"".join(chunks)
        replayed = False

        async def replay() -> Any:
            nonlocal replayed
            if not replayed:
                replayed = True
                return {"type": "http.request", "body": body, "more_body": False}
            return await receive()

        token = _presented.set(presented_secret(list(scope.get("headers", [])), body))
        try:
            await app(scope, replay, send)
        finally:
            _presented.reset(token)

    return wrapped


class GrantCode(AuthorizationCode):
    grant_id: str


class GrantRefresh(RefreshToken):
    grant_id: str


class GrantAccess(AccessToken):
    grant_id: str


class GrantProvider:
    """``OAuthAuthorizationServerProvider`` for one origin, over the shared grant store."""

    def __init__(self, store: GrantStore, *, resource: str, consent_url: str) -> None:
        self.store = store
        self.resource = resource
        self.consent_url = consent_url

    async def get_client(self, client_id: str) -> OAuthClientInformationFull | None:
        info = self.store.clients.get(client_id)
        if info is None:
            return None
        return OAuthClientInformationFull.model_validate(as_presented(info, _presented.get()))

    async def register_client(self, client_info: OAuthClientInformationFull) -> None:
        for uri in client_info.redirect_uris or []:
            if not redirect_allowed(str(uri)):
                raise RegistrationError(
                    "invalid_redirect_uri",
                    f"redirect URI {str(uri)[:200]!r} refused: use https, a loopback http address "
                    "(http://127.0.0.1:<port>/...), or a private-use scheme (RFC 8252)",
                )
        if client_info.client_id is None:
            raise RegistrationError("invalid_client_metadata", "no client id")
        self.store.add_client(client_info.client_id, client_info.model_dump(mode="json", exclude_none=True))

    async def authorize(self, client: OAuthClientInformationFull, params: AuthorizationParams) -> str:
        if params.resource is not None and params.resource.rstrip("/") != self.resource:
            raise AuthorizeError("invalid_target", f"this server's MCP resource is {self.resource}")
        if not redirect_allowed(str(params.redirect_uri)):
            raise AuthorizeError("invalid_request", "redirect URI must be https or loopback http")
        pending = Pending(
            id=secrets.token_urlsafe(24),
            client_id=client.client_id or "",
            client_name=clean_name(client.client_name or client.client_id or ""),
            redirect_uri=str(params.redirect_uri),
            redirect_uri_explicit=params.redirect_uri_provided_explicitly,
            state=params.state,
            code_challenge=params.code_challenge,
            resource=self.resource,
            created=time.time(),
        )
        self.store.begin(pending)
        return f"{self.consent_url}?{urlencode({'request': pending.id})}"

    async def load_authorization_code(self, client: OAuthClientInformationFull, authorization_code: str) -> Any:
        code = self.store.code(authorization_code)
        if code is None or code.client_id != client.client_id:
            return None
        return GrantCode(
            code=authorization_code,
            scopes=[],
            expires_at=code.expires,
            client_id=code.client_id,
            code_challenge=code.code_challenge,
            redirect_uri=code.redirect_uri,  # type: ignore[arg-type]
            redirect_uri_provided_explicitly=code.redirect_uri_explicit,
            resource=code.resource,
            grant_id=code.grant_id,
        )

    async def exchange_authorization_code(
        self, client: OAuthClientInformationFull, authorization_code: Any
    ) -> OAuthToken:
        try:
            grant, access, refresh = self.store.redeem(authorization_code.code)
        except KeyError:
            raise TokenError("invalid_grant", "authorization code does not exist") from None
        return self._token(grant.level, grant.expires, access, refresh)

    async def load_refresh_token(self, client: OAuthClientInformationFull, refresh_token: str) -> Any:
        grant = self.store.by_refresh(refresh_token)
        if grant is None or grant.client_id != client.client_id:
            return None
        return GrantRefresh(
            token=refresh_token,
            client_id=grant.client_id,
            scopes=[],
            expires_at=int(grant.expires),
            resource=grant.resource,
            grant_id=grant.id,
        )

    async def exchange_refresh_token(
        self, client: OAuthClientInformationFull, refresh_token: Any, scopes: list[str]
    ) -> OAuthToken:
        try:
            grant, access, refresh = self.store.rotate(refresh_token.token)
        except KeyError:
            raise TokenError("invalid_grant", "refresh token is not valid (each one works once)") from None
        return self._token(grant.level, grant.expires, access, refresh)

    async def load_access_token(self, token: str) -> Any:
        grant = self.store.by_access(token)
        if grant is None:
            return None
        return GrantAccess(
            token=token,
            client_id=grant.client_id,
            scopes=[],
            expires_at=int(grant.access.get(digest(token), 0)),
            resource=grant.resource,
            subject=grant.person,
            grant_id=grant.id,
        )

    async def revoke_token(self, token: Any) -> None:
        grant_id = getattr(token, "grant_id", None)
        if grant_id:
            self.store.revoke(grant_id)

    async def exchange_identity_assertion(self, client: Any, params: Any) -> OAuthToken:
        raise TokenError("unsupported_grant_type", "only the authorization code grant (with PKCE) is supported")

    def _token(self, level: str, expires: float, access: str, refresh: str) -> OAuthToken:
        lifetime = int(min(self.store.access_ttl, max(0.0, expires - time.time())))
        return OAuthToken(access_token=access, expires_in=lifetime, scope=level, refresh_token=refresh)


class AuthorizationServer:
    """The SDK's OAuth routes per origin, looked up by what a request asks for."""

    def __init__(self, store: GrantStore, base_url: str) -> None:
        self.store = store
        self.base_url = "/" + base_url.strip("/") + "/" if base_url.strip("/") else "/"
        self._routes: dict[str, dict[str, Route]] = {}

    def resource(self, origin: str) -> str:
        return f"{origin}{self.base_url}mcp"

    def routes(self, origin: str) -> dict[str, Route]:
        """``{name: route}`` for ``origin``: authorize, token, register, revoke, as-metadata, pr-metadata.

        Raises ValueError for an origin OAuth does not allow as an issuer (plain http off loopback)."""
        found = self._routes.get(origin)
        if found is not None:
            return found
        resource = self.resource(origin)
        provider = GrantProvider(self.store, resource=resource, consent_url=f"{resource}/consent")
        auth = create_auth_routes(
            provider,
            issuer_url=AnyHttpUrl(resource),
            client_registration_options=ClientRegistrationOptions(enabled=True),
            revocation_options=RevocationOptions(enabled=True),
        )
        found = {route.path.rsplit("/", 1)[-1]: route for route in auth}
        for name in ("token", "revoke"):  # the routes whose clients authenticate with their secret
            found[name].app = _with_presented_secret(found[name].app)
        found["as-metadata"] = found.pop("oauth-authorization-server")
        (protected,) = create_protected_resource_routes(
            AnyHttpUrl(resource), [AnyHttpUrl(resource)], resource_name="Jupyter MCP"
        )
        found["pr-metadata"] = protected
        if len(self._routes) >= MAX_ORIGINS:
            self._routes.pop(next(iter(self._routes)))
        self._routes[origin] = found
        return found

    def approved_redirect(self, pending_id: str, **choices: Any) -> str:
        """The person approved: the grant is made; where the browser goes with its code."""
        pending, code = self.store.approve(pending_id, **choices)
        return construct_redirect_uri(pending.redirect_uri, code=code, state=pending.state)

    def denied_redirect(self, pending_id: str) -> str:
        pending = self.store.pending.pop(pending_id)
        return construct_redirect_uri(
            pending.redirect_uri,
            error="access_denied",
            error_description="the person declined in Jupyter",
            state=pending.state,
        )
