"""The bound on big notebooks' copies in the copy worker (:mod:`.replicas`): their encoded bytes together.

A copy costs the worker ~23 times its encoded size in memory (measured: 563 MB of resident memory for a
100,000-cell notebook of 24.6 MB encoded), and every open notebook past the in-place bound had one, however many
were open. The budget keeps the copies' encoded sizes, least recently saved or edited first, and says which to drop
so that they fit ``max_bytes`` (the ``max_replica_bytes`` setting). A room whose copy was dropped is saved as a big
notebook without a copy is (its document encoded on the loop, read in the scan worker), which seeds its copy again,
dropping the least recently used one in turn: the copies follow the notebooks being worked on. A copy bigger than
the bound alone is never kept. The count of copies is bounded by the bytes: each is past the in-place bound
(512 KiB), so at most ``max_bytes / 512 KiB`` are held.

Sizes are the encoded size the copy was seeded with or last read at (exact: the worker's own update of it), plus
the updates fed since (an upper bound: an update that replaced content counts whole), as
:meth:`.saving.SaveState.size` tells a room's. Bookkeeping on the loop: the copies dropped are listed for the worker,
which frees them before its next task (:meth:`take_drops`).
"""

from __future__ import annotations

import logging
from collections import OrderedDict

log = logging.getLogger(__name__)

#: Encoded bytes of the copies held together by default (``max_replica_bytes``): ~1.5 GB of the worker at most at
#: ~23x, two and a half notebooks of 100,000 cells, or about the memory their rooms take in the server anyway.
MAX_BYTES = 64 << 20


class CopyBudget:
    """The copies the worker holds, by key: their sizes, least recently used first."""

    def __init__(self, max_bytes: int = 0) -> None:
        self.max_bytes = max_bytes  # 0: no bound
        self._sizes: OrderedDict[str, int] = OrderedDict()
        self._total = 0
        self.evicted = 0  # copies dropped to keep the copies within the bound (their rooms' saves seed them again)
        self.refused = 0  # copies not made: the notebook alone was past the bound (its saves encode it on the loop)
        self._dropped: list[str] = []  # copies the worker is to free, sent with its next task
        self._gone: list[str] = []  # copies whose room went (a finalizer's note, from any thread)
        self._told: set[str] = set()  # copies whose drop for the bound was logged at info

    @property
    def copies(self) -> int:
        return len(self._sizes)

    @property
    def bytes(self) -> int:
        return self._total

    @property
    def dropping(self) -> bool:
        """Whether copies are listed for the worker to free."""
        return bool(self._dropped)

    def __contains__(self, key: object) -> bool:
        return key in self._sizes

    def fits(self, size: int) -> bool:
        """Whether a copy of ``size`` bytes may be held at all (alone)."""
        return self.max_bytes <= 0 or size <= self.max_bytes

    def admit(self, key: str, size: int) -> bool:
        """``key``'s copy about to be (re)seeded with ``size`` bytes, the most recently used: held, the least
        recently used dropped until all fit; False when it does not fit alone (a copy of it made before goes)."""
        self.discard(key)
        if not self.fits(size):
            self.refused += 1
            self._dropped.append(key)
            if key not in self._told:
                self._told.add(key)
                log.info(
                    "A big notebook of %d bytes encoded is past max_replica_bytes (%d): it gets no copy in the copy "
                    "worker, and its saves encode it on the loop",
                    size,
                    self.max_bytes,
                )
            return False
        self._sizes[key] = size
        self._total += size
        self._drop(self._over(key))
        return True

    def used(self, key: str, size: int, grown: bool) -> bool:
        """``key``'s copy used now (fed, read), its size ``size`` bytes (or grown by that): whether it is still held
        (one past the bound alone is dropped; the least recently used while the copies do not fit)."""
        old = self._sizes.get(key)
        if old is None:
            return False
        new = old + size if grown else size
        self._sizes[key] = new
        self._sizes.move_to_end(key)
        self._total += new - old
        if not self.fits(new):
            self.discard(key)
            self._drop([key])
            return False
        self._drop(self._over(key))
        return True

    def gone(self, key: str) -> None:
        """``key``'s room went: a finalizer's note, at any point of any thread (list appends only)."""
        self._gone.append(key)
        self._dropped.append(key)

    def take_drops(self) -> list[str]:
        """On the loop: the copies the worker is to free now (the rooms gone are forgotten here)."""
        while self._gone:
            key = self._gone.pop()
            self.discard(key)
            self._told.discard(key)
        dropped, self._dropped = self._dropped, []
        return dropped

    def _drop(self, keys: list[str]) -> None:
        """Copies dropped for the bound: listed for the worker; logged at info once per copy."""
        for key in keys:
            self._dropped.append(key)
            self.evicted += 1
            level = logging.DEBUG if key in self._told else logging.INFO
            self._told.add(key)
            log.log(
                level,
                "A big notebook's copy was dropped to keep the copies within max_replica_bytes (%d; %d copies of "
                "%d bytes held): its room's saves encode it on the loop, which copies it again",
                self.max_bytes,
                self.copies,
                self.bytes,
            )

    def discard(self, key: str) -> bool:
        size = self._sizes.pop(key, None)
        if size is None:
            return False
        self._total -= size
        return True

    def clear(self) -> None:
        self._sizes.clear()
        self._total = 0

    def _over(self, keep: str) -> list[str]:
        """The least recently used copies but ``keep`` dropped until the copies fit the bound."""
        dropped: list[str] = []
        while self.max_bytes > 0 and self._total > self.max_bytes:
            key = next(iter(self._sizes))  # the least recently used (``keep`` is the most, and fits alone)
            if key == keep:
                break
            self.discard(key)
            dropped.append(key)
        return dropped


__all__ = ["MAX_BYTES", "CopyBudget"]
