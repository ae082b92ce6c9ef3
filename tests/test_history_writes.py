"""The history store keeps up with a busy room: updates waiting for it are written together.

jupyter-collaboration hands each room update to its store as its own task; pycrdt-store writes each in its own
SQLite transaction, through four or more worker-thread hops and a commit (an fsync). Under many agents at once
(benchmarks/bench_load.py: 100 sessions) updates arrived faster than that: 1 500 writes were still waiting
after the load, each a task, and every thread hop walked every task (anyio looks for its root task that way
under Tornado). Now the updates waiting are written in one transaction, each still its own row with its own
provenance.
"""

from __future__ import annotations

import sqlite3
from typing import Any

import pytest

from .conftest import call_tool, document_room, received, stored, until

pytestmark = pytest.mark.usefixtures("jp_serverapp")

THREE = [{"cell_type": "code", "source": f"x = {i}", "id": f"c{i}"} for i in range(3)]
TYPED = 200


def _rows(serverapp: Any) -> list[tuple[str, bytes]]:
    db_path = serverapp.extension_manager.extension_points["jupyter_pair_mcp"].app.rooms.history_db()
    with sqlite3.connect(db_path) as db:  # its own connection: SQLite isolates it from the store's writes
        return list(db.execute("SELECT path, metadata FROM yupdates ORDER BY timestamp, rowid"))


async def test_updates_waiting_for_the_store_are_written_in_one_transaction(
    mcp_client: Any, make_notebook: Any, collaborator: Any, jp_serverapp: Any
) -> None:
    path = make_notebook("typing.ipynb", THREE)
    async with collaborator(path) as human, mcp_client() as client:
        await call_tool(client, "get_notebook_info", path=path)
        await stored(jp_serverapp, path)
        store = document_room(jp_serverapp, path).ystore
        before = len(_rows(jp_serverapp))
        statements: list[str] = []
        store._db._real_connection.set_trace_callback(statements.append)
        async with store._mcp_lock:  # the store is busy (a slow disk, a loaded machine): updates queue behind it
            for _ in range(TYPED):
                human.type_into(0, 0, "#")  # each keystroke its own transaction: its own update and row
            await received(jp_serverapp, human)
            await until(lambda: store._mcp_lock.statistics().tasks_waiting >= TYPED, what="the writes queueing")
        await stored(jp_serverapp, path)
        await call_tool(
            client, "batch_update_notebook_cells", path=path, exec=False, updates=[{"cell_id": "c2", "content": "y"}]
        )
        await stored(jp_serverapp, path)
        store._db._real_connection.set_trace_callback(None)
    # The queued keystrokes went in one transaction; other writes in the window (the agent's edit, an update
    # that reached the store before it got busy) are their own, as many as the machine's timing makes them.
    transactions, inserts = [], 0
    for sql in statements:
        if sql.startswith("INSERT"):
            inserts += 1
        elif sql == "COMMIT":
            transactions.append(inserts)
            inserts = 0
    assert max(transactions, default=0) >= TYPED, (
        f"the {TYPED} queued updates split: rows per transaction {transactions}"
    )
    rows = _rows(jp_serverapp)[before:]
    metadata = [row[1] for row in rows]
    assert sum(b'"source":"user"' in m for m in metadata) >= TYPED  # each keystroke its own row, a person's
    assert any(b"updated cell c2" in m for m in metadata[-3:])  # the agent's edit after them, with its provenance
