"""One suggestion of review mode: its state, per cell, and the shape people and agents read it in.

Kept apart from :mod:`.suggestions` (the service that makes, decides, bounds and expires them).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from jupyter_pair_mcp.adapters.rooms.review import CellProposal

#: Characters of before/after text a listing or a result carries per cell, and per suggestion in all (an answer
#: is serialized on the loop every notebook shares); what is left out is marked ``cut`` (an open suggestion holds
#: it all; a finished one keeps only what is shown).
MAX_SHOWN = 20_000
MAX_SHOWN_PER_SUGGESTION = 200_000

#: States of a suggestion (and of its cells) people may still decide: they count against the bounds, and expire.
OPEN = ("pending", "conflict")

#: Called with the suggestion whose state changed (the tool layer turns it into a notification).
Notify = Callable[["Suggestion"], None]


@dataclass
class Suggestion:
    id: str
    path: str
    kind: str  # "notebook" | "file"
    actor: Any  # the agent's Actor: accepting edits with its origin, so its undo takes the accept back
    summary: str
    created: float  # epoch seconds
    deadline: float  # on the service's clock
    ttl: float
    cells: list[CellProposal] = field(default_factory=list)
    text: tuple[str, str] | None = None  # text documents: (before, after)
    text_state: str = "pending"
    reason: str | None = None
    state: str = "pending"
    version: str | None = None  # the history version of the last accept
    edit: str = ""  # the journal serial of the last accept's edit (finds the version in history)
    busy: bool = False  # an accept is under way (it awaits the room): no second decision meanwhile
    notify: Notify | None = None
    size: int = 0  # bytes its texts hold (the bounds count them)
    text_cut: bool = False  # a finished text suggestion keeps only what is shown

    @property
    def owner(self) -> str:
        return str(getattr(self.actor, "principal", ""))

    def settle(self) -> None:
        """The suggestion's state from its cells': pending while any is, conflict while any cell is undecided
        for a conflict (a person may still reject it); then accepted if any cell was."""
        states = [c.state for c in self.cells] if self.kind == "notebook" else [self.text_state]
        if "pending" in states:
            self.state = "pending"
        elif "conflict" in states:
            self.state = "conflict"
        elif "accepted" in states:
            self.state = "accepted"
        elif "expired" in states:
            self.state = "expired"
        else:
            self.state = "rejected"

    def release(self) -> None:
        """Once finished, keep only what a listing shows of its texts (the rest of the memory is returned)."""
        budget = [MAX_SHOWN_PER_SUGGESTION]

        def kept(text: str | None, limit: int = MAX_SHOWN) -> str | None:
            if text is None:
                return None
            part = text[: max(0, min(limit, budget[0]))]
            budget[0] -= len(part)
            return part

        for c in self.cells:
            before, after = kept(c.before), kept(c.after)
            c.cut = c.cut or before != c.before or after != c.after
            c.before, c.after = before, after
        if self.text is not None:
            text = (kept(self.text[0], MAX_SHOWN * 5) or "", kept(self.text[1], MAX_SHOWN * 5) or "")
            self.text_cut = self.text_cut or text != self.text
            self.text = text
        self.size = 0

    def as_json(self) -> dict[str, Any]:
        """The shape the REST API and get_suggestion share (docs/review.md)."""
        expires = self.created + self.ttl if self.ttl else None
        answer: dict[str, Any] = {
            "id": self.id,
            "path": self.path,
            "state": self.state,
            "agent": {"key": self.actor.key, "name": self.actor.name, "client": self.actor.client},
            "summary": self.summary,
            "created": _iso(self.created),
            "expires": _iso(expires) if expires is not None else None,
            "version": self.version,
        }
        if self.reason:
            answer["reason"] = self.reason
        budget = [MAX_SHOWN_PER_SUGGESTION]

        def shown(text: str | None, limit: int = MAX_SHOWN) -> str | None:
            if text is None:
                return None
            part = text[: max(0, min(limit, budget[0]))]
            budget[0] -= len(part)
            return part

        if self.kind == "notebook":
            cells = []
            for c in self.cells:
                entry = {
                    "cell_id": c.cell_id,
                    "index": c.index,
                    "change": c.change,
                    "cell_type": c.cell_type,
                    "before": shown(c.before),
                    "after": shown(c.after),
                    "state": c.state,
                }
                if c.cut or entry["before"] != c.before or entry["after"] != c.after:
                    entry["cut"] = True
                if c.reason:
                    entry["reason"] = c.reason
                cells.append(entry)
            answer["cells"] = cells
        elif self.text is not None:
            before, after = shown(self.text[0], MAX_SHOWN * 5) or "", shown(self.text[1], MAX_SHOWN * 5) or ""
            answer["text"] = {"before": before, "after": after}
            if self.text_cut or (before, after) != self.text:
                answer["text"]["cut"] = True
        return answer


def _iso(epoch: float) -> str:
    return datetime.fromtimestamp(epoch, UTC).isoformat()


class Draft:
    """A proposal being made: who proposes what where, and the view its edit is recorded in (``view``, None until
    the edit tool asks for it: :meth:`SuggestionService.view`)."""

    def __init__(self, suggestion_id: str, path: str, kind: str, actor: Any) -> None:
        self.id, self.path, self.kind, self.actor = suggestion_id, path, kind, actor
        self.view: Any = None
        self.size = 0  # a draft holds nothing yet: the bounds count it by number only
