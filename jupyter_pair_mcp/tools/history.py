"""Group ``history``: versions with provenance, old versions, restore, and undo of an agent's own edits."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Annotated, Literal, cast

from mcp.server.mcpserver import Context
from pydantic import Field

from jupyter_pair_mcp.errors import InvalidArgument, Unavailable
from jupyter_pair_mcp.models.history import (
    HistoryResult,
    HistoryVersion,
    RestoreResult,
    UndoEditsResult,
    VersionCell,
    VersionContent,
)
from jupyter_pair_mcp.services.history import (
    HistoryService,
    Version,
    restore_report,
    undo_report,
    version_page,
    version_text,
)
from jupyter_pair_mcp.tools.notebook import check_max
from jupyter_pair_mcp.tools.params import MAX_CONTENT_LENGTH, DocumentPath, EndIndex, FirstCell, MaxContentLength
from jupyter_pair_mcp.tools.registry import READ, WRITE, Backends, ToolSpec
from jupyter_pair_mcp.tools.suggestions import refuse_in_review

#: Characters of a history search (a substring of a version's summary or author: both are short).
MAX_SEARCH = 1000

VersionId = Annotated[str, Field(description="From get_document_history.")]

Source = Literal["agent", "user", "restore", "disk"]


def _iso(timestamp: float) -> str:
    return datetime.fromtimestamp(timestamp, UTC).isoformat()


def _source(version: Version) -> Source:
    return cast(Source, version.source if version.source in ("agent", "user", "restore", "disk") else "agent")


def history_tools(b: Backends) -> list[ToolSpec]:
    def service() -> HistoryService:
        if b.history is None:
            raise Unavailable("document history is not available on this server")
        return cast(HistoryService, b.history)

    async def get_document_history(
        ctx: Context,
        path: DocumentPath,
        limit: Annotated[int, Field(description="Version limit (1-1000).")] = 10,
        offset: Annotated[int, Field(description="Versions to skip.")] = 0,
        search: Annotated[str | None, Field(description="Text in summary or author.")] = None,
        sort_desc: Annotated[bool, Field(description="Newest first.")] = True,
    ) -> HistoryResult:
        """A document's versions: who made each, what changed."""
        if limit < 1 or limit > 1000:
            raise InvalidArgument(f"limit must be between 1 and 1000, not {limit}")
        if offset < 0:
            raise InvalidArgument(f"offset must not be negative, not {offset}")
        if search is not None and not 1 <= len(search) <= MAX_SEARCH:
            raise InvalidArgument(f"search must have 1 to {MAX_SEARCH} characters, not {len(search)}")
        path, kind = await b.contents.require_document(path)
        versions = await service().versions(path, kind)
        listed = list(reversed(versions)) if sort_desc else list(versions)
        if search is not None:  # a substring, in any case, as a person searches a list
            needle = search.casefold()
            listed = [v for v in listed if needle in v.summary.casefold() or needle in v.author.casefold()]
        page = listed[offset : offset + limit]
        return HistoryResult(
            path=path,
            versions=[
                HistoryVersion(
                    version_id=v.version_id,
                    timestamp=_iso(v.timestamp),
                    source=_source(v),
                    author=v.author,
                    summary=v.summary,
                    changes=v.updates,
                )
                for v in page
            ],
            total=len(versions),
            matched=len(listed) if search is not None else None,
            next_offset=offset + limit if offset + limit < len(listed) else None,
        )

    async def get_document_version(
        ctx: Context,
        path: DocumentPath,
        version_id: VersionId,
        max_content_length: MaxContentLength = 100_000,
        start_index: FirstCell = 0,
        end_index: EndIndex = None,
    ) -> VersionContent:
        """Read a document as it was at a version."""
        check_max("max_content_length", max_content_length, MAX_CONTENT_LENGTH)
        if start_index < 0 or (end_index is not None and end_index < start_index):
            raise InvalidArgument("start_index must be >= 0 and end_index (exclusive) not before it")
        path, kind = await b.contents.require_document(path)
        version, doc = await service().content(path, kind, version_id)
        budget = max_content_length
        cells: list[VersionCell] | None = None
        content: str | None = None
        truncated = False
        cell_count = None
        if kind == "notebook":
            # Every cell of the version converted (outputs too): a scan, in the scan process for a big one.
            cell_count, page = await b.rooms.scanner.scan(doc, version_page, start_index, end_index)
            cells = []
            for cell_id, cell_type, source in page:
                cut = len(source) > budget
                truncated = truncated or cut
                cells.append(
                    VersionCell(id=cell_id, cell_type=cell_type, source=source[: max(budget, 0)], truncated=cut)
                )
                budget = max(budget - len(source), 0)
        else:
            text = version_text(doc)
            truncated = len(text) > max_content_length
            content = text[:max_content_length]
        return VersionContent(
            path=path,
            version_id=version.version_id,
            timestamp=_iso(version.timestamp),
            source=_source(version),
            summary=version.summary,
            cells=cells,
            cell_count=cell_count,
            content=content,
            truncated=truncated,
        )

    async def restore_document_version(ctx: Context, path: DocumentPath, version_id: VersionId) -> RestoreResult:
        """Restore a version live; lists people's edits reverted."""
        path, kind = await b.contents.require_document(path)
        refuse_in_review(b, ctx, None, "restore_document_version")
        outcome = await service().restore(path, kind, version_id, b.actors.of(ctx))
        return restore_report(path, outcome)

    async def undo_agent_edits(
        ctx: Context,
        path: DocumentPath,
        count: Annotated[int, Field(description="How many of your last edits (1-100).")] = 1,
    ) -> UndoEditsResult:
        """Undo this session's last edits in a document; typing is kept."""
        if count < 1 or count > 100:
            raise InvalidArgument(f"count must be between 1 and 100, not {count}")
        path, kind = await b.contents.require_document(path)
        actor = b.actors.of(ctx)
        history = service()
        result = await history.undo_edits(path, kind, actor, count)
        if not result.undone:
            raise InvalidArgument(
                f"nothing of yours to undo in {path!r}: this session made no edits there since its room opened "
                "(use get_document_history and restore_document_version for older edits)"
            )
        return undo_report(path, result)

    return [
        ToolSpec(get_document_history, "history", "Document history", READ, read_only=True),
        ToolSpec(get_document_version, "history", "Read an old version", READ, read_only=True),
        ToolSpec(restore_document_version, "history", "Restore a version", WRITE, read_only=False, idempotent=False),
        ToolSpec(undo_agent_edits, "history", "Undo my edits", WRITE, read_only=False, idempotent=False),
    ]
