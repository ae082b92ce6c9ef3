"""The awareness side of agents' presence: their synthetic clients in rooms and the loop that renews them.

An agent shows in a room as an awareness client of its own: a client id nobody else holds, a clock that only
grows, a state renewed before awareness forgets it (30 seconds) and as soon as the room's clients change, and,
once the agent left, its removal kept long enough that a late update cannot bring it back. That bookkeeping
and the renewal loop are here, apart from what they publish: :class:`PresenceService` (``presence.py``) adds
who the agents are, which rooms they are in and what they did, over this class.
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
from jupyter_pair_mcp.services.activity import ActivityLog
from jupyter_pair_mcp.services.actors import Actor
from jupyter_pair_mcp.services.global_presence import GlobalPresence
from jupyter_pair_mcp.services.presence_focus import Focus
from jupyter_pair_mcp.services.presence_states import Agent, Presence, document_state, global_state

log = logging.getLogger(__name__)

#: Seconds after an agent's synthetic awareness client left a room before the room's awareness forgets it (its
#: clock, kept so that a late update cannot bring it back: a browser echoes the removal within milliseconds).
FORGET_AFTER = 30.0


class AwarenessPublisher:
    """Agents' synthetic awareness clients, their states sent to rooms and renewed by one loop."""

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

    def _timeout(self, agent: Agent) -> float:
        """Seconds without a call after which ``agent`` leaves; 0: never by age."""
        return self.stateless_timeout if agent.actor.session_id is None else self.timeout

    def rooms_of(self, actor: Actor) -> list[Presence]:
        return [p for p in self._presences.values() if p.key == actor.key]

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
