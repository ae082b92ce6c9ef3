"""Revisions: short names for the text an agent read, so that its later edit is applied from that base.

Every read of a cell or a text document returns ``revision_of(text)``. An update that carries it as
``base_revision`` is merged three-way (``adapters/rooms/merge.py``): the agent's change from that base moves
onto the live text, past whatever a person typed since. For that the server must know the base text,
so :class:`Revisions` keeps the texts it served, content-addressed (a text read twice is kept once),
in a least-recently-used store bounded by the memory it really takes: a str costs CPython 1, 2 or 4
bytes a character depending on its widest character (one emoji makes a whole text 4 bytes a
character), plus the UTF-8 copy Python may attach to a non-ASCII str; :func:`held_bytes` counts both.
A revision it no longer holds still works when the text has not changed since (its revision is the
live one); otherwise the agent is asked to re-read.

An agent that passes no ``base_revision`` still wrote from some text it read, so the store also
remembers, per principal (the credential), the last revision it served at each key (path, fork, cell)
— to each client name of that principal, and within a stateful MCP session to that session first.
That revision is the base of an edit that names none, in every protocol era: a whole source written
back after a person typed is merged, not written over their typing. A key this principal was never
served is edited as asked. Each principal's memory is bounded by count and bytes; once it dropped an
entry of a client, an absent key may have been served and forgotten (:meth:`Revisions.forgot` says so)
and the caller refuses rather than guess. Two agents sharing one credential *and* one client name
outside a stateful session are one reader to the server: each one's write without a base is merged
from the last text served to either (documented; they should pass ``base_revision``).

A read that cut a cell's source (``max_content_length``) gets a revision marked as cut: positional
operations from it are fine (the cut keeps the start), but a whole-source update from it would delete
the part the agent never saw and is refused.
"""

from __future__ import annotations

import hashlib
import sys
from collections import OrderedDict
from dataclasses import dataclass, field

#: Marks the revision of a read that returned only the start of the text.
CUT_PREFIX = "cut-"

#: Per entry, beyond its strings: the dict slot and the ordered dict's link (CPython, 64-bit, rounded up).
ENTRY_OVERHEAD = 128


def revision_of(text: str, *, cut: bool = False) -> str:
    """A short, stable name for ``text`` (12 hex digits of its BLAKE2b digest)."""
    return _revision(text.encode("utf-8", "surrogatepass"), cut)


def _revision(encoded: bytes, cut: bool) -> str:
    digest = hashlib.blake2b(encoded, digest_size=6).hexdigest()
    return f"{CUT_PREFIX}{digest}" if cut else digest


def held_bytes(text: str, utf8_length: int | None = None) -> int:
    """Memory a str held by the store takes: its object as CPython sizes it (``sys.getsizeof``: header and
    1, 2 or 4 bytes a character), plus the UTF-8 copy CPython caches on a non-ASCII str once C code (pycrdt,
    say) asked for it — counted whether or not it exists yet, so the bound holds either way."""
    size = sys.getsizeof(text)
    if not text.isascii():
        size += (utf8_length if utf8_length is not None else len(text.encode("utf-8", "surrogatepass"))) + 1
    return size


@dataclass(frozen=True)
class Base:
    """The text an agent's edit is based on."""

    revision: str
    text: str
    cut: bool  # the read returned only the start of ``text``


@dataclass(frozen=True)
class Reader:
    """Who a read was served to: a principal (credential fingerprint), the client name it gave, and the
    stateful MCP session it came through (None in the stateless era)."""

    principal: str
    client: str = ""
    session: str | None = None


@dataclass
class _Memory:
    """One principal's last served revision per (who, path, fork, cell); who is "s:<session>" or "c:<client>"."""

    entries: OrderedDict[tuple[str, ...], str] = field(default_factory=OrderedDict)
    bytes: int = 0
    lossy: bool = False  # an entry of a client was dropped: an absent key may have been served


def _entry_bytes(key: tuple[str, ...], revision: str) -> int:
    return ENTRY_OVERHEAD + sys.getsizeof(key) + sum(held_bytes(part) for part in key) + sys.getsizeof(revision)


class Revisions:
    """Texts served to agents (bounded by bytes), and each principal's last revision per cell (bounded by
    count and bytes per principal)."""

    def __init__(
        self,
        *,
        max_bytes: int = 64 * 1024 * 1024,
        max_per_principal: int = 10_000,
        max_principal_bytes: int = 4 * 1024 * 1024,
    ) -> None:
        self.max_bytes = max_bytes
        self.max_per_principal = max_per_principal
        self.max_principal_bytes = max_principal_bytes
        self._texts: OrderedDict[str, tuple[str, int]] = OrderedDict()  # revision -> (text, held bytes)
        self._bytes = 0
        self._memories: dict[str, _Memory] = {}

    @property
    def size(self) -> int:
        """Bytes of memory the held texts take (see :func:`held_bytes`; plus a fixed cost per entry)."""
        return self._bytes

    def memory_size(self, principal: str) -> tuple[int, int]:
        """(entries, bytes) a principal's remembered reads take."""
        memory = self._memories.get(principal)
        return (len(memory.entries), memory.bytes) if memory is not None else (0, 0)

    def served(self, text: str, *, cut: bool = False, reader: Reader | None = None, key: tuple[str, ...] = ()) -> str:
        """Record that ``text`` was read (by ``reader``, at ``key``) and return its revision."""
        encoded = text.encode("utf-8", "surrogatepass")
        revision = _revision(encoded, cut)
        plain = revision.removeprefix(CUT_PREFIX)
        if plain in self._texts:
            self._texts.move_to_end(plain)
        else:
            size = held_bytes(text, len(encoded)) + ENTRY_OVERHEAD + sys.getsizeof(plain)
            if size <= self.max_bytes:
                self._texts[plain] = (text, size)
                self._bytes += size
                while self._bytes > self.max_bytes:
                    _, (_, dropped) = self._texts.popitem(last=False)
                    self._bytes -= dropped
        if reader is not None and key:
            if reader.session is not None:
                self._remember(reader.principal, (f"s:{reader.session}", *key), revision)
            self._remember(reader.principal, (f"c:{reader.client}", *key), revision)
        return revision

    def _remember(self, principal: str, key: tuple[str, ...], revision: str) -> None:
        memory = self._memories.setdefault(principal, _Memory())
        old = memory.entries.pop(key, None)
        if old is not None:
            memory.bytes -= _entry_bytes(key, old)
        size = _entry_bytes(key, revision)
        if size > self.max_principal_bytes:  # a key too large to keep: what it was served is forgotten
            memory.lossy = memory.lossy or key[0].startswith("c:")
            return
        memory.entries[key] = revision
        memory.bytes += size
        while len(memory.entries) > self.max_per_principal or memory.bytes > self.max_principal_bytes:
            dropped, dropped_revision = memory.entries.popitem(last=False)
            memory.bytes -= _entry_bytes(dropped, dropped_revision)
            memory.lossy = memory.lossy or dropped[0].startswith("c:")

    def base(self, revision: str, live: str) -> Base | None:
        """The text behind ``revision``; None when it is neither held nor the live text's revision."""
        cut = revision.startswith(CUT_PREFIX)
        plain = revision.removeprefix(CUT_PREFIX)
        held = self._texts.get(plain)
        text = held[0] if held is not None else None
        if text is not None:
            self._texts.move_to_end(plain)
        elif revision_of(live) == plain:
            text = live
        return Base(revision, text, cut) if text is not None else None

    def last_served(self, reader: Reader, key: tuple[str, ...]) -> str | None:
        """The revision last served at ``key`` to this reader's session, else to its principal and client."""
        memory = self._memories.get(reader.principal)
        if memory is None:
            return None
        for who in ([f"s:{reader.session}"] if reader.session is not None else []) + [f"c:{reader.client}"]:
            revision = memory.entries.get((who, *key))
            if revision is not None:
                memory.entries.move_to_end((who, *key))
                return revision
        return None

    def forgot(self, reader: Reader) -> bool:
        """Whether this principal's memory dropped entries: a key it holds nothing for may have been served."""
        memory = self._memories.get(reader.principal)
        return memory is not None and memory.lossy

    def forget(self, principal: str, session: str) -> None:
        """Drop what a session was served (its MCP session ended); its principal's memory keeps the reads."""
        memory = self._memories.get(principal)
        if memory is None:
            return
        who = f"s:{session}"
        for key in [k for k in memory.entries if k[0] == who]:
            memory.bytes -= _entry_bytes(key, memory.entries.pop(key))
