"""Agents in JupyterLab's global awareness room, so the Collaborators panel lists them as it lists people.

JupyterLab (jupyter-collaboration's ``rtcGlobalAwareness`` plugin) keeps one transient room,
``JupyterLab:globalAwareness``, in the same websocket server as the documents; each browser publishes there
its ``user``, ``current`` (the main area's current widget as the layout restorer names it, like
``notebook:<path>`` or ``editor:<path>``) and ``documents`` (the paths it has open). The Collaborators panel
lists those states, opens ``documents`` on a click and marks the one ``current`` names (the part after the
first colon). The room exists once a browser has connected to it; before that there is nobody to tell.

An agent's global state mirrors its document rooms: published while it is in at least one, changed when they
change, renewed with them, removed when it leaves the last one.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from jupyter_pair_mcp.adapters.rooms import awareness as aw

GLOBAL_ROOM = "JupyterLab:globalAwareness"

#: The layout restorer's namespace of the widget a document kind opens in by default.
_WIDGET = {"notebook": "notebook", "file": "editor"}


@dataclass
class Entry:
    """One agent's state in the global room, as last sent."""

    client_id: int
    state: dict[str, Any] | None = None
    clients: frozenset[int] = field(default_factory=frozenset)
    published: float = 0.0


def current(kind: str, path: str) -> str:
    """``current`` as JupyterLab writes it for a document of ``kind`` at ``path``."""
    return f"{_WIDGET.get(kind, 'editor')}:{path}"


class GlobalPresence:
    """The agents' states in the global awareness room.

    ``new_id(key, room_id, room)`` gives an agent's awareness client id in a room and ``send(room, room_id,
    client_id, state)`` applies and broadcasts a state (None: removal): the presence service owns both, so
    client ids and clocks live in one place.
    """

    def __init__(
        self,
        rooms: Any,
        new_id: Callable[[str, str, Any], int],
        send: Callable[[Any, str, int, dict[str, Any] | None], None],
        clock: Callable[[], float],
    ) -> None:
        self.rooms = rooms
        self._new_id = new_id
        self._send = send
        self._clock = clock
        self._entries: dict[str, Entry] = {}

    def agents(self) -> list[str]:
        """Keys of the agents with a state in the global room."""
        return list(self._entries)

    def show(self, key: str, state: dict[str, Any] | None, *, renew_after: float | None = None) -> None:
        """Make agent ``key``'s global state ``state`` (None: take it out); sent only when it changed, the
        room's clients changed (someone opened JupyterLab) or, with ``renew_after``, when it is that old."""
        room = aw.room(self.rooms, GLOBAL_ROOM)
        entry = self._entries.get(key)
        if room is None:
            self._entries.pop(key, None)  # nobody has JupyterLab open: a room opened later gets the state afresh
            return
        if state is None:
            if entry is not None:
                del self._entries[key]
                self._send(room, GLOBAL_ROOM, entry.client_id, None)
            return
        if entry is None:
            entry = self._entries[key] = Entry(self._new_id(key, GLOBAL_ROOM, room))
        now = self._clock()
        clients = aw.clients(room)
        due = renew_after is not None and now - entry.published >= renew_after
        if state != entry.state or clients != entry.clients or due:
            entry.state, entry.clients, entry.published = state, clients, now
            self._send(room, GLOBAL_ROOM, entry.client_id, state)
