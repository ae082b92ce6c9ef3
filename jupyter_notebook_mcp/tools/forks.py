"""Group ``history``, forks: draft in a private copy of a live document, then merge it in one edit."""

from __future__ import annotations

from datetime import UTC, datetime

from mcp.server.mcpserver import Context

from ..errors import InvalidArgument
from ..forks import Fork
from ..models import DiscardResult, ForkList, ForkResult, MergeResult
from .registry import READ, WRITE, Backends, ToolSpec
from .views import forks


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
        path: str,
        title: str | None = None,
        description: str | None = None,
        synchronize: bool = False,
    ) -> ForkResult:
        """Make a private copy of a live notebook or text file to draft in; people see nothing until you merge.

        Pass the returned fork_id to the edit tools (and get_notebook / get_document) to work in the
        fork. synchronize=true keeps the fork receiving the live document's changes as they happen.
        Merge with merge_document_fork, or throw it away with discard_document_fork.
        """
        path, kind = await b.contents.require_document(path)
        fork = await forks(b).create(
            path, kind, b.actors.of(ctx), title=title or "", description=description or "", synchronize=synchronize
        )
        return _result(fork)

    async def merge_document_fork(ctx: Context, path: str, fork_id: str, discard: bool = True) -> MergeResult:
        """Merge a fork's edits into the live document as one edit (a CRDT merge: people's edits made
        meanwhile survive). With discard (the default) the fork is gone afterwards."""
        path, _ = await b.contents.require_document(path)
        fork, edits = await forks(b).merge(fork_id, path, b.actors.of(ctx), discard=discard)
        return MergeResult(merged=True, fork_id=fork.fork_id, path=path, edits=edits, discarded=discard)

    async def discard_document_fork(ctx: Context, path: str, fork_id: str) -> DiscardResult:
        """Throw a fork away without merging it."""
        path, _ = await b.contents.require_document(path)
        fork = await forks(b).discard(fork_id, path, b.actors.of(ctx))
        return DiscardResult(discarded=True, fork_id=fork.fork_id)

    async def list_document_forks(ctx: Context, path: str | None = None) -> ForkList:
        """Your open forks (of one document when path is given)."""
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
