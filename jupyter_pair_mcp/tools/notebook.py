"""Group ``notebook``, reading: notebooks as they are in their live collaboration room right now."""

from __future__ import annotations

import posixpath
import re
from collections import Counter
from typing import Annotated

from mcp.server.mcpserver import Context
from pydantic import Field

from jupyter_pair_mcp.adapters.contents.listing import Entry, matcher
from jupyter_pair_mcp.adapters.rooms import CellData
from jupyter_pair_mcp.adapters.rooms.cells import search_snapshot
from jupyter_pair_mcp.adapters.rooms.locks import lock_of
from jupyter_pair_mcp.adapters.rooms.problems import page as problems_page
from jupyter_pair_mcp.errors import InvalidArgument, NotFound
from jupyter_pair_mcp.models.results import (
    Cell,
    Collaboration,
    KernelInfo,
    NotebookContent,
    NotebookEntry,
    NotebookInfo,
    NotebookList,
    NotebookOutline,
    NotebookProblems,
    RenderedOutput,
    SaveResult,
    SearchMatch,
    SearchResult,
    SessionResult,
    User,
)
from jupyter_pair_mcp.render import CUT_MARKER, PickedImages, ReadBudget, cut, output_images, render_outputs
from jupyter_pair_mcp.tools.execution import with_images
from jupyter_pair_mcp.tools.params import (
    MAX_CONTENT_LENGTH,
    CollaborationState,
    EndIndex,
    FirstCell,
    ForkId,
    MaxContentLength,
    MaxResults,
    NotebookPath,
)
from jupyter_pair_mcp.tools.registry import READ, WRITE, Backends, ToolSpec
from jupyter_pair_mcp.tools.views import Reads, notebook_view

#: Rows one outline answer holds at most (a 2000-cell notebook comes back whole by default).
MAX_OUTLINE_CELLS = 5_000
#: Bytes of rows one outline answer holds at most (~150 a cell: 2000 cells fit).
MAX_OUTLINE_BYTES = 400_000
#: Rows and bytes of rows one problems answer holds at most (an agent fixes a page of problems, then asks again).
MAX_PROBLEM_ROWS = 500
MAX_PROBLEM_BYTES = 100_000


def check_max(name: str, value: int, limit: int) -> None:
    if value < 1 or value > limit:
        raise InvalidArgument(f"{name} must be between 1 and {limit}, got {value}")


def compile_query(query: str, regex: bool, case_sensitive: bool) -> re.Pattern[str]:
    if not query:
        raise InvalidArgument("the search text is empty")
    flags = 0 if case_sensitive else re.IGNORECASE
    try:
        return re.compile(query if regex else re.escape(query), flags | re.MULTILINE)
    except re.error as exc:
        raise InvalidArgument(f"invalid regular expression {query!r}: {exc}") from None


async def join_room(b: Backends, path: str, kind: str) -> SessionResult:
    """Open the room of an existing notebook or text file (or join the open one) and describe it."""
    existed = b.rooms.info(path, kind) is not None
    if kind == "notebook":
        await b.rooms.notebook(path)
    else:
        await b.rooms.text(path)
    info = b.rooms.info(path, kind)
    assert info is not None, "the room was just opened"
    return SessionResult(
        path=path,
        room_id=info.room_id,
        file_id=info.file_id,
        session_id=b.rooms.server_session_id(),
        status="joined" if existed else "created",
        collaborators=info.collaborators,
    )


def notebook_read_tools(b: Backends) -> list[ToolSpec]:
    async def list_notebooks(
        ctx: Context,
        path_prefix: Annotated[str, Field(description="Path prefix ('work/').")] = "",
        max_results: MaxResults = 50,
    ) -> NotebookList:
        """Notebooks and how many people have each open."""
        check_max("max_results", max_results, 1000)
        start, wanted = matcher(path_prefix)
        start = b.contents.normalize(start, allow_root=True)

        def accept(entry: Entry) -> bool:
            return entry.type == "notebook" and wanted(entry.path)

        entries, truncated = await b.contents.walk(start, accept=accept, max_results=max_results)
        notebooks = [
            NotebookEntry(
                path=e.path,
                name=e.name,
                last_modified=e.last_modified,
                size=e.size,
                collaborators=b.rooms.collaborators(e.path, "notebook"),
            )
            for e in entries
        ]
        return NotebookList(notebooks=notebooks, truncated=truncated)

    async def get_notebook(
        ctx: Context,
        path: NotebookPath,
        start_index: FirstCell = 0,
        end_index: EndIndex = None,
        cell_ids: Annotated[list[str] | None, Field(description="Or these cells.")] = None,
        include_outputs: Annotated[bool, Field(description="Outputs, as text.")] = True,
        include_images: Annotated[bool, Field(description="Also PNG/JPEG images.")] = False,
        include_collaboration_state: CollaborationState = True,
        max_content_length: MaxContentLength = 100_000,
        fork_id: ForkId = None,
    ) -> NotebookContent:
        """Read cells live (unsaved edits too); pages by next_index."""
        check_max("max_content_length", max_content_length, MAX_CONTENT_LENGTH)
        if include_images and not include_outputs:
            raise InvalidArgument("include_images needs include_outputs: images are outputs")
        path = await b.contents.require(path, "notebook")
        view = await notebook_view(b, ctx, path, fork_id)
        count = view.cell_count
        if cell_ids is not None:
            indexes = [view.resolve(cell_id=cid) for cid in cell_ids]
        else:
            end = count if end_index is None else end_index
            if start_index < 0 or end < 0:
                raise InvalidArgument("start_index and end_index must not be negative")
            if start_index > count or end > count or start_index > end:
                raise InvalidArgument(
                    f"range {start_index}..{end} is not within the notebook's {count} cells (0-{count}, end exclusive)"
                )
            indexes = list(range(start_index, end))
        cells: list[Cell] = []
        cut_cells: list[str] = []
        used, next_index = 0, None
        reads = Reads(b, ctx, path, fork_id)
        images: list[tuple[str, str, str]] = []  # (cell id, MIME type, base64) of the returned cells' images
        spend = ReadBudget()  # the rendering work of this read, shared by its outputs
        for data in view.cells(indexes):
            cell, outputs_cut = _cell(data, include_outputs, b.max_output_length, spend)
            size = len(cell.source) + sum(len(o.text) for o in cell.outputs)
            if cells and used + size > max_content_length:
                next_index = data.index if cell_ids is None else None
                break
            source_cut = len(data.source) > max_content_length
            if source_cut:  # a single huge cell still comes back, cut (and its revision says so)
                cell.source = cut(cell.source, max_content_length)
            cell.revision = reads.served(data.source, data.id, cut=source_cut)
            if source_cut or outputs_cut:
                cut_cells.append(data.id)
            cells.append(cell)
            used += size
            if include_images:
                images.extend((data.id, mime, image) for mime, image in output_images(data.outputs))
        truncated = len(cells) < len(indexes) or bool(cut_cells)
        collaboration = None
        if include_collaboration_state:
            room = b.rooms.info(path, "notebook")
            if room is not None:
                users = [User(username=u["username"], display_name=u["display_name"]) for u in room.users]
                collaboration = Collaboration(room_id=room.room_id, users=users)
        content = NotebookContent(
            path=path,
            cell_count=count,
            cells=cells,
            metadata=view.notebook_metadata(),
            collaboration=collaboration,
            truncated=truncated,
            next_index=next_index,
            cut_cells=cut_cells,
        )
        if not b.execution.include_images:  # the admin's choice (JupyterPairMCP.include_images)
            return with_images(content, PickedImages(omitted=Counter(off=len(images))), b.image_limits)  # type: ignore[return-value]
        return with_images(content, images, b.image_limits)  # type: ignore[return-value]

    async def get_notebook_outline(
        ctx: Context,
        path: NotebookPath,
        start_index: FirstCell = 0,
    ) -> NotebookOutline:
        """Each cell's first line, heading, outputs, errors; pages by next_index."""
        path = await b.contents.require(path, "notebook")
        view = await b.rooms.notebook(path)
        # Parsing and shaping every cell is Python work per cell: one scan off the loop serves every page.
        try:
            found = await b.rooms.outline(view, start_index, MAX_OUTLINE_BYTES, MAX_OUTLINE_CELLS)
        except ValueError as exc:
            raise InvalidArgument(str(exc)) from None
        return NotebookOutline(path=path, cell_count=found.cell_count, cells=found.rows, next_index=found.next_index)

    async def get_notebook_problems(
        ctx: Context,
        path: NotebookPath,
        start_index: FirstCell = 0,
    ) -> NotebookProblems:
        """Failed, unrun, out-of-order cells; names used before defined. Runs nothing."""
        path = await b.contents.require(path, "notebook")
        view = await b.rooms.notebook(path)
        info = view.notebook_metadata().get("language_info")
        language = str(info.get("name") or "python") if isinstance(info, dict) else "python"
        # Parsing every cell is Python work per cell: one scan off the loop serves every page of this version.
        rows = await b.rooms.problem_rows(view, python=language.lower() == "python")
        try:
            head, found = problems_page(rows, start_index, MAX_PROBLEM_BYTES, MAX_PROBLEM_ROWS)
        except ValueError as exc:
            raise InvalidArgument(str(exc)) from None
        return NotebookProblems(
            path=path,
            cell_count=found.cell_count,
            totals=head["totals"],
            problems=found.rows,
            names_checked=head["names"],
            names_unchecked_from=head["names_from"],
            next_index=found.next_index,
        )

    async def get_notebook_info(ctx: Context, path: NotebookPath) -> NotebookInfo:
        """Counts by cell type, cells run, kernel, collaborators."""
        path = await b.contents.require(path, "notebook")
        view = await b.rooms.notebook(path)
        counts = view.counts()
        cell_count = view.cell_count
        metadata = view.notebook_metadata()
        spec = metadata.get("kernelspec")
        kernel = await b.kernels.kernel_for(path)
        return NotebookInfo(
            path=path,
            name=posixpath.basename(path),
            cell_count=cell_count,
            code_count=counts.get("code", 0),
            markdown_count=counts.get("markdown", 0),
            raw_count=counts.get("raw", 0),
            executed_count=counts.get("executed", 0),
            nbformat=str(metadata["nbformat"]),
            kernelspec=str(spec.get("name") or "") or None if isinstance(spec, dict) else None,
            kernel=KernelInfo(name=kernel.name, id=kernel.id, state=kernel.state) if kernel else None,
            last_modified=await b.contents.last_modified(path),
            collaborators=b.rooms.collaborators(path, "notebook"),
        )

    async def create_notebook_session(ctx: Context, path: NotebookPath) -> SessionResult:
        """Open or join the notebook's live room."""
        return await join_room(b, await b.contents.require(path, "notebook"), "notebook")

    async def search_notebook(
        ctx: Context,
        path: NotebookPath,
        query: Annotated[str, Field(description="Text to find.")],
        regex: Annotated[bool, Field(description="query is a regex.")] = False,
        case_sensitive: Annotated[bool, Field(description="Match case.")] = False,
        cell_type: Annotated[str | None, Field(description="Only this cell type.")] = None,
        max_results: MaxResults = 50,
    ) -> SearchResult:
        """Find text in cell sources."""
        check_max("max_results", max_results, 1000)
        if cell_type is not None and cell_type not in ("code", "markdown", "raw"):
            raise InvalidArgument(f"cell_type {cell_type!r} is not one of code, markdown, raw")
        pattern = compile_query(query, regex, case_sensitive)
        path = await b.contents.require(path, "notebook")
        view = await b.rooms.notebook(path)
        # Parsing and scanning a big notebook takes long: a scan, off the loop.
        found, truncated = await b.rooms.scanner.scan(view.ydoc, search_snapshot, pattern, cell_type, max_results)
        matches = [
            SearchMatch(cell_id=m.cell_id, index=m.index, line=m.line, column=m.column, text=m.text) for m in found
        ]
        return SearchResult(matches=matches, truncated=truncated)

    async def save_notebook(
        ctx: Context,
        path: NotebookPath,
        new_path: Annotated[str | None, Field(description="Also as this new .ipynb (never overwrites).")] = None,
    ) -> SaveResult:
        """Save the live notebook to disk."""
        path = await b.contents.require(path, "notebook")
        target = None
        if new_path is not None:
            # Every check before anything is written: a refused save-as leaves no file and saves nothing.
            target = b.contents.normalize(new_path)
            if not target.endswith(".ipynb"):
                raise InvalidArgument(f"new_path {target!r} must end in .ipynb: it is saved as a notebook")
            if await b.contents.kind(target, normalized=True) is not None:
                raise InvalidArgument(f"{target!r} already exists: save_notebook never overwrites; give a new new_path")
            parent = posixpath.dirname(target)
            found = await b.contents.kind(parent, normalized=True) if parent else "directory"
            if found is None:
                raise NotFound(
                    f"directory {parent!r} does not exist: create it first (create_document type 'directory')"
                )
            if found != "directory":
                raise InvalidArgument(f"{parent!r} is a {found}, not a directory: give a path inside a directory")
        await b.rooms.notebook(path)
        saved = await b.rooms.save(path, "notebook")
        last_modified = await b.contents.last_modified(path)
        if target is None:
            return SaveResult(path=path, saved=saved, last_modified=last_modified)
        # The file now holds the live content (saved through the room), so the contents manager's copy of it is
        # the live notebook; the copy refuses an existing target and removes what a failed copy left behind.
        await b.contents.copy(path, target)
        return SaveResult(
            path=path,
            saved=saved,
            last_modified=last_modified,
            new_path=target,
            new_last_modified=await b.contents.last_modified(target),
        )

    return [
        ToolSpec(list_notebooks, "notebook", "List notebooks", READ, read_only=True),
        ToolSpec(get_notebook, "notebook", "Read notebook cells", READ, read_only=True),
        ToolSpec(get_notebook_outline, "notebook", "Outline a notebook", READ, read_only=True),
        ToolSpec(get_notebook_problems, "notebook", "A notebook's problems", READ, read_only=True),
        ToolSpec(get_notebook_info, "notebook", "Summarize a notebook", READ, read_only=True),
        ToolSpec(create_notebook_session, "notebook", "Join a notebook's live room", READ, read_only=True),
        ToolSpec(search_notebook, "notebook", "Search a notebook", READ, read_only=True),
        ToolSpec(save_notebook, "notebook", "Save a notebook now", WRITE, read_only=False, idempotent=True),
    ]


def _cell(data: CellData, include_outputs: bool, max_output_length: int, spend: ReadBudget) -> tuple[Cell, bool]:
    """The cell as returned (its revision is set by the caller), and whether an output text was cut."""
    outputs = render_outputs(data.outputs, max_output_length, spend) if include_outputs else []
    cell = Cell(
        index=data.index,
        id=data.id,
        cell_type=data.cell_type,
        source=data.source,
        revision="",
        execution_count=data.execution_count,
        outputs=[RenderedOutput(**o) for o in outputs],
        locked=(lock_of(data.metadata) or {}).get("by"),
    )
    return cell, any(CUT_MARKER.search(o["text"][-64:]) for o in outputs)  # cut() puts its marker last
