"""Group ``history``, forks: draft in a private copy of a live document, then merge it in one edit."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Annotated

from mcp.server.mcpserver import Context
from pydantic import Field

from jupyter_pair_mcp.errors import InvalidArgument
from jupyter_pair_mcp.models.history import DiscardResult, ForkList, ForkResult, MergeResult
from jupyter_pair_mcp.services.forks import Fork
from jupyter_pair_mcp.tools.params import DocumentPath
from jupyter_pair_mcp.tools.registry import READ, WRITE, Backends, ToolSpec
from jupyter_pair_mcp.tools.suggestions import refuse_in_review
from jupyter_pair_mcp.tools.views import forks

ForkOf = Annotated[str, Field(description="From fork_document.")]


def _result(fork: Fork) -> ForkResult:
    return ForkResult(
        fork_id=fork.fork_id,
        fork_room_id=fork.room_id,
        path=fork.path,
        title=fork.title,
        synchronize=fork.synchronize,
        created=datetime.fromtimestamp(fork.created, UTC).isoformat(),
    )


def fork_tools(b: Backends) -> list[ToolSpec]:
    async def fork_document(
        ctx: Context,
        path: DocumentPath,
        title: Annotated[str | None, Field(description="Short title.")] = None,
        description: Annotated[str | None, Field(description="What the draft is for.")] = None,
        synchronize: Annotated[bool, Field(description="Keep receiving the live document's changes.")] = False,
    ) -> ForkResult:
        """Copy a document privately to draft in (fork_id in reads, edits)."""
        path, kind = await b.contents.require_document(path)
        fork = await forks(b).create(
            path, kind, b.actors.of(ctx), title=title or "", description=description or "", synchronize=synchronize
        )
        return _result(fork)

    async def merge_document_fork(
        ctx: Context,
        path: DocumentPath,
        fork_id: ForkOf,
        discard: Annotated[bool, Field(description="Delete the fork afterwards.")] = True,
    ) -> MergeResult:
        """Merge a fork into the live document as one edit; people's edits survive."""
        path, _ = await b.contents.require_document(path)
        refuse_in_review(b, ctx, None, "merge_document_fork")
        fork, edits = await forks(b).merge(fork_id, path, b.actors.of(ctx), discard=discard)
        return MergeResult(merged=True, fork_id=fork.fork_id, path=path, edits=edits, discarded=discard)

    async def discard_document_fork(ctx: Context, path: DocumentPath, fork_id: ForkOf) -> DiscardResult:
        """Discard a fork unmerged."""
        path, _ = await b.contents.require_document(path)
        fork = await forks(b).discard(fork_id, path, b.actors.of(ctx))
        return DiscardResult(discarded=True, fork_id=fork.fork_id)

    async def list_document_forks(
        ctx: Context, path: Annotated[str | None, Field(description="Only forks of this document.")] = None
    ) -> ForkList:
        """Your open forks."""
        if path is not None:
            path, _ = await b.contents.require_document(path)
        if path == "":
            raise InvalidArgument("path is empty: give a document path or omit it")
        return ForkList(forks=[_result(f) for f in forks(b).listed(b.actors.of(ctx), path)])

    return [
        ToolSpec(fork_document, "history", "Fork a document", WRITE, read_only=False, idempotent=False),
        ToolSpec(merge_document_fork, "history", "Merge a fork", WRITE, read_only=False, idempotent=False),
        ToolSpec(discard_document_fork, "history", "Discard a fork", WRITE, read_only=False, destructive=True),
        ToolSpec(list_document_forks, "history", "List my forks", READ, read_only=True),
    ]
