"""Tool models: results (structured content, and output schemas when listed) and nested inputs."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

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


# -- notebooks -------------------------------------------------------------------------------------
CellType = Literal["code", "markdown", "raw"]


class RenderedOutput(BaseModel):
    output_type: str
    text: str = Field(description="Readable text of the output, cut at the server's max_output_length.")
    mime: str | None = Field(default=None, description="For images: the image MIME type (bytes are not included).")


class ExecutionResult(BaseModel):
    id: str
    status: Literal["ok", "error", "timeout", "aborted"] = Field(
        description="ok; error (the cell raised); timeout (interrupted after timeout seconds); aborted."
    )
    execution_count: int | None
    outputs: list[RenderedOutput]


class Cell(BaseModel):
    index: int
    id: str
    cell_type: str
    source: str
    revision: str = Field(description="Revision of this read of the source: pass it as base_revision when updating.")
    execution_count: int | None = None
    outputs: list[RenderedOutput] = Field(default_factory=list)
    locked: str | None = Field(
        default=None, description="Who locked the cell against agents (edits, runs, suggestions refused); else absent."
    )


class User(BaseModel):
    username: str
    display_name: str


class Collaboration(BaseModel):
    room_id: str
    users: list[User] = Field(description="People (and agents) present in the document's room.")


class NotebookContent(BaseModel):
    path: str
    cell_count: int
    cells: list[Cell]
    metadata: dict[str, Any] = Field(
        description="kernelspec, language_info and the nbformat version; locked: who locked the whole notebook."
    )
    collaboration: Collaboration | None = None
    truncated: bool = Field(description="True when anything was left out or cut (cells, a source, an output).")
    next_index: int | None = Field(description="Where to continue (start_index) when cells were left out; else null.")
    cut_cells: list[str] = Field(
        default_factory=list, description="Ids of cells whose source or an output came back cut (marker at the cut)."
    )


class NotebookOutline(BaseModel):
    path: str
    cell_count: int
    cells: list[dict[str, Any]] = Field(
        description="Per cell: i index, id, t type (code, md, raw), l first line (cut), h heading level, "
        "n execution count, o outputs by output_type, b output bytes, err errored, lk locked by; absent: none."
    )
    next_index: int | None = Field(description="Where to continue (start_index) when cells were left out; else null.")


class NotebookProblems(BaseModel):
    path: str
    cell_count: int
    totals: dict[str, int] = Field(
        description="Code cells with each problem in the whole notebook: failed, never_run, out_of_order, "
        "undefined, syntax."
    )
    problems: list[dict[str, Any]] = Field(
        description="Per code cell with a problem: i index, id; error, message, line (the last run failed there); "
        "never_run; ran, ran_before {i, n} (a cell above ran after it); undefined {name: index of the first cell "
        "below defining it, or null}; syntax (why it does not parse)."
    )
    names_checked: bool = Field(description="Names and syntax were checked (the notebook's language is Python).")
    names_unchecked_from: int | None = Field(
        description="Names are not checked from this cell on: it may define names unseen (import *, exec, a "
        "magic such as %run) or does not parse; else null."
    )
    next_index: int | None = Field(
        description="Where to continue (start_index) when problems were left out; else null."
    )


class ClearResult(BaseModel):
    cleared: int = Field(description="Code cells whose outputs or execution count were cleared.")
    cell_ids: list[str] = Field(description="Their ids, in notebook order (the first 500).")
    edits: int = Field(description="Agent edits it made (100 cells each at most): undo_agent_edits count=edits.")
    cell_count: int


class KernelInfo(BaseModel):
    name: str
    id: str
    state: str


class NotebookInfo(BaseModel):
    path: str
    name: str
    cell_count: int
    code_count: int
    markdown_count: int
    raw_count: int
    executed_count: int
    nbformat: str
    kernelspec: str | None = Field(description="The kernel a run starts (the notebook's kernelspec name).")
    kernel: KernelInfo | None
    last_modified: str | None
    collaborators: int


class SessionResult(BaseModel):
    path: str
    room_id: str
    file_id: str
    session_id: str
    status: Literal["created", "joined"]
    collaborators: int


class InsertedCell(BaseModel):
    index: int
    id: str
    cell_type: str
    revision: str = Field(description="Revision of the inserted source (base_revision for your next update).")


class InsertResult(BaseModel):
    inserted: list[InsertedCell]
    cell_count: int
    executions: list[ExecutionResult] | None = Field(default=None, description="With exec: the runs, in order.")
    execution_skipped: str | None = Field(default=None, description="With exec: why cells were not run, if so.")
    suggestion: dict[str, Any] | None = Field(default=None, description="With propose: the pending suggestion.")


class UpdatedCell(BaseModel):
    index: int
    id: str
    revision: str = Field(description="Revision of the source as your edit made it (base_revision for the next).")


class UpdateResult(BaseModel):
    updated: list[UpdatedCell]
    executions: list[ExecutionResult] | None = Field(default=None, description="With exec: the runs, in order.")
    execution_skipped: str | None = Field(default=None, description="With exec: why cells were not run, if so.")
    suggestion: dict[str, Any] | None = Field(default=None, description="With propose: the pending suggestion.")


class DeletedCell(BaseModel):
    index: int
    id: str
    source: str


class DeleteResult(BaseModel):
    deleted: list[DeletedCell]
    cell_count: int
    suggestion: dict[str, Any] | None = Field(default=None, description="With propose: the pending suggestion.")


class SaveResult(BaseModel):
    path: str
    saved: bool
    last_modified: str | None
    new_path: str | None = Field(default=None, description="Save-as: the new notebook (path stays open and saved).")
    new_last_modified: str | None = None


class MoveResult(BaseModel):
    id: str
    from_index: int
    to_index: int


class SearchMatch(BaseModel):
    cell_id: str
    index: int
    line: int = Field(description="1-based line in the cell's source.")
    column: int = Field(description="1-based character column.")
    text: str = Field(description="The matching line (first 200 characters).")


class SearchResult(BaseModel):
    matches: list[SearchMatch]
    truncated: bool


class ReplacedCell(BaseModel):
    id: str
    index: int
    count: int


class ReplaceResult(BaseModel):
    replacements: int
    cells: list[ReplacedCell] = Field(description="The cells changed, in order (the first 1000).")
    cells_left_out: int = Field(default=0, description="Cells changed past the first 1000, not listed.")


# -- tool inputs -----------------------------------------------------------------------------------
class CellInput(BaseModel):
    content: str = Field(description="Source.")
    cell_type: CellType = Field(default="code", description="Cell type.")
    metadata: dict[str, Any] = Field(default_factory=dict, description="Metadata.")


class TextUpdateOp(BaseModel):
    model_config = ConfigDict(extra="forbid")

    content: str = Field(description="New text.")
    position: int = Field(default=-1, description="Char offset; -1: the end.")
    length: int = Field(default=0, description="Chars replaced; 0: insert.")


class CellUpdateInput(BaseModel):
    model_config = ConfigDict(extra="forbid")

    cell_id: str | None = Field(default=None, description="Cell id (preferred).")
    index: int | None = Field(default=None, description="Index, 0-based.")
    content: str | None = Field(default=None, description="New source.")
    operations: list[TextUpdateOp] | None = Field(default=None, description="Or edits at offsets.")
    base_revision: str | None = Field(default=None, description="Revision read (default: last).")
    cell_type: CellType | None = Field(default=None, description="New type.")
    expected_source: str | None = Field(default=None, description="Only if the source is this.")


class NotRun(BaseModel):
    """The cells a run stopped by an error left unrun, in order."""

    cell_ids: list[str] = Field(description="The first of them.")
    count: int = Field(description="How many in all.")
    reason: str


class ExecutionList(BaseModel):
    executions: list[ExecutionResult]
    not_run: NotRun | None = Field(default=None, description="Cells not run after an error stopped the run.")


class KernelResult(BaseModel):
    kernel: KernelInfo
    executions: list[ExecutionResult] = Field(default_factory=list)
    not_run: NotRun | None = Field(default=None, description="With exec: cells not run after an error stopped it.")


# -- text documents --------------------------------------------------------------------------------
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
