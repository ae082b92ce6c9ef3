"""Where each cell sits in a live notebook, and what it is, without rescanning the notebook.

pycrdt ``Array`` index access walks the array (~15 ns per preceding cell) and iteration goes through
index access, so one scan of a 10,000-cell notebook costs ~0.7 s, and an event's ``path`` costs a
walk too. This index is built once per room from the array's JSON (linear: ~40 ms for 10,000 cells)
and then follows every change — ours, a collaborator's, a restored version's — from change events:
the array's own delta for inserted and deleted cells, and cell-map key changes (``cell_type``,
``execution_count``) identified by the cell's id, never by path. Position lookups are verified
against the live cell, so a stale entry can cost a rebuild but never address the wrong cell.

A walk is not cheap at scale: in a room of 100,000 cells reaching the middle one costs 12-40 ms (scattered
items, not the ~15 ns a step of a small array), more than a whole one-cell call costs at 10 cells. So the index
keeps the live cell maps it met (a cell inserted arrives in the change event; a looked-up cell was walked to
once), by id, and drops one when its cell is deleted: a cell read or edited again is reached without a walk.
Its deep observer takes pycrdt's raw events: pycrdt's wrapper computes every event's ``path`` eagerly, and a
path walks the array to the cell again - per observer, per edit.
"""

from __future__ import annotations

import json
import logging
from collections import Counter
from collections.abc import Awaitable, Callable
from sys import intern
from typing import Any

from pycrdt._base import process_event

log = logging.getLogger(__name__)

_TRACKED_KEYS = ("cell_type", "execution_count", "id")
_RAN = "\0ran"  # the key of the has-run total (no cell type can be called that)
_NEAR = 64  # how far a moved id is first looked for around its old index
_FETCHED = 256  # live cells kept from lookups (a batch's worth)
MAX_LIVE = 50_000  # live cell maps kept by id (~0.3 KB each); past it they are dropped and met again


def observe_changes(shared: Any, callback: Callable[[Any], None]) -> Any:
    """Call ``callback(events)`` on every change inside ``shared`` (deep), with pycrdt's raw events: pycrdt's own
    ``observe_deep`` computes each event's ``path`` before the callback runs, and a path walks the cells array to
    the cell (12-40 ms to the middle of 100,000 cells), for every observer, on every edit. The callback must not
    raise (it runs inside the commit). Returns the subscription: keep it (dropped, it stops); ``.drop()`` ends it."""
    return shared.integrated.observe_deep(callback)


def quiet_room_observer(room: Any) -> None:
    """Give the room's own observer of the cells (jupyter_ydoc's ``YNotebook.observe``, subscribed by
    jupyter-collaboration's ``DocumentRoom`` to trigger its autosave) raw events: it reads none of them for the
    cells, but pycrdt would compute every event's path for it (a walk) on every edit. Idempotent; a document
    observed differently is left as it is. Upstream's ``unobserve()`` still removes it (it is listed with the
    array's subscriptions, where pycrdt's ``unobserve`` looks)."""
    document: Any = getattr(room, "_document", None)
    ycells = getattr(document, "_ycells", None)
    subscriptions = getattr(document, "_subscriptions", None)
    on_change = getattr(room, "_on_document_change", None)
    if ycells is None or not isinstance(subscriptions, dict) or on_change is None:
        return
    old = subscriptions.get(ycells)
    if old is None or getattr(document, "_jnmcp_raw_cells", None) is old:
        return

    def changed(_events: Any) -> None:
        try:
            on_change("cells", None)  # upstream reads the event only for its "state" target
        except Exception:  # never raise into the commit of someone's edit
            log.exception("the room's change handler failed")

    raw = observe_changes(ycells, changed)
    ycells.unobserve(old)
    ycells._subscriptions.append(raw)
    subscriptions[ycells] = raw
    document._jnmcp_raw_cells = raw


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
    kinds = [intern(str(c.get("cell_type", "code"))) for c in cells]  # one str per type (pickled once too)
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
        self._id_counts: Counter[str] = Counter()  # a live map is used for an id only when one cell has it
        self._positions: dict[str, int] | None = None
        # Live cells fetched while verifying positions, by index, until the next structural change: the
        # caller's next access to the same cell reuses it instead of walking the array again.
        self._fetched: dict[int, Any] = {}
        # Live cell maps by id: a cell inserted (from its event) or walked to once is reached again without a walk.
        self._live: dict[str, Any] = {}
        self._editing = 0  # inside an agent transaction positions move before any event says so
        self._valid = False
        # Changes that move or retype cells: a build off the loop is dropped if any arrived meanwhile (typing
        # inside a cell changes nothing the index holds, so it does not drop the build).
        self._changes = 0
        #: Every change to the cells (text too): what a result computed from the cells is valid for.
        self.version = 0
        self._structure = ycells.observe(self._on_structure)
        self._deep = observe_changes(ycells, self._on_raw_cells)

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
        self._id_counts = Counter(self._ids)
        self._live.clear()  # deletions went unseen while the index was not valid
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
        try:
            self._ycells.unobserve(self._structure)
            self._deep.drop()
        except Exception:  # the document may already be gone
            log.debug("cell index observer already detached")
        self._live.clear()

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
            ycell = self._known(cell_id)
            if ycell is None and index < len(self._ycells):
                ycell = self._ycells[index]  # one walk; the map is kept for the next time
            if ycell is not None and ycell.get("id") == cell_id:
                if len(self._fetched) >= _FETCHED:
                    self._fetched.clear()
                self._fetched[index] = ycell
                self._keep(cell_id, ycell)
                return index
            self._live.pop(cell_id, None)
            self._rebuild()  # an id changed inside a cell: rare, so a full rebuild is fine
        return None

    def live_at(self, index: int) -> Any:
        """The live cell at ``index`` when the index holds its map (None: the caller walks, then :meth:`met`)."""
        if self._editing or not self._valid or not 0 <= index < len(self._ids):
            return None
        return self._known(self._ids[index])

    def met(self, index: int, ycell: Any) -> None:
        """The caller walked to the live cell at ``index``: keep its map (by id) for the next time."""
        if not self._editing and self._valid and 0 <= index < len(self._ids) and len(self._ids) == len(self._ycells):
            cell_id = self._ids[index]
            if cell_id and ycell.get("id") == cell_id:
                self._keep(cell_id, ycell)

    def _known(self, cell_id: str) -> Any:
        """The kept map of ``cell_id``, when exactly one cell has that id and no agent transaction is open."""
        if self._editing or self._id_counts.get(cell_id) != 1:
            return None
        ycell = self._live.get(cell_id)
        if ycell is not None and ycell.get("id") != cell_id:  # never expected: deletions drop their maps
            del self._live[cell_id]
            return None
        return ycell

    def _keep(self, cell_id: str, ycell: Any) -> None:
        if self._id_counts.get(cell_id) == 1:  # (a change event may keep one during an edit: it is committed)
            if len(self._live) >= MAX_LIVE and cell_id not in self._live:
                self._live.clear()
            self._live[cell_id] = ycell

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

    def editing(self, started: bool) -> None:
        """An agent transaction starts (True) or ends: inside one, positions move before any event says so, so
        lookups walk to verify, as without kept maps."""
        self._fetched.clear()
        self._editing += 1 if started else -1

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
        self._id_counts.clear()
        self._live.clear()
        for cell in cells:
            self._learn(cell)
        self._positions = None
        self._valid = True

    def _learn(self, cell: Any) -> None:
        """Append one cell (a dict or a live cell map) at the end."""
        kind = intern(str(cell.get("cell_type", "code")))
        ran = cell.get("execution_count") is not None
        cell_id = str(cell.get("id", "") or "")
        self._id_counts[cell_id] += 1
        self._ids.append(cell_id)
        self._kinds.append(kind)
        self._ran.append(ran)
        self._totals[kind] += 1
        self._totals[_RAN] += ran

    def _forget(self, start: int, end: int) -> None:
        """Drop the cells at positions ``start:end``."""
        self._totals.subtract(self._kinds[start:end])
        self._totals[_RAN] -= sum(self._ran[start:end])
        for gone in self._ids[start:end]:
            if self._positions is not None:
                self._positions.pop(gone, None)
            self._live.pop(gone, None)
            self._id_counts[gone] -= 1
            if self._id_counts[gone] <= 0:
                del self._id_counts[gone]
        for column in (self._ids, self._kinds, self._ran):
            del column[start:end]

    def _on_structure(self, event: Any) -> None:
        """Cells inserted or deleted: apply the delta. Never raise (it would fail the editor's call)."""
        self._changes += 1
        self._fetched.clear()
        if not self._valid:
            return
        inserted: list[Any] = []
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
                        inserted.append(item)
                    cursor = len(self._ids)
                    self._ids.extend(ids)
                    self._kinds.extend(kinds)
                    self._ran.extend(ran)
            for item in inserted:  # after the deletions: a moved cell's new map is kept, not dropped with its old one
                if hasattr(item, "integrated"):
                    self._keep(str(item.get("id", "") or ""), item)
        except Exception:
            log.debug("cell index delta not applied; rebuilding on next use", exc_info=True)
            self._valid = False

    def _on_raw_cells(self, events: Any) -> None:
        """Any change inside the cells, as pycrdt's raw events (their ``path`` is never computed: it walks)."""
        self.version += 1
        try:
            tracked = [e for e in events if type(e).__name__ == "MapEvent" and any(k in e.keys for k in _TRACKED_KEYS)]
            if tracked:
                self._changes += 1
                if self._valid:
                    doc = self._ycells.doc
                    with doc._read_transaction(events[0].transaction):
                        self._on_cells(tracked, doc)
        except Exception:  # never raise into the commit of someone's edit
            log.debug("cell index event not applied; rebuilding on next use", exc_info=True)
            self._valid = False

    def _on_cells(self, events: Any, doc: Any) -> None:
        """A cell's type, run state or id changed in place: update by id (no path walk)."""
        try:
            for event in events:
                keys = event.keys
                if "id" in keys:
                    self._valid = False  # ids rewritten in place: rebuild lazily
                    return
                cell = process_event(event.target, doc)
                index = self._locate(str(cell.get("id", "") or ""))
                if index is None or "cell_type" not in cell:
                    continue
                kind, ran = intern(str(cell.get("cell_type", "code"))), cell.get("execution_count") is not None
                self._totals[self._kinds[index]] -= 1
                self._totals[kind] += 1
                self._totals[_RAN] += ran - self._ran[index]
                self._kinds[index], self._ran[index] = kind, ran
        except Exception:
            log.debug("cell index event not applied; rebuilding on next use", exc_info=True)
            self._valid = False
