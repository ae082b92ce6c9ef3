"""What an agent edit tells the rest of the server: history records it, presence moves the agent's cursor.

Views build one :class:`Edit` per agent transaction and hand it to the :class:`EditJournal` around the
commit: ``begin`` before (so the document observer can tie the update bytes to the edit), ``done``
after (so listeners run once the change is in the room). Listeners must never raise into the edit:
the change has already been applied when they run.
"""

from __future__ import annotations

import contextlib
import itertools
import logging
import secrets
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

log = logging.getLogger(__name__)

#: Edit sources that are the actor's own (its undo takes them back): its edits and its restores. Execution
#: outputs (source "run") are written under the shared origin, so undo never takes them back.
UNDOABLE = frozenset({"agent", "restore"})


@dataclass
class Edit:
    """One agent transaction on a document, described for people."""

    path: str
    kind: str  # "notebook" or "file"
    actor: Any  # jupyter_pair_mcp.services.actors.Actor, or None for server-internal writes
    summary: str = ""  # "inserted 2 cells", "updated cell abc"
    source: str = "agent"  # "agent", "restore", "run" (execution outputs)
    cell_id: str | None = None  # notebooks: the cell the edit ended in (for the agent's cursor)
    offset: int | None = None  # character offset in that cell's source, or in the text file
    text: Any = None  # the live Y text the edit ended in: the agent's cursor goes there without a cell lookup
    details: dict[str, Any] = field(default_factory=dict)
    touched: list[str] = field(default_factory=list)  # notebooks: every cell it changed (an undo checks their locks)
    serial: str = ""  # named by the journal when recorded (unique across restarts); history stores it too
    changed: bool = False  # its transaction changed the document (set by the undo tracker's observer)


class EditJournal:
    """Where views announce their edits; one per server, owned by the rooms adapter."""

    def __init__(self) -> None:
        self._current: dict[int, Edit] = {}  # id(ydoc) -> the edit being committed on it
        self._listeners: list[Callable[[Edit], None]] = []
        self._preparers: list[Callable[[Any, Edit], None]] = []
        self._serials = itertools.count(1)
        self._run = secrets.token_hex(4)  # this server process: history rows outlive it, serials restart

    def before_edit(self, preparer: Callable[[Any, Edit], None]) -> None:
        """Call ``preparer(ydoc, edit)`` before each agent transaction (undo tracking starts there)."""
        self._preparers.append(preparer)

    def on_edit(self, listener: Callable[[Edit], None]) -> None:
        self._listeners.append(listener)

    def current(self, ydoc: Any) -> Edit | None:
        """The agent edit whose transaction is committing on ``ydoc`` right now (observers ask this)."""
        return self._current.get(id(ydoc))

    @contextlib.contextmanager
    def recording(self, ydoc: Any, edit: Edit) -> Iterator[Edit]:
        edit.serial = f"{self._run}-{next(self._serials)}"
        for preparer in self._preparers:
            try:
                preparer(ydoc, edit)
            except Exception:
                log.exception("edit preparer failed for %s", edit.path)
        self._current[id(ydoc)] = edit
        try:
            yield edit
        finally:
            self._current.pop(id(ydoc), None)
        for listener in self._listeners:
            try:
                listener(edit)
            except Exception:
                log.exception("edit listener failed for %s", edit.path)
