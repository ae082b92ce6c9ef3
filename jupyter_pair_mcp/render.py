"""Pure functions turning nbformat outputs into what an agent can read.

Agents read text: stream text and ``text/plain`` results as they are, errors as ``ename: evalue``
plus the traceback without ANSI colour codes, images as a short marker (the bytes are useless as text
and huge; tools return PNG/JPEG as MCP image content beside it, bounded by :class:`ImageLimits`). When
``text/plain`` is only a repr (``<IPython.core.display.HTML object>``) or missing, the richest type reads
instead: HTML reduced to its text (:mod:`.richtext`), Markdown and LaTeX as they are, JSON compact.
Every text is cut at ``max_length`` characters with a marker that says how much was cut, so one chatty
cell cannot flood the agent's context.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from jupyter_pair_mcp.richtext import reduce_html

_ANSI = re.compile(r"\x1b\[[0-9;?]*[ -/]*[@-~]")
_IMAGE_TYPES = ("image/png", "image/jpeg", "image/gif", "image/svg+xml")
#: What MCP clients show as image content: SVG (XML text) and GIF stay text markers.
CONTENT_IMAGE_TYPES = ("image/png", "image/jpeg")
#: A repr that says nothing: ``<IPython.core.display.HTML object>``, ``<function f at 0x7f...>``.
_REPR = re.compile(r"<[^<>\n]* (?:object|at 0x[0-9a-fA-F]+)>")
_REPR_MAX = 300
#: HTML read per output: 16 characters per character of text wanted, from 16 KiB up to 32 KiB. The parser
#: costs ~5 µs a tag: an output's reduction holds the event loop some 40 ms at worst (text-less tag soup).
_HTML_PER_CHAR = 16
_HTML_MIN = 1 << 14
_HTML_MAX = 1 << 15
#: HTML one read (a get_notebook call, a notebook:// read, a prompt) parses for all its outputs together
#: (:class:`ReadBudget`), as much as one output may (~25 ms of dense tables): 300 cells of 40 KB tables, 32 KiB
#: parsed each, held the loop 570 ms in one read.
HTML_PER_READ = _HTML_MAX
#: Characters of a JSON output serialized past its cut to count what is cut: as many as were read, at least 1 KiB,
#: at most this. Past that the rest is not serialized (a 12 MB figure would hold the loop for a second), and the
#: marker says only that more than that many characters were not read. (256 KiB past every cut once made a read
#: of 50 cells holding 40 KB figures serialize 2 MB in the pure-Python encoder: 250 ms of the loop.)
_JSON_MAX = 1 << 18
_JSON_MIN = 1 << 10
#: An image longer than this (base64 characters) is handed on as it is, never copied to drop line breaks: it is far
#: past any image a result may carry (``ImageLimits.each``) and is only counted as left out.
_IMAGE_COPY_MAX = 16 << 20


@dataclass
class ReadBudget:
    """What one read may still spend rendering its outputs, shared by all of them: characters of HTML to parse.

    Past it an HTML output is not parsed at all: its text is a marker saying how much was not read (the output
    counts as cut; reading its cell alone reads it). Per output the work is bounded already; this bounds a read
    of many outputs, whose texts may be short (tag soup reduces to nothing) while each costs its HTML.
    """

    html: int = HTML_PER_READ


def strip_ansi(text: str) -> str:
    return _ANSI.sub("", text)


#: The markers :func:`cut` and a partly read HTML output end with; a cell source sent back with one was
#: written from a cut read.
CUT_MARKER = re.compile(r"\n\[\.\.\. (?:over )?\d+ more characters (?:cut|of (?:HTML|JSON) not read)\]")


def cut(text: str, max_length: int) -> str:
    """``text`` cut to ``max_length`` characters, with a marker saying how many were cut."""
    if len(text) <= max_length:
        return text
    return f"{text[:max_length]}\n[... {len(text) - max_length} more characters cut]"


def is_repr(text: str) -> bool:
    """Whether a ``text/plain`` is only an object's default repr (its type and maybe its address)."""
    text = text.strip()
    return len(text) <= _REPR_MAX and _REPR.fullmatch(text) is not None


def _joined(value: Any) -> str:
    return "".join(value) if isinstance(value, list) else str(value)


def _html(html: str, max_length: int | None, spend: ReadBudget | None = None) -> str:
    """HTML's text, cut at ``max_length`` (None: what ``_HTML_MAX`` of HTML holds, for the caller to cut), parsing
    no more than what is left of the read's ``spend``."""
    budget = _HTML_MAX if max_length is None else min(max(_HTML_PER_CHAR * max_length, _HTML_MIN), _HTML_MAX)
    if spend is not None:
        if spend.html <= 0:
            return f"[text/html output]\n[... {len(html)} more characters of HTML not read]"
        budget = min(budget, spend.html)
    limit = 1 << 20 if max_length is None else max_length
    reduced = reduce_html(html, limit, budget)
    if spend is not None:
        spend.html -= max(reduced.work, 1)
    if not reduced.unread:
        return reduced.text if max_length is None else cut(reduced.text, max_length)
    return f"{reduced.text[:limit]}\n[... {reduced.unread} more characters of HTML not read]"


def _rich(data: dict[str, Any], max_length: int | None, spend: ReadBudget | None) -> tuple[str, bool] | None:
    """The text of the richest readable type, for an output whose ``text/plain`` says nothing, and
    whether it is cut already (HTML is read only as far as needed)."""
    if "text/markdown" in data:
        return _joined(data["text/markdown"]), False
    if "text/html" in data:
        return _html(_joined(data["text/html"]), max_length, spend), True
    if "text/latex" in data:
        return _joined(data["text/latex"]), False
    if "application/json" in data:
        value = data["application/json"]
        if isinstance(value, str):
            return value, False
        return _json(value, max_length), True
    return None


def _json(value: Any, max_length: int | None) -> str:
    """Compact JSON of ``value`` cut at ``max_length``, serialized piece by piece only as far as needed: up to as
    many characters again past the cut (``_JSON_MIN`` to ``_JSON_MAX``) to count what is cut, never the whole of a
    huge value: the work is linear in what the reader returns."""
    limit = (1 << 20) if max_length is None else max_length
    slack = min(max(limit, _JSON_MIN), _JSON_MAX)
    encoder = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False, default=str)
    pieces: list[str] = []
    read = 0
    for piece in encoder.iterencode(value):  # not one-shot: the pure-Python encoder, a generator
        pieces.append(piece)
        read += len(piece)
        if read > limit + slack:
            text = "".join(pieces)
            return f"{text[:limit]}\n[... over {slack} more characters of JSON not read]"
    return cut("".join(pieces), limit)


def output_text(
    output: dict[str, Any], max_length: int | None = None, spend: ReadBudget | None = None
) -> tuple[str, str | None]:
    """The readable text of one output and, for an image, its MIME type.

    With ``max_length`` the text is cut; without, the caller cuts it. ``spend``: what is left of the read's work.
    """
    text, mime, done = _text(output, max_length, spend)
    return (text if done or max_length is None else cut(text, max_length)), mime


def _clean(text: str, max_length: int | None) -> tuple[str, bool]:
    """``text`` without ANSI codes, and whether it is cut already: of a text far longer than ``max_length`` only
    the head is scanned for codes (the rest is counted as cut), so a 100 MB stream costs what its head costs."""
    head = len(text) if max_length is None else 4 * max_length + 4096
    if len(text) <= head:
        return strip_ansi(text), False
    shown = strip_ansi(text[:head])
    assert max_length is not None
    if len(shown) <= max_length:  # the head was mostly codes: show what it holds
        max_length = len(shown)
    return f"{shown[:max_length]}\n[... {len(shown) - max_length + len(text) - head} more characters cut]", True


def _text(output: dict[str, Any], max_length: int | None, spend: ReadBudget | None) -> tuple[str, str | None, bool]:
    kind = output.get("output_type")
    if kind == "stream":
        text, done = _clean(_joined(output.get("text", "")), max_length)
        return text, None, done
    if kind == "error":
        traceback = strip_ansi("\n".join(output.get("traceback") or []))
        head = f"{output.get('ename', 'Error')}: {output.get('evalue', '')}"
        return (f"{head}\n{traceback}" if traceback else head), None, False
    data = output.get("data") or {}
    plain, plain_done = _clean(_joined(data["text/plain"]), max_length) if "text/plain" in data else (None, False)
    if plain is not None and is_repr(plain):
        plain = None
    for mime in _IMAGE_TYPES:
        if mime in data:
            alt = (plain or "").strip()
            size = image_size(mime, _joined(data[mime]))
            return f"[{mime} image, {size} bytes{': ' + alt if alt else ''}]", mime, False
    if plain is not None:
        return plain, None, plain_done
    rich = _rich(data, max_length, spend)
    if rich is not None:
        return rich[0], None, rich[1]
    if "text/plain" in data:
        return strip_ansi(_joined(data["text/plain"])), None, False
    mimes = ", ".join(sorted(data)) or "no data"
    return f"[{kind} output: {mimes}]", None, False


def image_size(mime: str, stored: str) -> int:
    """An image's size in bytes as stored in a notebook: SVG is its XML text's UTF-8; the others are base64,
    maybe wrapped in lines, counted without decoding it (3 bytes per 4 characters, less the padding)."""
    if mime == "image/svg+xml":
        return len(stored) if stored.isascii() else len(stored.encode())
    characters = len(stored) - sum(stored.count(space) for space in "\n\r \t")
    padding = len(stored.rstrip()) - len(stored.rstrip().rstrip("="))
    return max(0, characters * 3 // 4 - padding)


def render_outputs(
    outputs: list[dict[str, Any]], max_length: int, spend: ReadBudget | None = None
) -> list[dict[str, Any]]:
    """Every output as ``{output_type, text}`` (plus ``mime`` for images), each text cut at ``max_length``."""
    rendered = []
    for output in outputs:
        text, mime = output_text(output, max_length, spend)
        item: dict[str, Any] = {"output_type": output.get("output_type", "unknown"), "text": text}
        if mime:
            item["mime"] = mime
        rendered.append(item)
    return rendered


def output_images(outputs: list[dict[str, Any]], mimes: tuple[str, ...] = CONTENT_IMAGE_TYPES) -> list[tuple[str, str]]:
    """(MIME type, base64 data) of every PNG/JPEG image in ``outputs``, for MCP image content."""
    images = []
    for output in outputs:
        data = output.get("data") or {}
        for mime in mimes:
            if mime in data:
                image = _joined(data[mime])
                images.append((mime, image if len(image) > _IMAGE_COPY_MAX else image.replace("\n", "")))
                break
    return images


@dataclass(frozen=True)
class ImageLimits:
    """How many images one tool result carries, and how big (base64 characters, as sent)."""

    count: int = 8
    each: int = 1 << 20
    total: int = 4 << 20


@dataclass
class PickedImages:
    """The images a result carries — (cell id, MIME type, base64) in order — and what was left out, why."""

    images: list[tuple[str, str, str]] = field(default_factory=list)
    omitted: Counter[str] = field(default_factory=Counter)

    def reason(self, limits: ImageLimits) -> str | None:
        why = {
            "count": f"past the {limits.count} images a result carries",
            "each": f"larger than {limits.each} base64 bytes",
            "total": f"past {limits.total} base64 bytes of images in all",
            "off": "not returned: images are switched off on this server",
        }
        parts = [f"{n} {why[key]}" for key, n in self.omitted.items()]
        return "; ".join(parts) or None


def pick_images(found: Iterable[tuple[str, str, str]], limits: ImageLimits) -> PickedImages:
    """The first images of ``found`` (cell id, MIME type, base64) that fit ``limits``; the rest counted.

    An image too big on its own is skipped and later, smaller ones still come; past the count or the
    total the rest are only counted.
    """
    picked = PickedImages()
    total = 0
    for cell_id, mime, data in found:
        if len(data) > limits.each:
            picked.omitted["each"] += 1
        elif len(picked.images) >= limits.count:
            picked.omitted["count"] += 1
        elif total + len(data) > limits.total:
            picked.omitted["total"] += 1
        else:
            picked.images.append((cell_id, mime, data))
            total += len(data)
    return picked
