"""Writing a running cell's outputs into the live notebook the way JupyterLab expects them.

JupyterLab applies a remote text change to the *last* output only, and merges an inserted stream
output into a preceding stream of the same name. So consecutive chunks of one stream are appended to
that stream's Y text (one new output per chunk would be merged by every browser and written back as
duplicates); ``\\r`` rewrites the current line; ``clear_output(wait=True)`` clears at the next output;
``update_display_data`` replaces the output carrying that display id. ``execution_state`` is set to
"running" at the start and ``execution_count`` only at the end, together with "idle" (a count written
early makes every JupyterLab client show the cell as finished). Each step is one agent transaction on
a document fetched again by the caller, because the room can disappear during a long run.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from pycrdt import Array, Map, Text

from .notebook import AGENT_ORIGIN, NotebookView
from .text import minimal_edit

_CR_LINE = re.compile(r"[^\n]*\r(?=[^\n])")


@dataclass
class RunState:
    """What one execution has written so far."""

    cell_id: str
    clear_pending: bool = False
    display_ids: dict[str, int] = field(default_factory=dict)
    outputs_written: int = 0


def resolve_carriage_returns(text: str) -> str:
    """Terminal-style ``\\r``: what follows it on a line replaces what came before (``\\r\\n`` is a newline)."""
    text = text.replace("\r\n", "\n")
    return _CR_LINE.sub("", text)


def begin(view: NotebookView, state: RunState) -> None:
    ycell = view.ycell(state.cell_id)
    with view.transaction(f"ran cell {state.cell_id}"):
        ycell["execution_state"] = "running"
        outputs = ycell.get("outputs")
        if isinstance(outputs, Array):
            outputs.clear()
        else:
            ycell["outputs"] = Array()


def write(view: NotebookView, state: RunState, kind: str, content: dict[str, Any]) -> None:
    """Apply one iopub output message to the cell; a cell deleted meanwhile is skipped by the caller."""
    ycell = view.ycell(state.cell_id)
    outputs: Array[Any] = ycell["outputs"]
    with view.transaction(f"ran cell {state.cell_id}"):
        if kind == "clear_output":
            if content.get("wait"):
                state.clear_pending = True
            else:
                _clear(outputs, state)
            return
        if state.clear_pending:
            _clear(outputs, state)
        if kind == "stream":
            _stream(outputs, str(content.get("name", "stdout")), str(content.get("text", "")))
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
        state.outputs_written += 1


def end(view: NotebookView, state: RunState, execution_count: int | None) -> None:
    ycell = view.ycell(state.cell_id)
    with view.transaction(f"ran cell {state.cell_id}"):
        if state.clear_pending:
            _clear(ycell["outputs"], state)
        ycell["execution_count"] = execution_count
        ycell["execution_state"] = "idle"


def _clear(outputs: Array[Any], state: RunState) -> None:
    outputs.clear()
    state.clear_pending = False
    state.display_ids.clear()


def _stream(outputs: Array[Any], name: str, text: str) -> None:
    last = outputs[len(outputs) - 1] if len(outputs) else None
    if last is not None and last.get("output_type") == "stream" and last.get("name") == name:
        ytext = last.get("text")
        if isinstance(ytext, Text):
            if "\r" in text:
                old = str(ytext)
                edit = minimal_edit(old, resolve_carriage_returns(old + text))
                if edit.end > edit.start:
                    del ytext[edit.start : edit.end]
                if edit.insert:
                    ytext.insert(edit.start, edit.insert)
            else:
                ytext.insert(len(ytext), text)  # pycrdt lengths are UTF-8 bytes, as insert expects
            return
    outputs.append(Map({"output_type": "stream", "name": name, "text": Text(resolve_carriage_returns(text))}))


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


__all__ = ["AGENT_ORIGIN", "RunState", "begin", "end", "resolve_carriage_returns", "write"]
