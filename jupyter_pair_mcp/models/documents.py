"""Models of the documents and text tools: listing, creating, moving and deleting documents; reading and editing
text files.

Their own module because they are one tool group's contract (``tools/documents.py`` and ``tools/text.py``)
that changes apart from the notebook tools' (``results.py``); a text file's live room is described with the
same :class:`Collaboration` as a notebook's.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, Field

from jupyter_pair_mcp.models.results import Collaboration

DocumentType = Literal["notebook", "file", "directory"]


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


class DocumentContent(BaseModel):
    path: str
    type: DocumentType
    mimetype: str | None
    content: str = Field(description="The text from offset, up to max_content_length characters.")
    size: int = Field(description="Length of the whole text in characters.")
    offset: int
    last_modified: str | None
    writable: bool
    truncated: bool = Field(description="True when the text continues past what was returned.")
    revision: str = Field(description="Revision of the whole text: pass it as base_revision when editing.")
    collaboration: Collaboration | None = None


class TextEditResult(BaseModel):
    applied: int = Field(description="Operations applied (all of them, in one transaction).")
    length: int = Field(description="Length of the text afterwards, in characters.")
    revision: str = Field(description="Revision of the text as your edit made it (base_revision for the next).")
    suggestion: dict[str, Any] | None = Field(default=None, description="With propose: the pending suggestion.")


class ReplaceTextResult(BaseModel):
    replacements: int
    length: int


class CreatedDocument(BaseModel):
    path: str
    type: Literal["file", "markdown", "notebook", "directory"]
    created: bool


class RenamedDocument(BaseModel):
    path: str
    new_path: str


class CopiedDocument(BaseModel):
    path: str
    copy_path: str


class DeletedDocument(BaseModel):
    deleted: str


class TextInsertOp(BaseModel):
    content: str = Field(description="Text to insert.")
    position: int = Field(description="Char offset; -1: the end.")


class TextDeleteOp(BaseModel):
    position: int = Field(description="Char offset.")
    length: int = Field(description="Chars to delete.")
