"""Agents a person stopped in a document: the record that refuses their calls there until allowed again.

An agent is known by the credential and client name it connected with (a stateless agent has nothing
else; a stateful one would come back in a new session, with a new key, after its session was ended), so a
stop matches the agent's key *or* its (principal, client name) pair. A grant's agent has the grant's key in
every session and era, whatever its client calls itself (services/actors.py). A document is known by every
name of its file: ``identity`` gives a path's keys (its real path, its file's inode), so a stop made through
one path holds through a symbolic link or a hard link to the same file. The store is bounded: at most
``max_per_document`` stopped agents per document and ``max_total`` in all; one more is refused with an
error rather than silently allowing the oldest again.

A stop of a grant's agent outlives a restart: the grant does (services/grants.py), and so does the person's
decision about it. Those stops are kept in ``path`` (JSON in Jupyter's data directory, mode 0600, replaced
atomically; at most ``max_total``) and read back at start, each document known again by its file's names; a
revoked grant's stops are dropped (:meth:`Stops.forget_grant`). A stop of an agent on the server's own token
is kept in memory only: it is keyed by the client name the agent chose, which holds no one after a restart
anyway (every session ends with it, and a client can come back under another name).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from jupyter_pair_mcp.errors import AgentStopped, Unavailable
from jupyter_pair_mcp.services import private_file
from jupyter_pair_mcp.services.activity import Activity, ActivityLog

log = logging.getLogger(__name__)

#: The file of grants' agents' stops, next to the grants' file (JupyterPairMCP.grants_path).
STOPS_FILE = "pair_mcp_stops.json"

#: Seconds between two "refused" entries one stop writes in the activity log: an agent retrying in a loop
#: must not push everything else out of the (bounded) log.
REFUSAL_LOG_INTERVAL = 30.0


@dataclass
class Stop:
    """One agent stopped in one document."""

    path: str
    key: str
    principal: str
    client: str
    name: str  # the agent's name, for people
    by: str  # the person who stopped it, by name (services.actors.name_person)
    at: float  # epoch seconds
    refused: int = 0  # calls refused since
    logged: float | None = None  # the service clock when the last refusal was logged
    grant: str = ""  # the id of the grant its agent holds ("" for the server's token): kept across a restart

    def kept(self) -> dict[str, Any]:
        """What the file keeps of it."""
        fields = ("path", "key", "client", "name", "by", "at", "grant")
        return {f: getattr(self, f) for f in fields}

    def matches(self, actor: Any) -> bool:
        if getattr(actor, "key", None) == self.key:
            return True
        principal = getattr(actor, "principal", "")
        return bool(principal) and principal == self.principal and getattr(actor, "client", None) == self.client


def message(stop: Stop) -> str:
    """What the stopped agent is told (it names the person, never a server path)."""
    return (
        f"A person ({stop.by}) stopped this agent in {stop.path!r}; ask them to allow it again "
        "(in JupyterLab, the agent's entry in the document's collaborator list). Other documents are not affected."
    )


class Stops:
    """The stopped agents, by document."""

    def __init__(
        self,
        *,
        max_per_document: int = 64,
        max_total: int = 1000,
        log: ActivityLog | None = None,
        clock: Callable[[], float] = time.monotonic,
        identity: Callable[[str], tuple[str, ...]] | None = None,
        path: str | None = None,
    ) -> None:
        self.log = log
        self.identity = identity or (lambda path: (path,))
        self._alias: dict[str, str] = {}  # each key of a stopped document's file -> the document's key
        self.max_per_document = max_per_document
        self.max_total = max_total
        self.clock = clock
        self._by_path: dict[str, dict[str, Stop]] = {}
        self._count = 0
        self.path = path
        if path is not None:
            self._load(path)

    def _load(self, path: str) -> None:
        data = private_file.read(path, "Stopped agents' file")
        for raw in data.get("stops", []) if isinstance(data, dict) else []:
            try:
                kept = {k: raw[k] for k in ("path", "key", "client", "name", "by", "at", "grant")}
                stop = Stop(principal="", **kept)
            except (KeyError, TypeError):
                continue
            if stop.grant and isinstance(stop.path, str) and self._count < self.max_total:
                self._insert(stop)

    def _save(self) -> None:
        """Write the grants' agents' stops (after each change of them: a person's click, never a hot path)."""
        if self.path is None:
            return
        kept = [s.kept() for stops in self._by_path.values() for s in stops.values() if s.grant]
        try:
            private_file.write(self.path, {"stops": kept})
        except OSError:
            log.warning("Could not write the stopped agents' file: these stops hold until the server stops")

    def _insert(self, stop: Stop) -> None:
        doc = self._doc(stop.path)
        if doc is None:
            keys = self.identity(stop.path)
            doc = keys[0]
            for k in keys:
                self._alias[k] = doc
        self._by_path.setdefault(doc, {})[stop.key] = stop
        self._count += 1

    def __bool__(self) -> bool:
        """Whether any agent is stopped anywhere (every tool call asks: none stopped is the common case)."""
        return self._count > 0

    def _doc(self, path: str) -> str | None:
        """The key of the stopped document ``path`` names (by any of its file's names), or None."""
        if not self._alias:
            return None
        return next((self._alias[k] for k in self.identity(path) if k in self._alias), None)

    def where(self, path: str) -> Callable[[str], bool]:
        """A predicate: whether another path names the same document as ``path``."""
        doc = self._doc(path)
        return lambda other: other == path or (doc is not None and self._doc(other) == doc)

    def add(self, actor: Any, path: str, by: str) -> Stop:
        """Stop ``actor`` in ``path`` (again: the existing stop stands). Refused past the bounds."""
        stops = self.in_path(path)
        existing = stops.get(actor.key) or next((s for s in stops.values() if s.matches(actor)), None)
        if existing is not None:
            return existing
        if len(stops) >= self.max_per_document or self._count >= self.max_total:
            raise Unavailable(
                f"too many stopped agents ({'in this document' if len(stops) >= self.max_per_document else 'in all'}):"
                " allow some of them again first"
            )
        stop = Stop(path, actor.key, getattr(actor, "principal", ""), actor.client, actor.name, by, time.time())
        stop.grant = str(getattr(actor, "grant", "") or "")
        self._insert(stop)
        if stop.grant:
            self._save()
        return stop

    def remove(self, key: str, path: str) -> Stop | None:
        """Allow the agent of ``key`` in ``path`` again; the stop that was lifted, or None."""
        doc = self._doc(path)
        stops = self._by_path.get(doc) if doc is not None else None
        stop = stops.pop(key, None) if stops is not None else None
        if stop is not None:
            self._count -= 1
            if not stops:
                del self._by_path[doc]  # type: ignore[arg-type]
                self._alias = {k: d for k, d in self._alias.items() if d != doc}
            if stop.grant:
                self._save()
        return stop

    def forget_grant(self, grant_id: str) -> None:
        """Drop every stop of a revoked grant's agent (its key can never come back)."""
        gone = [(s.key, s.path) for stops in self._by_path.values() for s in stops.values() if s.grant == grant_id]
        for key, path in gone:
            self.remove(key, path)

    def get(self, key: str, path: str) -> Stop | None:
        return self.in_path(path).get(key)

    def in_path(self, path: str) -> dict[str, Stop]:
        doc = self._doc(path)
        return self._by_path.get(doc, {}) if doc is not None else {}

    def of(self, actor: Any, path: str) -> Stop | None:
        """The stop that holds ``actor`` in ``path`` (by any name of its file), or None."""
        stops = self.in_path(path)
        if not stops:
            return None
        return stops.get(actor.key) or next((s for s in stops.values() if s.matches(actor)), None)

    def holds(self, actor: Any) -> bool:
        """Whether ``actor`` is stopped in any document (its undo stacks are kept for the panel's undo)."""
        return any(s.matches(actor) for stops in self._by_path.values() for s in stops.values())

    def in_document(self, path: str) -> list[Stop]:
        return list(self.in_path(path).values())

    def check(self, actor: Any, path: str, what: str = "a call") -> None:
        """Raise :class:`AgentStopped` when ``actor`` is stopped in ``path``; the refusal goes into the activity
        log (the first one, then at most one per :data:`REFUSAL_LOG_INTERVAL`: an agent retrying in a loop must
        not push everything else out of the bounded log)."""
        stop = self.of(actor, path)
        if stop is None:
            return
        stop.refused += 1
        now = self.clock()
        if self.log is not None and (stop.logged is None or now - stop.logged >= REFUSAL_LOG_INTERVAL):
            stop.logged = now
            self.log.add(entry(actor, "refused", path, f"refused {what}: stopped by {stop.by}", by=stop.by))
        raise AgentStopped(message(stop))


def entry(actor: Any, kind: str, path: str, summary: str, *, by: str | None = None) -> Activity:
    """An activity entry about an agent (``actor``) written by the server: a stop, an allow, a refusal."""
    key = getattr(actor, "key", "")
    return Activity(
        timestamp=time.time(),
        user_id=f"mcp-agent-{key}",
        name=f"{getattr(actor, 'name', 'AI agent')} (AI agent)",
        type=kind,
        document_path=path,
        description=summary,
        actor=actor,
        by=by,
        kind=kind,
    )
