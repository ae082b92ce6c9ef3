"""Group ``document``: files and directories through the contents manager (text rooms come later)."""

from __future__ import annotations

from typing import Annotated

from mcp.server.mcpserver import Context
from pydantic import Field

from jupyter_pair_mcp.adapters.contents.listing import Entry, matcher
from jupyter_pair_mcp.errors import InvalidArgument
from jupyter_pair_mcp.models.documents import (
    CopiedDocument,
    CreatedDocument,
    DeletedDocument,
    DocumentEntry,
    DocumentList,
    ExistsResult,
    RenamedDocument,
)
from jupyter_pair_mcp.tools.params import AnyPath, MaxResults
from jupyter_pair_mcp.tools.registry import READ, WRITE, Backends, ToolSpec

_TYPES = ("file", "text", "markdown", "notebook", "directory")
_MARKDOWN = (".md", ".markdown")


def document_tools(b: Backends) -> list[ToolSpec]:
    contents, rooms = b.contents, b.rooms

    async def list_documents(
        ctx: Context,
        path_filter: Annotated[str, Field(description="Path prefix ('work/') or glob ('**/*.md'); '' = all.")] = "",
        file_type: Annotated[
            str | None, Field(description="file, text, markdown, notebook, directory, or an extension ('.csv').")
        ] = None,
        max_results: MaxResults = 50,
    ) -> DocumentList:
        """Files, notebooks and directories."""
        if max_results < 1 or max_results > 1000:
            raise InvalidArgument(f"max_results must be between 1 and 1000, got {max_results}")
        if file_type is not None and file_type not in _TYPES and not file_type.startswith("."):
            raise InvalidArgument(
                f"file_type {file_type!r} is not one of {', '.join(_TYPES)} or an extension like '.md'"
            )
        # The jupyter-collaboration-mcp design's names: 'text' is any file that is not a notebook.
        suffixes = _MARKDOWN if file_type == "markdown" else (file_type,) if file_type and file_type[0] == "." else None
        kind = "file" if file_type in ("text", "markdown") else file_type
        start, wanted = matcher(path_filter)
        start = contents.normalize(start, allow_root=True)

        def accept(entry: Entry) -> bool:
            if not wanted(entry.path):
                return False
            if suffixes is not None:
                return entry.type != "directory" and entry.name.lower().endswith(suffixes)
            return kind is None or entry.type == kind

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

    async def document_exists(ctx: Context, path: AnyPath) -> ExistsResult:
        """Whether a path exists, and what it is."""
        kind = await contents.kind(path)
        return ExistsResult(exists=kind is not None, type=kind)  # type: ignore[arg-type]

    async def create_document(
        ctx: Context,
        path: Annotated[str, Field(description="New document.")],
        type: Annotated[
            str | None, Field(description="file, markdown, notebook or directory (default: by extension).")
        ] = None,
        content: Annotated[str, Field(description="Initial text (notebook: a first markdown cell).")] = "",
        kernel_name: Annotated[str | None, Field(description="Notebook's kernel (list_kernelspecs).")] = None,
    ) -> CreatedDocument:
        """Create a file, notebook or directory; never overwrites."""
        if type is not None and type not in ("file", "markdown", "notebook", "directory"):
            raise InvalidArgument(f"type {type!r} is not one of file, markdown, notebook, directory")
        if type != "directory" and path.lower().endswith(".ipynb"):
            type = "notebook"  # a .ipynb holding plain text would be a broken notebook
        type = type or "file"
        kind = "file" if type == "markdown" else type
        metadata = None
        if kind == "notebook":  # a full kernelspec: JupyterLab then starts that kernel without asking
            metadata = (await b.kernels.kernelspec(kernel_name)).metadata()
        elif kernel_name is not None:
            raise InvalidArgument(f"kernel_name is for notebooks; {path!r} would be a {type}: leave it out")
        created = await contents.create(path, kind, content, metadata=metadata)
        return CreatedDocument(path=created, type=type, created=True)  # type: ignore[arg-type]

    async def rename_document(
        ctx: Context, path: AnyPath, new_path: Annotated[str, Field(description="New path.")]
    ) -> RenamedDocument:
        """Rename or move a file, notebook or directory."""
        old, new = await contents.rename(path, new_path)
        return RenamedDocument(path=old, new_path=new)

    async def copy_document(
        ctx: Context,
        path: Annotated[str, Field(description="File or notebook path.")],
        copy_path: Annotated[str, Field(description="Free path in an existing directory.")],
    ) -> CopiedDocument:
        """Copy a file or notebook as saved (save_notebook first)."""
        source, copy = await contents.copy(path, copy_path)
        return CopiedDocument(path=source, copy_path=copy)

    async def delete_document(ctx: Context, path: AnyPath) -> DeletedDocument:
        """Delete a file, notebook or empty directory; open tabs keep an unsaved copy."""
        return DeletedDocument(deleted=await contents.delete(path))

    return [
        ToolSpec(list_documents, "document", "List documents", READ, read_only=True),
        ToolSpec(document_exists, "document", "Check a path exists", READ, read_only=True),
        ToolSpec(create_document, "document", "Create a document", WRITE, read_only=False, idempotent=False),
        ToolSpec(rename_document, "document", "Rename a document", WRITE, read_only=False, idempotent=False),
        ToolSpec(copy_document, "document", "Copy a document", WRITE, read_only=False, idempotent=False),
        ToolSpec(
            delete_document, "document", "Delete a document", WRITE, read_only=False, destructive=True, idempotent=False
        ),
    ]
