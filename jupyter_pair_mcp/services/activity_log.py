"""The agents' recent activity (edits, runs, broadcasts): a bounded in-memory log, newest kept.

``get_user_activity`` reads it; people see the latest broadcast in the agent's awareness state.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass
from typing import Any


@dataclass
class Activity:
    timestamp: float  # epoch seconds
    user_id: str
    name: str
    type: str
    document_path: str | None
    description: str
    metadata: dict[str, Any] | None = None


class ActivityLog:
    """The last ``size`` activities (at least one); older ones are dropped first."""

    def __init__(self, size: int) -> None:
        self._entries: deque[Activity] = deque(maxlen=max(1, size))

    def append(self, entry: Activity) -> None:
        self._entries.append(entry)

    def newest(self, path: str | None, limit: int) -> list[Activity]:
        """Newest first, at most ``limit``, optionally only those on ``path``."""
        found = []
        for entry in reversed(self._entries):
            if path is None or entry.document_path == path:
                found.append(entry)
                if len(found) >= limit:
                    break
        return found
