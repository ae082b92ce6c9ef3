"""What people do about agents from JupyterLab: read a document's activity, stop and allow an agent, undo
its edits, restore a version. The REST handlers (:mod:`.rest`) are thin; this service does the work.

Permissions are the handlers' (Jupyter's authorizer, as for the tools); this service checks the admin's
``stop_agents_users`` list. An agent is named by its key (the awareness username minus ``mcp-agent-``),
looked up among live sessions, present agents and the activity log, so a stateless agent that went idle
can still be stopped where it worked. A person's undo and restore run under a person's origin (never an
agent's :class:`~.actors.Actor`): presence does not show them as an agent, and history names the person.
"""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, ClassVar

from jupyter_pair_mcp.adapters.rooms import awareness as aw
from jupyter_pair_mcp.errors import InvalidArgument, NotFound, PermissionDenied, Unavailable
from jupyter_pair_mcp.services.activity import Activity, ActivityLog
from jupyter_pair_mcp.services.actors import ORIGIN_PREFIX
from jupyter_pair_mcp.services.agent_identity import color
from jupyter_pair_mcp.services.history import restore_report, undo_report
from jupyter_pair_mcp.services.stops import Stops, entry, message

log = logging.getLogger(__name__)

#: Entries one activity answer holds at most, and its default page.
MAX_ACTIVITY_LIMIT = 200
DEFAULT_ACTIVITY_LIMIT = 50
#: Bytes of JSON one activity answer holds at most (entries past it are left for the next page).
MAX_ACTIVITY_BYTES = 256 * 1024
AGENT_PREFIX = "mcp-agent-"


@dataclass(frozen=True)
class Person:
    """A person acting from the panel: edits under their own origin, named in history by their name."""

    username: str  # Jupyter's key for them (a random id for a token login): never shown
    name: str  # how they are shown: services.actors.name_person
    is_person: ClassVar[bool] = True  # a person's write: cells people locked against agents are theirs to change

    @property
    def key(self) -> str:
        return "person-" + hashlib.sha256(self.username.encode()).hexdigest()[:12]

    @property
    def origin(self) -> str:
        return f"{ORIGIN_PREFIX}:{self.key}"


@dataclass(frozen=True)
class _Undoer:
    """The agent's origin (its undo stack) with the person's name (history's author of the undo)."""

    key: str
    name: str
    origin: str
    is_person: ClassVar[bool] = True  # a person undoing an agent's edit: the agent's lock checks do not apply


def _iso(timestamp: float) -> str:
    return datetime.fromtimestamp(timestamp, UTC).isoformat()


class Steering:
    """The panel's side of the server: activity, agents, stop and allow, undo and restore."""

    def __init__(
        self,
        *,
        contents: Any,
        rooms: Any,
        history: Any,
        presence: Any,
        execution: Any,
        actors: Any,
        stops: Stops,
        log: ActivityLog,
        sessions: Callable[[], Any],
        stop_users: list[str] | None = None,
        end_streams: Callable[[str, Callable[[str], bool]], int] | None = None,
        stopped: Callable[[Any, str, Person], Awaitable[bool]] | None = None,
    ) -> None:
        self.contents = contents
        self.rooms = rooms
        self.history = history
        self.presence = presence
        self.execution = execution
        self.actors = actors
        self.stops = stops
        self.log = log
        self.sessions = sessions  # the session manager once the endpoint is built, else None
        self.stop_users = list(stop_users or [])
        self.end_streams = end_streams  # (principal, document predicate): its listen streams' subscriptions end
        self.stopped = stopped  # (actor, path, person): what else a stop ends (a Jupyter AI chat's turn)

    def may_stop(self, username: str) -> bool:
        """Whether the admin's list lets this person stop agents (they also need write permission)."""
        return not self.stop_users or username in self.stop_users

    # -- reading ------------------------------------------------------------------------------------
    async def activity(self, path: str, after: int | None, limit: int) -> dict[str, Any]:
        """A page of the document's activity, oldest first (see :meth:`ActivityLog.page`)."""
        if not 1 <= limit <= MAX_ACTIVITY_LIMIT:
            raise InvalidArgument(f"limit must be between 1 and {MAX_ACTIVITY_LIMIT}, not {limit}")
        if after is not None and after < 0:
            raise InvalidArgument(f"after must be a seq from an earlier answer (0 or more), not {after}")
        path, kind = await self.contents.require_document(path)
        entries, more = self.log.page(path, after=after, limit=limit)
        wanted = list(dict.fromkeys(c for e in entries for c in e.cells)) if kind == "notebook" else []
        positions = self.rooms.cell_positions(path, wanted) if wanted else {}
        serials = {e.edit for e in entries if e.edit}
        versions = await self._versions(path, kind, serials) if serials else {}
        out: list[dict[str, Any]] = []
        size = 0
        for item in entries:
            shown = _shown(item, positions, versions)
            size += len(str(shown))  # near enough to its JSON: a bound, not an exact count
            if out and size > MAX_ACTIVITY_BYTES:
                more = True
                break
            out.append(shown)
        latest = out[-1]["seq"] if more else max(self.log.latest, after or 0)
        # The entries each undo stack takes back next (an agent's edit, a person's restore), whichever page
        # they were on: the panel's Undo buttons sit on these, and move after an undo.
        undoable = self.log.with_edits(path, set(self.history.undo.next_undo(path).values()))
        return {"path": path, "entries": out, "latest": latest, "more": more, "undoable": undoable}

    async def _versions(self, path: str, kind: str, serials: set[str]) -> dict[str, tuple[str, str | None]]:
        """The entries' versions; none when this server keeps no history (the activity is answered anyway)."""
        try:
            return dict(await self.history.edit_versions(path, kind, serials))
        except Unavailable:
            return {}

    async def agents(self, path: str, username: str, may_write: bool) -> dict[str, Any]:
        """The agents in the document now, and those stopped there."""
        path, kind = await self.contents.require_document(path)
        room = aw.room(self.rooms, self.rooms.room_id(path, kind, create_id=False))
        found: dict[str, dict[str, Any]] = {}
        for participant in aw.participants(room) if room is not None else []:
            uid = str(participant.user.get("username", ""))
            if participant.agent is None or not uid.startswith(AGENT_PREFIX):
                continue
            key = uid.removeprefix(AGENT_PREFIX)
            agent = self.presence.agent(uid) if self.presence is not None else None
            actor = agent.actor if agent is not None else None
            found[key] = {
                "key": key,
                "name": actor.name if actor is not None else str(participant.user.get("name", "")),
                "client": str(participant.agent.get("client") or ""),
                "username": uid,
                "color": participant.user.get("color"),
                "cell_id": participant.agent.get("cell_id"),
                "stopped": False,
            }
        for stop in self.stops.in_document(path):
            found[stop.key] = {
                "key": stop.key,
                "name": stop.name,
                "client": stop.client,
                "username": AGENT_PREFIX + stop.key,
                "color": color(stop.key),
                "cell_id": None,
                "stopped": True,
                "stopped_by": stop.by,
                "refused": stop.refused,
            }
        return {"path": path, "agents": list(found.values()), "can_stop": may_write and self.may_stop(username)}

    # -- stop and allow -----------------------------------------------------------------------------
    def _actor(self, key: str, path: str) -> Any:
        """The agent of ``key``: a live session's, a present one's, or the newest in the log."""
        if not 1 <= len(key) <= 64:
            raise NotFound("no such agent on this server: the document's agent list names them")
        for actor in self.actors.live:
            if actor.key == key:
                return actor
        agent = self.presence.agent(AGENT_PREFIX + key) if self.presence is not None else None
        if agent is not None:
            return agent.actor
        actor = self.log.find_actor(key, path) or self.log.find_actor(key)
        if actor is None:
            raise NotFound(f"no agent {key!r} is known on this server: the document's agent list names them")
        return actor

    async def stop(self, key: str, path: str, person: Person) -> dict[str, Any]:
        """Stop the agent in the document: stop its runs there, end its sessions, take its presence out, and
        refuse its calls there until :meth:`allow`."""
        path, kind = await self.contents.require_document(path)
        actor = self._actor(key, path)
        stop = self.stops.add(actor, path, person.name)
        self.log.add(entry(actor, "stop", path, f"stopped by {person.name}", by=person.name))
        # Its runs first (cells and scratch code, in calls or MCP tasks, through any name of the file): ending a
        # session cancels its calls, and a run stopped here tells its call (or its task's result) why.
        where = self.stops.where(path)
        note = f"{person.name} stopped {actor.name} in this document"
        interrupted = self.execution.interrupt(stop.matches, where, message(stop), note)
        if self.end_streams is not None and getattr(actor, "grant", None) and stop.principal:
            # A grant's credential is the agent's own; the server's token may be shared by other agents, whose
            # streams it does not name apart (a legacy session's subscriptions end with the session below).
            self.end_streams(stop.principal, where)
        matching = [a for a in self.actors.live if stop.matches(a)]
        ended = 0
        manager = self.sessions()
        for live in matching:
            if manager is not None and live.session_id and await manager.end(live.session_id):
                ended += 1
        room_id = self.rooms.room_id(path, kind, create_id=False)
        room = aw.room(self.rooms, room_id)
        if self.presence is not None and room is not None and room_id is not None:
            for participant in aw.participants(room):
                agent = self.presence.agent(str(participant.user.get("username", "")))
                if agent is not None and stop.matches(agent.actor):
                    self.presence.leave(agent.actor, room_id)
        log.info("A person stopped an MCP agent in a document (%d session(s) ended)", ended)
        done: dict[str, Any] = {"stopped": True, "ended_sessions": ended, "interrupted": interrupted}
        if self.stopped is not None:
            try:
                if await self.stopped(actor, path, person):
                    done["ended_turn"] = True  # a Jupyter AI agent's chat turn (docs/jupyter-ai.md)
            except Exception:  # the stop holds whatever else failed to end
                log.exception("ending a stopped agent's chat turn failed")
        return done

    async def allow(self, key: str, path: str, person: Person) -> dict[str, Any]:
        """Let a stopped agent work in the document again."""
        path, _ = await self.contents.require_document(path)
        stop = self.stops.remove(key, path)
        if stop is None:
            held = self.stops.of(self._actor(key, path), path)  # unknown agents are a 404
            if held is None:
                return {"stopped": False}  # not stopped here: nothing to do
            stop = self.stops.remove(held.key, path)  # stopped under another of its keys (a new session)
            assert stop is not None
        actor = self.log.find_actor(key, path) or _Undoer(stop.key, stop.name, f"{ORIGIN_PREFIX}:{stop.key}")
        self.log.add(entry(actor, "allow", path, f"allowed again by {person.name}", by=person.name))
        if not self.stops.holds(actor) and not any(a.key == key for a in self.actors.live):
            self.history.undo.forget(actor)  # kept while stopped, for the panel's undo
        return {"stopped": False}

    # -- undo and restore -----------------------------------------------------------------------------
    async def undo(self, path: str, key: str, count: int, person: Person) -> dict[str, Any]:
        """Undo the agent's last ``count`` edits in the document (as the undo_agent_edits tool does for it)."""
        if not 1 <= count <= 100:
            raise InvalidArgument(f"count must be between 1 and 100, not {count}")
        path, kind = await self.contents.require_document(path)
        actor = self._actor(key, path)
        undoer = _Undoer(actor.key, person.name, actor.origin)
        result = await self.history.undo_edits(path, kind, undoer, count)
        if not result.undone:
            raise InvalidArgument(
                f"nothing of this agent's to undo in {path!r}: it made no edits there since the document was "
                "opened (restore an older version instead)"
            )
        summary = f"{person.name} undid: " + "; ".join(result.undone)
        self.log.add(entry(actor, "undo", path, summary, by=person.name))
        return undo_report(path, result).model_dump(mode="json")

    async def undo_restore(self, path: str, person: Person) -> dict[str, Any]:
        """Take back the person's own last restore of the document (their restores are the only steps of their
        undo stack: undoing an agent's edit runs under the agent's origin)."""
        path, kind = await self.contents.require_document(path)
        result = await self.history.undo_edits(path, kind, person, 1)
        if not result.undone:
            raise InvalidArgument(
                f"you have no restore of {path!r} to undo: only restores made since the document was opened, by "
                "you, can be undone (restore a version instead)"
            )
        record = Activity(
            timestamp=datetime.now(UTC).timestamp(),
            user_id=person.username,
            name=person.name,
            type="undo",
            document_path=path,
            description=f"{person.name} undid their restore",
            by=person.name,
            kind="undo",
        )
        self.log.add(record)
        return undo_report(path, result).model_dump(mode="json")

    async def restore(self, path: str, version: str, person: Person, *, keep_people: bool = False) -> dict[str, Any]:
        """Bring the document back to a version (as restore_document_version does), as the person; with
        ``keep_people``, only the agents' changes since it are taken back (see :meth:`HistoryService.restore`)."""
        path, kind = await self.contents.require_document(path)
        outcome = await self.history.restore(path, kind, version, person, keep_people=keep_people)
        if outcome.changes:
            # The restore is the top step of the person's own undo stack: its entry offers Undo (undo_restore).
            serial = self.history.undo.next_undo(path).get(person.origin)
            record = Activity(
                timestamp=datetime.now(UTC).timestamp(),
                user_id=person.username,
                name=person.name,
                type="restore",
                document_path=path,
                description=f"{person.name} restored version {version}",
                cells=tuple(str(c["cell_id"]) for c in outcome.changes if c.get("cell_id")),
                by=person.name,
                kind="restore",
                metadata={"version": outcome.version_id} if outcome.version_id else None,
                edit=serial,
            )
            self.log.add(record)
        return restore_report(path, outcome).model_dump(mode="json")


def refuse_stop(name: str) -> PermissionDenied:
    return PermissionDenied(
        f"{name} may not stop agents on this server (JupyterPairMCP.stop_agents_users lists who may)"
    )


def _shown(
    item: Activity, positions: dict[str, int | None], versions: dict[str, tuple[str, str | None]]
) -> dict[str, Any]:
    actor = item.actor
    version, before = versions.get(item.edit or "", (None, None))
    if version is None and item.metadata and isinstance(item.metadata.get("version"), str):
        version = item.metadata["version"]  # a restore from the panel
    shown: dict[str, Any] = {
        "seq": item.seq,
        "time": _iso(item.timestamp),
        "kind": item.kind,
        "type": item.type,
        "agent": (
            {"key": actor.key, "name": actor.name, "client": getattr(actor, "client", "")}
            if actor is not None and getattr(actor, "key", None)
            else None
        ),
        "summary": item.description,
        "cells": [{"cell_id": c, "index": positions.get(c)} for c in item.cells],
        "version": version,
        "before_version": before,
    }
    if item.by is not None:
        shown["by"] = item.by
    return shown
