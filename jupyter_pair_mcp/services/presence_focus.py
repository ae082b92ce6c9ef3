"""What people are looking at: the document each has focused in JupyterLab, the cell they are in, and whether
they are typing there now - so an agent can keep out of a person's way.

- **Focus** comes from JupyterLab's global awareness room (jupyter-collaboration's ``rtcGlobalAwareness``),
  where each tab publishes ``current``: the main area's current widget as the layout restorer names it,
  ``<namespace>:<name>``. For a document widget the name is the path (``notebook:a.ipynb``,
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
import time
import weakref
from collections.abc import Callable
from typing import Any

from jupyter_pair_mcp.adapters.rooms import awareness as aw
from jupyter_pair_mcp.adapters.rooms.updates import client_ids, deleted_client_ids

#: The layout restorer's namespaces of document widgets (``<namespace>:<path>``).
DOCUMENT_WIDGETS = frozenset({"notebook", "editor", "markdownviewer-widget"})
#: Longest ``current`` read from a browser's state (anything longer is no path we serve).
MAX_CURRENT = 4096
#: Writers remembered per room (the oldest forgotten first) and cursors memoized in all.
MAX_WRITERS = 256
MAX_MEMO = 4096


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

    # -- typing -------------------------------------------------------------------------------------
    def watch(self, room: Any) -> None:
        """Start seeing who writes in ``room`` (idempotent; cheap enough for every look)."""
        ydoc = getattr(room, "ydoc", None)
        if ydoc is None or ydoc in self._writers:
            return
        writers: dict[int, float] = {}
        clock = self.clock

        def on_update(event: Any) -> None:
            update = event.update
            ids = client_ids(update) or deleted_client_ids(update)
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
    def cell_of(self, room: Any, p: aw.Participant, state: dict[str, Any]) -> str | None:
        """The id of the cell participant ``p`` is in (its ``activeCellId``, else its primary cursor's cell)."""
        active = state.get("activeCellId")
        if isinstance(active, str) and active:
            return active  # the caller keeps it only when the cell index knows it
        agent = p.agent
        if agent is not None and isinstance(agent.get("cell_id"), str):
            return str(agent["cell_id"])  # our agents say which cell they work in
        if not p.cursors:
            return None
        head = p.cursors[0].get("head")
        key = (id(room.ydoc), p.client_id, json.dumps(head, sort_keys=True, default=str)[:512])
        if key in self._memo:
            return self._memo[key]
        placed = aw.place(room, "notebook", p.cursors[0])
        cell_id = placed.cell_id if placed is not None else None
        if len(self._memo) >= MAX_MEMO:
            self._memo.clear()
        self._memo[key] = cell_id
        return cell_id

    def cells(self, room: Any, tabs: dict[str, list[aw.Participant]]) -> dict[str, str]:
        """Per user, the id of the cell a tab of theirs is in (the first tab that is in one)."""
        states = aw.states(room)
        found: dict[str, str] = {}
        for uid, mine in tabs.items():
            for p in mine:
                cell_id = self.cell_of(room, p, states.get(p.client_id) or {})
                if cell_id is not None:
                    found[uid] = cell_id
                    break
        return found
