"""JupyterHub scopes that limit what a token may do on a single-user server: read, write or execute.

JupyterHub decides who reaches a server (``access:servers``), not what they may do there: any token that
reaches it may do everything, run code included. Admins can define custom scopes; the hub hands the server,
with each request's user, the scopes of the token that made it. This authorizer reads three of them:

- ``custom:mcp:read``: read (documents, listings, history; no kernel's variables: reading them runs code);
- ``custom:mcp:write``: read and write (edit, create, rename, delete; start and stop kernels);
- ``custom:mcp:execute``: read, write and execute (run code).

They are Jupyter's own actions, so the limit holds for the whole server (its REST API, kernels, terminals),
not only for MCP: a read-only token cannot write through ``/api/contents`` instead. A token with none of
them is not limited (as without this authorizer). A scope counts here unfiltered, or filtered to this
server's user (``!user=alice``) or to this very server (``!server=alice/``); a token that has one of them
for other servers only may do nothing here. Enable it in the single-user servers' configuration:
``c.ServerApp.authorizer_class = "jupyter_pair_mcp.transport.hubscopes.HubScopesAuthorizer"``
(docs/jupyterhub.md has a worked hub configuration).
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from typing import Any

from jupyter_server.auth.authorizer import Authorizer

from jupyter_pair_mcp.transport.hub import hub_server

#: Each level and the Jupyter actions it allows, lowest first.
LEVELS = {"read": {"read"}, "write": {"read", "write"}, "execute": {"read", "write", "execute"}}
PREFIX = "custom:mcp:"


def token_actions(scopes: Iterable[str], environ: Mapping[str, str] = os.environ) -> set[str] | None:
    """The Jupyter actions a token with these scopes may take on this server; None: not limited."""
    hub = hub_server(environ)
    limited = False
    actions: set[str] = set()
    for scope in scopes:
        name, _, where = scope.partition("!")
        if not name.startswith(PREFIX) or name[len(PREFIX) :] not in LEVELS:
            continue
        limited = True
        if not where or (hub is not None and where in (f"user={hub.user}", f"server={hub.user}/{hub.server_name}")):
            actions |= LEVELS[name[len(PREFIX) :]]
    return actions if limited else None


class HubScopesAuthorizer(Authorizer):
    """Jupyter's authorizer on a JupyterHub single-user server: ``custom:mcp:*`` scopes limit a token."""

    def is_authorized(self, handler: Any, user: Any, action: str, resource: str) -> bool:
        model = getattr(user, "hub_user", None)  # jupyterhub.singleuser's JupyterHubUser: the hub's user model
        if not isinstance(model, dict):
            return True  # not a hub's user: nothing to limit (as Jupyter's default authorizer)
        allowed = token_actions(model.get("scopes") or ())
        if allowed is None or action in allowed:
            return True
        self.log.info(
            "JupyterHub token of %s refused %s on %s: its custom:mcp scopes do not allow it",
            model.get("name", "?"),
            action,
            resource,
        )
        return False
