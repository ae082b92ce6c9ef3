"""Agents as visible collaborators: their presence in rooms' awareness, their cursors, an activity log.

JupyterLab shows whoever is in a document's awareness. An agent enters a room when it edits the
document, moves its cursor there, broadcasts an activity on it or joins the room's session, and leaves
when its MCP session ends, when it says so, or after ``timeout`` seconds without a call (the only end a
stateless-era actor has). Awareness forgets states that are not renewed within 30 seconds, and the server
sends nothing to a browser that joins later until the next renewal, so while any presence exists a
renewal loop republishes it every ``renew_interval`` seconds and as soon as a room's clients change.

Everything pycrdt-specific lives in :mod:`jupyter_pair_mcp.adapters.rooms.awareness`; this module keeps the
state: who is where, with which cursor and status, and what they did lately.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import logging
import secrets
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from jupyter_pair_mcp.adapters.rooms import awareness as aw
from jupyter_pair_mcp.services.actors import Actor

log = logging.getLogger(__name__)

STATUSES = ("online", "away", "busy", "offline")
#: Cursor colours, readable on light and dark themes; an agent's colour is picked from its key.
PALETTE = ("#7b1fa2", "#00897b", "#e65100", "#1565c0", "#c2185b", "#2e7d32", "#6d4c41", "#5e35b1")


@dataclass
class Activity:
    timestamp: float  # epoch seconds
    user_id: str
    name: str
    type: str
    document_path: str | None
    description: str
    metadata: dict[str, Any] | None = None


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


@dataclass
class Presence:
    """An agent in one room."""

    key: str
    room_id: str
    path: str
    kind: str
    client_id: int
    cursor: dict[str, Any] | None = None
    clients: frozenset[int] = field(default_factory=frozenset)
    published: float = 0.0  # on the service's clock
    autosave: bool = True


def user_id(actor: Actor) -> str:
    """The awareness ``username`` of an agent (and its user_id in tool results)."""
    return f"mcp-agent-{actor.key}"


def display_name(actor: Actor) -> str:
    return f"{actor.name} (AI agent)"


def initials(name: str) -> str:
    words = [w for w in name.replace("-", " ").replace("_", " ").split() if w[:1].isalnum()]
    return "".join(w[0] for w in words[:2]).upper() or "AI"


def color(key: str) -> str:
    return PALETTE[int(hashlib.sha256(key.encode()).hexdigest(), 16) % len(PALETTE)]


class PresenceService:
    """Registry of agents' presences, their renewal loop and the bounded activity log."""

    def __init__(
        self,
        rooms: Any,
        *,
        timeout: float = 60.0,
        max_activities: int = 1000,
        renew_interval: float = 10.0,
        tick: float = 1.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.rooms = rooms
        self.clock = clock  # ages and renewals count on it (tests move it by hand instead of racing real time)
        self.timeout = timeout
        self.renew_interval = renew_interval
        self.tick = tick
        self._agents: dict[str, Agent] = {}
        self._presences: dict[tuple[str, str], Presence] = {}
        self._ids: dict[tuple[str, str], int] = {}  # (actor key, room id) -> synthetic awareness client id
        self._clocks: dict[int, int] = {}  # client id -> last clock sent (must only grow)
        self._log: deque[Activity] = deque(maxlen=max(1, max_activities))
        self._task: asyncio.Task[None] | None = None

    # -- agents -----------------------------------------------------------------------------------
    def touch(self, actor: Actor) -> Agent:
        """The agent of ``actor``, marked as active now (every call of the actor counts)."""
        agent = self._agents.get(actor.key)
        now = self.clock()
        if agent is None:
            agent = self._agents[actor.key] = Agent(actor, last_seen=now, last_activity=time.time())
        agent.last_seen = now
        agent.last_activity = time.time()
        return agent

    def agent(self, uid: str) -> Agent | None:
        return next((a for a in self._agents.values() if user_id(a.actor) == uid), None)

    def is_agent_client(self, client_id: int) -> bool:
        return client_id in self._clocks

    def rooms_of(self, actor: Actor) -> list[Presence]:
        return [p for p in self._presences.values() if p.key == actor.key]

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
        self._publish(presence, room)
        return placed is not None

    def ended(self, actor: Actor) -> None:
        """The actor's MCP session ended: leave every room and forget its settings."""
        for presence in self.rooms_of(actor):
            self._remove(presence)
        self._agents.pop(actor.key, None)
        self._forget_ids(actor.key)

    def _forget_ids(self, key: str) -> None:
        """Drop an agent's synthetic client ids once it is gone (their removal has been sent already)."""
        for id_key in [k for k in self._ids if k[0] == key]:
            self._clocks.pop(self._ids.pop(id_key), None)

    # -- activity ---------------------------------------------------------------------------------
    def record(
        self,
        actor: Actor | None,
        type: str,
        path: str | None,
        description: str,
        metadata: dict[str, Any] | None = None,
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
        )
        self._log.append(entry)
        return entry

    def activities(self, path: str | None, limit: int) -> list[Activity]:
        """Newest first, optionally only those on ``path``."""
        found = []
        for entry in reversed(self._log):
            if path is None or entry.document_path == path:
                found.append(entry)
                if len(found) >= limit:
                    break
        return found

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
        if edit.source != "run":  # executions are recorded by the execution service, once per run
            self.record(actor, "edit" if edit.source == "agent" else edit.source, edit.path, edit.summary or "edited")
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

    # -- awareness --------------------------------------------------------------------------------
    def _client_id(self, key: str, room_id: str, room: Any) -> int:
        client_id = self._ids.get((key, room_id))
        if client_id is None:
            taken = set(aw.states(room)) | set(self._clocks)
            client_id = secrets.randbelow(2**31 - 1) + 1
            while client_id in taken:
                client_id = secrets.randbelow(2**31 - 1) + 1
            self._ids[(key, room_id)] = client_id
            self._clocks[client_id] = 0
        return client_id

    def _autosave(self, room: Any) -> bool:
        """What the people in the room chose (the room saves when any state says autosave, or has none)."""
        human = [
            s
            for cid, s in aw.states(room).items()
            if isinstance(s, dict) and s and "agent" not in s and cid not in self._clocks
        ]
        return any(s.get("autosave", True) for s in human) if human else True

    def _state(self, presence: Presence, autosave: bool) -> dict[str, Any] | None:
        agent = self._agents.get(presence.key)
        if agent is None:
            return None
        actor = agent.actor
        name = display_name(actor)
        state: dict[str, Any] = {
            "user": {
                "username": user_id(actor),
                "name": name,
                "display_name": name,
                "initials": initials(actor.name),
                "color": color(actor.key),
                "avatar_url": None,
            },
            "agent": {"client": actor.client, "status": agent.status, "message": agent.message},
            "autosave": autosave,
        }
        if agent.activity is not None:
            state["agent"]["activity"] = agent.activity
        if presence.cursor is not None:
            state["cursors"] = [presence.cursor]
        return state

    def _publish(self, presence: Presence, room: Any = None) -> None:
        room = room if room is not None else aw.room(self.rooms, presence.room_id)
        if room is None:
            return
        presence.autosave = self._autosave(room)
        state = self._state(presence, presence.autosave)
        clock = self._clocks[presence.client_id] = self._clocks.get(presence.client_id, 0) + 1
        presence.clients = aw.clients(room)
        presence.published = self.clock()
        try:
            aw.publish(room, presence.client_id, clock, state)
        except RuntimeError:  # the room is stopping: see _remove
            log.debug("agent presence in stopping room %s not broadcast", presence.room_id)
        except Exception:
            log.exception("publishing agent presence in %s failed", presence.room_id)

    def _remove(self, presence: Presence) -> None:
        self._presences.pop((presence.key, presence.room_id), None)
        room = aw.room(self.rooms, presence.room_id)
        if room is None:
            return
        clock = self._clocks[presence.client_id] = self._clocks.get(presence.client_id, 0) + 1
        try:
            aw.publish(room, presence.client_id, clock, None)
        except RuntimeError:  # a stopping room (shutdown ended its tasks): the state is gone, nobody to tell
            log.debug("agent presence left stopping room %s without a broadcast", presence.room_id)
        except Exception:
            log.exception("removing agent presence from %s failed", presence.room_id)

    def sweep(self, now: float | None = None) -> None:
        """One renewal tick: expire idle agents, drop presences of closed rooms, renew the others when due."""
        now = self.clock() if now is None else now
        for key, agent in list(self._agents.items()):
            if self.timeout and now - agent.last_seen > self.timeout:
                for presence in self.rooms_of(agent.actor):
                    self._remove(presence)
                if agent.actor.session_id is None:
                    del self._agents[key]  # stateless actors have no end: forget them once idle
                    self._forget_ids(key)
        for presence in list(self._presences.values()):
            room = aw.room(self.rooms, presence.room_id)
            if room is None:
                self._presences.pop((presence.key, presence.room_id), None)
                continue
            if (
                now - presence.published >= self.renew_interval
                or aw.clients(room) != presence.clients
                or self._autosave(room) != presence.autosave
            ):
                self._publish(presence, room)

    def _start(self) -> None:
        if self._task is None or self._task.done():
            self._task = asyncio.get_running_loop().create_task(self._renew_forever())

    async def _renew_forever(self) -> None:
        while self._presences:
            await asyncio.sleep(self.tick)
            try:
                self.sweep()
            except Exception:
                log.exception("renewing agent presence failed")

    async def close(self) -> None:
        """Leave every room and stop the renewal loop (server shutdown)."""
        for presence in list(self._presences.values()):
            self._remove(presence)
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self._task
            self._task = None
