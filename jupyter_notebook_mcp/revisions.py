"""Revisions: short names for the text an agent read, so that its later edit is applied from that base.

Every read of a cell or a text document returns ``revision_of(text)``. An update that carries it as
``base_revision`` is merged three-way (``rooms/merge.py``): the agent's change from that base moves
onto the live text, past whatever a person typed since. For that the server must know the base text,
so :class:`Revisions` keeps the texts it served, content-addressed (a text read twice is kept once),
in a least-recently-used store bounded in bytes. A revision it no longer holds still works when the
text has not changed since (its revision is the live one); otherwise the agent is asked to re-read.

Within a stateful MCP session the store also remembers, per cell (or document), the last revision it
served that session — bounded per session and dropped when the session ends — so an agent that passes
no ``base_revision`` still gets the merge. The stateless protocol era has no session: there the
revision must be passed.

A read that cut a cell's source (``max_content_length``) gets a revision marked as cut: positional
operations from it are fine (the cut keeps the start), but a whole-source update from it would delete
the part the agent never saw and is refused.
"""

from __future__ import annotations

import hashlib
from collections import OrderedDict
from dataclasses import dataclass

#: Marks the revision of a read that returned only the start of the text.
CUT_PREFIX = "cut-"


def revision_of(text: str, *, cut: bool = False) -> str:
    """A short, stable name for ``text`` (12 hex digits of its BLAKE2b digest)."""
    digest = hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=6).hexdigest()
    return f"{CUT_PREFIX}{digest}" if cut else digest


@dataclass(frozen=True)
class Base:
    """The text an agent's edit is based on."""

    revision: str
    text: str
    cut: bool  # the read returned only the start of ``text``


class Revisions:
    """Texts served to agents (bounded by bytes), and each stateful session's last revision per cell."""

    def __init__(self, *, max_bytes: int = 64 * 1024 * 1024, max_per_session: int = 10_000) -> None:
        self.max_bytes = max_bytes
        self.max_per_session = max_per_session
        self._texts: OrderedDict[str, str] = OrderedDict()
        self._bytes = 0
        self._served: dict[str, OrderedDict[tuple[str, ...], str]] = {}

    @property
    def size(self) -> int:
        """Bytes (approximately: characters) of text held."""
        return self._bytes

    def served(self, text: str, *, cut: bool = False, session: str | None = None, key: tuple[str, ...] = ()) -> str:
        """Record that ``text`` was read (by ``session``, at ``key``) and return its revision."""
        revision = revision_of(text, cut=cut)
        plain = revision.removeprefix(CUT_PREFIX)
        if plain in self._texts:
            self._texts.move_to_end(plain)
        elif len(text) <= self.max_bytes:
            self._texts[plain] = text
            self._bytes += len(text)
            while self._bytes > self.max_bytes:
                _, dropped = self._texts.popitem(last=False)
                self._bytes -= len(dropped)
        if session is not None and key:
            remembered = self._served.setdefault(session, OrderedDict())
            remembered[key] = revision
            remembered.move_to_end(key)
            while len(remembered) > self.max_per_session:
                remembered.popitem(last=False)
        return revision

    def base(self, revision: str, live: str) -> Base | None:
        """The text behind ``revision``; None when it is neither held nor the live text's revision."""
        cut = revision.startswith(CUT_PREFIX)
        plain = revision.removeprefix(CUT_PREFIX)
        text = self._texts.get(plain)
        if text is not None:
            self._texts.move_to_end(plain)
        elif revision_of(live) == plain:
            text = live
        return Base(revision, text, cut) if text is not None else None

    def last_served(self, session: str | None, key: tuple[str, ...]) -> str | None:
        """The revision last served to a stateful session at ``key`` (None in the stateless era)."""
        if session is None:
            return None
        remembered = self._served.get(session)
        return remembered.get(key) if remembered is not None else None

    def forget(self, session: str) -> None:
        """Drop what a session was served (its MCP session ended)."""
        self._served.pop(session, None)
