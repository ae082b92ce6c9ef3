"""Tool models: results (structured content, and output schemas when listed) and nested inputs.

The notebook, execution and kernel tools' models; the documents and text tools' are ``documents.py``'s, the
history and forks tools' ``history.py``'s.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field


class NotebookEntry(BaseModel):
    path: str = Field(description="Path relative to the Jupyter root.")
    name: str
    last_modified: str | None = Field(description="ISO 8601 timestamp of the last save.")
    size: int | None = Field(description="Size on disk in bytes.")
    collaborators: int = Field(description="Clients connected to the notebook's live room right now.")


class NotebookList(BaseModel):
    notebooks: list[NotebookEntry]
    truncated: bool = Field(description="True when more notebooks match than were returned: narrow the prefix.")


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
