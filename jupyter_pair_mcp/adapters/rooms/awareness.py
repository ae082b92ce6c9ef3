"""Awareness in collaboration rooms: publishing an agent's presence and reading everyone's cursors.

A room has one pycrdt ``Awareness`` whose single local state belongs to the server, yet several MCP
sessions may work in the same room. So each agent gets its own synthetic client id and its state is
applied as an awareness *update* with origin ``"local"``: the room then broadcasts it to every
websocket client exactly as if a browser had sent it, and removing it is an update with a null state
and a higher clock.

Cursors are Yjs relative positions. pycrdt's ``StickyIndex.to_json()`` omits the keys it does not use,
and Yjs crashes on a cursor without all of ``type``, ``tname``, ``item`` and ``assoc``, so every cursor
we send carries the four keys. Sticky indexes count UTF-16 code units (Yjs clocks) whatever pycrdt's
text offsets are, and ``StickyIndex.new`` panics (or silently points past the text) at or beyond the end
of a text with ``Assoc.AFTER``: positions are converted and clamped here, never anywhere else.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

from pycrdt import Array, Assoc, Encoder, StickyIndex, Text

log = logging.getLogger(__name__)

T = TypeVar("T")

#: Room id prefixes of documents (the global awareness room and forks are not documents).
_DOCUMENT_KINDS = {"json:notebook": "notebook", "text:file": "file"}


@dataclass(frozen=True)
class Participant:
    """One awareness state of a room, as JupyterLab publishes it."""

    client_id: int
    user: dict[str, Any]
    agent: dict[str, Any] | None
    cursors: list[dict[str, Any]]
    last_updated: float | None  # epoch seconds of the state's last renewal


@dataclass(frozen=True)
class CursorPlace:
    """Where a cursor points: the cell (notebooks) and character offsets of anchor and head in its text."""

    cell_id: str | None
    anchor: int
    head: int
    text: str


# -- rooms ----------------------------------------------------------------------------------------
def room(rooms: Any, room_id: str | None) -> Any | None:
    """The open room of ``room_id`` (None when it is not open); opens nothing."""
    return rooms._room(room_id)


def document_rooms(rooms: Any) -> list[tuple[str, str, Any]]:
    """``(room_id, kind, room)`` of every open document room."""
    ydoc = rooms._ydoc_extension()
    server = getattr(ydoc, "ywebsocket_server", None)
    if server is None:
        return []
    found = []
    for room_id, value in list(server.rooms.items()):
        kind = _DOCUMENT_KINDS.get(str(room_id).rsplit(":", 1)[0])
        if kind is not None:
            found.append((str(room_id), kind, value))
    return found


def room_kind(room_id: str) -> str | None:
    """ "notebook" or "file" for a document room id, else None."""
    return _DOCUMENT_KINDS.get(room_id.rsplit(":", 1)[0])


def room_path(rooms: Any, room_id: str) -> str | None:
    """The document path of a room, from the file id service (None when the file is gone)."""
    file_ids = rooms._file_ids()
    if file_ids is None:
        return None
    path = file_ids.get_path(room_id.rsplit(":", 1)[-1])
    return str(path).lstrip("/") if path else None


def clients(room: Any) -> frozenset[int]:
    """Identity of the websocket clients in a room right now (changes when someone joins or leaves)."""
    return frozenset(id(client) for client in getattr(room, "clients", ()) or ())


def states(room: Any) -> dict[int, dict[str, Any]]:
    awareness = getattr(room, "awareness", None)
    return dict(getattr(awareness, "states", {}) or {}) if awareness is not None else {}


def participants(room: Any) -> list[Participant]:
    """Everyone in the room's awareness who says who they are (JupyterLab drops states without username)."""
    awareness = getattr(room, "awareness", None)
    meta = getattr(awareness, "meta", {}) or {}
    found = []
    for client_id, state in states(room).items():
        user = state.get("user") if isinstance(state, dict) else None
        if not isinstance(user, dict) or not user.get("username"):
            continue
        agent = state.get("agent")
        cursors = state.get("cursors")
        updated = (meta.get(client_id) or {}).get("lastUpdated")
        found.append(
            Participant(
                client_id=int(client_id),
                user=user,
                agent=agent if isinstance(agent, dict) else None,
                cursors=[c for c in cursors if isinstance(c, dict)] if isinstance(cursors, list) else [],
                last_updated=updated / 1000 if isinstance(updated, int | float) else None,
            )
        )
    return found


def people(room: Any) -> list[Participant]:
    """:func:`participants` once per user (a person with two tabs is one), in the order first seen.

    Every view of who is in a room reads this, so they cannot disagree.
    """
    seen: dict[str, Participant] = {}
    for p in participants(room):
        seen.setdefault(str(p.user["username"]), p)
    return list(seen.values())


def publish(room: Any, client_id: int, clock: int, state: dict[str, Any] | None) -> None:
    """Put ``state`` (None: remove) for ``client_id`` into the room's awareness and broadcast it."""
    if getattr(room, "_task_group", True) is None:
        return  # a stopped room (server shutdown): nobody to tell, and pycrdt would log an error
    encoder = Encoder()
    encoder.write_var_uint(1)
    encoder.write_var_uint(client_id)
    encoder.write_var_uint(clock)
    encoder.write_var_string(json.dumps(state, separators=(",", ":")))
    room.awareness.apply_awareness_update(encoder.to_bytes(), "local")


def forget_client(room: Any, client_id: int) -> None:
    """Drop a client that has left from the room's awareness metadata.

    pycrdt (as y-protocols) keeps the clock of every client it ever saw, so that a late update from a client
    that left cannot bring it back; nothing ever removes them. For our agents' synthetic clients, one per MCP
    session and room, that is state growing with every session for the life of the room, walked by the
    awareness's own timer every 3 s. Called well after the client's removal was broadcast (a browser echoes it
    back at once), and only for a client with no state.
    """
    awareness = getattr(room, "awareness", None)
    meta = getattr(awareness, "_meta", None)
    if isinstance(meta, dict) and client_id not in (getattr(awareness, "_states", None) or {}):
        meta.pop(client_id, None)


# -- positions -----------------------------------------------------------------------------------
def utf16_offset(text: str, index: int) -> int:
    """UTF-16 code units before character ``index`` (what Yjs clocks and sticky indexes count)."""
    if text.isascii():
        return min(index, len(text))
    return len(text[:index].encode("utf-16-le")) // 2


def char_index(text: str, units: int) -> int:
    """The character offset at ``units`` UTF-16 code units into ``text`` (clamped to the text)."""
    if text.isascii():
        return max(0, min(units, len(text)))
    count = 0
    for i, ch in enumerate(text):
        if count >= units:
            return i
        count += 2 if ord(ch) > 0xFFFF else 1
    return len(text)


def guard_panic(call: Callable[..., T], *args: Any) -> T | None:
    """Run a pycrdt call that may panic on positions another client sent (PanicException is a BaseException)."""
    try:
        return call(*args)
    except Exception:
        return None
    except BaseException as exc:
        if type(exc).__name__ != "PanicException":
            raise
        return None


def _relative(ytext: Any, units: int, length: int) -> dict[str, Any]:
    """A Yjs relative position for ``units`` in a text of ``length`` UTF-16 units, with all four keys."""
    if units < length:
        sticky = StickyIndex.new(ytext, units, Assoc.AFTER)
    else:  # the end: AFTER would panic or point past the text; stick to the last character (or the type)
        sticky = StickyIndex.new(ytext, length, Assoc.BEFORE)
    raw = sticky.to_json()
    return {"type": raw.get("type"), "tname": raw.get("tname"), "item": raw.get("item"), "assoc": raw.get("assoc", 0)}


def _cells(room: Any) -> Any:
    return room.ydoc.get("cells", type=Array)


def source_of(room: Any, kind: str, cell_id: str | None, position: int | None = None) -> Any | None:
    """The live source ``Text`` of a notebook cell (by id) or of a text file; None when there is no such cell.

    ``position``, the cell's index from the room's cell index, is checked and used: a scan of the cells
    array costs O(N²) in pycrdt (each index access walks from the start), one access O(N) in Rust.
    """
    if kind == "file":
        return room.ydoc.get("source", type=Text)
    cells = _cells(room)
    if position is not None and 0 <= position < len(cells):
        ycell = cells[position]
        if ycell.get("id") == cell_id:
            source = ycell.get("source")
            return source if isinstance(source, Text) else None
    for ycell in cells:
        if ycell.get("id") == cell_id:
            source = ycell.get("source")
            return source if isinstance(source, Text) else None
    return None


def cursor(
    room: Any,
    kind: str,
    cell_id: str | None,
    anchor: int,
    head: int,
    *,
    text: Any = None,
    position: int | None = None,
) -> dict[str, Any] | None:
    """A JupyterLab cursor (``anchor``/``head`` in characters) in a cell or text file, None if the cell is gone.

    ``text`` is the source when the caller has it; else it is found by ``position`` (checked) or by id.
    """
    ytext = text if isinstance(text, Text) else source_of(room, kind, cell_id, position)
    if ytext is None:
        return None
    text = str(ytext)
    length = utf16_offset(text, len(text))
    a = _relative(ytext, utf16_offset(text, max(0, anchor)), length)
    h = _relative(ytext, utf16_offset(text, max(0, head)), length)
    return {"anchor": a, "head": h, "primary": True, "empty": anchor == head}


def place(room: Any, kind: str, cursor: dict[str, Any]) -> CursorPlace | None:
    """Decode a client's cursor to cell id and character offsets; None when it cannot be placed."""
    anchor, head = cursor.get("anchor"), cursor.get("head")
    if not isinstance(anchor, dict) or not isinstance(head, dict):
        return None
    if kind == "file":
        ytext = room.ydoc.get("source", type=Text)
        cell_id = None
    else:
        found = _cell_of(room, head)
        if found is None:
            return None
        cell_id, ytext = found
    text = str(ytext)
    units_a, units_h = _offset(room, anchor), _offset(room, head)
    if units_h is None:
        return None
    return CursorPlace(
        cell_id, char_index(text, units_a if units_a is not None else units_h), char_index(text, units_h), text
    )


def _offset(room: Any, position: dict[str, Any]) -> int | None:
    def read() -> int:
        sticky = StickyIndex.from_json(position)
        with room.ydoc.transaction() as txn:
            return int(sticky.get_index(txn))

    return guard_panic(read)


def _json(ytext: Any, units: int, assoc: Assoc) -> dict[str, Any]:
    return dict(StickyIndex.new(ytext, units, assoc).to_json())


def _cell_of(room: Any, position: dict[str, Any]) -> tuple[str, Any] | None:
    """The cell whose source a relative position points into.

    A position names either its text type (``type``: empty text or its end) or a character item
    (``item``). Items say nothing about their text, so rebuild, in each cell, the position at the same
    offset with the same association and compare items: one cheap call per cell.
    """
    wanted_type, wanted_item = position.get("type"), position.get("item")
    assoc = Assoc.BEFORE if (position.get("assoc") or 0) < 0 else Assoc.AFTER
    units = _offset(room, position) if wanted_item else None
    for ycell in _cells(room):
        ytext = ycell.get("source")
        if not isinstance(ytext, Text):
            continue
        if wanted_type and not wanted_item:
            type_id = (guard_panic(_json, ytext, 0, Assoc.BEFORE) or {}).get("type")
            if type_id == wanted_type:
                return str(ycell.get("id")), ytext
            continue
        if units is None:
            return None
        text = str(ytext)
        length = utf16_offset(text, len(text))
        inside = units < length if assoc == Assoc.AFTER else 0 < units <= length
        if not inside:
            continue
        item = (guard_panic(_json, ytext, units, assoc) or {}).get("item")
        if item == wanted_item:
            return str(ycell.get("id")), ytext
    return None
