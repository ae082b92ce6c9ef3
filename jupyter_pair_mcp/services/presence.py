"""Agents as visible collaborators: their presence in rooms' awareness, their cursors, an activity log.

JupyterLab shows whoever is in a document's awareness. An agent enters a room when it edits the
document, moves its cursor there, broadcasts an activity on it or joins the room's session, and leaves
when its MCP session ends, when it says so, or once it has had no call in flight for ``timeout`` seconds
(``stateless_timeout`` for a stateless-era actor: it has no session whose end would say it left, so it goes
soon after its last call ends). Awareness forgets states that are not renewed within 30 seconds, and the server
sends nothing to a browser that joins later until the next renewal, so while any presence exists a
renewal loop republishes it every ``renew_interval`` seconds and as soon as a room's clients change.

Everything pycrdt-specific lives in :mod:`jupyter_pair_mcp.adapters.rooms.awareness`; this module keeps the
state: who is where, with which cursor and status, and what they did lately.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import secrets
import time
from collections import deque
from collections.abc import Callable
from typing import Any

from jupyter_pair_mcp.adapters.rooms import awareness as aw
from jupyter_pair_mcp.services.activity import Activity, ActivityLog
from jupyter_pair_mcp.services.actors import Actor
from jupyter_pair_mcp.services.agent_identity import display_name, user_id
from jupyter_pair_mcp.services.global_presence import GLOBAL_ROOM, GlobalPresence
from jupyter_pair_mcp.services.presence_focus import Focus, focused_notebook
from jupyter_pair_mcp.services.presence_states import Agent, Presence, document_state, global_state

log = logging.getLogger(__name__)

STATUSES = ("online", "away", "busy", "offline")
#: Seconds after an agent's synthetic awareness client left a room before the room's awareness forgets it (its
#: clock, kept so that a late update cannot bring it back: a browser echoes the removal within milliseconds).
FORGET_AFTER = 30.0


class PresenceService:
    """Registry of agents' presences, their renewal loop and the bounded activity log."""

    def __init__(
        self,
        rooms: Any,
        *,
        timeout: float = 60.0,
        stateless_timeout: float = 10.0,
        max_activities: int = 1000,
        renew_interval: float = 10.0,
        tick: float = 1.0,
        clock: Callable[[], float] = time.monotonic,
        log: ActivityLog | None = None,
        typing_window: float = 3.0,
        single_user: bool = False,
    ) -> None:
        self.rooms = rooms
        self.clock = clock  # ages and renewals count on it (tests move it by hand instead of racing real time)
        self.timeout = timeout
        self.stateless_timeout = stateless_timeout
        self.renew_interval = renew_interval
        self.tick = tick
        self._agents: dict[str, Agent] = {}
        self._presences: dict[tuple[str, str], Presence] = {}
        self._ids: dict[tuple[str, str], int] = {}  # (actor key, room id) -> synthetic awareness client id
        self._clocks: dict[int, int] = {}  # client id -> last clock sent (must only grow)
        self._gone: deque[tuple[float, str, int]] = deque()  # (left at, room id, client id), oldest first
        self.forget_after = FORGET_AFTER
        self._log = log if log is not None else ActivityLog(max_activities)  # shared with the activity panel
        self._task: asyncio.Task[None] | None = None
        self.lab = GlobalPresence(rooms, self._client_id, self._send, lambda: self.clock())
        self.focus = Focus(typing_window)  # what people look at and type in (get_online_users)
        self.single_user = single_user  # Jupyter's own identity providers: everyone with a credential is one person

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

    def _timeout(self, agent: Agent) -> float:
        """Seconds without a call after which ``agent`` leaves; 0: never by age."""
        return self.stateless_timeout if agent.actor.session_id is None else self.timeout

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

    def _forget_ids(self, key: str) -> None:
        """Drop an agent's synthetic client ids once it is gone (their removal has been sent already)."""
        now = self.clock()
        for id_key in [k for k in self._ids if k[0] == key]:
            client_id = self._ids.pop(id_key)
            self._clocks.pop(client_id, None)
            self._gone.append((now, id_key[1], client_id))
        if self._gone:
            with contextlib.suppress(RuntimeError):  # no loop (unit tests of the bookkeeping)
                self._start()

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

    def _global_state(self, key: str, presences: list[Presence] | None = None) -> dict[str, Any] | None:
        """The agent's state in JupyterLab's global room (None while it is in no document room).
        ``presences``: the agent's, when the caller has them."""
        agent = self._agents.get(key)
        presences = [p for p in self._presences.values() if p.key == key] if presences is None else presences
        return global_state(agent, presences) if agent is not None else None

    def _state(self, presence: Presence, autosave: bool) -> dict[str, Any] | None:
        agent = self._agents.get(presence.key)
        return document_state(agent, presence, autosave) if agent is not None else None

    def _send(self, room: Any, room_id: str, client_id: int, state: dict[str, Any] | None) -> None:
        """Apply and broadcast one of our states in a room (None: its removal), with the next clock."""
        clock = self._clocks[client_id] = self._clocks.get(client_id, 0) + 1
        try:
            aw.publish(room, client_id, clock, state)
        except RuntimeError:  # a stopping room (shutdown ended its tasks): the state is gone, nobody to tell
            log.debug("agent presence in stopping room %s not broadcast", room_id)
        except Exception:
            log.exception("broadcasting agent presence in %s failed", room_id)

    def _publish(self, presence: Presence, room: Any = None, *, lab: bool = True) -> None:
        room = room if room is not None else aw.room(self.rooms, presence.room_id)
        if room is None:
            return
        presence.autosave = self._autosave(room)
        presence.clients = aw.clients(room)
        presence.published = self.clock()
        self._send(room, presence.room_id, presence.client_id, self._state(presence, presence.autosave))
        if lab:
            self.lab.show(presence.key, self._global_state(presence.key))

    def _remove(self, presence: Presence) -> None:
        self._presences.pop((presence.key, presence.room_id), None)
        self.lab.show(presence.key, self._global_state(presence.key))
        room = aw.room(self.rooms, presence.room_id)
        if room is not None:
            self._send(room, presence.room_id, presence.client_id, None)

    def sweep(self, now: float | None = None) -> float:
        """One renewal tick: expire idle agents, drop presences of closed rooms, renew the others when due.

        Returns the seconds until the next agent would expire (``inf`` when none), so the loop wakes then and
        an agent leaves on time rather than up to a tick late.
        """
        now = self.clock() if now is None else now
        due = float("inf")
        for key, agent in list(self._agents.items()):
            timeout = self._timeout(agent)
            if not timeout or agent.calls:
                continue
            if now - agent.last_seen < timeout:
                due = min(due, agent.last_seen + timeout - now)
                continue
            for presence in self.rooms_of(agent.actor):
                self._remove(presence)
            if agent.actor.session_id is None:
                del self._agents[key]  # stateless actors have no end: forget them once idle
                self._forget_ids(key)
        while self._gone and now - self._gone[0][0] >= self.forget_after:
            _, room_id, client_id = self._gone.popleft()
            room = aw.room(self.rooms, room_id)
            if room is not None:
                aw.forget_client(room, client_id)
        if self._gone:
            due = min(due, self._gone[0][0] + self.forget_after - now)
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
                self._publish(presence, room, lab=False)
        by_agent: dict[str, list[Presence]] = {key: [] for key in self.lab.agents()}
        for presence in self._presences.values():  # grouped once: a sweep stays linear in presences
            by_agent.setdefault(presence.key, []).append(presence)
        for key, presences in by_agent.items():
            self.lab.show(key, self._global_state(key, presences), renew_after=self.renew_interval)
        return due

    def _start(self) -> None:
        if self._task is None or self._task.done():
            self._task = asyncio.get_running_loop().create_task(self._renew_forever())

    def _waiting(self) -> bool:
        """Whether the loop has work: presences to renew, clients that left to forget, or stateless agents to
        forget once idle."""
        if self._presences or self._gone:
            return True
        return bool(self.stateless_timeout) and any(a.actor.session_id is None for a in self._agents.values())

    async def _renew_forever(self) -> None:
        wait = self.tick
        while self._waiting():
            await asyncio.sleep(wait)
            try:
                wait = min(self.tick, max(0.01, self.sweep()))
            except Exception:
                wait = self.tick
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
