"""Documents opened at once on a server's first start share one new YStore database.

Found by the Jupyter AI browser test (tests/browser/test_jupyterai_browser.py): JupyterLab opened a notebook and a
chat together on a fresh server, and each room's store created the database at the same time. pycrdt-store's
SQLiteYStore checks and creates the file under a lock of its own instance only: one store saw the other's
half-made database (tables, no version yet), took it for an old version and renamed it away under the other
("YStore version mismatch, moving ystore.db to ystore(1).db"), and both rooms failed ("no such table:
yupdates"; the page showed "Document error").
"""

from __future__ import annotations

import logging
from pathlib import Path

import anyio
import pytest
from jupyter_server_ydoc.stores import SQLiteYStore
from pycrdt import Doc, Text
from traitlets.config import Config

from jupyter_pair_mcp.adapters.rooms.ystore import configure_store_class

ROOMS = 6


class NoRecorder:
    """Provenance is not what this test is about: every update is the server's own."""

    def metadata_for(self, path: str, data: bytes) -> tuple[bytes, bool]:
        return b"", False

    def writing(self, delta: int) -> None:
        pass


async def test_rooms_opening_together_on_a_fresh_server_create_one_database(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    config = Config()
    config.SQLiteYStore.db_path = str(tmp_path / "ystore.db")
    store_class = configure_store_class(SQLiteYStore, config, NoRecorder(), 1000)  # type: ignore[arg-type]
    stores = [store_class(path=f"doc-{n}") for n in range(ROOMS)]
    async with anyio.create_task_group() as group:
        for store in stores:
            await group.start(store.start)
        for n, store in enumerate(stores):
            doc = Doc()
            doc["text"] = text = Text()
            text += f"room {n}"
            await store.encode_state_as_update(doc)
        for n, store in enumerate(stores):
            again = Doc()
            again["text"] = Text()
            await store.apply_updates(again)
            assert str(again["text"]) == f"room {n}"
        for store in stores:
            await store.stop()
        group.cancel_scope.cancel()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["ystore.db"]
    assert not [
        r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING
    ]  # none moved away as "another version"
