"""Agents as visible collaborators: their presence in rooms' awareness, their cursors, an activity log.

JupyterLab shows whoever is in a document's awareness. An agent enters a room when it edits the
document, moves its cursor there, broadcasts an activity on it or joins the room's session, and leaves
when its MCP session ends, when it says so, or once it has had no call in flight for ``timeout`` seconds
(``stateless_timeout`` for a stateless-era actor: it has no session whose end would say it left, so it goes
soon after its last call ends). Awareness forgets states that are not renewed within 30 seconds, and the server
sends nothing to a browser that joins later until the next renewal, so while any presence exists a
renewal loop republishes it every ``renew_interval`` seconds and as soon as a room's clients change.

Everything pycrdt-specific lives in :mod:`jupyter_pair_mcp.adapters.rooms.awareness`; this module keeps the
state: who is where, with which cursor and status, and what they did lately; :mod:`.presence_awareness` its
synthetic awareness clients and their renewal.
"""

from __future__ import annotations

import time
from typing import Any

from jupyter_pair_mcp.adapters.rooms import awareness as aw
from jupyter_pair_mcp.services.activity import Activity
from jupyter_pair_mcp.services.actors import Actor
from jupyter_pair_mcp.services.agent_identity import display_name, user_id
from jupyter_pair_mcp.services.global_presence import GLOBAL_ROOM
from jupyter_pair_mcp.services.presence_awareness import AwarenessPublisher
from jupyter_pair_mcp.services.presence_focus import focused_notebook
from jupyter_pair_mcp.services.presence_states import Agent, Presence

STATUSES = ("online", "away", "busy", "offline")


class PresenceService(AwarenessPublisher):
    """Registry of agents' presences and the bounded activity log; their awareness clients and renewal loop are
    :class:`AwarenessPublisher`'s (``presence_awareness.py``)."""

    # -- agents -----------------------------------------------------------------------------------
    def touch(self, actor: Actor) -> Agent:
        """The agent of ``actor``, marked as active now (every call of the actor counts)."""
        agent = self._agents.get(actor.key)
        now = self.clock()
        if agent is None:
            agent = self._agents[actor.key] = Agent(actor, last_seen=now, last_activity=time.time())
        agent.last_seen = now
        agent.last_activity = time.time()
        if actor.session_id is None and self.stateless_timeout:
            self._start()  # its expiry is the loop's to see, even in no room
        return agent

    def begin(self, actor: Actor) -> None:
        """A tool call of ``actor`` starts: it stays present until the call ends (see :meth:`end`)."""
        self.touch(actor).calls += 1

    def end(self, actor: Actor) -> None:
        """A tool call of ``actor`` ended: its idle time counts from now. Recreates no agent that left meanwhile
        (its session ended during the call)."""
        agent = self._agents.get(actor.key)
        if agent is not None:
            agent.calls = max(0, agent.calls - 1)
            agent.last_seen = self.clock()

    def agent(self, uid: str) -> Agent | None:
        return next((a for a in self._agents.values() if user_id(a.actor) == uid), None)

    def is_agent_client(self, client_id: int) -> bool:
        return client_id in self._clocks

    def focused_notebook(self, actor: Actor) -> str | None:
        """The notebook the person behind ``actor``'s credential has focused in JupyterLab (None: none)."""
        return focused_notebook(aw.room(self.rooms, GLOBAL_ROOM), actor.username, anyone=self.single_user)

    def cursor_cell(self, actor: Actor, path: str) -> str | None:
        """The cell of this agent's cursor in the notebook ``path``: where it last moved it, edited or ran (what
        people see of it), or None before any."""
        return next((p.cell_id for p in self.rooms_of(actor) if p.path == path and p.kind == "notebook"), None)

    def set_status(self, actor: Actor, status: str, message: str | None) -> None:
        """Change what people see of the agent; "offline" takes it out of every room until it works again."""
        agent = self.touch(actor)
        agent.status, agent.message = status, message
        for presence in self.rooms_of(actor):
            if status == "offline":
                self._remove(presence)
            else:
                self._publish(presence)

    # -- rooms ------------------------------------------------------------------------------------
    def enter(self, actor: Actor, path: str, kind: str, *, publish: bool = True) -> Presence | None:
        """Show the agent in the open room of ``path`` (None when no room is open); ``publish=False`` when
        the caller publishes right after (a cursor move), so people see one state, cursor included."""
        agent = self.touch(actor)
        room_id = self.rooms.room_id(path, kind, create_id=False)
        room = aw.room(self.rooms, room_id)
        if room is None or room_id is None:
            return None
        self.focus.watch(room)
        if agent.status == "offline":
            agent.status = "online"
        agent.current_document = path
        presence = self._presences.get((actor.key, room_id))
        if presence is None:
            presence = Presence(actor.key, room_id, path, kind, self._client_id(actor.key, room_id, room))
            self._presences[(actor.key, room_id)] = presence
            if publish:
                self._publish(presence, room)
            self._start()
        presence.path = path  # a rename keeps the room
        return presence

    def join(self, actor: Actor, room_id: str) -> Presence | None:
        """Enter a room by its id (join_session)."""
        kind = aw.room_kind(room_id)
        path = aw.room_path(self.rooms, room_id)
        if kind is None or path is None or aw.room(self.rooms, room_id) is None:
            return None
        return self.enter(actor, path, kind)

    def leave(self, actor: Actor, room_id: str) -> bool:
        """Take the agent out of one room; False when it was not there."""
        self.touch(actor)
        presence = self._presences.get((actor.key, room_id))
        if presence is None:
            return False
        self._remove(presence)
        return True

    def move(
        self,
        actor: Actor,
        path: str,
        kind: str,
        cell_id: str | None,
        anchor: int,
        head: int,
        *,
        text: Any = None,
    ) -> bool:
        """Put the agent's cursor at character offsets of a cell's source (notebooks) or of the text.

        ``text``, the cell's live source when the caller has it (an edit does), spares looking the cell up.
        """
        presence = self.enter(actor, path, kind, publish=False)
        room = aw.room(self.rooms, presence.room_id) if presence is not None else None
        if presence is None or room is None:
            return False
        position = self.rooms.cell_position(path, cell_id) if text is None and kind == "notebook" else None
        placed = aw.cursor(room, kind, cell_id, anchor, head, text=text, position=position)
        if placed is not None:
            presence.cursor = placed
            presence.cell_id = cell_id if kind == "notebook" else None
        self._publish(presence, room)
        return placed is not None

    def point(self, actor: Actor, path: str, cell_id: str | None, message: str) -> bool:
        """Point people at a notebook cell with a label (None: stop pointing); False when no room is open.
        It only shows: nobody's view moves."""
        presence = self.enter(actor, path, "notebook", publish=False)
        if presence is None:
            return False
        at = int(time.time() * 1000)
        presence.point = {"cell_id": cell_id, "message": message, "at": at} if cell_id is not None else None
        self._publish(presence)
        return True

    def ended(self, actor: Actor) -> None:
        """The actor's MCP session ended: leave every room and forget its settings."""
        for presence in self.rooms_of(actor):
            self._remove(presence)
        self._agents.pop(actor.key, None)
        self._forget_ids(actor.key)

    # -- activity ---------------------------------------------------------------------------------
    def record(
        self,
        actor: Actor | None,
        type: str,
        path: str | None,
        description: str,
        metadata: dict[str, Any] | None = None,
        *,
        cells: tuple[str, ...] = (),
        edit: str | None = None,
        kind: str = "",
    ) -> Activity:
        """Log an activity (edit, execution, broadcast) of an agent; the log keeps the newest entries."""
        if actor is not None:
            agent = self.touch(actor)
            if path:
                agent.current_document = path
        entry = Activity(
            timestamp=time.time(),
            user_id=user_id(actor) if actor is not None else "server",
            name=display_name(actor) if actor is not None else "server",
            type=type,
            document_path=path,
            description=description,
            metadata=metadata,
            actor=actor,
            cells=cells,
            edit=edit,
            kind=kind,
        )
        return self._log.add(entry)

    def activities(self, path: str | None, limit: int) -> list[Activity]:
        """Newest first, optionally only those on ``path``."""
        return self._log.newest(path, limit)

    def broadcast(self, actor: Actor, entry: Activity, kind: str | None) -> None:
        """Show an activity to people: in the document's room (entered if needed), else in all the agent's rooms."""
        agent = self.touch(actor)
        agent.activity = {"type": entry.type, "description": entry.description, "timestamp": entry.timestamp}
        if entry.document_path and kind:
            self.enter(actor, entry.document_path, kind)
        for presence in self.rooms_of(actor):
            self._publish(presence)

    def edited(self, edit: Any) -> None:
        """Journal listener: an agent edit landed; log it and move the agent's cursor where it ended."""
        actor = getattr(edit, "actor", None)
        if not isinstance(actor, Actor):
            return
        if edit.source == "run":  # recorded by the execution service, once per run; the caret stays put
            presence = self.enter(actor, edit.path, edit.kind)
            if presence is not None and edit.cell_id is not None and presence.cell_id != edit.cell_id:
                presence.cell_id = edit.cell_id  # a cell starts running: people see which
                self._publish(presence)
            return
        what = "edit" if edit.source == "agent" else edit.source
        cells = tuple(edit.details.get("cells") or ([edit.cell_id] if edit.cell_id else []))
        self.record(actor, what, edit.path, edit.summary or "edited", cells=cells, edit=edit.serial)
        if edit.cell_id is None and (edit.kind == "notebook" or edit.offset is None):
            self.enter(actor, edit.path, edit.kind)
            return
        offset = edit.offset
        text = getattr(edit, "text", None)  # the cell's live source, handed over: no cell lookup
        if offset is None:  # the end of the cell
            if text is None:
                room = aw.room(self.rooms, self.rooms.room_id(edit.path, edit.kind, create_id=False))
                text = aw.source_of(room, edit.kind, edit.cell_id) if room is not None else None
            offset = len(str(text)) if text is not None else 0
        self.move(actor, edit.path, edit.kind, edit.cell_id, offset, offset, text=text)
