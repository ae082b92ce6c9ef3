"""Loading a file changed on disk into its room, merged with what the room has not saved yet (:mod:`.diskmerge`).

Replaces jupyter-collaboration's reload (``_on_outofband_change`` and the reload in its save), which sets the whole
file over the room. The file, the room and the base (the file as the room last loaded or wrote it, kept by
:mod:`.saving`) are read, merged off the loop, and the difference between the room as read and the merge is
applied to the live document as edits, in one transaction under the room's update lock: cells by id, a source as
text edits rebased onto what was typed since the read (a person's typing always survives), the rest of a cell
field by field. What the room kept that the file lacks is then saved at once. A big notebook's edits are made on
its copy in the worker process instead (:mod:`.replicas`) and come back as updates of a bounded number of cells,
one loop step each.
"""

from __future__ import annotations

import asyncio
import copy
import logging
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from typing import Any

from jupyter_ydoc.utils import cast_all
from pycrdt import Doc, Map, Text

import jupyter_pair_mcp.adapters.rooms.resync as resync
from jupyter_pair_mcp.adapters.rooms.cellindex import cells_json
from jupyter_pair_mcp.adapters.rooms.diskmerge import Merged, merge_notebook, merge_text
from jupyter_pair_mcp.adapters.rooms.history import MERGE_CLIENTS
from jupyter_pair_mcp.adapters.rooms.linear_ydoc import read_update
from jupyter_pair_mcp.adapters.rooms.merge import MergeConflict, apply, apply_hunks, diff, rebase
from jupyter_pair_mcp.adapters.rooms.saving import CellIds, OutOfStep, SaveState, convert, state_of, take
from jupyter_pair_mcp.adapters.rooms.snapshot import is_notebook

log = logging.getLogger(__name__)

#: A file time older than any file's: the loader's next poll finds the file newer and loads it again.
_LONG_AGO = datetime(1970, 1, 1, tzinfo=UTC)


def _text_of(update: bytes) -> str:
    doc: Doc[Any] = Doc()
    doc.apply_update(update)
    return str(doc.get("source", type=Text))


async def _base(state: SaveState, update: bytes, notebook: bool) -> Any:
    """The base's content from its update: a big notebook in the scan worker, the rest in a thread."""
    if not notebook:
        return await asyncio.to_thread(_text_of, update)
    if state.reader is not None and state.reader.big(update):
        return await state.reader.read(update)
    return await asyncio.to_thread(read_update, update, True)


async def merge_reload(room: Any, cell_ids: CellIds) -> Merged | None:
    """Load the room's changed file, merged with the room's unsaved changes; None when the file could not be read
    (logged and emitted as jupyter-collaboration does). Sets the room's base to the file's content."""
    state = state_of(room)
    if state is not None:
        state.reloading += 1  # calls wait for it as long as it runs
    try:
        return await _merge_reload(room, cell_ids, state)
    finally:
        if state is not None:
            state.reloading -= 1


async def _merge_reload(room: Any, cell_ids: CellIds, state: SaveState | None) -> Merged | None:
    loader, document = room._file, room._document
    try:
        model = await loader.load_content(room.file_format, room.file_type)
    except Exception as exc:
        # Read while another program was still writing it (Jupyter's own writes are not atomic to readers): the
        # next poll must look again, so the loader forgets the time it just took from the file.
        loader.last_modified = _LONG_AGO
        log.warning(
            "Could not load %s, changed on disk (%s %s); trying again at the next look",
            getattr(loader, "path", "?"),
            type(exc).__name__,
            getattr(exc, "status_code", ""),
        )
        return None
    theirs = model["content"]
    notebook = is_notebook(document)
    ids = await cell_ids(room) if notebook else list
    async with room._update_lock:  # as upstream's reload: no autosave starts while the room is rewritten
        try:
            ours, _ = await convert(room, state, *take(room, state))
        except OutOfStep:  # the copy was not the room's: this take encodes the room and seeds it anew
            ours, _ = await convert(room, state, *take(room, state))
        if ours is None:  # repeated cell ids: get() repairs them in the live document
            ours = document.get()
        base_content = state.base_content if state is not None else None
        if base_content is None and state is not None and state.base is not None:
            base_content = await _base(state, state.base, notebook)
        merge: Callable[[Any, Any, Any], Merged] = merge_notebook if notebook else merge_text
        merged = await asyncio.to_thread(merge, base_content, ours, theirs)
        if state is not None:
            state.merging = merged
        try:
            if merged.content != ours:
                if notebook:
                    if not await _merge_on_copy(room, state, ours, merged.content):
                        _apply_notebook(document, ids(), ours, merged.content)
                else:
                    _apply_text(document, str(ours), str(merged.content))
        finally:
            if state is not None:
                state.merging = None
                state.base, state.base_content = None, theirs  # the file holds this now
        document.dirty = False
    if merged.kept_ours:  # the room holds changes the file lacks: write them now, not after the next change
        if state is not None:
            state.merge_write_due = True
        room._saving_document = asyncio.ensure_future(room._maybe_save_document(room._saving_document, True))
    log.info(
        "Merged %s, changed on disk, with the room's unsaved changes%s",
        getattr(loader, "path", "?"),
        f" (the file's side won in {len(merged.conflicts)} conflicting place(s))" if merged.conflicts else "",
    )
    return merged


async def _merge_on_copy(room: Any, state: SaveState | None, ours: Any, target: Any) -> bool:
    """A big notebook's merge made on its copy in the worker process (:mod:`.replicas`) and applied to the room one
    update per loop step, each a bounded number of cells (applied whole, an update of every cell of 20,000 changed
    holds the loop 0.27 s; made in the room, 1.5 s). The copy's updates are the room's own for its history (the
    disk's reload). False when there is no copy, or it was lost: merge in the room."""
    replica = state.replica if state is not None else None
    if replica is None or not replica.seeded():
        return False
    try:
        updates, client = await replica.merge(ours, target)
    except OutOfStep:
        return False
    setattr(room, MERGE_CLIENTS, {*getattr(room, MERGE_CLIENTS, ()), client})
    for update in updates:
        room.ydoc.apply_update(update)
        await asyncio.sleep(0)  # one update per loop step
    return True


def _apply_text(document: Any, ours: str, target: str) -> None:
    ytext = document._ysource
    live = str(ytext)
    hunks = diff(ours, target)
    if live != ours:  # typed since the read: the merge's changes go past it
        try:
            hunks = rebase(ours, hunks, live)
        except MergeConflict:
            hunks = diff(live, target)
    with document.ydoc.transaction():
        apply_hunks(ytext, live, hunks)


def _apply_notebook(document: Any, live_ids: list[str], ours: dict[str, Any], target: dict[str, Any]) -> None:
    """Make the live notebook, which was ``ours`` when read (a person may have typed since), into ``target``, in
    linear time (:mod:`.resync`: cells kept in place are changed field by field, the rest deleted or made), in one
    transaction."""
    with document.ydoc.transaction():
        for _ in notebook_edits(document, live_ids, ours, target):
            pass


def notebook_edits(
    document: Any, live_ids: list[str], ours: dict[str, Any], target: dict[str, Any], chunk: int | None = None
) -> Iterator[int]:
    """:func:`_apply_notebook`'s edits, yielding after each step (the cells made, changed or deleted so far), a
    range of deleted cells ``chunk`` at a time: the caller holds the transaction (a copy of the room commits every
    ``chunk`` cells, :mod:`.replicas`)."""
    ycells = document.ycells
    read = {c["id"]: c for c in ours["cells"] if "id" in c}
    wanted = {c["id"]: c for c in target["cells"]}
    if target.get("metadata") != ours.get("metadata"):
        metadata = copy.deepcopy(target.get("metadata", {}))
        cast_all(metadata, int, float)
        document._ymeta["metadata"] = Map(metadata)
    for name in ("nbformat", "nbformat_minor"):
        if target.get(name) != ours.get(name) and name in target:
            document._ymeta[name] = float(target[name])
    # Cells the merge removed (only those the read had: a cell added since stays).
    live = [c for c in live_ids if not (c in read and c not in wanted)]
    present = set(live)
    # A cell of the read that is gone now was deleted since (by a person): it is not brought back.
    order = [c["id"] for c in target["cells"] if c["id"] in present or c["id"] not in read]
    final = _final_order(live, order)
    changed = {c for c in final if c in present and c in read and c in wanted and read[c] != wanted[c]}
    steps = resync.plan(list(live_ids), final, lambda cell_id: True)
    budget = resync.WALK_BUDGET * max(len(live_ids), len(final))
    moved = any(c in present for gap in steps.gaps for c in gap.insert)
    cells: dict[str, dict[str, Any]] = {}
    if moved or resync.cost(steps, changed) > budget:  # cells made anew from their live content: read it once
        cells = {c["id"]: c for c in cells_json(ycells) if isinstance(c.get("id"), str)}
    touched = 0

    def create(cell_id: str) -> Any:
        nonlocal touched
        touched += 1
        cell, before = wanted.get(cell_id), read.get(cell_id)
        now = cells.get(cell_id)
        if now is None or cell is None or (before is not None and before.get("cell_type") != cell.get("cell_type")):
            return document.create_ycell(cell if cell is not None else now)
        now.pop("execution_state", None)
        return document.create_ycell(_merged_cell(now, before, cell) if cell_id in changed else now)

    def update(ycell: Any, cell_id: str) -> bool:
        nonlocal touched
        touched += 1
        return _update_cell(document, ycell, read[cell_id], wanted[cell_id])

    def deleted(count: int) -> None:
        nonlocal touched
        touched += count

    for _ in resync.apply(ycells, steps, create, update, changed, budget, chunk, deleted):
        yield touched


def _final_order(live: list[str], order: list[str]) -> list[str]:
    """The merge's order, cells added in the room since the read following the cell they followed."""
    placed = set(order)
    extra: dict[str | None, list[str]] = {}
    after: str | None = None
    for cell_id in live:
        if cell_id in placed:
            after = cell_id
        else:
            extra.setdefault(after, []).append(cell_id)
    final = list(extra.get(None, []))
    for cell_id in order:
        final.append(cell_id)
        final.extend(extra.get(cell_id, []))
    return final


def _source(live: str, before: dict[str, Any], cell: dict[str, Any]) -> list[Any]:
    """The hunks that take the live source to the merge's (rebased onto what was typed since the read; none
    where it cannot be: the person's text stays)."""
    old, new = str(before.get("source", "")), str(cell.get("source", ""))
    hunks = diff(old, new)
    try:
        return hunks if live == old else rebase(old, hunks, live)
    except MergeConflict:
        return []


def _merged_cell(now: dict[str, Any], before: dict[str, Any] | None, cell: dict[str, Any]) -> dict[str, Any]:
    """A live cell (plain) with the merge's changes, as :func:`_update_cell` makes them in place."""
    if before is None:
        return cell
    merged = dict(now)
    if before.get("source") != cell.get("source"):
        live = str(now.get("source", ""))
        merged["source"] = apply(live, _source(live, before, cell))
    for name in ("metadata", "outputs", "execution_count", "attachments"):
        if before.get(name) != cell.get(name):
            if name in cell:
                merged[name] = copy.deepcopy(cell[name])
            elif name == "attachments":
                merged.pop(name, None)
    return merged


def _update_cell(document: Any, ycell: Any, before: dict[str, Any], cell: dict[str, Any]) -> bool:
    """The merge's changes of one kept cell, in place; False when its type changed (it is made anew)."""
    if before.get("cell_type") != cell.get("cell_type"):
        return False
    if before.get("source") != cell.get("source"):
        source = ycell["source"]
        live = str(source)
        apply_hunks(source, live, _source(live, before, cell))
    if before.get("metadata") != cell.get("metadata"):
        ycell["metadata"] = Map(copy.deepcopy(cell.get("metadata", {})))
    if before.get("outputs") != cell.get("outputs") and "outputs" in cell:
        document._set_ycell_outputs(ycell, copy.deepcopy(cell["outputs"]))
    if before.get("execution_count") != cell.get("execution_count") and "execution_count" in cell:
        ycell["execution_count"] = cell["execution_count"]
    if before.get("attachments") != cell.get("attachments"):
        if "attachments" in cell:
            ycell["attachments"] = copy.deepcopy(cell["attachments"])
        elif "attachments" in ycell:
            del ycell["attachments"]
    return True


__all__ = ["merge_reload"]
