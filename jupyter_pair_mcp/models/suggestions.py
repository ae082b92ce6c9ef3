"""What get_suggestion returns: one suggestion of review mode, as the REST API shows it too (docs/review.md)."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel


class SuggestedCell(BaseModel):
    cell_id: str
    index: int | None
    change: str  # insert | update | delete
    cell_type: str
    before: str | None
    after: str | None
    state: str  # pending | accepted | rejected | conflict | expired
    reason: str | None = None
    cut: bool = False  # before/after shown only in part


class SuggestionResult(BaseModel):
    id: str
    path: str
    state: str  # pending | accepted | rejected | conflict | expired
    agent: dict[str, Any]
    summary: str
    created: str
    expires: str | None
    version: str | None = None
    reason: str | None = None
    cells: list[SuggestedCell] | None = None
    text: dict[str, Any] | None = None
