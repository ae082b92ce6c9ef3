"""A save encodes the whole document only when it needs to: a big notebook's, once, for the scan worker to read.

A save read the document as a Yjs update on the loop every time (the next merge's base), and a big notebook's
JSON was then made from it in the worker: at 100,000 cells ~4 CPU-s on the loop per autosave. A small notebook's
save now makes its JSON only (the serialization a save needs anyway) and keeps that content as the base. Counted,
never timed: whole-document encodings (``Doc.get_update`` without a state vector) under the save.
"""

from __future__ import annotations

import sys
from typing import Any

import nbformat
import pycrdt
import pytest

from .conftest import autosaved, call_tool, document_room, has_all_of, received


def _under_the_save() -> bool:
    frame = sys._getframe(2)
    while frame is not None:
        if frame.f_code.co_filename.endswith(("rooms/persist.py", "rooms/saving.py")):
            return True
        frame = frame.f_back
    return False


@pytest.mark.parametrize("big", [False, True])
async def test_a_save_encodes_the_whole_document_at_most_once_per_room(
    big: bool, mcp_client: Any, make_notebook: Any, extension: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A big notebook's copy in the worker process is seeded with the encoding the saver makes when it adopts the
    room; its saves send the changes since and read the copy: no whole-document encoding on the loop. (Before,
    every save of a big notebook encoded it: 3 saves, 3 encodings.)"""
    if big:
        monkeypatch.setattr(extension.rooms.scanner, "in_place_bytes", 0)  # read in the worker process
    replicas = extension.rooms._reader.replicas
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
    assert len(encodes) == 0, len(encodes)
    assert (replicas.seeds, replicas.reads) == ((1, 3) if big else (0, 0))


async def test_a_big_notebook_saved_from_its_copy_is_the_room(
    mcp_client: Any,
    make_notebook: Any,
    extension: Any,
    collaborator: Any,
    jp_serverapp: Any,
    jp_root_dir: Any,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """What a save reads from the copy is the room: an agent's edits, a person's typing, cells inserted, moved and
    deleted (a deletion moves no state vector: only the order the copy got its updates in keeps it), all in the
    file, which is compared with a collaborator's replica once the save completed."""
    monkeypatch.setattr(extension.rooms.scanner, "in_place_bytes", 0)
    replicas = extension.rooms._reader.replicas
    path = make_notebook("copied.ipynb", count=30)
    async with collaborator(path) as human, mcp_client() as client:
        await call_tool(client, "get_notebook_info", path=path)
        for round in range(2):
            updates = [{"index": 1, "content": f"agent = {round}"}]
            await call_tool(client, "batch_update_notebook_cells", path=path, exec=False, updates=updates)
            human.type_into(2, 0, f"typed{round} ")
            human.insert_cell(5, f"inserted_{round} = 1")
            human.delete_cell(10)
            await call_tool(client, "move_notebook_cell", path=path, cell_id=human.ids()[20], to_index=3)
            await received(jp_serverapp, human)
            await human.wait_until(lambda r=round: f"agent = {r}" in human.sources())
            assert (await call_tool(client, "save_notebook", path=path))["saved"] is True
            await autosaved(jp_serverapp, path)
            room = document_room(jp_serverapp, path)
            await human.wait_until(lambda r=room: has_all_of(human.doc.get_state(), r.ydoc.get_state()))
            on_disk = nbformat.reads((jp_root_dir / path).read_text(), as_version=4)
            assert [_plain(c) for c in on_disk.cells] == [_plain(c) for c in human.cells()]
    assert replicas.seeds == 1 and replicas.reads >= 2 and replicas.lost == 0


def _plain(cell: Any) -> tuple[str, str, str]:
    return str(cell["id"]), str(cell["cell_type"]), str(cell["source"])
