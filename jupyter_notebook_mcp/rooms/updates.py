"""What the bytes of a Yjs v1 update say without applying it: a name for it, and the client that wrote it.

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
