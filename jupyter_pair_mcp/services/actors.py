"""Who is calling: one :class:`Actor` per MCP session, so people and history can tell agents apart.

An actor is what the other collaborators see of an MCP client: the name it gave in ``clientInfo``
(or the admin's ``agent_name``), a stable key, and the transaction origin its edits carry so its own
edits — and only those — can be undone. In the handshake era an actor lives as long as its MCP
session: when the session ends (DELETE, idle timeout, shutdown) every listener registered with
:meth:`Actors.on_end` is told, so presence leaves the rooms and per-session state is dropped. The
2026 stateless era has no session; its requests are grouped by principal and client name, and
listeners that keep state for them must expire it by age.
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from jupyter_pair_mcp.request_state import STATE_USER

log = logging.getLogger(__name__)

#: Prefix of every transaction origin we write with (adapters/rooms/notebook.py uses the bare prefix).
ORIGIN_PREFIX = "jupyter-pair-mcp"


@dataclass(frozen=True)
class Actor:
    """An MCP client acting in documents."""

    key: str  # stable for the session (or principal + client in the stateless era)
    name: str  # what people see: the client's name, or the configured agent name
    client: str  # clientInfo name as sent, "" when none
    session_id: str | None  # the MCP session id, None in the stateless era
    username: str  # the Jupyter user the client authenticated as
    principal: str = ""  # the credential's fingerprint (per-principal limits count by it)

    @property
    def origin(self) -> str:
        """Transaction origin of this actor's edits (undo tracks exactly these)."""
        return f"{ORIGIN_PREFIX}:{self.key}"


class Actors:
    """Builds the actor of a tool call and tells listeners when a session's actor is gone."""

    def __init__(self, *, agent_name: str = "") -> None:
        self.agent_name = agent_name
        self._listeners: list[Callable[[Actor], None]] = []
        self._live: dict[str, Actor] = {}

    def on_end(self, listener: Callable[[Actor], None]) -> None:
        """Call ``listener(actor)`` when an actor's MCP session ends (never for stateless actors)."""
        self._listeners.append(listener)

    @property
    def live(self) -> list[Actor]:
        return list(self._live.values())

    def of(self, ctx: Any) -> Actor:
        """The actor behind a tool call's context (a fallback actor when there is none, as in unit tests)."""
        session = getattr(ctx, "session", None) if ctx is not None else None
        connection = getattr(session, "_connection", None)
        session_id = getattr(connection, "session_id", None)
        params = getattr(connection, "client_params", None)
        info = getattr(params, "client_info", None)
        client = str(getattr(info, "title", None) or getattr(info, "name", None) or "")
        username = _username(ctx)
        principal = _principal(ctx) or f"user:{username}"
        name = self.agent_name or client or "AI agent"
        if session_id:
            key = hashlib.sha256(f"session:{session_id}".encode()).hexdigest()[:12]
        else:
            key = hashlib.sha256(f"stateless:{username}:{client}".encode()).hexdigest()[:12]
        actor = Actor(key=key, name=name, client=client, session_id=session_id, username=username, principal=principal)
        if session_id and key not in self._live and connection is not None:
            self._live[key] = actor
            connection.exit_stack.callback(self._ended, actor)
        return actor

    def _ended(self, actor: Actor) -> None:
        self._live.pop(actor.key, None)
        for listener in self._listeners:
            with contextlib.suppress(Exception):  # one failing listener must not keep the others from cleaning up
                listener(actor)


def _username(ctx: Any) -> str:
    request = getattr(getattr(ctx, "request_context", None), "request", None) if ctx is not None else None
    state = getattr(request, "scope", {}).get("state", {}) if request is not None else {}
    user = state.get(STATE_USER)
    return str(getattr(user, "username", "") or "")


def _principal(ctx: Any) -> str:
    """The credential fingerprint the handler gave the SDK as the request's user (sessions are bound to it)."""
    request = getattr(getattr(ctx, "request_context", None), "request", None) if ctx is not None else None
    user = getattr(request, "scope", {}).get("user") if request is not None else None
    return str(getattr(getattr(user, "access_token", None), "client_id", "") or "")
