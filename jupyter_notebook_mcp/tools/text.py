"""Group ``document``, live text: plain-text files edited through the room JupyterLab's editors use."""

from __future__ import annotations

import mimetypes

from mcp.server.mcpserver import Context

from ..errors import InvalidArgument
from ..models import (
    Collaboration,
    DocumentContent,
    ReplaceTextResult,
    SessionResult,
    TextDeleteOp,
    TextEditResult,
    TextInsertOp,
    TextUpdateOp,
    User,
)
from ..rooms import TextOp
from .notebook import join_room
from .notebook_edit import MAX_BATCH
from .registry import READ, WRITE, Backends, ToolSpec
from .views import text_view


def _check_ops(ops: list[object]) -> None:
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
        path: str,
        offset: int = 0,
        max_content_length: int = 100_000,
        include_collaboration_state: bool = True,
        fork_id: str | None = None,
    ) -> DocumentContent:
        """Read a text file as it is live (including unsaved edits by people in JupyterLab).

        Returns max_content_length characters from offset; truncated says whether more follows.
        Notebooks are read with get_notebook; binary files cannot be read as text.
        """
        if offset < 0 or max_content_length < 1:
            raise InvalidArgument("offset must be >= 0 and max_content_length >= 1")
        path = await text_file(path)
        view = await text_view(b, ctx, path, fork_id)
        text = view.text
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
            collaboration=collaboration,
        )

    async def create_document_session(ctx: Context, path: str, file_type: str | None = None) -> SessionResult:
        """Open (or join) the live collaboration room of a text file or notebook (file_type: auto by default)."""
        path = b.contents.normalize(path)
        kind = file_type or await b.contents.kind(path, normalized=True)
        if kind not in ("file", "notebook"):
            raise InvalidArgument(f"{path!r} is not a text file or notebook (found: {kind or 'nothing'})")
        return await join_room(b, await b.contents.require(path, kind), kind)

    async def batch_update_document(
        ctx: Context, path: str, operations: list[TextUpdateOp], fork_id: str | None = None
    ) -> TextEditResult:
        """Replace ranges of a text file live: each operation puts content in place of length characters at
        position (-1 = the end). Positions refer to the text before the batch; all or nothing."""
        _check_ops(list(operations))
        path = await text_file(path)
        view = await text_view(b, ctx, path, fork_id)
        length = view.apply([TextOp(o.position, o.length, o.content) for o in operations])
        return TextEditResult(applied=len(operations), length=length)

    async def batch_insert_text(
        ctx: Context, path: str, operations: list[TextInsertOp], fork_id: str | None = None
    ) -> TextEditResult:
        """Insert text at character positions of the text before the batch (-1 = the end); all or nothing."""
        _check_ops(list(operations))
        path = await text_file(path)
        view = await text_view(b, ctx, path, fork_id)
        length = view.apply([TextOp(o.position, 0, o.text) for o in operations])
        return TextEditResult(applied=len(operations), length=length)

    async def batch_delete_text(
        ctx: Context, path: str, operations: list[TextDeleteOp], fork_id: str | None = None
    ) -> TextEditResult:
        """Delete length characters at each position (of the text before the batch); all or nothing."""
        _check_ops(list(operations))
        path = await text_file(path)
        view = await text_view(b, ctx, path, fork_id)
        length = view.apply([TextOp(o.position, o.length, "") for o in operations])
        return TextEditResult(applied=len(operations), length=length)

    async def replace_document_text(
        ctx: Context, path: str, old_text: str, new_text: str, replace_all: bool = False, fork_id: str | None = None
    ) -> ReplaceTextResult:
        """Replace old_text by new_text in a text file live. old_text must occur exactly once unless replace_all."""
        path = await text_file(path)
        view = await text_view(b, ctx, path, fork_id)
        count = view.replace(old_text, new_text, replace_all)
        return ReplaceTextResult(replacements=count, length=len(view.text))

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
