"""HTML reduced to the text a person would read in it, in bounded, linear work.

Cell outputs such as ``display(HTML(...))`` or a styled table carry only HTML (their ``text/plain`` is a
repr like ``<IPython.core.display.HTML object>``). An agent reads the HTML's text: block elements become
line breaks, a table row becomes one line with `` | `` between its cells, list items start with ``- ``,
scripts and styles are dropped and entities unescaped.

The stdlib parser costs some 5-10 µs a tag and its ``close()`` is quadratic on some malformed input, so
the reduction is bounded: the HTML is fed in pieces and reading stops once it has the text it needs
(``max_chars``) or has read ``max_input`` characters; a long unparsable tail is left unread rather than
handed to ``close()``. The pieces double in size (from :data:`FIRST_PIECE`): a short text is found in the
first few kilobytes, and a construct left open, re-scanned on each feed, costs at most about twice the
input read. :attr:`Reduced.work` counts the characters the parser was given to scan, so tests can check
the work is linear without timing it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from html.parser import HTMLParser

#: The first piece of HTML fed to the parser; each next one is twice as big.
FIRST_PIECE = 8192
#: Longest unparsed tail still handed to ``close()`` (quadratic on malformed input: keep it small).
CLOSE_TAIL = 512

_SKIP = {"script", "style", "template", "head"}
_BLOCKS = {
    "address", "article", "aside", "blockquote", "br", "caption", "dd", "details", "div", "dl", "dt",
    "fieldset", "figcaption", "figure", "footer", "form", "h1", "h2", "h3", "h4", "h5", "h6", "header",
    "hr", "li", "main", "nav", "ol", "p", "pre", "section", "summary", "table", "tbody", "tfoot", "thead",
    "tr", "ul",
}  # fmt: skip
_SPACES = re.compile(r"\s+")
_BLANK_LINES = re.compile(r"\n{3,}")


@dataclass
class Reduced:
    text: str
    unread: int  # characters of HTML not read (past the budget, or an unparsable tail): the text is partial
    work: int  # characters given to the parser to scan, re-scans included


class _Reducer(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.parts: list[str] = []
        self.length = 0  # characters in parts
        self.work = 0
        self._skip = 0
        self._pre = 0
        self._cells = [0]  # per open table (and one for cells outside any): cells seen in its current row
        self._in_cell = 0
        self._line_start = True  # nothing but a line break was emitted last (or nothing at all)

    def feed(self, data: str) -> None:
        self.work += len(self.rawdata) + len(data)
        super().feed(data)

    def _emit(self, text: str) -> None:
        self.parts.append(text)
        self.length += len(text)
        self._line_start = text.endswith("\n")

    def _break(self) -> None:
        if self._in_cell:  # a table row stays on one line
            self._space()
        elif not self._line_start:
            self._emit("\n")

    def _space(self) -> None:
        if self.parts and not self.parts[-1].endswith((" ", "\n")):
            self._emit(" ")

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in _SKIP:
            self._skip += 1
        elif self._skip:
            return
        elif tag == "table":
            self._break()
            self._cells.append(0)
        elif tag == "tr":
            self._cells[-1] = 0
            self._break()
        elif tag in ("td", "th"):
            if self._cells[-1]:
                self._emit("| " if self.parts[-1].endswith(" ") else " | ")
            self._cells[-1] += 1
            self._in_cell += 1
        elif tag == "li":
            self._break()
            self._emit("- ")
        elif tag == "img":
            alt = dict(attrs).get("alt")
            if alt:
                self._emit(f"[image: {_SPACES.sub(' ', alt).strip()}]")
        elif tag in _BLOCKS:
            self._break()
            if tag == "pre":
                self._pre += 1

    def handle_endtag(self, tag: str) -> None:
        if tag in _SKIP:
            self._skip = max(0, self._skip - 1)
        elif self._skip:
            return
        elif tag == "table":
            if len(self._cells) > 1:
                self._cells.pop()
            self._break()
        elif tag in ("td", "th"):
            self._in_cell = max(0, self._in_cell - 1)
        elif tag in _BLOCKS:
            if tag == "pre":
                self._pre = max(0, self._pre - 1)
            self._break()

    def handle_data(self, data: str) -> None:
        if self._skip or not data:
            return
        if self._pre and not self._in_cell:
            self._emit(data)
            return
        text = _SPACES.sub(" ", data)
        if text.startswith(" ") and (self._line_start or self.parts[-1].endswith(" ")):
            text = text[1:]
        if text:
            self._emit(text)

    def text(self) -> str:
        joined = "".join(self.parts)
        lines = "\n".join(line.rstrip() for line in joined.split("\n"))
        return _BLANK_LINES.sub("\n\n", lines).strip()


def reduce_html(html: str, max_chars: int, max_input: int) -> Reduced:
    """The text of ``html``: stops once past ``max_chars`` characters of text or ``max_input`` of HTML.

    The text returned may run a little past ``max_chars`` (cut it); ``unread`` > 0 says it is partial.
    """
    parser = _Reducer()
    budget = min(len(html), max_input)
    piece, read = FIRST_PIECE, 0
    while read < budget and parser.length <= max_chars:
        end = min(read + piece, budget)
        parser.feed(html[read:end])
        read, piece = end, piece * 2
    unread = len(html) - read
    tail = len(parser.rawdata)
    if not unread and tail <= CLOSE_TAIL:
        parser.work += tail
        parser.close()
    else:  # stopped early, or an unparsable construct (a "<" that never closes): that HTML is not read
        unread += tail
    return Reduced(parser.text(), unread, parser.work)


def html_to_text(html: str, max_chars: int = 1 << 20, max_input: int = 1 << 20) -> str:
    """The readable text of ``html`` (bounded like :func:`reduce_html`; the caller cuts it)."""
    return reduce_html(html, max_chars, max_input).text
