"""The activity log: what agents did in documents (edits, runs, broadcasts) and what people did to agents.

One bounded log per server, newest entries kept, each numbered by a sequence that only grows, so a
panel polling "what is new after entry 41" never misses or repeats one while the log holds it. Entries
are small by construction: a summary is cut to :data:`MAX_SUMMARY` characters and an entry names at most
:data:`MAX_CELLS` cells (by id; their index is looked up when the log is read, from the room's cell
index, since cells move). Presence records the agents' entries (:mod:`.presence`); the stop service
records stops, allows and refused calls (:mod:`.steering`).
"""

from __future__ import annotations

import itertools
import time
from collections import deque
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

#: Characters of an entry's summary kept (a broadcast's description is at most 500 already).
MAX_SUMMARY = 500
#: Cells one entry names; an edit ends in one cell, a run names the cell it ran.
MAX_CELLS = 20

#: Kinds the panel tells apart; any other activity type an agent broadcasts is a "broadcast".
KINDS = (
    *("edit", "run", "broadcast", "refused", "stop", "allow", "undo", "restore"),
    *("propose", "accept", "reject", "expire"),  # review mode's suggestions (services/suggestions.py)
    "disk",  # another program changed a document's file: merged into the room (adapters/rooms/disk.py)
)
_TYPE_KINDS = {"edit": "edit", "execution": "run", "restore": "restore"}


@dataclass
class Activity:
    """One entry of the log (``type`` is what the agent or the server called it; ``kind`` its class: when the
    recorder gives none, edits, executions and restores are told by their type and the rest are broadcasts)."""

    timestamp: float  # epoch seconds
    user_id: str
    name: str
    type: str
    document_path: str | None
    description: str
    metadata: dict[str, Any] | None = None
    seq: int = 0
    actor: Any = None  # jupyter_pair_mcp.services.actors.Actor of the agent, None for the server's own entries
    cells: tuple[str, ...] = field(default_factory=tuple)
    by: str | None = None  # the person behind a stop, allow, undo or restore from the panel
    edit: str | None = None  # the journal's serial of the edit (history stores it: the entry's version)
    kind: str = ""  # one of KINDS, set by whoever records it (an agent's broadcast can never claim a stop)


def disk_merge(path: str, conflicts: tuple[str, ...], dropped: bool) -> Activity:
    """The entry people see when another program changed an open document's file and it was merged in."""
    if conflicts:
        what = (
            "changed on disk by another program and merged; where both had changed the same place the file's "
            "version won (the version before is in the document's history)"
        )
    elif dropped:
        what = "changed on disk by another program and reloaded, replacing changes not saved yet"
    else:
        what = "changed on disk by another program and merged; every change not saved yet was kept"
    return Activity(
        timestamp=time.time(),
        user_id="",
        name="file on disk",
        type="disk",
        document_path=path,
        description=f"{path} {what}",
        cells=tuple(c for c in conflicts if not c.startswith("(")),
        kind="disk",
    )


class ActivityLog:
    """The newest ``max_entries`` activities, in order, numbered by :attr:`Activity.seq`."""

    def __init__(self, max_entries: int = 1000) -> None:
        self._entries: deque[Activity] = deque(maxlen=max(1, max_entries))
        self._seq = itertools.count(1)

    def add(self, entry: Activity) -> Activity:
        """Number ``entry``, cut what it carries to the bounds, keep it (the oldest entry goes when full)."""
        entry.seq = next(self._seq)
        if entry.kind not in KINDS:
            entry.kind = _TYPE_KINDS.get(entry.type, "broadcast")
        entry.description = entry.description[:MAX_SUMMARY]
        entry.cells = tuple(c for c in entry.cells if c)[:MAX_CELLS]
        self._entries.append(entry)
        return entry

    def newest(self, path: str | None, limit: int) -> list[Activity]:
        """Newest first, at most ``limit``, only those on ``path`` when given."""
        return list(itertools.islice(self._on(path, reversed(self._entries)), limit))

    def page(self, path: str, *, after: int | None, limit: int) -> tuple[list[Activity], bool]:
        """Entries on ``path`` in order: the first ``limit`` after seq ``after``, or the last ``limit`` when
        ``after`` is None; and whether more entries follow the page."""
        if after is None:
            found = list(itertools.islice(self._on(path, reversed(self._entries)), limit))
            found.reverse()
            return found, False
        newer = (e for e in self._on(path, iter(self._entries)) if e.seq > after)
        found = list(itertools.islice(newer, limit + 1))
        return found[:limit], len(found) > limit

    def find_actor(self, key: str, path: str | None = None) -> Any:
        """The actor of the newest entry by agent ``key`` (on ``path`` when given), or None."""
        for entry in self._on(path, reversed(self._entries)):
            if entry.actor is not None and getattr(entry.actor, "key", None) == key:
                return entry.actor
        return None

    def with_edits(self, path: str, serials: set[str]) -> list[int]:
        """The seqs of the entries on ``path`` recording the edits of journal serial ``serials``."""
        if not serials:
            return []
        return [e.seq for e in self._on(path, iter(self._entries)) if e.edit is not None and e.edit in serials]

    @property
    def latest(self) -> int:
        """The seq of the newest entry (0 when the log is empty)."""
        return self._entries[-1].seq if self._entries else 0

    @staticmethod
    def _on(path: str | None, entries: Iterator[Activity]) -> Iterator[Activity]:
        return (e for e in entries if path is None or e.document_path == path)
