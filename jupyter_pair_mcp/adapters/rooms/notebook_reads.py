"""The read side of one call's view of a live notebook: addressing, people's locks, reads by slice.

:class:`NotebookReader` is what every view of a notebook shares, the live one and a proposal
(``proposing.py``) alike: finding cells by id through the room's :class:`CellIndex`, refusing an agent's
write where a person locked the notebook or a cell, and reading cells without converting more of the document
than asked, switching to one linear snapshot once walks of the array would cost more. It writes nothing;
``notebook.py``'s :class:`NotebookView` adds the agent's transactions on top, so the costly read paths (the
snapshot budget) stay apart from the edits that use them.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

from pycrdt import Map

from jupyter_pair_mcp.adapters.rooms.cellindex import CellIndex, cells_json
from jupyter_pair_mcp.adapters.rooms.cells import CellData, cell_data, source_text, type_and_source
from jupyter_pair_mcp.adapters.rooms.edits import EditJournal
from jupyter_pair_mcp.adapters.rooms.locks import cell_lock, cell_refusal, document_lock, document_refusal, lock_of
from jupyter_pair_mcp.errors import Conflict, InvalidArgument, NotFound

#: Steps of a walk of the cells array (~15 ns each) that one byte of a snapshot of every cell costs (~40 ns a byte).
STEPS_PER_SNAPSHOT_BYTE = 2
#: Bytes of a cell (encoded) that the snapshot's first budget already counts, two steps a cell.
SMALL_CELL_BYTES = 1024


class NotebookReader:
    """The live notebook behind one tool call, read side."""

    def __init__(
        self, notebook: Any, index: CellIndex, path: str, *, journal: EditJournal | None = None, actor: Any = None
    ) -> None:
        self._nb = notebook
        self._cells = notebook.ycells
        self._index = index
        self.path = path
        self.journal = journal or EditJournal()
        self.actor = actor
        #: Whether people's locks apply: an agent's call (a person's restore or undo from the panel is not refused).
        self.guarded = not getattr(actor, "is_person", False)

    @property
    def ydoc(self) -> Any:
        return self._nb.ydoc

    @property
    def index(self) -> CellIndex:
        """The room's cell index (its ``version`` counts the changes to the cells)."""
        return self._index

    # -- locks ------------------------------------------------------------------------------------
    def check_document(self, doing: str) -> None:
        """Refuse an agent's ``doing`` anywhere in a notebook a person locked whole (one metadata read)."""
        lock = document_lock(self.ydoc) if self.guarded else None
        if lock is not None:
            raise document_refusal(self.path, lock, doing)

    def check_cell(self, index: int, doing: str, ycell: Any = None) -> None:
        """Refuse an agent's ``doing`` to the cell at ``index`` when a person locked it: one read of that cell's
        metadata (``ycell``: the live cell, when the caller has it)."""
        if not self.guarded:
            return
        lock = cell_lock(self._live(index) if ycell is None else ycell)
        if lock is not None:
            raise cell_refusal(self._index.ids[index], index, lock, doing)

    def check_cells(self, cell_ids: Iterable[str], doing: str) -> None:
        """Refuse an agent's ``doing`` when the notebook or any of ``cell_ids`` still in it is locked (a write
        whose cells are known by id only: an undo, a fork's merge). One lookup per cell."""
        self.check_document(doing)
        for cell_id in dict.fromkeys(cell_ids):
            index = self.find(cell_id) if self.guarded else None
            if index is not None:
                self.check_cell(index, doing)

    def lock_of(self, index: int) -> dict[str, str] | None:
        """The lock on the cell at ``index`` (None: unlocked), for reads that show agents where they may not write."""
        return cell_lock(self._live(index))

    def writable(self, cell_id: str, doing: str) -> Any:
        """The live cell ``cell_id``, refused when a person locked it or the notebook (a run checks this first)."""
        self.check_document(doing)
        index = self.resolve(cell_id=cell_id)
        ycell = self._live(index)
        self.check_cell(index, doing, ycell)
        return ycell

    # -- addressing -------------------------------------------------------------------------------
    @property
    def cell_count(self) -> int:
        return len(self._cells)

    def _range_text(self) -> str:
        n = self.cell_count
        return f"notebook has {n} cells (0-{n - 1})" if n else "notebook has no cells"

    def check_index(self, index: int, *, allow_end: bool = False) -> int:
        limit = self.cell_count + (1 if allow_end else 0)
        if index < 0:
            raise InvalidArgument(f"cell index {index} is negative: indexes start at 0 ({self._range_text()})")
        if index >= limit:
            raise InvalidArgument(f"cell index {index} out of range: {self._range_text()}")
        return index

    def resolve(self, cell_id: str | None = None, index: int | None = None) -> int:
        """The index of the addressed cell: by id first; an index given too must agree."""
        if cell_id is None and index is None:
            raise InvalidArgument("name the cell: give cell_id (preferred) or index")
        if cell_id is None:
            assert index is not None
            return self.check_index(index)
        position = self._index.position(cell_id)
        if position is None:
            raise NotFound(f"no cell with id {cell_id!r} in {self.path}: read the notebook for current cell ids")
        if index is not None and index != position:
            raise Conflict(
                f"cell {cell_id!r} is at index {position}, not {index}: the notebook changed; "
                "address cells by id, or re-read the notebook"
            )
        return position

    def find(self, cell_id: str) -> int | None:
        """The index of ``cell_id``, None when there is no such cell (verified against the array: one walk)."""
        return self._index.position(cell_id)

    @property
    def ids(self) -> list[str]:
        return list(self._index.ids)

    def ycell(self, cell_id: str) -> Any:
        """The live cell map of ``cell_id`` (for writers that edit inside a cell, like execution)."""
        return self._live(self.resolve(cell_id=cell_id))

    def _live(self, index: int) -> Any:
        """The live cell at ``index``: the one a lookup just fetched, one the index keeps, or a walk of the array."""
        ycell = self._index.fetched(index)
        if ycell is None:
            ycell = self._index.live_at(index)
        if ycell is None:
            ycell = self._cells[index]
            self._index.met(index, ycell)
        return ycell

    # -- reads ------------------------------------------------------------------------------------
    def cell(self, index: int) -> CellData:
        return cell_data(index, self._live(index).to_py() or {})

    def cells(self, indexes: Iterable[int]) -> Iterator[CellData]:
        """The cells at ``indexes``, in that order. Each cell costs a walk of the array up to it, so once the walks
        would cost more than one linear snapshot of every cell, the rest is read from that snapshot: a range
        costs O(N) at most, never O(N²). Consume it synchronously (no await in between)."""
        budget = 2 * self.cell_count + 64  # array steps a snapshot of small cells costs, roughly
        weighed = False
        snapshot: list[dict[str, Any]] | None = None
        for i in indexes:
            if snapshot is None:
                budget -= i + 1
                if budget < 0 and not weighed:
                    weighed, budget = True, budget + self._snapshot_steps()
                if budget < 0:
                    snapshot = cells_json(self._cells)
            yield self.cell(i) if snapshot is None else cell_data(i, snapshot[i])

    def _snapshot_steps(self) -> int:
        """Array steps a snapshot of every cell costs beyond what small cells cost, by the document's size (its
        encoding, ~16 times cheaper than the snapshot, is the measure): a snapshot converts every output too, so a
        notebook of 300 cells holding 12 MB of figures is read by walks (~15 ns a cell each), not by one 160 ms
        conversion; a notebook of small cells still switches to the snapshot as early as before."""
        heavy = len(self.ydoc.get_update()) - SMALL_CELL_BYTES * self.cell_count
        return STEPS_PER_SNAPSHOT_BYTE * max(0, heavy)

    def id_at(self, index: int) -> str:
        """The id of the cell at ``index`` (from the index: no cell is read)."""
        return self._index.ids[index]

    def code_cell_ids(self, start: int, end: int) -> list[str]:
        """Ids of the code cells in ``start:end``, from the index (no cell is read)."""
        return self._index.code_ids(start, end)

    def notebook_metadata(self) -> dict[str, Any]:
        """``kernelspec``, ``language_info`` and the nbformat version, without converting cells."""
        meta = self._nb.ydoc.get("meta", type=Map)
        metadata = meta.get("metadata")
        wanted = {}
        if metadata is not None:
            for key in ("kernelspec", "language_info"):
                value = metadata.get(key)
                wanted[key] = value.to_py() if hasattr(value, "to_py") else value
        major, minor = meta.get("nbformat", 4), meta.get("nbformat_minor", 5)
        lock = lock_of(metadata)
        if lock is not None:  # agents learn before they try: every edit here is refused
            wanted["locked"] = lock["by"]
        return {**wanted, "nbformat": f"{int(major)}.{int(minor)}"}

    def counts(self) -> dict[str, int]:
        """Cells by type and how many code cells have run, from the index (no cell is read)."""
        return self._index.counts()

    def all_cells(self) -> list[CellData]:
        """Every cell in one linear pass (whole-notebook views; index access would be quadratic)."""
        return [cell_data(i, raw) for i, raw in enumerate(cells_json(self._cells))]

    def sources(self) -> list[tuple[str, str, str]]:
        """(id, cell_type, source) of every cell in one linear pass (search and replace need them all)."""
        cells = cells_json(self._cells)
        return [
            (str(c.get("id", "")), str(c.get("cell_type", "code")), source_text(c.get("source", ""))) for c in cells
        ]

    def sources_at(self, indexes: list[int]) -> list[str]:
        """The sources of the cells at ``indexes`` (ascending), read key by key: a cell's outputs (megabytes of
        images) are never converted. Past the walks one linear snapshot costs, the rest come from it (O(N))."""
        return self._sources_at(indexes, None)

    def deletable(self, indexes: list[int]) -> list[str]:
        """The sources of the cells at ``indexes`` (ascending) as :meth:`sources_at`, refused (:class:`Locked`)
        when a person locked the notebook or any of them: the same reads find the locks."""
        self.check_document("delete")
        return self._sources_at(indexes, "delete")

    def _sources_at(self, indexes: list[int], doing: str | None) -> list[str]:
        budget = 2 * self.cell_count + 64
        weighed = False
        snapshot: list[dict[str, Any]] | None = None
        texts: list[str] = []
        with self.ydoc.transaction():  # one transaction for all the reads
            for i in indexes:
                if snapshot is None:
                    budget -= i + 1
                    if budget < 0 and not weighed:
                        weighed, budget = True, budget + self._snapshot_steps()
                    if budget < 0:
                        snapshot = cells_json(self._cells)
                cell = self._live(i) if snapshot is None else snapshot[i]
                if doing is not None:
                    self.check_cell(i, doing, cell)
                texts.append(type_and_source(cell)[1] if snapshot is None else source_text(cell.get("source", "")))
        return texts
