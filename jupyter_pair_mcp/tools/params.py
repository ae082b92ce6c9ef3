"""Parameters many tools share: one name, one type and one short description each.

Every parameter carries a one-line ``description`` in its tool's input schema (``tools/list`` is in every
agent's context and within a budget: keep them short; paths are relative to the Jupyter root, which the
server's instructions say once). A parameter particular to one tool is annotated where it is declared.
"""

from __future__ import annotations

from typing import Annotated

from pydantic import Field

NotebookPath = Annotated[str, Field(description="Notebook.")]
TextPath = Annotated[str, Field(description="Text file.")]
DocumentPath = Annotated[str, Field(description="Document.")]
AnyPath = Annotated[str, Field(description="Any path.")]
OnlyDocument = Annotated[str | None, Field(description="Only this document.")]

ForkId = Annotated[str | None, Field(description="Fork id.")]
#: Review mode: the edit goes to a suggestion people accept or reject (tools/suggestions.py).
Propose = Annotated[bool | None, Field(description="As a suggestion.")]
CellId = Annotated[str | None, Field(description="Cell id (preferred).")]
CellIndex = Annotated[int | None, Field(description="Index, 0-based.")]
StartIndex = Annotated[int | None, Field(description="First cell.")]
FirstCell = Annotated[int, Field(description="First cell.")]
EndIndex = Annotated[int | None, Field(description="End (exclusive).")]
BaseRevision = Annotated[str | None, Field(description="Revision read (default: last).")]

MaxResults = Annotated[int, Field(description="Result limit (1-1000).")]
#: The most characters one read returns: an answer is serialized, framed and sent on the loop that every notebook
#: and kernel shares, so one answer's size bounds how long it can hold that loop. Read on with the paging fields.
MAX_CONTENT_LENGTH = 1_000_000
MaxContentLength = Annotated[int, Field(description="Char limit (max 1000000).")]
CollaborationState = Annotated[bool, Field(description="Who is in the room.")]
#: The ``exec`` of the edit tools (default true): an agent must know before editing a code cell that the edit
#: runs it, where other people's variables live, and where its relative paths point.
RunCells = Annotated[
    bool,
    Field(description="Run code cells (shared kernel, notebook's folder); stops at errors."),
]
Timeout = Annotated[float, Field(description="Seconds per cell, then interrupt (max 3600).")]
