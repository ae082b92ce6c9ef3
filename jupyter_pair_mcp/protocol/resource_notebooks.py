"""Notebook resources, bounded like the tools: ``notebook://{path}`` (Markdown), ``/json``, ``/cells``, ``/cells/{id}``.

A read returns at most ``max_resource_length`` characters of text (sources and output texts together; each
output text is cut at ``max_output_length`` as in every read): whole cells while they fit, always the first
one, whose source is cut with the usual marker when it alone is larger and whose outputs stop where the budget
does. What was left out is said where the reader looks, with the way to read on: the Markdown ends with a line
naming the first cell not shown and the ``get_notebook`` call that reads from it; the JSON view has
``truncated``, ``next_index`` and ``cut_cells``; every content's ``_meta`` carries the same; a cell read ends
with a note content. Images of a cell read are bounded as in a tool result (``max_images_per_result``,
``max_image_bytes``, ``max_image_bytes_total``); the others come as their text marker. The work stops with the
budget too: cells past it are never rendered, and an image too large is never decoded or copied.
"""

from __future__ import annotations

import base64
import json
from dataclasses import dataclass, field
from typing import Any

from mcp_types import BlobResourceContents, TextResourceContents

from jupyter_pair_mcp.adapters.rooms import CellData, NotebookView
from jupyter_pair_mcp.render import CUT_MARKER, ImageLimits, ReadBudget, cut, output_text

_BLOB_IMAGES = ("image/png", "image/jpeg", "image/gif", "image/svg+xml")
#: Characters a cell and an output cost besides their texts (a header, JSON keys), counted against the budget
#: so that a notebook of a million empty cells is bounded too.
_CELL_COST = 96
_OUTPUT_COST = 32

Contents = list[TextResourceContents | BlobResourceContents]


@dataclass
class Page:
    """The cells one notebook read returns, rendered, and what it left out."""

    path: str
    cell_count: int
    metadata: dict[str, Any]
    cells: list[dict[str, Any]] = field(default_factory=list)
    next_index: int | None = None  # the first cell not returned
    cut_cells: list[str] = field(default_factory=list)  # returned with their source or outputs cut

    @property
    def truncated(self) -> bool:
        return self.next_index is not None or bool(self.cut_cells)

    def meta(self) -> dict[str, Any] | None:
        if not self.truncated:
            return None
        meta: dict[str, Any] = {"truncated": True, "cut_cells": self.cut_cells}
        if self.next_index is not None:  # (a null in _meta does not survive every era's serialization)
            meta["next_index"] = self.next_index
        return meta

    def trailer(self, limit: int) -> str:
        """The line a text view ends with when cut: what was left out and how to read on."""
        parts = []
        if self.next_index is not None:
            parts.append(
                f"cells {self.next_index}-{self.cell_count - 1} of {self.cell_count} not shown; read on with the "
                f"tool get_notebook(path={self.path!r}, start_index={self.next_index})"
            )
        if self.cut_cells:
            parts.append(
                f"cut: {', '.join(self.cut_cells)}; the tool get_notebook(path={self.path!r}, cell_ids=[...]) reads "
                "a cell whole"
            )
        return f"[... this read stops at {limit} characters: {'; '.join(parts)}]"


def page(view: NotebookView, path: str, served: Any, limit: int, max_output_length: int) -> Page:
    """The notebook's cells as ``notebook://`` views show them, within ``limit`` characters.

    ``served(source, cell_id, cut)`` records what the read returns and gives its revision.
    """
    result = Page(path, view.cell_count, view.notebook_metadata())
    used = 0
    spend = ReadBudget()  # the rendering work of this read, shared by its outputs
    for data in view.cells(range(view.cell_count)):  # consumed without awaiting, as NotebookView.cells asks
        source_cut = len(data.source) > limit
        source = cut(data.source, limit) if source_cut else data.source
        size = len(source) + len(data.id) + _CELL_COST
        outputs, left_out = _outputs(data.outputs, max_output_length, limit - used - size, spend)
        if result.cells and (left_out or used + size > limit):
            result.next_index = data.index  # a later cell comes whole or not at all
            break
        if source_cut or left_out or any(o.get("cut") for o in outputs):
            result.cut_cells.append(data.id)
        cell = {
            "index": data.index,
            "id": data.id,
            "cell_type": data.cell_type,
            "source": source,
            "revision": served(data.source, data.id, source_cut),
            "execution_count": data.execution_count,
            "outputs": [{k: v for k, v in o.items() if k != "cut"} for o in outputs],
        }
        if left_out:
            cell["outputs_not_shown"] = left_out
        result.cells.append(cell)
        used += size + sum(len(o["text"]) + _OUTPUT_COST for o in outputs)
    return result


def _outputs(
    outputs: list[dict[str, Any]], max_length: int, budget: int, spend: ReadBudget
) -> tuple[list[dict[str, Any]], int]:
    """The outputs rendered as text while they fit ``budget`` characters, and how many did not."""
    rendered: list[dict[str, Any]] = []
    for position, output in enumerate(outputs):
        text, mime = output_text(output, max_length, spend)
        if len(text) + _OUTPUT_COST > budget:
            return rendered, len(outputs) - position
        budget -= len(text) + _OUTPUT_COST
        item: dict[str, Any] = {"output_type": output.get("output_type", "unknown"), "text": text}
        if mime:
            item["mime"] = mime
        if CUT_MARKER.search(text[-64:]):  # cut() puts its marker last
            item["cut"] = True
        rendered.append(item)
    return rendered, 0


def markdown(result: Page, limit: int) -> str:
    language = (result.metadata.get("language_info") or {}).get("name") or "python"
    parts = [f"# {result.path}\n"]
    for cell in result.cells:
        header = f"<!-- cell {cell['index']} id={cell['id']} {cell['cell_type']} revision={cell['revision']} -->"
        if cell["cell_type"] == "markdown":
            parts.append(f"{header}\n{cell['source']}\n")
        elif cell["cell_type"] == "raw":
            parts.append(f"{header}\n```\n{cell['source']}\n```\n")
        else:
            count = cell["execution_count"]
            parts.append(f"{header} [{count if count is not None else ' '}]\n```{language}\n{cell['source']}\n```\n")
            for output in cell["outputs"]:
                parts.append(f"```text\n{output['text']}\n```\n")
    if result.truncated:
        parts.append(result.trailer(limit) + "\n")
    return "\n".join(parts)


def as_json(result: Page) -> str:
    body = {
        "path": result.path,
        "cell_count": result.cell_count,
        "metadata": result.metadata,
        "cells": result.cells,
        "truncated": result.truncated,
        "next_index": result.next_index,
        "cut_cells": result.cut_cells,
    }
    return json.dumps(body)


def cell_contents(
    uri: str, path: str, data: CellData, meta: dict[str, Any], mime: str, bounds: tuple[int, int, ImageLimits]
) -> Contents:
    """One cell: its source (cut past the budget), then each output while the budget lasts, images as blobs
    within the image limits; when anything was left out, a last text content says what and how to read on."""
    limit, max_output_length, images = bounds
    source = cut(data.source, limit)
    contents: Contents = []  # the outputs; the source goes first once its _meta is complete
    budget = limit - len(source)
    left: list[str] = []
    count = total = 0
    spend = ReadBudget()  # the rendering work of this read, shared by its outputs
    for position, output in enumerate(data.outputs):
        output_meta: dict[str, Any] = {"output_index": position, "output_type": output.get("output_type", "unknown")}
        image = _image(output, images.each)
        blob = image[1] if image is not None else None
        if image is not None and blob is not None and count < images.count and total + len(blob) <= images.total:
            count, total = count + 1, total + len(blob)
            contents.append(BlobResourceContents(uri=uri, blob=blob, mime_type=image[0], _meta=output_meta))
            continue
        if image is not None:
            output_meta["image_not_returned"] = _why(image[1], count, images)
        text, _ = output_text(output, max_output_length, spend)
        if len(text) + _OUTPUT_COST > budget:
            left.append(f"outputs {position}-{len(data.outputs) - 1} not shown")
            break
        budget -= len(text) + _OUTPUT_COST
        contents.append(TextResourceContents(uri=uri, text=text, mime_type="text/plain", _meta=output_meta))
    if len(source) < len(data.source):
        left.insert(0, f"the source is cut after {limit} of {len(data.source)} characters")
    if left:
        note = (
            f"[... this read stops at {limit} characters: {'; '.join(left)}. The tool "
            f"get_notebook(path={path!r}, cell_ids=[{data.id!r}]) reads the cell with its outputs as text]"
        )
        meta["truncated"] = True
        contents.append(TextResourceContents(uri=uri, text=note, mime_type="text/plain", _meta={"truncated": True}))
    return [TextResourceContents(uri=uri, text=source, mime_type=mime, _meta=meta), *contents]


def _why(data: str | None, count: int, images: ImageLimits) -> str:
    if data is None:
        return f"larger than {images.each} base64 bytes"
    if count >= images.count:
        return f"past the {images.count} images a read returns"
    return f"past {images.total} base64 bytes of images in all"


def _image(output: dict[str, Any], each: int) -> tuple[str, str | None] | None:
    """(MIME type, base64) of an output's image, the first of the types a client can show; the base64 is None
    for an image over ``each`` bytes (sized without decoding or copying it)."""
    data = output.get("data") or {}
    for mime in _BLOB_IMAGES:
        value = data.get(mime)
        if value is None:
            continue
        parts = value if isinstance(value, list) else [str(value)]
        size = sum(len(part) for part in parts)
        if mime == "image/svg+xml":  # stored as XML text: base64 is 4/3 of its UTF-8 bytes
            if size * 4 // 3 > each:  # at least that many
                return mime, None
            encoded = base64.b64encode("".join(parts).encode()).decode()
            return (mime, encoded) if len(encoded) <= each else (mime, None)
        if size - sum(part.count("\n") for part in parts) > each:  # base64 may be wrapped: newlines do not count
            return mime, None
        return mime, "".join(parts).replace("\n", "")
    return None


def source_mime(cell_type: str, metadata: dict[str, Any]) -> str:
    if cell_type == "markdown":
        return "text/markdown"
    if cell_type != "code":
        return "text/plain"
    info = metadata.get("language_info") or {}
    mime = info.get("mimetype")
    if isinstance(mime, str) and "/" in mime:
        return mime
    language = info.get("name") or (metadata.get("kernelspec") or {}).get("language") or "python"
    return f"text/x-{language}"
