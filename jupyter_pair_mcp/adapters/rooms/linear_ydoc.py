"""jupyter_ydoc's notebook open and save in linear time (an override for the jupyter_ydoc versions we test).

``YNotebook._set`` (how a room loads a notebook from disk) inserts cell ``i`` at index ``i``, and ``_get`` (how
the room saves it, and compares it with the file) reads ``ycells[i]`` per cell, then ``to_py`` on it; pycrdt
finds an index by walking the array from its start (``Array.extend`` too inserts item by item, and
``Array.to_py`` iterates by index), so both cost O(cells²): a 100,000-cell notebook took 1244 s to open, 10,000
cells 4-8 s. The override gives the same notebook:

- ``aset`` into an empty document (every open from disk: jupyter_server_ydoc loads the file into a fresh
  scratch document, then applies its update to the room) creates the same cells and inserts each at index 0,
  from the last: an insertion at index 0 walks nothing. Its Yjs history differs from upstream's in the items'
  origins, not in content; upstream's is not byte-stable either (a cell map's plain values are integrated in
  a Rust hash map's order). ``aset`` into a document with cells (a room whose stored history differs from its
  file: changed while the server was down) keeps, changes and makes the same cells as upstream's, planned in
  Python lists and applied in ranges with a bounded number of walks (:mod:`.resync`). The opt-in progressive
  load (``aset_progressively``, cells shown as they come) stays upstream's.
- reading converts every cell from one JSON text of the array (Rust, linear), then applies upstream's
  per-cell rules (execution state dropped, numbers cast back, ids stripped below nbformat 4.5, empty
  attachments dropped, duplicate ids). That conversion is one step (~40 ns a byte of JSON, and ``json``
  holds the GIL), so the room's ``aget`` (its saves) reads a big notebook in the scanner's worker process
  from an encoded update instead (:mod:`.scanning`); the loop pays the encoding only.

An upstream fix would insert the cells of a fresh load in one range (or from the last, at 0) and read the
array once (``to_json``, or a pycrdt iterator that does not index). tests/test_linear_ydoc.py compares both
with upstream's on every kind of cell and fails when upstream changes under the override.
"""

from __future__ import annotations

import copy
import json
import logging
import warnings
from collections.abc import Awaitable, Callable, Iterator
from importlib.metadata import version
from typing import Any
from uuid import uuid4

import anyio
from jupyter_ydoc import YNotebook
from jupyter_ydoc.utils import cast_all
from jupyter_ydoc.ynotebook import _CELL_KEY_TYPE_MAP
from pycrdt import Doc, Map

import jupyter_pair_mcp.adapters.rooms.resync as resync
from jupyter_pair_mcp.adapters.rooms.cellindex import cells_json
from jupyter_pair_mcp.adapters.rooms.parcels import Packed, pack, unpack
from jupyter_pair_mcp.adapters.rooms.scanning import Scanner

log = logging.getLogger(__name__)

#: The jupyter_ydoc versions whose ``aset`` and ``_get`` the override reproduces (the pyproject range).
TESTED = ((4, 2), (5, 0))

UPSTREAM_ASET = YNotebook.aset
UPSTREAM_GET = YNotebook._get
UPSTREAM_AGET = YNotebook.aget


class _Duplicates(Exception):
    """A non-identical duplicate cell id: upstream rewrites it in the document, so a copy cannot read it."""


def tested(found: str) -> bool:
    parts = tuple(int(p) for p in found.split(".")[:2] if p.isdigit())
    return TESTED[0] <= parts < TESTED[1]


def install(scanner: Scanner) -> bool:
    """Put the linear ``aset``, ``_get`` and ``aget`` on ``YNotebook`` (process-wide: every room, whoever opens
    it; ``aget`` reads big notebooks in ``scanner``'s process); False (and upstream's kept) for a jupyter_ydoc
    version outside :data:`TESTED`."""
    found = version("jupyter_ydoc")
    if not tested(found):
        log.warning("jupyter_ydoc %s is not a version the linear notebook load was tested with: not used", found)
        return False
    YNotebook.aset = _aset  # type: ignore[method-assign]
    YNotebook._get = _get  # type: ignore[method-assign]
    YNotebook.aget = _reader(scanner)  # type: ignore[method-assign,assignment]
    return True


def uninstall() -> None:
    YNotebook.aset = UPSTREAM_ASET  # type: ignore[method-assign]
    YNotebook._get = UPSTREAM_GET  # type: ignore[method-assign]
    YNotebook.aget = UPSTREAM_AGET  # type: ignore[method-assign]


async def _aset(self: YNotebook, value: dict[str, Any]) -> None:
    """Upstream's ``aset``: into an empty document (every open from disk), :func:`_fresh_set`; into a document
    with cells (a room whose stored history differs from its file), :func:`_resync_set`."""
    with self._ydoc.transaction():
        for _ in _resync_set(self, value) if len(self._ycells) else _fresh_set(self, value):
            await anyio.lowlevel.checkpoint()


def read_update(update: bytes, deduplicate: bool) -> dict[str, Any] | None:
    """In the worker process: the notebook of ``update`` as ``get`` gives it; None when it has a non-identical
    duplicate cell id (upstream gives it a new id in the live document: the caller reads it in place)."""
    notebook = YNotebook(Doc())
    notebook.ydoc.apply_update(update)
    return read_copy(notebook, deduplicate)


def read_packed(update: bytes, deduplicate: bool) -> Packed | dict[str, Any] | None:
    """In the worker process: :func:`read_update`, its cells in parcels (:mod:`.parcels`: taken in without
    stopping the loop)."""
    return pack(read_update(update, deduplicate))


def read_copy(notebook: YNotebook, deduplicate: bool = True) -> dict[str, Any] | None:
    """A copy of a room's notebook (in a worker process) as ``get`` gives it, the copy left as it was; None when it
    has a non-identical duplicate cell id (upstream gives it a new id in the live document)."""
    try:
        *_, value = _get(notebook, deduplicate, copy=True)
    except _Duplicates:
        return None
    assert value is not None
    return value


def _reader(scanner: Scanner) -> Callable[..., Awaitable[dict[str, Any]]]:
    async def aget(self: YNotebook, deduplicate: bool = True) -> dict[str, Any]:
        """Upstream's ``aget``: a big notebook read in the worker process, a small one here, in steps."""
        update = self._ydoc.get_update() if scanner.processes > 0 else b""
        if len(update) > scanner.in_place_bytes:
            value = await unpack(await scanner.run(read_packed, update, deduplicate))
            if value is not None:
                return value
        value = None
        for step in _get(self, deduplicate):
            value = step
            await anyio.lowlevel.checkpoint()
        assert value is not None
        return value

    return aget


def _set_meta(self: YNotebook, value: dict[str, Any]) -> dict[str, Any]:
    """Upstream's ``_set`` of everything but the cells (and its reset of the document state); gives the notebook
    metadata as it was before."""
    nb = copy.deepcopy({key: value[key] for key in value if key != "cells"})
    cast_all(nb, int, float)  # Yjs expects numbers to be floating numbers
    meta = self._ymeta.to_py() or {}
    nbformat_major = nb.get("nbformat", 4)
    nbformat_minor = nb.get("nbformat_minor", 5)
    if meta.get("nbformat") != nbformat_major:
        self._ymeta["nbformat"] = nbformat_major
    if meta.get("nbformat_minor") != nbformat_minor:
        self._ymeta["nbformat_minor"] = nbformat_minor
    metadata = nb.get("metadata", {})
    if metadata != meta.get("metadata"):
        metadata.setdefault("language_info", {"name": ""})
        metadata.setdefault("kernelspec", {"name": "", "display_name": ""})
        self._ymeta["metadata"] = Map(metadata)
    for key in [k for k in list(self._ystate.keys()) if k not in ("dirty", "path", "document_id")]:
        del self._ystate[key]
    return meta


def _new_cells(value: dict[str, Any]) -> list[dict[str, Any]]:
    return value["cells"] or [
        {
            "cell_type": "code",
            "execution_count": None,
            "metadata": {"trusted": True},  # an auto-created empty code cell without outputs is trusted
            "outputs": [],
            "source": "",
            "id": str(uuid4()),
        }
    ]


def _fresh_set(self: YNotebook, value: dict[str, Any]) -> Iterator[None]:
    """Upstream's ``_set`` into an empty document (no cell to keep or reconcile), each cell inserted at index 0
    from the last: an insertion at index 0 walks nothing, where upstream's at index ``i`` walks ``i`` cells."""
    _set_meta(self, value)
    new_cells = _new_cells(value)
    for cell in reversed(new_cells):
        yield None
        self._ycells.insert(0, self.create_ycell(cell))


def _granular(old: dict[str, Any], new: dict[str, Any]) -> bool:
    """Whether upstream's ``_update_cell`` would change ``old`` into ``new`` in place (what its JSON tells)."""
    for key in new.keys() - old.keys():
        if key in _CELL_KEY_TYPE_MAP:
            return False
    outputs = new.get("outputs")
    if "outputs" in old and outputs and old["outputs"] != outputs:
        return not any(isinstance(o, dict) and o.get("output_type") == "stream" for o in outputs)
    return True


def _resync_set(self: YNotebook, value: dict[str, Any]) -> Iterator[int]:
    """Upstream's ``_set`` into a document with cells, in linear time (:mod:`.resync`): the same cells are kept
    (by id; unchanged, or changed in place where upstream's ``_update_cell`` can), the rest deleted or created."""
    meta = _set_meta(self, value)
    strip_ids = int(meta.get("nbformat", 0)) == 4 and int(meta.get("nbformat_minor", 0)) <= 4
    live: list[str | None] = []
    old: dict[str, dict[str, Any]] = {}
    for cell in cells_json(self._ycells):  # one linear read, as upstream's _cell_to_py gives each cell
        cell_id = cell.get("id")
        live.append(cell_id if isinstance(cell_id, str) else None)
        if not isinstance(cell_id, str) or cell_id in old:
            continue
        cell.pop("execution_state", None)
        cast_all(cell, float, int)
        if "id" in cell and strip_ids:
            del cell["id"]
        if "attachments" in cell and cell.get("cell_type") in ("raw", "markdown") and not cell["attachments"]:
            del cell["attachments"]
        old[cell_id] = cell
    new: dict[str, dict[str, Any]] = {}
    final: list[str] = []
    for i, cell in enumerate(_new_cells(value)):
        cell_id = cell.get("id")
        key = cell_id if isinstance(cell_id, str) and cell_id and cell_id not in new else f"\0{i}"
        new[key] = cell
        final.append(key)
    changed = {k for k in final if k in old and old[k] != new[k]}
    steps = resync.plan(live, final, lambda k: k not in changed or _granular(old[k], new[k]))

    def update(ycell: Map[Any], key: str) -> bool:
        return bool(self._update_cell(old_cell=old[key], new_cell=new[key], old_ycell=ycell))

    for _ in resync.apply(
        self._ycells,
        steps,
        lambda key: self.create_ycell(new[key]),
        update,
        changed,
        resync.WALK_BUDGET * max(len(live), len(final)),
    ):
        yield 0


def _get(self: YNotebook, deduplicate: bool, *, copy: bool = False) -> Iterator[dict[str, Any] | None]:
    """Upstream's ``_get``, every cell converted from one JSON text of the array (``copy``: the document is a
    copy, so a non-identical duplicate id, which upstream rewrites in the document, raises :class:`_Duplicates`)."""
    meta = self._ymeta.to_py() or {}
    cast_all(meta, float, int)  # a notebook coming from Yjs has e.g. nbformat as a float
    with self._ydoc.transaction() as txn:
        raw = json.loads(self._ycells.integrated.to_json(txn._txn))
    strip_ids = int(meta.get("nbformat", 0)) == 4 and int(meta.get("nbformat_minor", 0)) <= 4
    cells = []
    seen_ids: dict[str, tuple[int, dict[str, Any]]] = {}
    for i, cell in enumerate(raw):
        yield None
        cell.pop("execution_state", None)
        cast_all(cell, float, int)  # cells coming from Yjs have e.g. execution_count as a float
        if "id" in cell and strip_ids:
            del cell["id"]
        if "attachments" in cell and cell["cell_type"] in ("raw", "markdown") and not cell["attachments"]:
            del cell["attachments"]
        cell_id = cell.get("id")
        if deduplicate and cell_id and cell_id in seen_ids:
            _, prev_cell = seen_ids[cell_id]
            if cell == prev_cell:
                continue  # an exact duplicate: skipped
            if copy:
                raise _Duplicates
            new_id = str(uuid4())  # a non-identical duplicate: a new id, kept in the document
            cell["id"] = new_id
            self._ycells[i]["id"] = new_id
            differing = [key for key in sorted(set(cell) | set(prev_cell)) if cell.get(key) != prev_cell.get(key)]
            warnings.warn(
                f"Non-unique cell ID '{cell_id}' used by non-identical cells detected. "
                f"Corrected to '{new_id}'. Cells differ in {differing}.",
                UserWarning,
                stacklevel=2,
            )
            seen_ids[new_id] = (i, cell)
        elif deduplicate and cell_id:
            seen_ids[cell_id] = (i, cell)
        cells.append(cell)
    yield dict(
        cells=cells,
        metadata=meta.get("metadata", {}),
        nbformat=int(meta.get("nbformat", 0)),
        nbformat_minor=int(meta.get("nbformat_minor", 0)),
    )
