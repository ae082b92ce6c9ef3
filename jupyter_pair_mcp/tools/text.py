"""Group ``document``, live text: plain-text files edited through the room JupyterLab's editors use."""

from __future__ import annotations

import asyncio
import mimetypes
import re
from typing import Annotated

from mcp.server.mcpserver import Context
from pydantic import Field

from jupyter_pair_mcp.adapters.rooms import MergeConflict, TextOp, plan_text
from jupyter_pair_mcp.errors import Conflict, InvalidArgument
from jupyter_pair_mcp.models.documents import (
    DocumentContent,
    ReplaceTextResult,
    TextDeleteOp,
    TextEditResult,
    TextInsertOp,
)
from jupyter_pair_mcp.models.results import Collaboration, SessionResult, TextUpdateOp, User
from jupyter_pair_mcp.tools.notebook import check_max, join_room
from jupyter_pair_mcp.tools.notebook_edit import MAX_BATCH, REPLAN_ATTEMPTS
from jupyter_pair_mcp.tools.params import (
    MAX_CONTENT_LENGTH,
    BaseRevision,
    CollaborationState,
    DocumentPath,
    ForkId,
    MaxContentLength,
    Propose,
    TextPath,
)
from jupyter_pair_mcp.tools.registry import READ, WRITE, Backends, ToolSpec
from jupyter_pair_mcp.tools.suggestions import Proposal, refuse_in_review
from jupyter_pair_mcp.tools.views import Reads, text_view

#: file_type values of create_document_session (the jupyter-collaboration-mcp design says text/markdown).
_SESSION_TYPES = {"notebook": "notebook", "file": "file", "text": "file", "markdown": "file"}


def _check_ops(ops: list[TextOp]) -> None:
    if not ops:
        raise InvalidArgument("operations is empty: give at least one")
    if len(ops) > MAX_BATCH:
        raise InvalidArgument(f"operations has {len(ops)} entries; at most {MAX_BATCH} per call")


def text_tools(b: Backends) -> list[ToolSpec]:
    async def text_file(path: str) -> str:
        try:
            return await b.contents.require(path, "file")
        except InvalidArgument as exc:
            if "not a text file" in str(exc) and path.endswith(".ipynb"):
                raise InvalidArgument(f"{path!r} is a notebook: use get_notebook and the notebook tools") from None
            raise

    async def get_document(
        ctx: Context,
        path: TextPath,
        offset: Annotated[int, Field(description="Char offset to start at.")] = 0,
        max_content_length: MaxContentLength = 100_000,
        include_collaboration_state: CollaborationState = True,
        fork_id: ForkId = None,
    ) -> DocumentContent:
        """Read a text file live, with unsaved edits."""
        if offset < 0:
            raise InvalidArgument("offset must be >= 0")
        check_max("max_content_length", max_content_length, MAX_CONTENT_LENGTH)
        path = await text_file(path)
        view = await text_view(b, ctx, path, fork_id)
        text = view.text
        revision = Reads(b, ctx, path, fork_id).served(text)
        entry = await b.contents.model(path)
        collaboration = None
        room = b.rooms.info(path, "file") if include_collaboration_state else None
        if room is not None:
            users = [User(username=u["username"], display_name=u["display_name"]) for u in room.users]
            collaboration = Collaboration(room_id=room.room_id, users=users)
        chunk = text[offset : offset + max_content_length]
        return DocumentContent(
            path=path,
            type="file",
            mimetype=mimetypes.guess_type(path)[0] or "text/plain",
            content=chunk,
            size=len(text),
            offset=offset,
            last_modified=entry.last_modified,
            writable=entry.writable,
            truncated=offset + len(chunk) < len(text),
            revision=revision,
            collaboration=collaboration,
        )

    async def create_document_session(
        ctx: Context,
        path: DocumentPath,
        file_type: Annotated[str | None, Field(description="notebook or file; default: detected.")] = None,
    ) -> SessionResult:
        """Open or join a text file's or notebook's live room."""
        path = b.contents.normalize(path)
        if file_type is not None and file_type not in _SESSION_TYPES:
            raise InvalidArgument(
                f"file_type {file_type!r} is not one of {', '.join(_SESSION_TYPES)} (or leave it out to detect it)"
            )
        kind = _SESSION_TYPES[file_type] if file_type is not None else await b.contents.kind(path, normalized=True)
        if kind not in ("file", "notebook"):
            raise InvalidArgument(f"{path!r} is not a text file or notebook (found: {kind or 'nothing'})")
        return await join_room(b, await b.contents.require(path, kind), kind)

    async def edit(
        ctx: Context, path: str, ops: list[TextOp], base_revision: str | None, fork_id: str | None, propose: bool | None
    ) -> TextEditResult:
        """Apply operations on a text file from the agent's base (see Reads.base), all or nothing; or propose
        them (the suggestion's fork starts as the live text, so the base merges the same way)."""
        _check_ops(ops)
        path = await text_file(path)
        async with Proposal(b, ctx, path, "file", propose, fork_id) as proposal:
            view = await proposal.text_view() or await text_view(b, ctx, path, fork_id)
            reads = Reads(b, ctx, path, fork_id)
            length, wanted = view.apply(ops, base=reads.base(base_revision, view.text))
            if proposal.draft is not None:
                revision, suggestion = b.revisions.served(wanted), await proposal.finish()
                return TextEditResult(applied=len(ops), length=length, revision=revision, suggestion=suggestion)
            return TextEditResult(applied=len(ops), length=length, revision=reads.served(wanted))

    async def batch_update_document(
        ctx: Context,
        path: TextPath,
        operations: Annotated[list[TextUpdateOp], Field(description="Replacements.")],
        base_revision: BaseRevision = None,
        fork_id: ForkId = None,
        propose: Propose = None,
    ) -> TextEditResult:
        """Replace ranges of the text you read; typing since is kept."""
        ops = [TextOp(o.position, o.length, o.content) for o in operations]
        return await edit(ctx, path, ops, base_revision, fork_id, propose)

    async def batch_insert_text(
        ctx: Context,
        path: TextPath,
        operations: Annotated[list[TextInsertOp], Field(description="Insertions.")],
        base_revision: BaseRevision = None,
        fork_id: ForkId = None,
        propose: Propose = None,
    ) -> TextEditResult:
        """Insert at offsets of the text you read; all or nothing."""
        ops = [TextOp(o.position, 0, o.content) for o in operations]
        return await edit(ctx, path, ops, base_revision, fork_id, propose)

    async def batch_delete_text(
        ctx: Context,
        path: TextPath,
        operations: Annotated[list[TextDeleteOp], Field(description="Deletions.")],
        base_revision: BaseRevision = None,
        fork_id: ForkId = None,
    ) -> TextEditResult:
        """Delete ranges of the text you read; all or nothing."""
        ops = [TextOp(o.position, o.length, "") for o in operations]
        return await edit(ctx, path, ops, base_revision, fork_id, False)

    async def replace_document_text(
        ctx: Context,
        path: TextPath,
        old_text: Annotated[str, Field(description="Exact text to replace.")],
        new_text: Annotated[str, Field(description="Its replacement.")],
        replace_all: Annotated[bool, Field(description="Every occurrence (else it must be unique).")] = False,
        fork_id: ForkId = None,
    ) -> ReplaceTextResult:
        """Replace old_text by new_text in a text file live."""
        if not old_text:
            raise InvalidArgument("old_text is empty")
        path = await text_file(path)
        refuse_in_review(b, ctx, fork_id, "replace_document_text")
        pattern = re.compile(re.escape(old_text))
        for _ in range(REPLAN_ATTEMPTS):
            # Planned in a worker thread from a snapshot, applied on a view taken again after the await and
            # moved past what people typed meanwhile (anchored on the live text: it needs no base).
            view = await text_view(b, ctx, path, fork_id)
            planned = await asyncio.to_thread(plan_text, view.text, pattern, new_text, literal=True)
            if planned.count == 0:
                raise InvalidArgument(f"old_text not found in {path}: read the document and copy the text exactly")
            if planned.count > 1 and not replace_all:
                raise InvalidArgument(
                    f"old_text occurs {planned.count} times in {path}: give more context to make it unique, "
                    "or replace_all"
                )
            view = await text_view(b, ctx, path, fork_id)
            try:
                view.apply_replacement(planned, old_text)
            except MergeConflict:  # a person typed into a match meanwhile: plan again
                continue
            return ReplaceTextResult(replacements=planned.count, length=len(view.text))
        raise Conflict(f"{path} kept changing where old_text occurs while the replacement was prepared: retry")

    return [
        ToolSpec(get_document, "document", "Read a text file", READ, read_only=True),
        ToolSpec(create_document_session, "document", "Join a file's live room", READ, read_only=True),
        ToolSpec(batch_update_document, "document", "Edit text", WRITE, read_only=False, idempotent=False),
        ToolSpec(batch_insert_text, "document", "Insert text", WRITE, read_only=False, idempotent=False),
        ToolSpec(
            batch_delete_text, "document", "Delete text", WRITE, read_only=False, destructive=True, idempotent=False
        ),
        ToolSpec(replace_document_text, "document", "Replace text", WRITE, read_only=False, idempotent=False),
    ]
