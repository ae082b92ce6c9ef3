"""JupyterHub scopes that limit what a token may do on a single-user server: read, write or execute.

JupyterHub decides who reaches a server (``access:servers``), not what they may do there: without this
authorizer any token that reaches it may do everything, run code included (jupyterhub-singleuser keeps
jupyter_server's allow-all authorizer). Admins can define custom scopes; the hub hands the server, with
each request's user, the scopes of the token that made it. This authorizer reads three of them:

- ``custom:mcp:read``: read (documents, listings, history; no kernel's variables: reading them runs code);
- ``custom:mcp:write``: read and write (edit, create, rename, delete; start and stop kernels);
- ``custom:mcp:execute``: read, write and execute (run code).

They are Jupyter's own actions, so the limit holds for the whole server (its REST API, kernels, terminals),
not only for MCP: a read-only token cannot write through ``/api/contents`` instead. It fails closed:

- the server's **owner** (the hub user it runs for) may do everything with a token that holds no
  ``custom:mcp:*`` scope at all (their browser session, their tokens), and what its levels allow otherwise;
- **anyone else** (a share's recipient, an admin, a service) may do only what a ``custom:mcp:<level>``
  scope for this server allows: reaching the server (``access:servers``) alone allows nothing here;
- a ``custom:mcp:`` scope of no level this server knows (``custom:mcp:readx``) allows nothing, and is
  logged once per token (by its id, never the token).

A scope counts unfiltered, filtered to this server's user (``!user=alice``) or to this very server
(``!server=alice/``); one for other servers only allows nothing here. Enable it in the single-user servers'
configuration: ``c.ServerApp.authorizer_class = "jupyter_pair_mcp.transport.hubscopes.HubScopesAuthorizer"``
(docs/jupyterhub.md has a worked hub configuration).
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from typing import Any

from jupyter_server.auth.authorizer import Authorizer

from jupyter_pair_mcp.transport.hub import HubServer, hub_server

#: Each level and the Jupyter actions it allows, lowest first.
LEVELS = {"read": {"read"}, "write": {"read", "write"}, "execute": {"read", "write", "execute"}}
PREFIX = "custom:mcp:"
#: Tokens whose unknown levels were logged, kept to this many (then forgotten: logged again at worst).
MAX_TOLD = 4096


def _level_for(action: str) -> str:
    """The lowest level that allows a Jupyter action (an action no level names needs execute)."""
    return next((level for level, actions in LEVELS.items() if action in actions), "execute")


def _applies(where: str, hub: HubServer | None) -> bool:
    """Whether a scope's filter ("" = none) covers this server."""
    if not where:
        return True
    return hub is not None and where in (f"user={hub.user}", f"server={hub.user}/{hub.server_name}")


def unknown_levels(scopes: Iterable[str]) -> list[str]:
    """The ``custom:mcp:`` scopes among these that name no level (a misspelt one): they allow nothing."""
    return [s for s in scopes if s.startswith(PREFIX) and s.partition("!")[0][len(PREFIX) :] not in LEVELS]


def token_actions(scopes: Iterable[str], *, owner: bool, environ: Mapping[str, str] = os.environ) -> set[str] | None:
    """The Jupyter actions a token with these scopes may take on this server; None: not limited.

    Only the owner's token without any ``custom:mcp:`` scope is not limited; any other token may do what
    its levels for this server allow, and nothing without one.
    """
    hub = hub_server(environ)
    ours = [scope for scope in scopes if scope.startswith(PREFIX)]
    if owner and not ours:
        return None
    actions: set[str] = set()
    for scope in ours:
        name, _, where = scope.partition("!")
        level = LEVELS.get(name[len(PREFIX) :])
        if level is not None and _applies(where, hub):
            actions |= level
    return actions


def is_owner(model: Mapping[str, Any], hub: HubServer | None) -> bool:
    """Whether the hub's model of the request's user is the user this server runs for (not a service)."""
    return hub is not None and hub.owns(model)


class HubScopesAuthorizer(Authorizer):
    """Jupyter's authorizer on a JupyterHub single-user server: ``custom:mcp:*`` scopes limit a token."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self._told: set[tuple[str, str, str]] = set()

    def _actions(self, model: Mapping[str, Any]) -> set[str] | None:
        hub = hub_server()
        scopes = list(model.get("scopes") or ())
        self._tell_unknown(model, scopes)
        return token_actions(scopes, owner=is_owner(model, hub))

    def _tell_unknown(self, model: Mapping[str, Any], scopes: list[str]) -> None:
        """Log, once per token and scope, a ``custom:mcp:`` scope of no known level: it allows nothing."""
        for scope in unknown_levels(scopes):
            # The token's id (as /hub/token lists it), never the token; "" for a hub too old to say (before 5).
            key = (str(model.get("name", "?")), str(model.get("token_id") or ""), scope)
            if key in self._told:
                continue
            if len(self._told) >= MAX_TOLD:
                self._told.clear()
            self._told.add(key)
            self.log.warning(
                "JupyterHub token %s of %s holds %r, which names no level of this server (%s): it allows nothing",
                key[1] or "(no id)",
                key[0],
                scope,
                ", ".join(f"{PREFIX}{level}" for level in LEVELS),
            )

    def is_authorized(self, handler: Any, user: Any, action: str, resource: str) -> bool:
        model = getattr(user, "hub_user", None)  # jupyterhub.singleuser's JupyterHubUser: the hub's user model
        if not isinstance(model, dict):
            return True  # not a hub's user: nothing to limit (as Jupyter's default authorizer)
        allowed = self._actions(model)
        if allowed is None or action in allowed:
            return True
        self.log.info(
            "JupyterHub token of %s refused %s on %s: its custom:mcp scopes for this server do not allow it",
            model.get("name", "?"),
            action,
            resource,
        )
        return False

    def explain_refusal(self, user: Any, action: str, resource: str) -> str | None:
        """Why ``user`` may not ``action`` ``resource``, naming the scope it lacks; None when it may.

        For the answers we write (the MCP endpoint's 403, a tool's error): Jupyter's own refusals say only
        "Forbidden".
        """
        model = getattr(user, "hub_user", None)
        hub = hub_server()
        if not isinstance(model, dict) or hub is None:
            return None
        allowed = self._actions(model)
        if allowed is None or action in allowed:
            return None
        needed = f"{PREFIX}{_level_for(action)}!server={hub.user}/{hub.server_name}"
        refused = f"this JupyterHub token of {model.get('name', '?')!r} is not authorized to {action} {resource} here"
        if not allowed:
            unknown = unknown_levels(model.get("scopes") or ())
            why = f" ({', '.join(repr(s) for s in unknown)} names no level)" if unknown else ""
            return (
                f"{refused}: it holds no custom:mcp level (read, write, execute) for this server{why}, so it may "
                f"do nothing here; "
                f"it needs the scope '{needed}' (the server's owner shares the server with it, or an admin "
                f"grants it through a role)"
            )
        have = max((level for level in LEVELS if LEVELS[level] <= allowed), key=lambda level: len(LEVELS[level]))
        return f"{refused}: its level here is '{have}' ({PREFIX}{have}); that needs the scope '{needed}'"
