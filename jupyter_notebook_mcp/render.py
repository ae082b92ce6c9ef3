"""Pure functions turning nbformat outputs into what an agent can read.

Agents read text: stream text and ``text/plain`` results as they are, errors as ``ename: evalue``
plus the traceback without ANSI colour codes, HTML reduced to its text, images as a short marker
(the bytes are useless as text and huge). Every text is cut at ``max_length`` characters with a
marker that says how much was cut, so one chatty cell cannot flood the agent's context.
"""

from __future__ import annotations

import re
from html.parser import HTMLParser
from typing import Any

_ANSI = re.compile(r"\x1b\[[0-9;?]*[ -/]*[@-~]")
_IMAGE_TYPES = ("image/png", "image/jpeg", "image/gif", "image/svg+xml")
_BLOCK_TAGS = {"p", "div", "br", "tr", "li", "h1", "h2", "h3", "h4", "h5", "h6", "table", "pre"}


def strip_ansi(text: str) -> str:
    return _ANSI.sub("", text)


#: The marker :func:`cut` appends; a cell source sent back with it was written from a cut read.
CUT_MARKER = re.compile(r"\n\[\.\.\. \d+ more characters cut\]")


def cut(text: str, max_length: int) -> str:
    """``text`` cut to ``max_length`` characters, with a marker saying how many were cut."""
    if len(text) <= max_length:
        return text
    return f"{text[:max_length]}\n[... {len(text) - max_length} more characters cut]"


class _TextOnly(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.parts: list[str] = []
        self._skip = 0

    def handle_starttag(self, tag: str, attrs: Any) -> None:
        if tag in ("script", "style"):
            self._skip += 1
        elif tag in _BLOCK_TAGS:
            self.parts.append("\n")

    def handle_endtag(self, tag: str) -> None:
        if tag in ("script", "style") and self._skip:
            self._skip -= 1
        elif tag in ("td", "th"):
            self.parts.append("\t")

    def handle_data(self, data: str) -> None:
        if not self._skip:
            self.parts.append(data)


def html_to_text(html: str) -> str:
    parser = _TextOnly()
    parser.feed(html)
    parser.close()
    text = "".join(parser.parts)
    return re.sub(r"\n{3,}", "\n\n", text).strip()


def _joined(value: Any) -> str:
    return "".join(value) if isinstance(value, list) else str(value)


def output_text(output: dict[str, Any]) -> tuple[str, str | None]:
    """The readable text of one output and, for an image, its MIME type."""
    kind = output.get("output_type")
    if kind == "stream":
        return strip_ansi(_joined(output.get("text", ""))), None
    if kind == "error":
        traceback = strip_ansi("\n".join(output.get("traceback") or []))
        head = f"{output.get('ename', 'Error')}: {output.get('evalue', '')}"
        return (f"{head}\n{traceback}" if traceback else head), None
    data = output.get("data") or {}
    for mime in _IMAGE_TYPES:
        if mime in data:
            alt = _joined(data.get("text/plain", "")).strip()
            size = len(_joined(data[mime]))
            return f"[{mime} image, {size} bytes{': ' + alt if alt else ''}]", mime
    if "text/plain" in data:
        return strip_ansi(_joined(data["text/plain"])), None
    if "text/markdown" in data:
        return _joined(data["text/markdown"]), None
    if "text/html" in data:
        return html_to_text(_joined(data["text/html"])), None
    if "application/json" in data:
        return str(data["application/json"]), None
    mimes = ", ".join(sorted(data)) or "no data"
    return f"[{kind} output: {mimes}]", None


def render_outputs(outputs: list[dict[str, Any]], max_length: int) -> list[dict[str, Any]]:
    """Every output as ``{output_type, text}`` (plus ``mime`` for images), each text cut at ``max_length``."""
    rendered = []
    for output in outputs:
        text, mime = output_text(output)
        item: dict[str, Any] = {"output_type": output.get("output_type", "unknown"), "text": cut(text, max_length)}
        if mime:
            item["mime"] = mime
        rendered.append(item)
    return rendered


def output_images(
    outputs: list[dict[str, Any]], mimes: tuple[str, ...] = ("image/png", "image/jpeg")
) -> list[tuple[str, str]]:
    """(MIME type, base64 data) of every PNG/JPEG image in ``outputs``, for MCP image content."""
    images = []
    for output in outputs:
        data = output.get("data") or {}
        for mime in mimes:
            if mime in data:
                images.append((mime, _joined(data[mime]).replace("\n", "")))
                break
    return images
