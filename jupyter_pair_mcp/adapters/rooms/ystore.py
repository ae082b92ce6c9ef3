"""The rooms' YStore: jupyter-collaboration's SQLite store, with provenance, batched writes and a bound.

jupyter-collaboration hands each room update to its store as its own task, and pycrdt-store writes each in its
own transaction: several worker-thread hops (each walks every asyncio task, as anyio finds its root task that
way under Tornado) and a commit. Under many agents at once updates came faster than that, and the waiting
writes piled up. Here the updates waiting for the store are written together, in one transaction and one
thread hop, each still its own row with its own provenance (from :class:`~.history.HistoryRecorder`).
pycrdt-store's checkpoints are folded off the loop (``merge``), and rows are bounded per document: past
``max_updates`` the oldest are squashed into one base row.
"""

from __future__ import annotations

import json
import logging
import sqlite3
import time
from collections.abc import Callable
from typing import Any

import anyio
from pycrdt.store import SQLiteYStore

from jupyter_pair_mcp.adapters.rooms.history import HistoryRecorder
from jupyter_pair_mcp.adapters.rooms.scanning import Merge, fold_updates

log = logging.getLogger(__name__)

LOAD_META = b'{"source":"server","kind":"load"}'  # the room's own row: its whole state when it loads


def insert_rows(
    connection: sqlite3.Connection,
    path: str,
    rows: list[tuple[bytes, bytes]],
    compress: Callable[[bytes], bytes] | None,
) -> None:
    """Insert ``rows`` (update, metadata) of document ``path`` in one transaction, as pycrdt-store's write
    inserts one (runs in the store's worker thread, on its connection)."""
    values = []
    for data, metadata in rows:
        values.append((path, compress(data) if compress else data, metadata, time.time()))
    try:
        connection.executemany("INSERT INTO yupdates VALUES (?, ?, ?, ?)", values)
        connection.commit()
    except BaseException:
        connection.rollback()
        raise


def configure_store_class(
    base: type, config: Any, recorder: HistoryRecorder, max_updates: int, merge: Merge | None = None
) -> type:
    """A subclass of the server's YStore class that records provenance and bounds history.

    Built per server (the recorder is this server's), so nothing is shared between servers in one process.
    ``merge`` folds updates into one off the event loop: pycrdt-store's SQLiteYStore folds the whole document
    into a checkpoint every ``checkpoint_interval`` writes on the loop (~0.3 s for a 10,000-cell notebook with
    outputs, whoever typed); this class takes that over and folds with ``merge``, as its own trimming does.
    """

    class ProvenanceYStore(base):  # type: ignore[misc]
        #: One room's store at a time checks and creates the database (made on the first use).
        _mcp_init_lock: anyio.Lock | None = None

        def __init__(self, *args: Any, **kwargs: Any) -> None:
            kwargs.setdefault("config", config)
            super().__init__(*args, **kwargs)
            self._mcp_lock = anyio.Lock()
            self._mcp_metadata = b""
            self._mcp_rows: int | None = None  # rows of this document, counted once then tracked
            self._mcp_state_write = False
            self._mcp_queue: list[tuple[bytes, bool]] = []  # (update, the room's load) waiting to be written
            self._mcp_queued = 0  # updates handed to write() so far
            self._mcp_written = 0  # of those, how many a batch has taken

        async def _init_db(self) -> None:
            # pycrdt-store checks whether the database exists and has its version, then creates it, under a lock
            # of each store's own: rooms opened together on a fresh server (JupyterLab restoring a notebook and
            # a chat) each created the tables ("table yupdates already exists"), or one found the other's
            # half-made database, took it for an old version and renamed it away under it (both rooms failed:
            # "no such table: yupdates"). All rooms of a server share one database: one initializes at a time.
            if ProvenanceYStore._mcp_init_lock is None:
                ProvenanceYStore._mcp_init_lock = anyio.Lock()
            async with ProvenanceYStore._mcp_init_lock:
                await super()._init_db()

        async def get_metadata(self) -> bytes:
            return self._mcp_metadata

        async def encode_state_as_update(self, ydoc: Any) -> None:
            # The room stores its whole state when it loads (or reloads a file changed on disk): that is
            # the room's own row, whoever's clients the state contains.
            self._mcp_state_write = True
            try:
                await super().encode_state_as_update(ydoc)
            finally:
                self._mcp_state_write = False

        async def write(self, data: bytes) -> None:
            if not self._mcp_batches():
                await self._mcp_write_one(data, self._mcp_state_write)
                return
            self._mcp_queue.append((data, self._mcp_state_write))
            self._mcp_queued += 1
            ticket = self._mcp_queued
            async with self._mcp_lock:
                if self._mcp_written >= ticket:
                    return  # an earlier write stored it with its own batch
                waiting, self._mcp_queue = self._mcp_queue, []
                self._mcp_written = self._mcp_queued
                # Provenance now, as the batch is written: an agent update is "pending" in the recorder until
                # then (history reads wait for it), and counted as being written from here to the bound.
                batch = [self._mcp_provenance(update, load) for update, load in waiting]
                agents = sum(1 for _, _, mine in batch if mine)
                recorder.writing(+agents)
                try:
                    await self._mcp_write_batch([(update, meta) for update, meta, _ in batch])
                finally:
                    # Only now: a history read waiting for these writes must not see the rows past the bound.
                    recorder.writing(-agents)

        def _mcp_provenance(self, data: bytes, load: bool) -> tuple[bytes, bytes, bool]:
            """``data`` with its metadata row, and whether it is an agent's."""
            if load:
                return data, LOAD_META, False
            try:
                metadata, agent = recorder.metadata_for(self.path, data)
                return data, metadata, agent
            except Exception:  # provenance is best effort; the update itself must be stored
                log.exception("recording provenance failed")
                return data, b"", False

        def _mcp_batches(self) -> bool:
            """Whether this store's writes can be batched: pycrdt-store's SQLite store with none of its
            time-based squashes or size cleanup configured (those stay on its own write, one update at a time)."""
            db = getattr(self, "_db", None)
            return (
                isinstance(self, SQLiteYStore)
                and hasattr(db, "_real_connection")
                and hasattr(db, "_limiter")
                and self.squash_after_inactivity_of is None
                and self.document_ttl is None
                and self.squash_history_older_than is None
                and not self.cleanup_when_db_size_above
            )

        async def _mcp_write_one(self, data: bytes, load: bool) -> None:
            """pycrdt-store's own write of one update, with its metadata (the store is not batchable)."""
            async with self._mcp_lock:
                _, self._mcp_metadata, agent = self._mcp_provenance(data, load)
                if agent:
                    recorder.writing(+1)
                try:
                    if merge is not None and hasattr(self, "_db") and getattr(self, "checkpoint_interval", None):
                        try:
                            await self._mcp_checkpoint(1, counted=True)
                        except Exception:
                            log.exception("checkpointing the history of %s failed", self.path)
                    await super().write(data)
                    self._mcp_metadata = b""
                    await self._mcp_bound(1)
                finally:
                    self._mcp_metadata = b""
                    if agent:
                        recorder.writing(-1)

        async def _mcp_write_batch(self, rows: list[tuple[bytes, bytes]]) -> None:
            """The waiting updates (with their metadata) as rows, in one transaction and one worker-thread call."""
            if self.db_initialized is None:
                raise RuntimeError("YStore not started")
            await self.db_initialized.wait()
            if merge is not None and self.checkpoint_interval:
                try:
                    await self._mcp_checkpoint(len(rows))
                except Exception:
                    log.exception("checkpointing the history of %s failed", self.path)
            async with self.lock:
                await anyio.to_thread.run_sync(
                    insert_rows, self._db._real_connection, self.path, rows, self._compress, limiter=self._db._limiter
                )
            await self._mcp_bound(len(rows))

        async def _mcp_checkpoint(self, count: int, counted: bool = False) -> None:
            """pycrdt-store's checkpoint, when due with these ``count`` writes, folded off the loop (its counter
            then starts again). ``counted``: pycrdt-store's own write counts them (when it is not due)."""
            assert merge is not None
            updates = getattr(self, "_update_counter", 0) + count
            if updates < self.checkpoint_interval:
                self._update_counter = updates - (count if counted else 0)
                return
            await checkpoint(self, merge)
            self._update_counter = 0

        async def _mcp_bound(self, count: int) -> None:
            if not max_updates or not hasattr(self, "_db"):
                return
            try:
                if self._mcp_rows is None:
                    self._mcp_rows = await count_rows(self)
                else:
                    self._mcp_rows += count
                if self._mcp_rows > max_updates:
                    # Squash down to 90% of the bound so trimming runs once per many writes, not on each one.
                    await trim(self, max(2, int(max_updates * 0.9)), merge)
                    self._mcp_rows = await count_rows(self)
            except Exception:
                log.exception("bounding the history of %s failed", self.path)

    ProvenanceYStore.__name__ = f"Provenance{base.__name__}"
    return ProvenanceYStore


async def stored_all(room: Any, timeout: float = 10.0) -> bool:
    """Wait (at most ``timeout``) until ``room``'s store has written every update the room has: none waiting in
    the room's update stream (pycrdt-websocket hands each to a store write task) and no write in flight.

    Deleting a room cancels its pending writes: its history would miss the last edits, and on reopening, the
    store would disagree with the file (the room then reloads the file, a "loaded from the file" version)."""
    stream = getattr(room, "_update_receive_stream", None)
    lock = getattr(getattr(room, "ystore", None), "_mcp_lock", None)
    deadline = time.monotonic() + timeout
    quiet = 0
    while time.monotonic() < deadline:
        waiting = stream is not None and stream.statistics().current_buffer_used > 0
        writing = lock is not None and (lock.locked() or lock.statistics().tasks_waiting > 0)
        quiet = 0 if waiting or writing else quiet + 1
        if quiet >= 3:  # quiet over a few loop turns: the write tasks handed out have all run
            return True
        await anyio.sleep(0 if quiet else 0.005)
    return False


async def count_rows(store: Any) -> int:
    async with store.lock, store._db:
        cursor = await store._db.cursor()
        await cursor.execute("SELECT COUNT(*) FROM yupdates WHERE path = ?", (store.path,))
        (count,) = await cursor.fetchone()
    return int(count)


async def merged_here(updates: list[bytes]) -> bytes:
    """Updates folded into one on the calling thread (what :data:`Merge` does when no worker is given)."""
    return fold_updates(updates)


async def checkpoint(store: Any, merge: Merge) -> None:
    """Write ``store``'s document checkpoint (the last one and the updates since, folded with ``merge``) as
    pycrdt-store's ``SQLiteYStore.write`` does every ``checkpoint_interval`` writes."""
    async with store.lock, store._db:
        cursor = await store._db.cursor()
        await cursor.execute("SELECT checkpoint, timestamp FROM ycheckpoints WHERE path = ?", (store.path,))
        row = await cursor.fetchone()
        updates, last_ts = [], 0.0
        if row:
            blob, last_ts = row
            updates.append(store._decompress(blob) if store._decompress else blob)
        await cursor.execute(
            "SELECT yupdate FROM yupdates WHERE path = ? AND timestamp >= ? ORDER BY timestamp ASC",
            (store.path, last_ts),
        )
        updates.extend(store._decompress(u) if store._decompress else u for (u,) in await cursor.fetchall())
        folded = await merge(updates)
        if store._compress:
            folded = store._compress(folded)
        await cursor.execute(
            "INSERT OR REPLACE INTO ycheckpoints (path, checkpoint, timestamp) VALUES (?, ?, ?)",
            (store.path, folded, time.time()),
        )


async def trim(store: Any, max_updates: int, merge: Merge | None = None) -> int:
    """Squash the oldest rows of ``store``'s document into one base row so at most ``max_updates`` remain."""
    async with store.lock, store._db:
        cursor = await store._db.cursor()
        await cursor.execute("SELECT COUNT(*) FROM yupdates WHERE path = ?", (store.path,))
        (count,) = await cursor.fetchone()
        excess = count - max_updates + 1  # the base row takes one place
        if excess < 2:
            return 0
        await cursor.execute(
            "SELECT rowid, yupdate, timestamp FROM yupdates WHERE path = ? ORDER BY timestamp, rowid LIMIT ?",
            (store.path, excess),
        )
        rows = await cursor.fetchall()
        updates = [store._decompress(update) if store._decompress else update for _, update, _ in rows]
        squashed = await (merge or merged_here)(updates)
        if store._compress:
            squashed = store._compress(squashed)
        last_rowid, last_ts = rows[-1][0], rows[-1][2]
        meta = json.dumps({"source": "user", "summary": "older history (squashed)", "squashed": len(rows)})
        await cursor.execute(f"DELETE FROM yupdates WHERE rowid IN ({','.join('?' * len(rows))})", [r[0] for r in rows])
        # Reuse the newest squashed row's id and time so the base stays first in both orders.
        await cursor.execute(
            "INSERT INTO yupdates (rowid, path, yupdate, metadata, timestamp) VALUES (?, ?, ?, ?, ?)",
            (last_rowid, store.path, squashed, meta.encode(), last_ts),
        )
    return len(rows)
