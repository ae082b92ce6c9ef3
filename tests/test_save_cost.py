"""A save encodes the whole document only when it needs to: a big notebook's, once, for the scan worker to read.

A save read the document as a Yjs update on the loop every time (the next merge's base), and a big notebook's
JSON was then made from it in the worker: at 100,000 cells ~4 CPU-s on the loop per autosave. A small notebook's
save now makes its JSON only (the serialization a save needs anyway) and keeps that content as the base. Counted,
never timed: whole-document encodings (``Doc.get_update`` without a state vector) under the save.
"""

from __future__ import annotations

import sys
from typing import Any

import pycrdt
import pytest

from .conftest import call_tool


def _under_the_save() -> bool:
    frame = sys._getframe(2)
    while frame is not None:
        if frame.f_code.co_filename.endswith(("rooms/persist.py", "rooms/saving.py")):
            return True
        frame = frame.f_back
    return False


@pytest.mark.parametrize("big", [False, True])
async def test_a_save_encodes_the_document_only_for_the_worker(
    big: bool, mcp_client: Any, make_notebook: Any, extension: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    if big:
        monkeypatch.setattr(extension.rooms.scanner, "in_place_bytes", 0)  # read in the worker process
    path = make_notebook("saved.ipynb", count=50)
    encodes: list[Any] = []
    get_update = pycrdt.Doc.get_update

    def counted(doc: Any, state: Any = None) -> Any:
        if state is None and _under_the_save():
            encodes.append(doc)
        return get_update(doc, state)

    async with mcp_client() as client:
        await call_tool(client, "get_notebook_info", path=path)
        monkeypatch.setattr(pycrdt.Doc, "get_update", counted)
        for n in range(3):
            updates = [{"index": 0, "content": f"x = {n}"}]
            await call_tool(client, "batch_update_notebook_cells", path=path, exec=False, updates=updates)
            assert (await call_tool(client, "save_notebook", path=path))["saved"] is True
    assert len(encodes) == (3 if big else 0), len(encodes)
