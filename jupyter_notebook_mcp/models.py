"""Tool result models: each becomes a tool's output schema and its structured content."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field

DocumentType = Literal["notebook", "file", "directory"]


class NotebookEntry(BaseModel):
    path: str = Field(description="Path relative to the Jupyter root.")
    name: str
    last_modified: str | None = Field(description="ISO 8601 timestamp of the last save.")
    size: int | None = Field(description="Size on disk in bytes.")
    collaborators: int = Field(description="Clients connected to the notebook's live room right now.")


class NotebookList(BaseModel):
    notebooks: list[NotebookEntry]
    truncated: bool = Field(description="True when more notebooks match than were returned: narrow the prefix.")


class DocumentEntry(BaseModel):
    path: str = Field(description="Path relative to the Jupyter root.")
    name: str
    type: DocumentType
    size: int | None = Field(description="Size on disk in bytes (null for directories).")
    last_modified: str | None = Field(description="ISO 8601 timestamp of the last save.")
    writable: bool
    collaborators: int = Field(description="Clients connected to the document's live room right now.")


class DocumentList(BaseModel):
    documents: list[DocumentEntry]
    truncated: bool = Field(description="True when more entries match than were returned: narrow the filter.")


class ExistsResult(BaseModel):
    exists: bool
    type: DocumentType | None = Field(description="What the path is, or null when it does not exist.")


class FixtureResult(BaseModel):
    message: str
