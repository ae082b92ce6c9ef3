"""Serving on a JupyterHub single-user server: the address and the credential an agent must be told about.

Under a hub the server's own address (``http://127.0.0.1:43369/user/alice/``) is internal, reached only
through the hub's proxy, and its own token is the hub's API token for the server, new on every spawn:
neither is what a person should give an agent. What works is the server's public URL and a JupyterHub API
token (made at ``/hub/token``) whose scopes include access to this server. JupyterHub tells the server
both in its environment (``Spawner.get_env``): the user, the server's name and URL prefix, and its public
URL when the hub knows one (``JupyterHub.public_url`` or subdomains; empty otherwise).
"""

from __future__ import annotations

import hashlib
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class HubServer:
    """This server as the hub that spawned it describes it."""

    user: str
    server_name: str  # "" for the user's default server
    prefix: str  # the server's URL path, "/user/alice/" (JUPYTERHUB_SERVICE_PREFIX)
    public_url: str  # "https://hub.example.org/user/alice/", or "" when the hub does not know its address
    public_hub_url: str  # "https://hub.example.org/hub/", or ""
    base_url: str  # the hub's base path, "/" (JUPYTERHUB_BASE_URL)

    @property
    def scope(self) -> str:
        """The least a token needs to reach this server (the hub's ``access:servers`` scope, filtered)."""
        return f"access:servers!server={self.user}/{self.server_name}"

    def owns(self, model: Mapping[str, Any]) -> bool:
        """Whether the hub's model of a request's user is the user this server runs for (not a service)."""
        return model.get("kind", "user") == "user" and model.get("name") == self.user

    def grant_refusal(self, user: Any) -> str | None:
        """Why this person may not grant an agent this server (approve a client, mint a token); None: the owner.

        Only the owner: a grant is kept by this server and outlives whatever the hub let its approver do
        (a share revoked, a role or group left), which the hub cannot take back. Anyone else gets a
        JupyterHub API token with a ``custom:mcp:<level>`` scope instead: the hub revokes that.
        """
        model = getattr(user, "hub_user", None)  # jupyterhub.singleuser's JupyterHubUser: the hub's user model
        if isinstance(model, dict) and self.owns(model):
            return None
        who = model.get("name", "?") if isinstance(model, dict) else getattr(user, "username", "?")
        return (
            f"only {self.user}, whose server this is, can connect MCP clients to it ({who} is signed in): give "
            f"your agent a JupyterHub API token (make one at {self.token_page}) with the scopes "
            f"'{self.scope}' and 'custom:mcp:<level>!server={self.user}/{self.server_name}' instead"
        )

    def own_file(self, name: str) -> str:
        """This server's name for a file it keeps (``pair_mcp_grants.json``): a user's servers share a home
        (and Jupyter's data directory), never grants or stops. Two servers writing one file would each replace
        the other's; and a grant is for one server. The default server keeps the plain name."""
        if not self.server_name:
            return name
        safe = re.sub(r"[^A-Za-z0-9_.-]", "_", self.server_name)[:64]
        if safe != self.server_name:  # "a b" and "a_b" are two servers
            safe += "-" + hashlib.sha256(self.server_name.encode()).hexdigest()[:8]
        stem, dot, ext = name.rpartition(".")
        return f"{stem}-{safe}{dot}{ext}" if dot else f"{name}-{safe}"

    @property
    def endpoint(self) -> str:
        """The endpoint's public URL, or its path on the hub's address when that is unknown here."""
        return f"{self.public_url or self.prefix}mcp"

    @property
    def token_page(self) -> str:
        return f"{self.public_hub_url}token" if self.public_hub_url else f"{self.base_url}hub/token"

    def startup_line(self, tools: int, *, grants: bool = False) -> str:
        where = self.endpoint
        if not self.public_url:
            where += " on your JupyterHub's address (JupyterHub.public_url is not set, so the server cannot tell it)"
        line = (
            f"MCP endpoint: {where} ({tools} tools) - connect an MCP client with the header "
            f"'Authorization: Bearer <a JupyterHub API token>' (make one at {self.token_page} with the scope "
            f"'{self.scope}'; this server's own token changes on every start)"
        )
        if grants:
            line += f"; a client that supports MCP authorization needs no header: {self.user} approves it in a browser"
        return line

    @property
    def unauthenticated(self) -> str:
        return (
            f"missing or invalid credentials: send a JupyterHub API token (make one at {self.token_page}) "
            f"with the scope '{self.scope}' as the header 'Authorization: Bearer <token>'"
        )

    @property
    def forbidden(self) -> str:
        return f"this JupyterHub token has no access to this server: it needs the scope '{self.scope}'"


def hub_server(environ: Mapping[str, str] = os.environ) -> HubServer | None:
    """This server's hub description, or None when no JupyterHub spawned it."""
    user = environ.get("JUPYTERHUB_USER", "")
    prefix = environ.get("JUPYTERHUB_SERVICE_PREFIX", "")
    if not (user and prefix and environ.get("JUPYTERHUB_API_URL")):
        return None
    return HubServer(
        user=user,
        server_name=environ.get("JUPYTERHUB_SERVER_NAME", ""),
        prefix=_slashed(prefix),
        public_url=_slashed(environ.get("JUPYTERHUB_PUBLIC_URL", "")),
        public_hub_url=_slashed(environ.get("JUPYTERHUB_PUBLIC_HUB_URL", "")),
        base_url=_slashed(environ.get("JUPYTERHUB_BASE_URL", "") or "/"),
    )


def _slashed(url: str) -> str:
    return url if not url or url.endswith("/") else f"{url}/"


async def hub_user_refused(handler: Any) -> bool:
    """Whether the request's credential is a hub user's that the hub's identity provider did not let in.

    JupyterHub's identity provider answers None both for no valid credential and for a valid token of a
    user without access to this server (bob's token on alice's server); the hub's answer about the token
    (cached on the handler by its ``HubAuth``) tells them apart: 401 for the first, 403 for the second.
    """
    hub_auth = getattr(getattr(handler, "identity_provider", None), "hub_auth", None)
    if hub_auth is None:
        return False
    return await hub_auth.get_user(handler, sync=False) is not None


def browser_protocol(headers: Mapping[str, str], protocol: str) -> str:
    """The scheme the browser used, in front of every proxy (as JupyterHub's own ``get_browser_protocol``).

    A single-user server trusts forwarded headers (jupyterhub-singleuser turns ``trust_xheaders`` on), and
    Tornado then takes the *last* ``X-Forwarded-Proto``: behind a TLS terminator and the hub's proxy (which
    appends its own ``http``) that is ``http``, while the client used ``https``. The first one is the client's.
    """
    forwarded = headers.get("Forwarded", "")
    if forwarded:
        first = forwarded.split(",", 1)[0]
        for field in first.split(";"):
            key, _, value = field.partition("=")
            if key.strip().lower() == "proto" and value.strip().strip('"').lower() in ("http", "https"):
                return value.strip().strip('"').lower()
    proto = headers.get("X-Scheme") or headers.get("X-Forwarded-Proto") or ""
    first_proto = proto.split(",", 1)[0].strip().lower()
    return first_proto if first_proto in ("http", "https") else protocol
