"""Group ``document``: files and directories through the contents manager (text rooms come later)."""

from __future__ import annotations

from mcp.server.mcpserver import Context

from ..contents import Entry, matcher
from ..errors import InvalidArgument
from ..models import DocumentEntry, DocumentList, ExistsResult
from .registry import READ, Backends, ToolSpec

_TYPES = ("file", "notebook", "directory")


def document_tools(b: Backends) -> list[ToolSpec]:
    contents, rooms = b.contents, b.rooms

    async def list_documents(
        ctx: Context, path_filter: str = "", file_type: str | None = None, max_results: int = 50
    ) -> DocumentList:
        """List files, notebooks and directories under the Jupyter root.

        path_filter: a path prefix ('work/' lists that directory and below, 'work/da' what starts so)
        or a glob over whole paths ('**/*.md', 'data/*.csv'). file_type: 'file', 'notebook',
        'directory' or an extension like '.md'. Hidden files appear only if the server shows them.
        """
        if max_results < 1 or max_results > 1000:
            raise InvalidArgument(f"max_results must be between 1 and 1000, got {max_results}")
        if file_type is not None and file_type not in _TYPES and not file_type.startswith("."):
            raise InvalidArgument(
                f"file_type {file_type!r} is not one of 'file', 'notebook', 'directory' or an extension like '.md'"
            )
        start, wanted = matcher(path_filter)
        start = contents.normalize(start, allow_root=True)

        def accept(entry: Entry) -> bool:
            if not wanted(entry.path):
                return False
            if file_type is None:
                return True
            if file_type.startswith("."):
                return entry.type != "directory" and entry.name.endswith(file_type)
            return entry.type == file_type

        entries, truncated = await contents.walk(start, accept=accept, max_results=max_results)
        return DocumentList(
            documents=[
                DocumentEntry(
                    path=e.path,
                    name=e.name,
                    type=e.type,  # type: ignore[arg-type]
                    size=e.size,
                    last_modified=e.last_modified,
                    writable=e.writable,
                    collaborators=rooms.collaborators(e.path, e.type),
                )
                for e in entries
            ],
            truncated=truncated,
        )

    async def document_exists(ctx: Context, path: str) -> ExistsResult:
        """Tell whether a path exists under the Jupyter root, and whether it is a notebook, file or directory."""
        kind = await contents.kind(path)
        return ExistsResult(exists=kind is not None, type=kind)  # type: ignore[arg-type]

    return [
        ToolSpec(list_documents, "document", "List documents", READ, read_only=True),
        ToolSpec(document_exists, "document", "Check a path exists", READ, read_only=True),
    ]
