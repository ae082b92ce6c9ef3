"""What people see of an agent: its awareness ``user`` — name, initials, a colour — derived from its actor.

Every room an agent is in (documents and JupyterLab's global room) shows the same user, so it is built here once.
"""

from __future__ import annotations

import hashlib
from typing import Any

from jupyter_pair_mcp.services.actors import Actor

#: Cursor colours, readable on light and dark themes; an agent's colour is picked from its key.
PALETTE = ("#7b1fa2", "#00897b", "#e65100", "#1565c0", "#c2185b", "#2e7d32", "#6d4c41", "#5e35b1")


def user_id(actor: Actor) -> str:
    """The awareness ``username`` of an agent (and its user_id in tool results)."""
    return f"mcp-agent-{actor.key}"


def display_name(actor: Actor) -> str:
    """ "alice · Claude Code (AI agent)": stock JupyterLab shows only this, so it says what the user is."""
    return f"{actor.name} (AI agent)"


def initials(name: str) -> str:
    words = [w for w in name.replace("-", " ").replace("_", " ").split() if w[:1].isalnum()]
    return "".join(w[0] for w in words[:2]).upper() or "AI"


def color(key: str) -> str:
    return PALETTE[int(hashlib.sha256(key.encode()).hexdigest(), 16) % len(PALETTE)]


def user_state(actor: Actor) -> dict[str, Any]:
    """The ``user`` field of the agent's awareness states, as JupyterLab reads a person's."""
    name = display_name(actor)
    return {
        "username": user_id(actor),
        "name": name,
        "display_name": name,
        "initials": initials(actor.label),
        "color": color(actor.key),
        "avatar_url": None,
    }
