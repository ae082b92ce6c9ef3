"""Who is calling: one :class:`Actor` per MCP session, so people and history can tell agents apart.

An actor is what the other collaborators see of an MCP client: whose credential it uses and the name
it gave in ``clientInfo`` (or the admin's ``agent_name``), as in "alice · Claude Code"; a stable key;
and the transaction origin its edits carry so its own edits — and only those — can be undone. In the
handshake era an actor lives as long as its MCP session: when the session ends (DELETE, idle timeout,
shutdown) every listener registered with :meth:`Actors.on_end` is told, so presence leaves the rooms
and per-session state is dropped. The 2026 stateless era has no session; its requests are grouped by
principal and client name, and listeners that keep state for them must expire it by age.
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from jupyter_pair_mcp.request_state import STATE_GRANT, STATE_USER
from jupyter_pair_mcp.services.grant_records import clean_name

log = logging.getLogger(__name__)

#: Between the principal's name and the client's in an agent's name ("alice · Claude Code").
SEPARATOR = " · "

#: Jupyter's default identity provider names a token (or login) user ``uuid4().hex``, "Anonymous Io": no one's name.
_RANDOM_ID = re.compile(r"[0-9a-f]{32}")

#: How a person Jupyter knows by no name is named: Jupyter's own identity provider gives each token (or password)
#: login a random id, and whoever holds the server's token or password is its owner.
OWNER = "the server's owner"

#: Prefix of every transaction origin we write with (adapters/rooms/notebook.py uses the bare prefix).
ORIGIN_PREFIX = "jupyter-pair-mcp"


@dataclass(frozen=True)
class Actor:
    """An MCP client acting in documents."""

    key: str  # stable for the session (or credential + client name in the stateless era)
    name: str  # what people see: "<person> · <client or agent_name>", or the latter alone
    client: str  # clientInfo name as sent, "" when none
    session_id: str | None  # the MCP session id, None in the stateless era
    username: str  # the Jupyter user the client authenticated as
    principal: str = ""  # the credential's fingerprint (per-principal limits count by it)
    person: str = ""  # the name of the Jupyter user behind the credential, "" when Jupyter knows none
    proposes: bool = False  # its grant is "propose only": every edit becomes a suggestion
    grant: str = ""  # the id of the grant it holds, "" for a Jupyter credential

    @property
    def label(self) -> str:
        """The client's part of :attr:`name` (its initials are the agent's)."""
        if not self.person:
            return self.name
        return self.name.removeprefix(f"{self.person}{SEPARATOR}").removesuffix(f"{SEPARATOR}{self.person}")

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
        self._sessions: dict[str, set[str]] = {}  # a grant's actor: the sessions it has open

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
        client = clean_name(str(getattr(info, "title", None) or getattr(info, "name", None) or ""), fallback="")
        user = _user(ctx)
        username = str(getattr(user, "username", "") or "")
        principal = _principal(ctx) or f"user:{username}"
        person = person_name(user)
        grant = _state(ctx).get(STATE_GRANT)
        if grant is not None:
            # A grant is the agent's identity: its key and name hold across sessions, eras and renamed clients.
            username, person, client = grant.person, grant.person_name, grant.client_name
        label = clean_name(self.agent_name, fallback="") or client or "AI agent"
        name = f"{person}{SEPARATOR}{label}" if person else label
        if getattr(grant, "chat", ""):  # a Jupyter AI chat's persona: its name first ("Claude (Jupyter AI) · alice")
            label = client
            name = f"{label}{SEPARATOR}{person}" if person else label
        if grant is not None:
            key = grant_key(grant.id)
        elif session_id:
            key = hashlib.sha256(f"session:{session_id}".encode()).hexdigest()[:12]
        else:
            # By credential, not username: Jupyter gives a token request without a cookie a new random
            # anonymous user each time, so a cookie-less client would be a new agent (a ghost) on every call.
            key = hashlib.sha256(f"stateless:{principal}:{client}".encode()).hexdigest()[:12]
        actor = Actor(
            key=key,
            name=name,
            client=client,
            session_id=session_id,
            username=username,
            principal=principal,
            person=person,
            proposes=bool(grant is not None and grant.propose_only),
            grant=grant.id if grant is not None else "",
        )
        if session_id and connection is not None:
            sessions = self._sessions.setdefault(key, set())
            if session_id not in sessions:
                sessions.add(session_id)
                self._live[key] = actor
                connection.exit_stack.callback(self._ended, actor)
        return actor

    def _ended(self, actor: Actor) -> None:
        sessions = self._sessions.get(actor.key, set())
        sessions.discard(actor.session_id or "")
        if sessions:
            return  # the same grant still has a session open: the agent has not left
        self._sessions.pop(actor.key, None)
        self._live.pop(actor.key, None)
        for listener in self._listeners:
            with contextlib.suppress(Exception):  # one failing listener must not keep the others from cleaning up
                listener(actor)


def grant_key(grant_id: str) -> str:
    """The actor key of a grant's agent: the same in every session and era, whatever its client calls itself."""
    return hashlib.sha256(f"grant:{grant_id}".encode()).hexdigest()[:12]


def person_name(user: Any) -> str:
    """The name people know the Jupyter user by ("alice" on a hub), or "" when Jupyter has none for it.

    Jupyter's default identity provider gives every token request (and every token login) a new random
    user — a hex id named "Anonymous <moon>" — which names no one: an agent using it is named by its
    client alone. Identity providers that know users (JupyterHub's, an admin's own) give their name.
    """
    username = str(getattr(user, "username", "") or "")
    if not username or _RANDOM_ID.fullmatch(username):
        return ""
    name = clean_name(str(getattr(user, "display_name", "") or getattr(user, "name", "") or ""), fallback="")
    return name or clean_name(username, fallback="")


def name_person(user: Any) -> str:
    """How a person is named to people and agents — in stop messages, the activity panel, review decisions,
    history and the grant list: their Jupyter name, or :data:`OWNER` when Jupyter knows none (a token or
    password login: a random id names no one). The one place a person becomes text: never their username
    as such, which for a token login is that random id."""
    return person_name(user) or OWNER


def _state(ctx: Any) -> dict[str, Any]:
    request = getattr(getattr(ctx, "request_context", None), "request", None) if ctx is not None else None
    state = getattr(request, "scope", {}).get("state", {}) if request is not None else {}
    return state if isinstance(state, dict) else {}


def _user(ctx: Any) -> Any:
    return _state(ctx).get(STATE_USER)


def _principal(ctx: Any) -> str:
    """The credential fingerprint the handler gave the SDK as the request's user (sessions are bound to it)."""
    request = getattr(getattr(ctx, "request_context", None), "request", None) if ctx is not None else None
    user = getattr(request, "scope", {}).get("user") if request is not None else None
    return str(getattr(getattr(user, "access_token", None), "client_id", "") or "")
