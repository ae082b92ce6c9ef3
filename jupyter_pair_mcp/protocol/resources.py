"""Notebooks and text documents as MCP resources (read-only; reading never executes anything).

URIs (paths percent-encoded, ``/`` included, so any path round-trips):

- ``notebook://list`` (optional ``?prefix=``): JSON list of notebooks, like ``list_notebooks``
- ``notebook://{path}``: the notebook as Markdown (cells, with outputs as text)
- ``notebook://{path}/json``: the notebook as JSON (cells with rendered outputs, metadata)
- ``notebook://{path}/cells``: JSON list of cells
- ``notebook://{path}/cells/{cell_id}``: one cell: its source text, then each output (images as blobs)
- ``document://{path}``: a text file's live content
- ``notebook://current``: the notebook the person behind the credential has focused in JupyterLab (from its
  global awareness), read as ``notebook://{path}`` reads it; ``_meta.path`` names it

We serve ``resources/list``, ``resources/templates/list`` and ``resources/read`` ourselves instead of
through MCPServer's resource manager: a listing of every file is paged (no static registry holds it), a
cell is several contents (MCPServer reads give one), and a missing resource gets the error code of the
request's protocol era. Like tools, every read goes through the live room and asks Jupyter's
authorizer for read on ``contents``; our errors become protocol errors at this one boundary. Like tools,
every read is bounded: at most ``max_resource_length`` characters of text (and a tool result's image limits),
and a cut read says what it left out and which tool call reads on (:mod:`.resource_notebooks`).
"""

from __future__ import annotations

import base64
import binascii
import json
import logging
import mimetypes
from typing import Any
from urllib.parse import quote

from mcp.server.context import ServerRequestContext
from mcp.server.mcpserver import Context, MCPServer
from mcp.shared.exceptions import MCPError
from mcp_types import (
    INVALID_PARAMS,
    Annotations,
    ListResourcesResult,
    ListResourceTemplatesResult,
    PaginatedRequestParams,
    ReadResourceRequestParams,
    ReadResourceResult,
    Resource,
    ResourceTemplate,
    TextResourceContents,
)
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from jupyter_pair_mcp.adapters.contents.listing import Entry, matcher, walk_after
from jupyter_pair_mcp.errors import InvalidArgument, NotFound, PairMCPError, is_fault
from jupyter_pair_mcp.protocol.faults import internal_error
from jupyter_pair_mcp.protocol.resource_notebooks import Contents, Page, as_json, cell_contents, markdown, source_mime
from jupyter_pair_mcp.protocol.resource_notebooks import page as read_page
from jupyter_pair_mcp.protocol.subscribers import ResourceRef, parse_uri
from jupyter_pair_mcp.render import cut
from jupyter_pair_mcp.tools.registry import READ, Backends, Scope, authorize, check_folder, in_folders
from jupyter_pair_mcp.tools.views import Reads

log = logging.getLogger(__name__)

RESOURCE_NOT_FOUND = -32002
"""Resource not found, as the 2025-11-25 protocol defines it (retired in 2026-07-28, see :func:`not_found`)."""

PAGE_SIZE = 100
MAX_LISTED = 1000
"""``resources/list`` lists at most this many notebooks and text documents, in pages of ``PAGE_SIZE``."""

_TEXT_APPLICATIONS = frozenset(
    {"application/json", "application/javascript", "application/xml", "application/x-sh", "application/toml"}
)

TEMPLATES = [
    ResourceTemplate(
        uri_template="notebook://list{?prefix}",
        name="notebooks",
        mime_type="application/json",
        description="Notebooks under the Jupyter root (optionally only those whose path starts with prefix).",
    ),
    ResourceTemplate(
        uri_template="notebook://{path}",
        name="notebook",
        mime_type="text/markdown",
        description="A notebook as Markdown, live (code in fenced blocks, outputs as text).",
    ),
    ResourceTemplate(uri_template="notebook://{path}/json", name="notebook-json", mime_type="application/json"),
    ResourceTemplate(uri_template="notebook://{path}/cells", name="notebook-cells", mime_type="application/json"),
    ResourceTemplate(
        uri_template="notebook://{path}/cells/{cell_id}",
        name="notebook-cell",
        description="One cell: its source (text/x-python, text/markdown...), then each output (images as blobs).",
    ),
    ResourceTemplate(uri_template="document://{path}", name="document", description="A text file, live."),
    ResourceTemplate(
        uri_template="notebook://current",
        name="notebook-current",
        mime_type="text/markdown",
        description="The notebook you have focused in JupyterLab, as notebook://{path} reads it.",
    ),
]
CURRENT = "notebook://current"
"""The focused notebook's URI (a notebook whose path is ``current`` is still read by its ``/json`` and ``/cells``)."""


def notebook_uri(path: str, view: str = "") -> str:
    """The resource URI of a notebook view ("", "json", "cells" or "cells/<id>")."""
    return f"notebook://{quote(path, safe='')}" + (f"/{view}" if view else "")


def document_uri(path: str) -> str:
    return f"document://{quote(path, safe='')}"


def text_mime(name: str) -> str | None:
    """The MIME type of a file we serve as a text document, or None for one that is not text (by its name)."""
    mime = mimetypes.guess_type(name, strict=False)[0]
    if mime is None:
        return "text/plain"  # README, Makefile, LICENSE: text more often than not
    if mime.startswith("text/") or mime in _TEXT_APPLICATIONS or mime.endswith(("+json", "+xml")):
        return mime
    return None


def not_found(protocol_version: str, uri: str, message: str) -> MCPError:
    """The error of a resource that does not exist, in the request's protocol era.

    2025-11-25 defines -32002 (resource not found). 2026-07-28 retires that code (``mcp_types/jsonrpc.py``)
    and SEP-2164 makes it invalid params: the SDK's own ``MCPServer._handle_read_resource``
    (``mcp/server/mcpserver/server.py``) answers a ``ResourceNotFoundError`` with -32602 and
    ``data={"uri": ...}``, and so do we in that era. The URI is in ``data`` either way.
    """
    code = INVALID_PARAMS if protocol_version in MODERN_PROTOCOL_VERSIONS else RESOURCE_NOT_FOUND
    return MCPError(code=code, message=message, data={"uri": uri})


def register_resources(server: MCPServer, b: Backends) -> None:
    """Serve the resource methods (the SDK then advertises the ``resources`` capability)."""
    lowlevel = server._lowlevel_server  # MCPServer exposes no public accessor for its low-level server
    readers = _Readers(b)

    async def read(ctx: ServerRequestContext[Any, Any], params: ReadResourceRequestParams) -> ReadResourceResult:
        uri = str(params.uri)
        context = Context(request_context=ctx, mcp_server=server)
        try:
            await authorize(context, *READ)
            ref = parse_uri(uri)
            if ref is None:
                raise NotFound(f"no resource {uri!r}: see resources/templates/list for the URIs this server serves")
            if uri == CURRENT:
                ref = ResourceRef("notebook", readers.focused(context))
            # A listing is checked by the folder its walk starts in, as list_notebooks' path_prefix is.
            check_folder(ctx.request, matcher(ref.prefix)[0] if ref.kind == "list" else ref.path)
            if b.stops and ref.kind != "list":
                _admit(b, context, ref.path)
            contents = await readers.read(context, uri, ref)
            if uri == CURRENT:
                contents[0].meta = {**(contents[0].meta or {}), "path": ref.path}
            return ReadResourceResult(contents=contents)
        except NotFound as exc:
            raise not_found(ctx.protocol_version, uri, str(exc)) from None
        except PairMCPError as exc:
            raise _protocol_error(exc) from None
        except MCPError:
            raise
        except BaseException as exc:
            if not is_fault(exc):  # cancelled, or the process is ending
                raise
            raise internal_error("MCP resource read", exc) from None

    async def list_resources(
        ctx: ServerRequestContext[Any, Any], params: PaginatedRequestParams
    ) -> ListResourcesResult:
        try:
            await authorize(Context(request_context=ctx, mcp_server=server), *READ)
            resources, cursor = await readers.page(params.cursor, in_folders(ctx.request))
        except PairMCPError as exc:
            raise _protocol_error(exc) from None
        return ListResourcesResult(resources=resources, next_cursor=cursor)

    async def list_templates(
        ctx: ServerRequestContext[Any, Any], params: PaginatedRequestParams
    ) -> ListResourceTemplatesResult:
        return ListResourceTemplatesResult(resource_templates=TEMPLATES)

    lowlevel.add_request_handler("resources/list", PaginatedRequestParams, list_resources)
    lowlevel.add_request_handler("resources/templates/list", PaginatedRequestParams, list_templates)
    lowlevel.add_request_handler("resources/read", ReadResourceRequestParams, read)


def _admit(b: Backends, ctx: Context, path: str) -> None:
    """Refuse a read by an agent a person stopped in that document (as its tool calls are)."""
    try:
        normalized = b.contents.normalize(path)
    except PairMCPError:
        return  # the reader says what is wrong with the path
    b.stops.check(b.actors.of(ctx), normalized, "a resource read")


def _protocol_error(exc: PairMCPError) -> MCPError:
    """Any other refusal (a path naming something else, a refused permission): invalid params, as for
    ``resources/subscribe``; the message says what to change."""
    return MCPError(code=INVALID_PARAMS, message=str(exc))


class _Readers:
    """What each resource URI reads, and the paged listing."""

    def __init__(self, b: Backends) -> None:
        self.b = b

    async def read(self, ctx: Context, uri: str, ref: ResourceRef) -> Contents:
        if ref.kind == "list":
            return [_text(uri, await self.notebook_list(ref.prefix), "application/json")]
        if ref.kind == "file":
            return [await self.document(ctx, uri, ref.path)]
        if ref.cell_id is not None:
            return await self.cell(ctx, uri, ref.path, ref.cell_id)
        return [await self.notebook(ctx, uri, ref.path, ref.view)]

    def focused(self, ctx: Context) -> str:
        """The path of the notebook the caller's person has focused in JupyterLab, else an error saying so."""
        presence = self.b.presence
        path = presence.focused_notebook(self.b.actors.of(ctx)) if presence is not None else None
        if path is None:
            raise NotFound(
                "no notebook is focused in JupyterLab by the user of this credential: open one there (or read "
                "notebook://{path} for any notebook)"
            )
        return str(path)

    # -- the listing ----------------------------------------------------------------------------
    async def page(self, cursor: str | None, scope: Scope | None = None) -> tuple[list[Resource], str | None]:
        """One page of ``resources/list``: walks only as far as the page (and one entry to know there is more).
        A grant limited to folders (``scope``) is listed only what is in them, walking only toward them."""
        contents = self.b.contents
        listed, directories, after = _decode_cursor(cursor)
        if after:
            try:
                after = contents.normalize(after)
            except InvalidArgument:
                raise InvalidArgument("invalid cursor: list again without one") from None
        size = min(PAGE_SIZE, MAX_LISTED - listed)
        budget = contents.max_directories - directories
        if scope is not None and after and not scope.covers(after):
            raise InvalidArgument("invalid cursor: list again without one")

        def accept(entry: Entry) -> bool:
            return _listable(entry) and (scope is None or scope.covers(entry.path))

        entries, walked, _ = await walk_after(
            contents,
            after,
            accept=accept,
            limit=size + 1,
            max_directories=max(budget, 0),
            enters=scope.enters if scope is not None else None,
        )
        page = entries[:size]
        more = len(entries) > size and listed + size < MAX_LISTED
        cursor = _encode_cursor(listed + size, directories + walked, page[-1].path) if more else None
        return [_resource(entry) for entry in page], cursor

    async def notebook_list(self, prefix: str) -> str:
        start, wanted = matcher(prefix)
        start = self.b.contents.normalize(start, allow_root=True)

        def accept(entry: Entry) -> bool:
            return entry.type == "notebook" and wanted(entry.path)

        entries, truncated = await self.b.contents.walk(start, accept=accept, max_results=1000)
        items = [
            {"path": e.path, "uri": notebook_uri(e.path), "last_modified": e.last_modified, "size": e.size}
            for e in entries
        ]
        return json.dumps({"notebooks": items, "truncated": truncated})

    # -- notebooks (resource_notebooks: bounded by max_resource_length) -------------------------------
    async def notebook_page(self, ctx: Context, path: str) -> Page:
        path = await self.b.contents.require(path, "notebook")
        view = await self.b.rooms.notebook(path)
        reads = Reads(self.b, ctx, path)

        def served(source: str, cell_id: str, source_cut: bool) -> str:
            return reads.served(source, cell_id, cut=source_cut)

        return read_page(view, path, served, self.b.max_resource_length, self.b.max_output_length)

    async def notebook(self, ctx: Context, uri: str, path: str, view: str) -> TextResourceContents:
        result = await self.notebook_page(ctx, path)
        limit = self.b.max_resource_length
        if view == "":
            return _text(uri, markdown(result, limit), "text/markdown", result.meta())
        if view == "json":
            return _text(uri, as_json(result), "application/json", result.meta())
        return _text(uri, json.dumps(result.cells), "application/json", result.meta())

    async def cell(self, ctx: Context, uri: str, path: str, cell_id: str) -> Contents:
        """The cell's source first (typed by the cell: code in its language, Markdown), then each output."""
        path = await self.b.contents.require(path, "notebook")
        view = await self.b.rooms.notebook(path)
        cell = view.cell(view.resolve(cell_id=cell_id))
        limit = self.b.max_resource_length
        meta = {
            "cell_id": cell.id,
            "cell_type": cell.cell_type,
            "index": cell.index,
            "execution_count": cell.execution_count,
            "revision": Reads(self.b, ctx, path).served(cell.source, cell.id, cut=len(cell.source) > limit),
        }
        mime = source_mime(cell.cell_type, view.notebook_metadata())
        return cell_contents(uri, path, cell, meta, mime, (limit, self.b.max_output_length, self.b.image_limits))

    # -- text documents -------------------------------------------------------------------------
    async def document(self, ctx: Context, uri: str, path: str) -> TextResourceContents:
        """The live text, cut at ``max_resource_length`` with a marker saying how to read on."""
        path = await self.b.contents.require(path, "file")
        text = (await self.b.rooms.text(path)).text
        limit = self.b.max_resource_length
        truncated = len(text) > limit
        revision = Reads(self.b, ctx, path).served(text, cut=truncated)
        meta: dict[str, Any] = {"revision": revision}
        if truncated:
            meta.update(truncated=True, size=len(text), next_offset=limit)
            text = (
                f"{cut(text, limit)}\n[... this read stops at {limit} characters: read on with the tool "
                f"get_document(path={path!r}, offset={limit})]"
            )
        return _text(uri, text, text_mime(path) or "text/plain", meta)


def _text(uri: str, text: str, mime: str, meta: dict[str, Any] | None = None) -> TextResourceContents:
    return TextResourceContents(uri=uri, text=text, mime_type=mime, _meta=meta)


def _listable(entry: Entry) -> bool:
    return entry.type == "notebook" or (entry.type == "file" and text_mime(entry.name) is not None)


def _resource(entry: Entry) -> Resource:
    annotations = Annotations(last_modified=entry.last_modified) if entry.last_modified else None
    if entry.type == "notebook":
        # No size: the file's bytes are JSON, not the Markdown a read returns.
        return Resource(
            uri=notebook_uri(entry.path),
            name=entry.path,
            title=entry.name,
            mime_type="text/markdown",
            annotations=annotations,
        )
    return Resource(
        uri=document_uri(entry.path),
        name=entry.path,
        title=entry.name,
        mime_type=text_mime(entry.name),
        size=entry.size,
        annotations=annotations,
    )


def _encode_cursor(listed: int, directories: int, after: str) -> str:
    """Opaque to clients: how many were listed, directories walked, and the last path listed."""
    raw = json.dumps([listed, directories, after], separators=(",", ":")).encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def _decode_cursor(cursor: str | None) -> tuple[int, int, str]:
    if not cursor:
        return 0, 0, ""
    try:
        listed, directories, after = json.loads(base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)))
    except (ValueError, TypeError, binascii.Error):
        raise InvalidArgument("invalid cursor: list again without one") from None
    valid = isinstance(listed, int) and isinstance(directories, int) and isinstance(after, str)
    if not valid or not 0 < listed < MAX_LISTED or directories < 0 or not after:
        raise InvalidArgument("invalid cursor: list again without one")
    return listed, directories, after
