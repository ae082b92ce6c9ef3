"""How many suggestions, and how many bytes of them, may be pending: per document, per principal, in all.

Kept apart from :mod:`.suggestions` (the service that makes and decides them). A new proposal is refused past a
bound, with a tool error that names it; nothing pending is dropped to make room. Each principal (one credential)
has a share of each document's bound that the others' suggestions cannot take: below ``share`` pending on a
document, its proposals are not refused for the document's count, so one agent cannot lock others out of a
document until a person decides. Bytes are what the suggestions hold (the text of the cells they change,
``proposing.held_bytes``), so a bound in bytes bounds the memory pending suggestions take, whatever the
documents' sizes.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from jupyter_pair_mcp.errors import Unavailable

_WAIT = "wait for people to accept or reject them (get_suggestion tells their state)"


@dataclass
class SuggestionBounds:
    per_document: int = 20  # pending on one document (0: no limit)
    share: int = 8  # pending on one document every principal may have whatever others have (0: no share)
    per_principal: int = 50  # pending of one principal, over all documents (0: no limit)
    bytes_per_principal: int = 64 * 2**20  # bytes held by one principal's pending suggestions (0: no limit)
    bytes_total: int = 256 * 2**20  # bytes held by all pending suggestions (0: no limit)

    def check_count(self, pending: Iterable[Any], path: str, principal: str) -> None:
        """Refuse one more proposal of ``principal`` on ``path`` past the count bounds (drafts count)."""
        here = mine = mine_here = 0
        for item in pending:
            own = item.actor.principal == principal
            here += item.path == path
            mine += own
            mine_here += own and item.path == path
        if self.per_principal and mine >= self.per_principal:
            raise Unavailable(f"you already have {mine} pending suggestions (the limit): {_WAIT}")
        if self.per_document and here >= self.per_document and mine_here >= self.share:
            theirs = f" ({mine_here} of them yours)" if mine_here else ""
            raise Unavailable(
                f"{path} already has {here} pending suggestions (the limit per document){theirs}: {_WAIT}"
            )

    def check_bytes(self, pending: Iterable[Any], principal: str, size: int) -> None:
        """Refuse a proposal holding ``size`` bytes past the byte bounds."""
        total = mine = 0
        for item in pending:
            total += item.size
            mine += item.size if item.actor.principal == principal else 0
        if self.bytes_per_principal and mine + size > self.bytes_per_principal:
            raise Unavailable(
                f"your pending suggestions would hold {_mb(mine + size)} (the limit is "
                f"{_mb(self.bytes_per_principal)}): propose smaller changes, or {_WAIT}"
            )
        if self.bytes_total and total + size > self.bytes_total:
            raise Unavailable(
                f"pending suggestions on this server would hold {_mb(total + size)} (the limit is "
                f"{_mb(self.bytes_total)}): propose a smaller change, or {_WAIT}"
            )


def _mb(size: int) -> str:
    return f"{size / 2**20:.1f} MiB"
