"""What an agent is told on its next call about its suggestions that became conflicts.

Accepting one suggestion can turn others on the same cells into conflicts; their agents learn it by a
notification when they hold a stream, and in either era by a notice on their next call. This keeps, per agent,
only the ids of those suggestions (bounded per agent and in agents), and makes the notice from each
suggestion's state when the agent calls, so a conflict a person rejected meanwhile is not told. Apart from
``suggestions.py`` because it is bookkeeping of its own, with bounds of its own.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable

from jupyter_pair_mcp.services.suggestion import Suggestion

#: Agents (actor keys) whose suggestions turned into conflicts they were not told of yet, kept at most; and the
#: suggestions each keeps (the oldest are forgotten first: get_suggestion still tells).
MAX_NEWS_AGENTS = 1000
MAX_NEWS_PER_AGENT = 20
#: Characters of the notice that tells an agent its suggestions conflict now.
MAX_NEWS_CHARS = 2000


class ConflictNews:
    """Per agent, the suggestions of its that became conflicts since its last call (ids only)."""

    def __init__(self) -> None:
        #: Actor key -> ids of its suggestions that became conflicts since its last call.
        self._news: OrderedDict[str, dict[str, None]] = OrderedDict()

    def tell(self, suggestion: Suggestion) -> None:
        """Note that ``suggestion`` conflicts now, for its agent's next call."""
        key = str(getattr(suggestion.actor, "key", ""))
        told = self._news.pop(key, {})
        told.pop(suggestion.id, None)
        told[suggestion.id] = None
        while len(told) > MAX_NEWS_PER_AGENT:
            del told[next(iter(told))]
        self._news[key] = told
        while len(self._news) > MAX_NEWS_AGENTS:
            self._news.popitem(last=False)

    def news(self, key: str, find: Callable[[str], Suggestion | None]) -> str | None:
        """What the agent ``key`` must be told on its call: its suggestions that conflict now and why (once).
        ``find``: a suggestion by id (None once forgotten)."""
        told = self._news.pop(key, None)
        if not told:
            return None
        parts = []
        for suggestion_id in told:
            suggestion = find(suggestion_id)
            if suggestion is None or suggestion.state != "conflict":
                continue  # decided (or forgotten) since: get_suggestion tells
            if suggestion.kind == "notebook":
                why = "; ".join(f"cell {c.cell_id}: {c.reason}" for c in suggestion.cells if c.state == "conflict")
            else:
                why = suggestion.reason or "the text changed under it"
            parts.append(f"your suggestion {suggestion.id} on {suggestion.path!r} conflicts now ({why})")
        if not parts:
            return None
        text = "; ".join(parts)
        if len(text) > MAX_NEWS_CHARS:
            text = text[: MAX_NEWS_CHARS - 1] + "…"
        return (
            f"{text}. A person can only reject what conflicts (get_suggestion shows it, per cell); propose the "
            "change again on the current text if it is still wanted."
        )

    def clear(self) -> None:
        self._news.clear()
