"""Group ``notebook``: notebooks on their live collaboration rooms."""

from __future__ import annotations

from mcp.server.mcpserver import Context

from ..contents import ContentsAdapter, Entry, matcher
from ..errors import InvalidArgument
from ..models import NotebookEntry, NotebookList
from ..rooms import RoomsAdapter
from .registry import ToolSpec

READ = ("read", "contents")


def notebook_tools(contents: ContentsAdapter, rooms: RoomsAdapter) -> list[ToolSpec]:
    async def list_notebooks(ctx: Context, path_prefix: str = "", max_results: int = 50) -> NotebookList:
        """List notebooks (.ipynb) under the Jupyter root, with how many people have each open.

        path_prefix: only notebooks whose path starts with it ('work/' for a directory).
        """
        if max_results < 1 or max_results > 1000:
            raise InvalidArgument(f"max_results must be between 1 and 1000, got {max_results}")
        start, wanted = matcher(path_prefix)
        start = contents.normalize(start, allow_root=True)

        def accept(entry: Entry) -> bool:
            return entry.type == "notebook" and wanted(entry.path)

        entries, truncated = await contents.walk(start, accept=accept, max_results=max_results)
        return NotebookList(
            notebooks=[
                NotebookEntry(
                    path=e.path,
                    name=e.name,
                    last_modified=e.last_modified,
                    size=e.size,
                    collaborators=rooms.collaborators(e.path, "notebook"),
                )
                for e in entries
            ],
            truncated=truncated,
        )

    return [ToolSpec(list_notebooks, "notebook", "List notebooks", READ, read_only=True)]
