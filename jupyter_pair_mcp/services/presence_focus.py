"""What people are looking at: the document each has focused in JupyterLab, the cell they are in, and whether
they are typing there now - so an agent can keep out of a person's way.

- **Focus** comes from JupyterLab's global awareness room (jupyter-collaboration's ``rtcGlobalAwareness``),
  where each tab publishes ``current``: the main area's current widget as the layout restorer names it,
  ``<namespace>:<name>`` (jupyter-collaboration copies the restorer's saved ``main.current`` when it matches
  ``^\\w+:.+``, else publishes null). For a notebook or editor the name is the path (``notebook:a.ipynb``,
  ``editor:b.py``); other widgets (the launcher, a terminal) are no document. A person with several tabs:
  the state renewed last (awareness ``lastUpdated``) wins.
- **The cell** comes from the notebook room's awareness: ``activeCellId`` when a frontend extension publishes
  it (jupyterlab-notebook-awareness does), else the cell holding the primary cursor of ``cursors`` (the Yjs
  relative position JupyterLab's editor binding writes into the cell's source). A cursor is decoded once per
  move (memoized by its JSON): decoding searches the cells as ``get_user_cursors`` does. The cell's index
  always comes from the room's cell index, never from the cells array.
- **Typing** is attributed by Yjs client id: JupyterLab's awareness client id is its Y document's client id
  (y-protocols' ``Awareness(doc)``), so a document update whose structs carry that id - or a delete-only
  update removing that client's items, as history attributes them - was typed in that tab. A cursor move is
  not typing (a click moves it too). A room is watched from the first time an agent looks at who is in it
  or works in it; the agents' own edits are the server's client, so agents never show as typing.
"""

from __future__ import annotations

import json
import logging
import time
import weakref
from collections.abc import Callable
from typing import Any

from pycrdt import Array, Assoc, StickyIndex, Text

from jupyter_pair_mcp.adapters.rooms import awareness as aw
from jupyter_pair_mcp.adapters.rooms.updates import client_ids, deleted_client_ids

#: The layout restorer's namespaces of the widgets documents open in by default (``<namespace>:<path>``).
DOCUMENT_WIDGETS = frozenset({"notebook", "editor"})
#: Longest ``current`` read from a browser's state (anything longer is no path we serve).
MAX_CURRENT = 4096
#: Writers remembered per room (the oldest forgotten first) and cursors memoized in all.
MAX_WRITERS = 256
MAX_MEMO = 4096
#: Cells searched for a cursor: all of them up to this many, else those within NEAR of where it was last.
FULL_SEARCH = 300
NEAR = 16
CHUNK = 64

log = logging.getLogger(__name__)


def focus_of(current: Any) -> tuple[str, str] | None:
    """``(namespace, path)`` of a ``current`` naming a document widget, else None."""
    if not isinstance(current, str) or len(current) > MAX_CURRENT:
        return None
    namespace, colon, path = current.partition(":")
    return (namespace, path) if colon and path and namespace in DOCUMENT_WIDGETS else None


def focused(global_room: Any, *, people_only: bool = False) -> dict[str, tuple[float, str, str]]:
    """Per awareness username: ``(last renewed, namespace, path)`` of the document focused in the tab renewed
    last (``people_only``: not the agents' states)."""
    if global_room is None:
        return {}
    meta = getattr(getattr(global_room, "awareness", None), "meta", {}) or {}
    latest: dict[str, tuple[float, str, str]] = {}
    for client_id, state in aw.states(global_room).items():
        user = state.get("user") if isinstance(state, dict) else None
        if not isinstance(user, dict) or not isinstance(user.get("username"), str):
            continue
        found = focus_of(state.get("current"))
        if found is None or (people_only and isinstance(state.get("agent"), dict)):
            continue
        updated = (meta.get(client_id) or {}).get("lastUpdated")
        at = float(updated) if isinstance(updated, int | float) else 0.0
        name = user["username"]
        if name not in latest or at >= latest[name][0]:
            latest[name] = (at, *found)
    return latest


def focused_notebook(global_room: Any, username: str, *, anyone: bool = False) -> str | None:
    """The notebook Jupyter user ``username`` has focused (the tab renewed last), None when none.

    ``anyone``: on a single-user server (Jupyter's own identity providers name each token request afresh, so
    names cannot match) any person's tab counts; agents' states never do.
    """
    people = {name: f for name, f in focused(global_room, people_only=True).items() if anyone or name == username}
    notebooks = [(at, path) for at, namespace, path in people.values() if namespace == "notebook"]
    return max(notebooks)[1] if notebooks else None


class Focus:
    """Typing seen per room (by Yjs client id) and the cells people's cursors are in."""

    def __init__(self, window: float = 3.0, clock: Callable[[], float] = time.monotonic) -> None:
        self.window = window
        self.clock = clock
        # Per room document: {client id: when it last wrote}; the subscription lives with the document.
        self._writers: weakref.WeakKeyDictionary[Any, dict[int, float]] = weakref.WeakKeyDictionary()
        self._memo: dict[tuple[int, int, str], str | None] = {}  # (id(ydoc), client, cursor JSON) -> cell id
        self._last: dict[tuple[int, int], str] = {}  # (id(ydoc), client) -> the cell its cursor was last in
        self._sweeps: dict[tuple[int, int], int] = {}  # (id(ydoc), client) -> where a big notebook's search goes on

    # -- typing -------------------------------------------------------------------------------------
    def watch(self, room: Any) -> None:
        """Start seeing who writes in ``room`` (idempotent; cheap enough for every look)."""
        ydoc = getattr(room, "ydoc", None)
        if ydoc is None or ydoc in self._writers:
            return
        writers: dict[int, float] = {}
        clock = self.clock

        def on_update(event: Any) -> None:
            try:  # inside the room's commit: never let a bad update break it
                update = event.update
                ids = client_ids(update) or deleted_client_ids(update)
            except Exception:
                log.debug("an update's writer could not be read")
                return
            now = clock()
            for client_id in ids:
                writers.pop(client_id, None)
                writers[client_id] = now  # newest last: the oldest is first to go
            while len(writers) > MAX_WRITERS:
                del writers[next(iter(writers))]

        ydoc.observe(on_update)
        self._writers[ydoc] = writers

    def typing(self, room: Any, client_ids: list[int]) -> bool:
        """Whether any of ``client_ids`` wrote in ``room`` within the window."""
        writers = self._writers.get(getattr(room, "ydoc", None)) if getattr(room, "ydoc", None) is not None else None
        if not writers:
            return False
        now = self.clock()
        return any(now - writers.get(c, -float("inf")) <= self.window for c in client_ids)

    # -- cells --------------------------------------------------------------------------------------
    def cells(
        self, room: Any, tabs: dict[str, list[aw.Participant]], where: Callable[[str], int | None]
    ) -> dict[str, str]:
        """Per user, the id of the cell a tab of theirs is in (the first tab that is in one); ``where`` gives a
        cell's index from the room's cell index."""
        states = aw.states(room)
        found: dict[str, str] = {}
        for uid, mine in tabs.items():
            for p in mine:
                cell_id = self.cell_of(room, p, states.get(p.client_id) or {}, where)
                if cell_id is not None:
                    found[uid] = cell_id
                    break
        return found

    def cell_of(
        self, room: Any, p: aw.Participant, state: dict[str, Any], where: Callable[[str], int | None]
    ) -> str | None:
        """The id of the cell participant ``p`` is in: its ``activeCellId``, an agent's ``agent.cell_id``, else
        its primary cursor's cell (decoded once per cursor move)."""
        active = state.get("activeCellId")
        if isinstance(active, str) and active:
            return active  # the caller keeps it only when the cell index knows it
        agent = p.agent
        if agent is not None and isinstance(agent.get("cell_id"), str):
            return str(agent["cell_id"])  # our agents say which cell they work in
        head = p.cursors[0].get("head") if p.cursors else None
        if not isinstance(head, dict):
            return None
        ydoc_id, client = id(room.ydoc), p.client_id
        key = (ydoc_id, client, json.dumps(head, sort_keys=True, default=str)[:512])
        if key not in self._memo:
            if len(self._memo) >= MAX_MEMO or len(self._sweeps) >= MAX_MEMO:
                self._memo.clear()
                self._last.clear()
                self._sweeps.clear()
            last = self._last.get((ydoc_id, client))
            near = where(last) if last is not None else None
            start = self._sweeps.pop((ydoc_id, client), 0)
            found, searched = find_cell(room, head, near, start)
            if found is None and searched is not None:  # a big notebook, not searched whole: on from there next time
                self._sweeps[(ydoc_id, client)] = searched
                return None
            self._memo[key] = found
        cell_id = self._memo[key]
        if cell_id is not None:
            self._last[(ydoc_id, client)] = cell_id
        return cell_id


def find_cell(room: Any, head: dict[str, Any], near: int | None, start: int = 0) -> tuple[str | None, int | None]:
    """The id of the cell whose source relative position ``head`` points into (None: none), and, when the
    search did not cover every cell, where the next one should start.

    pycrdt reaches a cell only by index, each access walking the array from its start, so a big notebook's
    cells are never all tried at once: up to :data:`FULL_SEARCH` cells, all; beyond, the :data:`NEAR` cells
    either side of ``near`` (where this cursor was last) and :data:`CHUNK` cells from ``start``, the next
    call going on from there: a cursor that jumped far in a big notebook is placed within (cells / CHUNK) looks,
    each trying at most 2 * NEAR + 1 + CHUNK cells.
    """
    ycells = room.ydoc.get("cells", type=Array)
    count = len(ycells)
    following: int | None = None
    if count <= FULL_SEARCH:
        order = list(range(count))
    else:
        start = start if start < count else 0
        following = start + CHUNK if start + CHUNK < count else 0
        around = range(max(0, near - NEAR), min(count, near + NEAR + 1)) if near is not None else range(0)
        order = [*around, *(i for i in range(start, min(count, start + CHUNK)) if i not in around)]
    if near is not None:
        order.sort(key=lambda i: abs(i - near))
    wanted_type, wanted_item = head.get("type"), head.get("item")
    assoc = Assoc.BEFORE if (head.get("assoc") or 0) < 0 else Assoc.AFTER
    units = aw.guard_panic(_index, room.ydoc, head) if wanted_item else None
    if wanted_item and units is None:
        return None, None
    for i in order:
        ycell = ycells[i]
        ytext = ycell.get("source")
        if not isinstance(ytext, Text):
            continue
        if wanted_type and not wanted_item:
            if (aw.guard_panic(_sticky, ytext, 0, Assoc.BEFORE) or {}).get("type") == wanted_type:
                return str(ycell.get("id")), None
            continue
        text = str(ytext)
        length = aw.utf16_offset(text, len(text))
        assert units is not None
        if not (units < length if assoc == Assoc.AFTER else 0 < units <= length):
            continue
        if (aw.guard_panic(_sticky, ytext, units, assoc) or {}).get("item") == wanted_item:
            return str(ycell.get("id")), None
    return None, following


def _index(ydoc: Any, position: dict[str, Any]) -> int:
    with ydoc.transaction() as txn:
        return int(StickyIndex.from_json(position).get_index(txn))


def _sticky(ytext: Any, units: int, assoc: Assoc) -> dict[str, Any]:
    return dict(StickyIndex.new(ytext, units, assoc).to_json())
