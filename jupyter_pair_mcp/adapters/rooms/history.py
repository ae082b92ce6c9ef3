"""Provenance for the rooms' update history: which stored update came from which agent edit.

jupyter-collaboration's YStore keeps every update of every room (one row per transaction, in order,
surviving room closes and server restarts) but stores no origin. We add it: a document observer on
every room we touch ties the bytes of an agent transaction to the :class:`~.edits.Edit` being
committed (the :class:`~.edits.EditJournal` knows it), and our YStore subclass writes that
provenance as the row's metadata. Rows without a recorded edit are people's: their author comes from
the client ids in the update, looked up in the room's awareness. A room reloading its file after another
program rewrote it changes the content with no edit recorded, inside the room's update lock: that row's
author is the disk (source ``"disk"``), and the reload is reported to ``on_reload``. The store itself (its
writes, checkpoints and bound) is :mod:`.ystore`.
"""

from __future__ import annotations

import json
import logging
import sqlite3
import sys
import threading
import time
import weakref
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from pycrdt import Array, Doc, Map, Text

from jupyter_pair_mcp.adapters.rooms.cellindex import observe_changes
from jupyter_pair_mcp.adapters.rooms.edits import EditJournal
from jupyter_pair_mcp.adapters.rooms.updates import client_ids, deleted_client_ids, update_name

log = logging.getLogger(__name__)

#: YStore row keys as jupyter-collaboration builds them, by room kind.
_STORE_TYPE = {"notebook": "notebook", "file": "file"}
_PENDING_WAIT = 3.0  # seconds a history read waits at most for an agent update to be stored
_MAX_PENDING = 2000  # agent updates waiting for the store (written within milliseconds normally)
#: Provenance of a room's reload of its file after another program changed it.
DISK_META = {
    "source": "disk",
    "author": "file on disk",
    "summary": "reloaded from disk: another program changed the file",
}


def store_key(kind: str, file_id: str) -> str:
    """The YStore ``path`` of a document: jupyter-collaboration keys rows by file id, so renames keep history."""
    return f".{_STORE_TYPE[kind]}:{file_id}.y"


@dataclass(frozen=True)
class Row:
    rowid: int
    timestamp: float
    metadata: dict[str, Any]
    update: bytes | None = None


class HistoryRecorder:
    """Observes room documents and hands the YStore the provenance of each update it writes."""

    def __init__(self, journal: EditJournal, users: Callable[[str, list[int]], list[str] | None]) -> None:
        self.journal = journal
        self._users = users  # (store key, client ids) -> names of the people behind them; None: the server's own
        self._in_flight = 0
        self._observed: weakref.WeakKeyDictionary[Any, Any] = weakref.WeakKeyDictionary()
        self._pending: OrderedDict[bytes, tuple[dict[str, Any], float]] = OrderedDict()

    def attach(self, ydoc: Any, room: Any = None, on_reload: Callable[[Any], None] | None = None) -> None:
        """Observe ``ydoc`` (idempotent): cheap enough to call on every document access.

        With its ``room`` (jupyter-collaboration's), a content change made while the room holds its update
        lock and no agent edit is committing is the room reloading its file from disk: it is recorded as
        the disk's, and ``on_reload(room)`` is called (synchronously, inside the commit).
        """
        if ydoc in self._observed:
            return
        ref = weakref.ref(ydoc)
        room_ref = weakref.ref(room) if room is not None else None  # the subscriptions must not keep it alive
        changed = [False]  # content types changed in the transaction committing now (their observers run first)

        def on_content(*_: Any) -> None:
            changed[0] = True

        def on_update(event: Any) -> None:
            content, changed[0] = changed[0], False
            doc = ref()
            edit = self.journal.current(doc) if doc is not None else None
            if edit is None:
                room = room_ref() if room_ref is not None else None
                if content and room is not None and _reloading(room) and _own(room, event.update):
                    self._remember(event.update, dict(DISK_META))
                    if on_reload is not None:
                        try:
                            on_reload(room)
                        except Exception:
                            log.exception("reload listener failed")
                return
            actor = edit.actor
            meta = {
                "source": edit.source,
                "author": getattr(actor, "name", None) or "jupyter-pair-mcp",
                "actor": getattr(actor, "key", None),
                "summary": edit.summary,
                "edit": edit.serial,  # ties the activity log's entry of this edit to its version
            }
            self._remember(event.update, meta)

        subscriptions = [ydoc.observe(on_update)]
        if room is not None:
            if getattr(room, "file_type", "") == "notebook":
                shared: list[Any] = [ydoc.get("cells", type=Array), ydoc.get("meta", type=Map)]
                subscriptions += [observe_changes(s, on_content) for s in shared]  # no event paths (walks)
            else:
                subscriptions.append(ydoc.get("source", type=Text).observe(on_content))
        self._observed[ydoc] = subscriptions

    def _remember(self, update: bytes, meta: dict[str, Any]) -> None:
        self._pending[update_name(update)] = (meta, time.monotonic())
        while len(self._pending) > _MAX_PENDING:
            self._pending.popitem(last=False)

    def has_pending(self) -> bool:
        """Whether agent updates are still on their way into the store (history reads wait for them).

        Entries older than a few seconds are not waited for: their room had no store, or its write failed.
        """
        if self._in_flight > 0:
            return True
        now = time.monotonic()
        return any(now - since < _PENDING_WAIT for _, since in self._pending.values())

    def metadata_for(self, key: str, update: bytes) -> tuple[bytes, bool]:
        """The metadata row for ``update`` about to be stored under YStore key ``key``.

        Updates nobody recorded are people's, unless only the server's own client wrote them: those
        are the room's bookkeeping (the saved/dirty flag), which history does not list as versions.
        """
        entry = self._pending.pop(update_name(update), None)
        meta = entry[0] if entry is not None else None
        if meta is None:
            ids = client_ids(update)
            if ids or len(update) <= 2:  # b"\0\0": an empty update
                authors = self._users(key, ids) if ids else None
            else:  # delete-only (a person's undo, a cut): no writer in its header. Whose items it deletes
                # names the person undoing their own typing; else the one person in the room sent it.
                authors = self._users(key, deleted_client_ids(update)) or self._users(key, [])
            meta = {"source": "server"} if authors is None else {"source": "user", "authors": authors}
        return json.dumps(meta, separators=(",", ":")).encode(), entry is not None

    def writing(self, delta: int) -> None:
        self._in_flight += delta


def _reloading(room: Any) -> bool:
    """Whether the room is loading its file over its content now: ready, and holding its update lock (only
    its reload of a file changed on disk writes content under it; its saves write the saved flag only)."""
    lock = getattr(room, "_update_lock", None)
    return bool(getattr(room, "ready", False)) and lock is not None and lock.locked()


def people(room: Any, client_ids: list[int]) -> list[str] | None:
    """Names of the people whose clients wrote an update, from the room's awareness (while they are in it);
    None when only the room's own server-side client wrote it, or no room is open (it is loading)."""
    if room is None:
        return None  # written while the room initializes (its load or reload): nobody is in it yet
    own = getattr(getattr(room, "ydoc", None), "client_id", None)
    if client_ids and own is not None and set(client_ids) <= {own}:
        return None
    states = getattr(getattr(room, "awareness", None), "states", {}) or {}
    if not client_ids:  # a delete-only update whose items are nobody's in the room: the one person in it sent it
        present = [cid for cid, s in states.items() if cid != own and isinstance(s, dict) and "agent" not in s]
        client_ids = present if len(present) == 1 else []
    names: list[str] = []
    for client_id in client_ids:
        user = (states.get(client_id) or {}).get("user")
        if isinstance(user, dict):
            name = user.get("display_name") or user.get("name") or user.get("username")
            if name and name not in names:
                names.append(str(name))
    return names


#: The attribute of a room holding the client ids of its copies that made a reload's merge (:mod:`.replicas`):
#: what they wrote is the room's own, as a merge made in the room is.
MERGE_CLIENTS = "_pair_mcp_merge_clients"


def _own(room: Any, update: bytes) -> bool:
    """Whether the room's own client wrote ``update`` (a person's keystroke applied meanwhile is theirs)."""
    ids = client_ids(update)
    own = {getattr(getattr(room, "ydoc", None), "client_id", None), *getattr(room, MERGE_CLIENTS, ())}
    return not ids or set(ids) <= own


def read_rows(db_path: str, key: str, *, upto: int | None = None, updates: bool = False) -> list[Row]:
    """Rows of one document, oldest first (runs in a worker thread: plain sqlite3, its own connection)."""
    columns = "rowid, metadata, timestamp" + (", yupdate" if updates else "")
    connection = sqlite3.connect(f"file:{db_path}?mode=ro", uri=True, timeout=5.0)
    try:
        cursor = connection.execute(
            f"SELECT {columns} FROM yupdates WHERE path = ? ORDER BY timestamp, rowid",
            (key,),
        )
        rows = []
        for record in cursor:
            meta = _metadata(record[1])
            rows.append(Row(record[0], record[2], meta, record[3] if updates else None))
            if upto is not None and record[0] == upto:
                break
        return rows
    except sqlite3.OperationalError as exc:
        if "no such table" in str(exc):
            return []
        raise
    finally:
        connection.close()


#: Per cached row, beyond what :func:`_held` counts of its metadata: the Row object, its ``__dict__``, its int and
#: float, and its slot in the document's list (CPython, 64-bit, rounded up).
ROW_OVERHEAD = 200


def _held(value: Any, depth: int = 0) -> int:
    """Bytes a metadata value holds as CPython sizes it (its containers' items included, three levels deep)."""
    size = sys.getsizeof(value)
    if depth < 3 and isinstance(value, dict):
        size += sum(_held(k, depth + 1) + _held(v, depth + 1) for k, v in value.items())
    elif depth < 3 and isinstance(value, (list, tuple)):
        size += sum(_held(v, depth + 1) for v in value)
    return size


def row_bytes(row: Row) -> int:
    """Memory one cached row takes, an estimate from above: its metadata's keys are the same few strings in every
    row (see :func:`_metadata`) and are not counted; its values are, shared or not."""
    meta = row.metadata
    return ROW_OVERHEAD + sys.getsizeof(meta) + sum(_held(value, 1) for value in meta.values())


class MetadataCache:
    """Each document's metadata rows, kept and extended by what was added since (listing reads only that).

    A count check catches squashes (rows deleted or rewritten): then the document is read again in full.
    Bounded to the ``size`` documents read last, and to ``max_bytes`` of rows in all (least recently read
    documents out first): a document's rows grow with every transaction until its history is squashed
    (``max_history_updates``, or never when that is 0), a few hundred bytes each. A document whose rows alone
    are over the bound is not kept; its listing reads them all each time.
    """

    def __init__(self, size: int = 32, max_bytes: int = 64 * 1024 * 1024) -> None:
        self.size = size
        self.max_bytes = max_bytes
        self._rows: OrderedDict[str, tuple[list[Row], int]] = OrderedDict()  # key -> (rows, their bytes)
        self._bytes = 0
        self._lock = threading.Lock()

    @property
    def bytes(self) -> int:
        """Bytes of the rows kept (see :func:`row_bytes`)."""
        return self._bytes

    def read(self, db_path: str, key: str) -> list[Row]:
        """Rows of one document, oldest first (runs in a worker thread)."""
        with self._lock:
            cached = self._rows.get(key)
        rows = self._extend(db_path, key, cached[0]) if cached is not None else None
        if rows is not None and cached is not None:  # the cached rows keep their size: only new ones are sized
            size = cached[1] + sum(row_bytes(row) for row in rows[len(cached[0]) :])
        else:
            rows = read_rows(db_path, key)
            size = sum(row_bytes(row) for row in rows)
        with self._lock:
            old = self._rows.pop(key, None)
            if old is not None:
                self._bytes -= old[1]
            if size <= self.max_bytes:
                self._rows[key] = (rows, size)
                self._bytes += size
            while len(self._rows) > self.size or self._bytes > self.max_bytes:
                _, (_, dropped) = self._rows.popitem(last=False)
                self._bytes -= dropped
        return list(rows)

    @staticmethod
    def _extend(db_path: str, key: str, cached: list[Row]) -> list[Row] | None:
        """``cached`` plus the rows added since, or None when rows were squashed or rewritten meanwhile."""
        last = cached[-1] if cached else None
        connection = sqlite3.connect(f"file:{db_path}?mode=ro", uri=True, timeout=5.0)
        try:
            (count,) = connection.execute("SELECT COUNT(*) FROM yupdates WHERE path = ?", (key,)).fetchone()
            cursor = connection.execute(
                "SELECT rowid, metadata, timestamp FROM yupdates WHERE path = ? AND rowid > ? "
                "ORDER BY timestamp, rowid",
                (key, last.rowid if last else 0),
            )
            new = [Row(r[0], r[2], _metadata(r[1])) for r in cursor]
        except sqlite3.OperationalError:
            return None
        finally:
            connection.close()
        in_order = not new or last is None or new[0].timestamp >= last.timestamp
        return cached + new if len(cached) + len(new) == count and in_order else None


#: Metadata strings up to this length are shared between rows (keys, sources, authors, agent keys, short summaries).
_SHARED = 64


def _metadata(raw: Any) -> dict[str, Any]:
    """A row's metadata, its keys and short values shared with every other row's: JSON gives each row its own
    copies, which were half of what a cached row took (~930 bytes, ~480 shared)."""
    if not raw:
        return {}
    try:
        value = json.loads(raw)
    except (ValueError, TypeError):
        return {}
    if not isinstance(value, dict):
        return {}
    return {sys.intern(k): sys.intern(v) if isinstance(v, str) and len(v) <= _SHARED else v for k, v in value.items()}


def replay(rows: list[Row]) -> Doc[Any]:
    """The document as it was after the last of ``rows``."""
    doc: Doc[Any] = Doc()
    with doc.transaction():
        for row in rows:
            if row.update:
                doc.apply_update(row.update)
    return doc
