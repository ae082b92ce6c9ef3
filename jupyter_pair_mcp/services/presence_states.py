"""What an agent's presence is made of, and the awareness states people's browsers read from it.

Kept apart from :mod:`.presence` (which decides when agents enter, move and leave, and renews their states)
so that the shapes JupyterLab and our extension read - ``user``, ``agent`` with its cell and point, ``cursors``,
and the global room's ``current`` and ``documents`` - are in one short place (docs/awareness.md describes them).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from jupyter_pair_mcp.services.actors import Actor
from jupyter_pair_mcp.services.agent_identity import user_state
from jupyter_pair_mcp.services.global_presence import current


@dataclass
class Agent:
    """One actor's presence settings, shared by all the rooms it is in."""

    actor: Actor
    last_seen: float  # on the service's clock: the presence timeout counts from here
    last_activity: float  # epoch seconds, for people
    status: str = "online"
    message: str | None = None
    activity: dict[str, Any] | None = None  # the last broadcast, shown to people
    current_document: str | None = None
    calls: int = 0  # tool calls in flight: an agent waiting on a long call has not left


@dataclass
class Presence:
    """An agent in one room."""

    key: str
    room_id: str
    path: str
    kind: str
    client_id: int
    cursor: dict[str, Any] | None = None
    cell_id: str | None = None  # the cell last edited, run or holding the cursor (notebooks), shown to people
    point: dict[str, Any] | None = None  # point_at: {cell_id, message, at (epoch ms)} shown to people
    clients: frozenset[int] = field(default_factory=frozenset)
    published: float = 0.0  # on the service's clock
    autosave: bool = True


def document_state(agent: Agent, presence: Presence, autosave: bool) -> dict[str, Any]:
    """The agent's awareness state in one document's room."""
    state: dict[str, Any] = {
        "user": user_state(agent.actor),
        "agent": {
            "client": agent.actor.client,
            "status": agent.status,
            "message": agent.message,
            "cell_id": presence.cell_id,
            "point": presence.point,
        },
        "autosave": autosave,
    }
    if agent.activity is not None:
        state["agent"]["activity"] = agent.activity
    if presence.cursor is not None:
        state["cursors"] = [presence.cursor]
    return state


def global_state(agent: Agent, presences: list[Presence]) -> dict[str, Any] | None:
    """The agent's state in JupyterLab's global room: who it is, its current document and all of its documents
    (None while it is in no document room)."""
    if not presences:
        return None
    now = next((p for p in presences if p.path == agent.current_document), presences[-1])
    state: dict[str, Any] = {
        "user": user_state(agent.actor),
        "agent": {"client": agent.actor.client, "status": agent.status, "message": agent.message},
        "current": current(now.kind, now.path),
        "documents": [p.path for p in presences],
    }
    if agent.activity is not None:
        state["agent"]["activity"] = agent.activity
    return state
