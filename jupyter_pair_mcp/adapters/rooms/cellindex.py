"""Where each cell sits in a live notebook, and what it is, without rescanning the notebook.

pycrdt ``Array`` index access walks the array (~15 ns per preceding cell) and iteration goes through
index access, so one scan of a 10,000-cell notebook costs ~0.7 s, and an event's ``path`` costs a
walk too. This index is built once per room from the array's JSON (linear: ~40 ms for 10,000 cells)
and then follows every change — ours, a collaborator's, a restored version's — from change events:
the array's own delta for inserted and deleted cells, and cell-map key changes (``cell_type``,
``execution_count``) identified by the cell's id, never by path. Position lookups are verified
against the live cell, so a stale entry can cost a rebuild but never address the wrong cell.
"""

from __future__ import annotations

import json
import logging
from collections import Counter
from collections.abc import Awaitable, Callable
from typing import Any

log = logging.getLogger(__name__)

_TRACKED_KEYS = ("cell_type", "execution_count", "id")
_RAN = "\0ran"  # the key of the has-run total (no cell type can be called that)
_NEAR = 64  # how far a moved id is first looked for around its old index
_FETCHED = 256  # live cells kept from lookups (a batch's worth)


def cells_json(ycells: Any) -> list[dict[str, Any]]:
    """Every cell of a cells array as plain dicts, from Rust-side JSON of the whole array: one linear
    pass, unlike pycrdt's per-index access (O(index)) and iteration (O(N²))."""
    with ycells.doc.transaction() as txn:
        raw = json.loads(ycells.integrated.to_json(txn._txn))
    return [c for c in raw if isinstance(c, dict)]


def index_rows(snapshot: str) -> tuple[list[str], list[str], list[bool]]:
    """Ids, types and run state of every cell of a :func:`scanning.cells_snapshot` (safe in any process)."""
    cells = [c for c in json.loads(snapshot) if isinstance(c, dict)]
    ids = [str(c.get("id", "") or "") for c in cells]
    kinds = [str(c.get("cell_type", "code")) for c in cells]
    ran = [c.get("execution_count") is not None for c in cells]
    return ids, kinds, ran


class CellIndex:
    """Cell ids (in order), types and run state of one live ``cells`` array."""

    def __init__(self, ycells: Any) -> None:
        self._ycells = ycells  # a strong reference keeps the observers alive
        # Per position, in step with each other: id, type, whether it has run; and their running totals.
        self._ids: list[str] = []
        self._kinds: list[str] = []
        self._ran: list[bool] = []
        self._totals: Counter[str] = Counter()
        self._positions: dict[str, int] | None = None
        # Live cells fetched while verifying positions, by index, until the next structural change: the
        # caller's next access to the same cell reuses it instead of walking the array again.
        self._fetched: dict[int, Any] = {}
        self._valid = False
        self._changes = 0  # change events seen: a build off the loop is dropped if any arrived meanwhile
        self._subscriptions = [ycells.observe(self._on_structure), ycells.observe_deep(self._on_cells)]

    def seed(self) -> tuple[list[str], list[str], list[bool]]:
        """Copies of what this index knows (C-speed list copies), for :meth:`seeded` on a copy of its document
        taken at the same moment - a fork - so the copy's index is not rebuilt from its JSON (O(N) on the loop)."""
        self._ensure()
        return list(self._ids), list(self._kinds), list(self._ran)

    @classmethod
    def seeded(cls, ycells: Any, seed: tuple[list[str], list[str], list[bool]]) -> CellIndex:
        index = cls(ycells)
        index._seed(seed)
        return index

    def _seed(self, seed: tuple[list[str], list[str], list[bool]]) -> None:
        self._fetched.clear()
        self._ids, self._kinds, self._ran = seed
        self._totals.clear()
        self._totals.update(self._kinds)
        self._totals[_RAN] = sum(self._ran)
        self._positions = None
        self._valid = len(self._ids) == len(self._ycells)

    async def prepare(self, scan: Callable[..., Awaitable[Any]]) -> None:
        """Build the index off the loop when it is not built (a room just opened): its build reads every cell
        whole, outputs included (a 12 MB figure held the loop 170 ms), so ``scan`` (:meth:`Scanner.scan`) runs
        it in the scan process for a big notebook. A change arriving meanwhile drops the result: the index is
        then built on first use, on the loop, as before."""
        if self._valid and len(self._ids) == len(self._ycells):
            return
        changes = self._changes
        seed = await scan(self._ycells.doc, index_rows)
        if self._changes == changes and not self._valid:
            self._seed(seed)

    def close(self) -> None:
        for subscription in self._subscriptions:
            try:
                self._ycells.unobserve(subscription)
            except Exception:  # the document may already be gone
                log.debug("cell index observer already detached")

    @property
    def ids(self) -> list[str]:
        self._ensure()
        return self._ids

    def kind(self, index: int) -> str:
        """The type of the cell at ``index`` (no cell is read)."""
        self._ensure()
        return self._kinds[index]

    def code_ids(self, start: int, end: int) -> list[str]:
        """Ids of the code cells among positions ``start:end``."""
        self._ensure()
        return [cid for cid, kind in zip(self._ids[start:end], self._kinds[start:end], strict=True) if kind == "code"]

    def counts(self) -> dict[str, int]:
        """Cells by type and how many have run: running totals kept by the change events (no pass over cells)."""
        self._ensure()
        counts = {"code": 0, "markdown": 0, "raw": 0}
        counts.update((kind, n) for kind, n in self._totals.items() if n and kind != _RAN)
        counts["executed"] = self._totals[_RAN]
        return counts

    def position(self, cell_id: str) -> int | None:
        """The index of ``cell_id``, verified against the live array (None when absent).

        ``_positions`` is a cache checked against ``_ids`` (kept current by the change events), never rebuilt
        wholesale: after cells were inserted or deleted, an entry that moved is found again near its old
        place (a bounded C-speed search), else by one ``list.index`` — no Python loop over the notebook.
        """
        self._ensure()
        for _ in range(2):
            index = self._locate(cell_id)
            if index is None:
                return None
            ycell = self._ycells[index] if index < len(self._ycells) else None
            if ycell is not None and ycell.get("id") == cell_id:
                if len(self._fetched) >= _FETCHED:
                    self._fetched.clear()
                self._fetched[index] = ycell
                return index
            self._rebuild()  # an id changed inside a cell: rare, so a full rebuild is fine
        return None

    def shown_position(self, cell_id: str) -> int | None:
        """Where ``cell_id`` sits by the index alone, not verified against the live cell: for showing people
        where a cell is (the activity panel asks for up to a thousand at once), never for addressing an edit.
        A verified lookup walks the array to the cell (O(index)); this one does not touch the array."""
        self._ensure()
        return self._locate(cell_id)

    def fetched(self, index: int) -> Any:
        """The live cell at ``index`` if a lookup just fetched it (none since changed the structure), else None."""
        return self._fetched.get(index)

    def forget_fetched(self) -> None:
        """Called before an edit changes the structure (its events only arrive when the transaction ends)."""
        self._fetched.clear()

    def _locate(self, cell_id: str) -> int | None:
        ids = self._ids
        if self._positions is None:
            self._positions = {cid: i for i, cid in enumerate(ids) if cid}
            return self._positions.get(cell_id)
        old = self._positions.get(cell_id)
        if old is not None and old < len(ids) and ids[old] == cell_id:
            return old
        try:
            if old is not None:
                try:  # cells inserted or deleted nearby shifted it a little
                    index = ids.index(cell_id, max(0, old - _NEAR), old + _NEAR + 1)
                except ValueError:
                    index = ids.index(cell_id)
            else:
                index = ids.index(cell_id)
        except ValueError:
            self._positions.pop(cell_id, None)
            return None
        self._positions[cell_id] = index
        return index

    def _ensure(self) -> None:
        if not self._valid or len(self._ids) != len(self._ycells):
            self._rebuild()

    def _rebuild(self) -> None:
        cells = cells_json(self._ycells)
        self._fetched.clear()
        self._ids, self._kinds, self._ran = [], [], []
        self._totals.clear()
        for cell in cells:
            self._learn(cell)
        self._positions = None
        self._valid = True

    def _learn(self, cell: Any) -> None:
        """Append one cell (a dict or a live cell map) at the end."""
        kind = str(cell.get("cell_type", "code"))
        ran = cell.get("execution_count") is not None
        self._ids.append(str(cell.get("id", "") or ""))
        self._kinds.append(kind)
        self._ran.append(ran)
        self._totals[kind] += 1
        self._totals[_RAN] += ran

    def _forget(self, start: int, end: int) -> None:
        """Drop the cells at positions ``start:end``."""
        self._totals.subtract(self._kinds[start:end])
        self._totals[_RAN] -= sum(self._ran[start:end])
        if self._positions is not None:
            for gone in self._ids[start:end]:
                self._positions.pop(gone, None)
        for column in (self._ids, self._kinds, self._ran):
            del column[start:end]

    def _on_structure(self, event: Any) -> None:
        """Cells inserted or deleted: apply the delta. Never raise (it would fail the editor's call)."""
        self._changes += 1
        self._fetched.clear()
        if not self._valid:
            return
        try:
            cursor = 0
            for op in event.delta:
                if "retain" in op:
                    cursor += int(op["retain"])
                elif "delete" in op:
                    self._forget(cursor, cursor + int(op["delete"]))
                elif "insert" in op:
                    ids, kinds, ran = self._ids[cursor:], self._kinds[cursor:], self._ran[cursor:]
                    for column in (self._ids, self._kinds, self._ran):
                        del column[cursor:]
                    for item in op["insert"]:
                        self._learn(item if hasattr(item, "get") else {})
                    cursor = len(self._ids)
                    self._ids.extend(ids)
                    self._kinds.extend(kinds)
                    self._ran.extend(ran)
        except Exception:
            log.debug("cell index delta not applied; rebuilding on next use", exc_info=True)
            self._valid = False

    def _on_cells(self, events: Any) -> None:
        """A cell's type, run state or id changed in place: update by id (no path walk)."""
        self._changes += 1
        if not self._valid:
            return
        try:
            for event in events:
                keys = getattr(event, "keys", None)
                if not isinstance(keys, dict) or not any(k in keys for k in _TRACKED_KEYS):
                    continue
                if "id" in keys:
                    self._valid = False  # ids rewritten in place: rebuild lazily
                    return
                cell = event.target
                index = self._locate(str(cell.get("id", "") or ""))
                if index is None or "cell_type" not in cell:
                    continue
                kind, ran = str(cell.get("cell_type", "code")), cell.get("execution_count") is not None
                self._totals[self._kinds[index]] -= 1
                self._totals[kind] += 1
                self._totals[_RAN] += ran - self._ran[index]
                self._kinds[index], self._ran[index] = kind, ran
        except Exception:
            log.debug("cell index event not applied; rebuilding on next use", exc_info=True)
            self._valid = False
