"""What the bytes of a Yjs v1 update say without applying it: a name for it, and the client that wrote it; and a
state vector decoded (a copy in the copy worker is checked against its room's with it, :mod:`.replicas`).

History (:mod:`.history`) reads these from every update the room stores, on the loop: both are bounded work
whatever the update's size.
"""

from __future__ import annotations

import hashlib

#: Bytes from each end of an update that name it (see :func:`update_name`).
_DIGEST_ENDS = 64 * 1024


def update_name(update: bytes) -> bytes:
    """A name for ``update`` to find its provenance again when the store writes it.

    Its length and its two ends name it: a v1 update starts with its structs' client id and clock, which no
    other transaction shares. Hashing it whole cost ~35 ms of the loop per 50 MB output, twice per update.
    """
    if len(update) <= 2 * _DIGEST_ENDS:
        return hashlib.blake2b(update, digest_size=16).digest()
    named = hashlib.blake2b(len(update).to_bytes(8, "little"), digest_size=16)
    named.update(memoryview(update)[:_DIGEST_ENDS])
    named.update(memoryview(update)[-_DIGEST_ENDS:])
    return named.digest()


def client_ids(update: bytes) -> list[int]:
    """The Yjs client that wrote the first structs of a v1 ``update`` (a transaction is one client's), or
    none for a delete-only or empty update. Read from the update's header: ``get_state`` cannot be used, it
    needs the update's dependencies."""
    try:
        values = _varuints(update, 3)
    except IndexError:
        return []
    return [values[2]] if len(values) == 3 and values[0] > 0 else []


#: Clients, and deleted ranges in all, read from an update's delete set: bounded work for any update.
_DELETERS_MAX = 8
_RANGES_MAX = 4096


def deleted_client_ids(update: bytes) -> list[int]:
    """The clients whose items a delete-only v1 ``update`` deletes (the first few), or none.

    A delete-only update (a person's undo of their typing, a cut) has no struct, so no writer in its
    header: only its delete set says whose items it removes, which for an undo are the person's own.
    """
    try:
        values = _varuints(update, 2)
        if len(values) < 2 or values[0] != 0:
            return []
        pos = _skip(update, 2)  # past the struct count and the delete set's client count
        found: list[int] = []
        ranges = 0
        for _ in range(min(values[1], _DELETERS_MAX)):
            (client, count), pos = _read(update, pos, 2)
            found.append(client)
            ranges += count
            if ranges > _RANGES_MAX:
                break
            pos = _skip(update, 2 * count, pos)
        return found
    except IndexError:  # truncated: whatever was read is all there is
        return []


def _read(data: bytes, pos: int, count: int) -> tuple[list[int], int]:
    values: list[int] = []
    while len(values) < count:
        value, shift = 0, 0
        while True:
            byte = data[pos]
            pos += 1
            value |= (byte & 0x7F) << shift
            if byte < 0x80:
                break
            shift += 7
        values.append(value)
    return values, pos


def _skip(data: bytes, count: int, pos: int = 0) -> int:
    for _ in range(count):
        while data[pos] >= 0x80:
            pos += 1
        pos += 1
    return pos


def _varuints(data: bytes, count: int) -> list[int]:
    values: list[int] = []
    pos = 0
    while len(values) < count and pos < len(data):
        value, shift = 0, 0
        while True:
            byte = data[pos]
            pos += 1
            value |= (byte & 0x7F) << shift
            if byte < 0x80:
                break
            shift += 7
        values.append(value)
    return values


def state_vector(state: bytes) -> dict[int, int]:
    """A Yjs state vector decoded (varint count, then client id and clock pairs): the encoding's order of clients
    is a hash map's, so two equal states may differ in bytes."""
    (count,), pos = _read(state, 0, 1)
    pairs, _ = _read(state, pos, 2 * count)
    return dict(zip(pairs[::2], pairs[1::2], strict=True))
