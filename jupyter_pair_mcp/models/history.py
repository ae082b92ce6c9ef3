"""Models of the history and forks tools: versions of a document, restoring one, undoing an agent's edits, and
forks merged back or discarded.

Their own module because they are the contract of two tool groups (``tools/history.py``, ``tools/forks.py``)
and of the history service (``services/history.py``), apart from the notebook tools' (``results.py``).
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field


class HistoryVersion(BaseModel):
    version_id: str = Field(description="Pass to get_document_version or restore_document_version.")
    timestamp: str = Field(description="ISO 8601 time of the version's last change.")
    source: Literal["agent", "user", "restore", "disk"] = Field(description="disk: reloaded from the file.")
    author: str = Field(description="The agent's name, or the people whose edits these are (when known).")
    summary: str
    changes: int = Field(description="Stored updates folded into this version (keystrokes, output writes).")


class HistoryResult(BaseModel):
    path: str
    versions: list[HistoryVersion] = Field(description="Newest first (sort_desc false: oldest first).")
    total: int = Field(description="Versions in history; those past limit were left out (next_offset).")
    matched: int | None = Field(default=None, description="Versions matching search (null without one).")
    next_offset: int | None = Field(default=None, description="offset of the next page; null at the end.")


class VersionCell(BaseModel):
    id: str
    cell_type: str
    source: str
    truncated: bool = False


class VersionContent(BaseModel):
    path: str
    version_id: str
    timestamp: str
    source: Literal["agent", "user", "restore", "disk"]
    summary: str
    cells: list[VersionCell] | None = Field(description="Notebooks: the requested cells of that version.")
    cell_count: int | None = Field(default=None, description="Notebooks: how many cells that version had.")
    content: str | None = Field(description="Text documents: the text of that version.")
    truncated: bool = Field(description="True when max_content_length cut the content.")


class RestoreChange(BaseModel):
    cell_id: str | None
    change: str


class RestoreResult(BaseModel):
    path: str
    restored_from: str
    version_id: str | None = Field(description="The new version holding the restored content (null: no change).")
    changes: list[RestoreChange]
    user_edits_reverted: list[str] = Field(
        description="Cells (or 'text') people edited after that version whose edits this restore reverted."
    )
    note: str


class UndoEditsResult(BaseModel):
    path: str
    undone: list[str] = Field(description="Summaries of the edits taken back, newest first.")
    remaining: int = Field(description="Edits of yours still undoable in this document.")
    removed_cells: list[str] = Field(description="Cells that disappeared because the undo took back their insertion.")
    note: str


class ForkResult(BaseModel):
    fork_id: str = Field(description="Pass as fork_id to the edit tools to edit the fork.")
    fork_room_id: str = Field(description="The fork's collaboration room (a person can open it to see the draft).")
    path: str
    title: str
    synchronize: bool = Field(description="True: the fork keeps receiving the live document's changes.")
    created: str


class ForkList(BaseModel):
    forks: list[ForkResult]


class MergeResult(BaseModel):
    merged: bool
    fork_id: str
    path: str
    edits: list[str] = Field(description="Summaries of the fork's edits that the merge brought in.")
    discarded: bool = Field(description="True when the fork is gone after the merge.")


class DiscardResult(BaseModel):
    discarded: bool
    fork_id: str
