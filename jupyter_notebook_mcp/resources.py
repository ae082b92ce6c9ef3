"""Notebooks and text documents as MCP resources (read-only; reading never executes anything).

URIs (paths percent-encoded, ``/`` included, so any path round-trips):

- ``notebook://list`` (optional ``?prefix=``): JSON list of notebooks, like ``list_notebooks``
- ``notebook://{path}``: the notebook as Markdown (cells, with outputs as text)
- ``notebook://{path}/json``: the notebook as JSON (cells with rendered outputs, metadata)
- ``notebook://{path}/cells``: JSON list of cells
- ``notebook://{path}/cells/{cell_id}``: one cell as JSON
- ``document://{path}``: a text file's live content

Like tools, every read goes through the live room, asks Jupyter's authorizer for read on
``contents``, and turns our errors into resource errors at this one boundary.
"""

from __future__ import annotations

import functools
import json
import logging
import secrets
from collections.abc import Awaitable, Callable
from typing import Any
from urllib.parse import quote

from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ResourceError

from .contents import Entry, matcher
from .errors import NotebookMCPError
from .render import render_outputs
from .rooms import CellData
from .tools.registry import READ, Backends, authorize
from .tools.views import Reads

log = logging.getLogger(__name__)


def notebook_uri(path: str, view: str = "") -> str:
    """The resource URI of a notebook view ("", "json", "cells" or "cells/<id>")."""
    return f"notebook://{quote(path, safe='')}" + (f"/{view}" if view else "")


def document_uri(path: str) -> str:
    return f"document://{quote(path, safe='')}"


def _guarded(fn: Callable[..., Awaitable[str]]) -> Callable[..., Awaitable[str]]:
    @functools.wraps(fn)
    async def read(**kwargs: Any) -> str:
        ctx = next((v for v in kwargs.values() if isinstance(v, Context)), None)
        try:
            await authorize(ctx, *READ)
            return await fn(**kwargs)
        except NotebookMCPError as exc:
            raise ResourceError(str(exc)) from None
        except ResourceError:
            raise
        except Exception:
            ref = secrets.token_hex(4)
            log.exception("MCP resource read failed (ref %s)", ref)
            raise ResourceError(f"internal error (ref {ref}); the Jupyter server log has the details") from None

    return read


def register_resources(server: MCPServer, b: Backends) -> None:
    async def cells_json(ctx: Context, path: str) -> tuple[str, list[dict[str, Any]], dict[str, Any]]:
        path = await b.contents.require(path, "notebook")
        view = await b.rooms.notebook(path)
        reads = Reads(b, ctx, path)
        cells = [_cell_json(c, reads.served(c.source, c.id), b.max_output_length) for c in view.all_cells()]
        return path, cells, view.notebook_metadata()

    @server.resource(
        "notebook://list{?prefix}",
        name="notebooks",
        mime_type="application/json",
        description="Notebooks under the Jupyter root (optionally only those whose path starts with prefix).",
    )
    @_guarded
    async def notebook_list(ctx: Context, prefix: str = "") -> str:
        start, wanted = matcher(prefix)
        start = b.contents.normalize(start, allow_root=True)

        def accept(entry: Entry) -> bool:
            return entry.type == "notebook" and wanted(entry.path)

        entries, truncated = await b.contents.walk(start, accept=accept, max_results=1000)
        items = [
            {"path": e.path, "uri": notebook_uri(e.path), "last_modified": e.last_modified, "size": e.size}
            for e in entries
        ]
        return json.dumps({"notebooks": items, "truncated": truncated})

    @server.resource(
        "notebook://{path}",
        name="notebook",
        mime_type="text/markdown",
        description="A notebook as Markdown, live (code in fenced blocks, outputs as text).",
    )
    @_guarded
    async def notebook_markdown(ctx: Context, path: str) -> str:
        path, cells, metadata = await cells_json(ctx, path)
        language = (metadata.get("language_info") or {}).get("name") or "python"
        parts = [f"# {path}\n"]
        for cell in cells:
            header = f"<!-- cell {cell['index']} id={cell['id']} {cell['cell_type']} revision={cell['revision']} -->"
            if cell["cell_type"] == "markdown":
                parts.append(f"{header}\n{cell['source']}\n")
            elif cell["cell_type"] == "raw":
                parts.append(f"{header}\n```\n{cell['source']}\n```\n")
            else:
                count = cell["execution_count"]
                parts.append(
                    f"{header} [{count if count is not None else ' '}]\n```{language}\n{cell['source']}\n```\n"
                )
                for output in cell["outputs"]:
                    parts.append(f"```text\n{output['text']}\n```\n")
        return "\n".join(parts)

    @server.resource("notebook://{path}/json", name="notebook-json", mime_type="application/json")
    @_guarded
    async def notebook_json(ctx: Context, path: str) -> str:
        path, cells, metadata = await cells_json(ctx, path)
        return json.dumps({"path": path, "cell_count": len(cells), "metadata": metadata, "cells": cells})

    @server.resource("notebook://{path}/cells", name="notebook-cells", mime_type="application/json")
    @_guarded
    async def notebook_cells(ctx: Context, path: str) -> str:
        _, cells, _ = await cells_json(ctx, path)
        return json.dumps(cells)

    @server.resource("notebook://{path}/cells/{cell_id}", name="notebook-cell", mime_type="application/json")
    @_guarded
    async def notebook_cell(ctx: Context, path: str, cell_id: str) -> str:
        path = await b.contents.require(path, "notebook")
        view = await b.rooms.notebook(path)
        cell = view.cell(view.resolve(cell_id=cell_id))
        return json.dumps(_cell_json(cell, Reads(b, ctx, path).served(cell.source, cell.id), b.max_output_length))

    @server.resource("document://{path}", name="document", mime_type="text/plain", description="A text file, live.")
    @_guarded
    async def document(ctx: Context, path: str) -> str:
        path = await b.contents.require(path, "file")
        text = (await b.rooms.text(path)).text
        Reads(b, ctx, path).served(text)  # a text resource has no field for it: remembered for the session
        return text


def _cell_json(cell: CellData, revision: str, max_output_length: int) -> dict[str, Any]:
    return {
        "index": cell.index,
        "id": cell.id,
        "cell_type": cell.cell_type,
        "source": cell.source,
        "revision": revision,
        "execution_count": cell.execution_count,
        "outputs": render_outputs(cell.outputs, max_output_length),
    }
