"""Writing a running cell's outputs into the live notebook the way JupyterLab expects them.

JupyterLab applies a remote text change to the *last* output only, and merges an inserted stream
output into a preceding stream of the same name. So consecutive chunks of one stream are appended to
that stream's Y text (one new output per chunk would be merged by every browser and written back as
duplicates); ``\\r`` and ``\\b`` move JupyterLab's stream cursor (see ``StreamCursor``);
``clear_output(wait=True)`` clears at the next output; ``update_display_data`` replaces the output
carrying that display id. ``execution_state`` is set to "running" at the start and ``execution_count``
only at the end, together with "idle" (a count written early makes every JupyterLab client show the cell
as finished). Each batch of outputs is one agent transaction on a document fetched again by the caller,
because the room can disappear during a long run.

Cost: a stream chunk costs O(chunk) when it only appends, O(chunk + last line) when it carries ``\\r`` or
``\\b`` — never O(whole stream): the cursor state is kept here, the Y text is never read back, and the
Y text's tail block is sealed every ``SEAL_BYTES`` (yrs copies the whole block it squashes an append
into at every commit, which made chunk-by-chunk appends to a long output quadratic).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from pycrdt import Array, Map, Text

from jupyter_pair_mcp.adapters.rooms.notebook import AGENT_ORIGIN, NotebookView

# Bytes appended to one Y text block before a new block is started (see ``_seal``).
SEAL_BYTES = 64 * 1024
_TOKENS = re.compile("[^\r\n\x08]+|[\r\n\x08]")
_MOVES = re.compile("[\r\x08]")


@dataclass(frozen=True)
class StreamChange:
    """After a chunk: the stream's text from character ``start`` of the old last line on is ``new``
    (it was ``old``, the old last line from ``start``)."""

    start: int
    old: str
    new: str


@dataclass
class StreamCursor:
    """JupyterLab 4's stream semantics, fed chunk by chunk, keeping only the stream's last line.

    Ported from ``Private.processText`` in JupyterLab 4.6's ``packages/outputarea/src/model.ts``: the
    stream has a cursor, always on the last line. Text overwrites from the cursor character by
    character (``"abc\\rX"`` is ``"Xbc"``); ``\\r`` moves the cursor to the start of the line; ``\\n``
    appends a newline at the *end* of the text (so ``\\r\\n`` is a plain newline and a line overwritten
    shorter keeps its tail); ``\\b`` deletes the character before the cursor, unless at the line start —
    and, as JupyterLab does, also the character under the cursor when the cursor is inside the line.
    The cursor survives between chunks, so a ``\\r`` ending one chunk is still pending for the next.
    Characters are code points (JupyterLab counts UTF-16 units: they differ only when overwriting or
    backspacing over characters outside the BMP, where JupyterLab would split a surrogate pair).
    """

    pieces: list[str] = field(default_factory=list)  # the last line, in pieces: appends are O(chunk)
    length: int = 0  # characters in the last line
    col: int = 0  # the cursor, a character offset into the last line
    line_bytes: int = 0  # UTF-8 length of the last line (pycrdt offsets are bytes)

    @classmethod
    def at_end_of(cls, text: str) -> StreamCursor:
        """The cursor after ``text`` was written, as far as the text alone tells (cursor at the end)."""
        line = text[text.rfind("\n") + 1 :]
        return cls([line] if line else [], len(line), len(line), len(line.encode()))

    def line(self) -> str:
        if len(self.pieces) > 1:
            self.pieces = ["".join(self.pieces)]
        return self.pieces[0] if self.pieces else ""

    def feed(self, chunk: str) -> StreamChange:
        at_end = self.col == self.length
        if at_end and _MOVES.search(chunk) is None:
            return self._append(chunk)
        return self._overwrite(chunk)

    def _append(self, chunk: str) -> StreamChange:
        """Cursor at the end and nothing moves it back: the chunk is appended as it is (O(chunk))."""
        start = self.length
        newline = chunk.rfind("\n")
        tail = chunk[newline + 1 :]
        if newline < 0:
            self.pieces.append(chunk)
            self.length += len(chunk)
            self.line_bytes += len(chunk.encode())
        else:
            self.pieces = [tail] if tail else []
            self.length = len(tail)
            self.line_bytes = len(tail.encode())
        self.col = self.length
        return StreamChange(start, "", chunk)

    def _overwrite(self, chunk: str) -> StreamChange:
        """The general case, O(chunk + last line): the last line as a list of characters, edited in place."""
        line = self.line()
        buf = list(line)
        col = self.col
        start = len(line)  # lowest position of the old line that changed
        done: list[str] = []  # the old line from ``start`` and the lines completed after it
        for match in _TOKENS.finditer(chunk):
            token = match.group()
            if token == "\r":
                col = 0
            elif token == "\x08":
                if col > 0:
                    if not done:
                        start = min(start, col - 1)
                    del buf[col - 1 : col + 1]
                    col -= 1
            elif token == "\n":
                done.append("".join(buf[start:] if not done else buf) + "\n")
                buf, col = [], 0
            else:
                if not done:
                    start = min(start, col)
                buf[col : col + len(token)] = token
                col += len(token)
        new_line = "".join(buf)
        new = "".join(done) + new_line if done else new_line[start:]
        self.pieces = [new_line] if new_line else []
        self.length = len(new_line)
        self.col = col
        self.line_bytes = len(new_line.encode())
        return StreamChange(start, line[start:], new)


@dataclass
class _Stream:
    """The stream output being appended to: which one, its cursor, and bytes since its tail was sealed."""

    index: int
    name: str
    cursor: StreamCursor
    unsealed: int = 0


@dataclass
class RunState:
    """What one execution has written so far."""

    cell_id: str
    clear_pending: bool = False
    display_ids: dict[str, int] = field(default_factory=dict)
    outputs_written: int = 0
    stream: _Stream | None = None


def begin(view: NotebookView, state: RunState) -> None:
    ycell = view.ycell(state.cell_id)
    with view.transaction(f"ran cell {state.cell_id}"):
        ycell["execution_state"] = "running"
        outputs = ycell.get("outputs")
        if isinstance(outputs, Array):
            outputs.clear()
        else:
            ycell["outputs"] = Array()
    state.stream = None


def write(view: NotebookView, state: RunState, kind: str, content: dict[str, Any]) -> None:
    """Apply one iopub output message to the cell; a cell deleted meanwhile is skipped by the caller."""
    write_batch(view, state, [(kind, content)])


def write_batch(view: NotebookView, state: RunState, messages: Iterable[tuple[str, dict[str, Any]]]) -> None:
    """Apply iopub output messages in order, in one transaction (one update for every collaborator).

    A message whose content has ``"continued": True`` is the rest of a stream message the caller cut in
    pieces: it is not counted again in ``outputs_written``.
    """
    ycell = view.ycell(state.cell_id)
    outputs: Array[Any] = ycell["outputs"]
    with view.transaction(f"ran cell {state.cell_id}"):
        for kind, content in messages:
            _apply(outputs, state, kind, content)


def end(view: NotebookView, state: RunState, execution_count: int | None) -> None:
    ycell = view.ycell(state.cell_id)
    with view.transaction(f"ran cell {state.cell_id}"):
        if state.clear_pending:
            _clear(ycell["outputs"], state)
        ycell["execution_count"] = execution_count
        ycell["execution_state"] = "idle"


def _apply(outputs: Array[Any], state: RunState, kind: str, content: dict[str, Any]) -> None:
    if kind == "clear_output":
        if content.get("wait"):
            state.clear_pending = True
        else:
            _clear(outputs, state)
        return
    if state.clear_pending:
        _clear(outputs, state)
    if kind == "stream":
        _stream(outputs, state, str(content.get("name", "stdout")), str(content.get("text", "")))
    elif kind == "update_display_data":
        display_id = (content.get("transient") or {}).get("display_id")
        index = state.display_ids.get(display_id) if display_id else None
        if index is not None and index < len(outputs):
            outputs[index] = Map(_rich("display_data", content))
    else:
        output = _rich(kind, content) if kind != "error" else _error(content)
        outputs.append(Map(output))
        display_id = (content.get("transient") or {}).get("display_id")
        if display_id:
            state.display_ids[display_id] = len(outputs) - 1
    if not content.get("continued"):
        state.outputs_written += 1


def _clear(outputs: Array[Any], state: RunState) -> None:
    outputs.clear()
    state.clear_pending = False
    state.display_ids.clear()
    state.stream = None


def _stream(outputs: Array[Any], state: RunState, name: str, text: str) -> None:
    index = len(outputs) - 1
    last = outputs[index] if index >= 0 else None
    ytext = last.get("text") if last is not None else None
    same = last is not None and last.get("output_type") == "stream" and last.get("name") == name
    if same and isinstance(ytext, Text):
        stream = state.stream
        if stream is None or stream.index != index or stream.name != name or stream.cursor.line_bytes > len(ytext):
            # Not the output we have been writing (never expected): take the cursor from its text, once.
            stream = state.stream = _Stream(index, name, StreamCursor.at_end_of(str(ytext)))
        _write_change(ytext, stream, stream.cursor.feed(text))
        return
    cursor = StreamCursor()
    change = cursor.feed(text)
    outputs.append(Map({"output_type": "stream", "name": name, "text": Text(change.new)}))
    state.stream = _Stream(len(outputs) - 1, name, cursor, len(change.new.encode()))


def _write_change(ytext: Text, stream: _Stream, change: StreamChange) -> None:
    """Replace the changed end of the Y text, keeping what the change leaves as it was (minimal CRDT edit)."""
    old, new = change.old, change.new
    prefix = _common_prefix(old, new)
    suffix = _common_suffix(old[prefix:], new[prefix:]) if len(old) > prefix else 0
    old_end = len(ytext) - len(old[len(old) - suffix :].encode())
    at = len(ytext) - len(old.encode()) + len(old[:prefix].encode())
    insert = new[prefix : len(new) - suffix]
    if old_end > at:
        del ytext[at:old_end]
    if insert:
        size = len(insert.encode())
        if stream.unsealed + size > SEAL_BYTES:
            _seal(ytext, at)
            stream.unsealed = 0
        ytext.insert(at, insert)
        stream.unsealed += size


def _seal(ytext: Text, at: int) -> None:
    """Start a new Y block at ``at``: an inserted-and-deleted character breaks yrs's squashing.

    yrs merges an item appended right after the same client's previous item into it at commit, copying
    the merged block's whole content: appending chunk after chunk, each in its own transaction, would
    cost O(stream) per chunk. A tombstone between them stops the merge (one deleted item every
    ``SEAL_BYTES``; Yjs clients see only the insert).
    """
    ytext.insert(at, "\x00")
    del ytext[at : at + 1]


def _common_prefix(a: str, b: str) -> int:
    """Length of the common prefix, found by halving with C-speed slice comparisons."""
    low, high = 0, min(len(a), len(b))
    while low < high:
        mid = (low + high + 1) // 2
        if a[:mid] == b[:mid]:
            low = mid
        else:
            high = mid - 1
    return low


def _common_suffix(a: str, b: str) -> int:
    low, high = 0, min(len(a), len(b))
    while low < high:
        mid = (low + high + 1) // 2
        if a[len(a) - mid :] == b[len(b) - mid :]:
            low = mid
        else:
            high = mid - 1
    return low


def _rich(kind: str, content: dict[str, Any]) -> dict[str, Any]:
    output: dict[str, Any] = {
        "output_type": kind,
        "data": dict(content.get("data") or {}),
        "metadata": dict(content.get("metadata") or {}),
    }
    if kind == "execute_result":
        output["execution_count"] = content.get("execution_count")
    return output


def _error(content: dict[str, Any]) -> dict[str, Any]:
    return {
        "output_type": "error",
        "ename": str(content.get("ename", "")),
        "evalue": str(content.get("evalue", "")),
        "traceback": list(content.get("traceback") or []),
    }


__all__ = [
    "AGENT_ORIGIN",
    "SEAL_BYTES",
    "RunState",
    "StreamChange",
    "StreamCursor",
    "begin",
    "end",
    "write",
    "write_batch",
]
