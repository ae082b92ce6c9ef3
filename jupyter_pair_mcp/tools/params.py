"""Parameters many tools share: one name, one type and one short description each.

Every parameter carries a one-line ``description`` in its tool's input schema (``tools/list`` is in every
agent's context and within a budget: keep them short; paths are relative to the Jupyter root, which the
server's instructions say once). A parameter particular to one tool is annotated where it is declared.
"""

from __future__ import annotations

from typing import Annotated

from pydantic import Field

NotebookPath = Annotated[str, Field(description="Notebook path.")]
TextPath = Annotated[str, Field(description="Text file path.")]
DocumentPath = Annotated[str, Field(description="Notebook or text file path.")]
AnyPath = Annotated[str, Field(description="File, notebook or directory path.")]
OnlyDocument = Annotated[str | None, Field(description="Only this document.")]

ForkId = Annotated[str | None, Field(description="Fork to use (fork_document).")]
CellId = Annotated[str | None, Field(description="Cell id (wins over index).")]
CellIndex = Annotated[int | None, Field(description="Cell index, 0-based.")]
StartIndex = Annotated[int | None, Field(description="First cell index, 0-based.")]
FirstCell = Annotated[int, Field(description="First cell index, 0-based.")]
EndIndex = Annotated[int | None, Field(description="End cell index, exclusive; default: the end.")]
BaseRevision = Annotated[
    str | None, Field(description="Revision you read (default: your last read of it); typing since is kept.")
]

MaxResults = Annotated[int, Field(description="Result limit (1-1000).")]
#: The most characters one read returns: an answer is serialized, framed and sent on the loop that every notebook
#: and kernel shares, so one answer's size bounds how long it can hold that loop. Read on with the paging fields.
MAX_CONTENT_LENGTH = 1_000_000
MaxContentLength = Annotated[int, Field(description="Character limit (at most 1000000).")]
CollaborationState = Annotated[bool, Field(description="Include who is in the live room.")]
Timeout = Annotated[float, Field(description="Seconds per cell before interrupting (max 3600).")]
