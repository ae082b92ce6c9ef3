"""A scratch run's outputs, collected as the notebook would hold them and bounded in bytes.

Scratch code (``execute_code``) runs in a notebook's kernel but writes nothing to the notebook, so its iopub
messages have no room to go to: this collector turns them into nbformat outputs itself, applying what the
notebook's output area would (streams joined, ``clear_output`` with and without ``wait``, displays updated by
id), and keeps at most :data:`MAX_SCRATCH_BYTES` of them. Its own module because it is pure bookkeeping over
messages, apart from ``inspection.py``'s talking to the kernel.
"""

from __future__ import annotations

from typing import Any

# Scratch outputs kept per run (text and images); what comes after is counted, not kept.
MAX_SCRATCH_BYTES = 8 << 20
# Debugger entries that are groups, not variables.


class OutputCollector:
    """Collects a run's iopub output messages as nbformat outputs, as the notebook would hold them, up to
    :data:`MAX_SCRATCH_BYTES` (what follows is counted and reported in a last stream output)."""

    def __init__(self, max_bytes: int = MAX_SCRATCH_BYTES) -> None:
        self.outputs: list[dict[str, Any]] = []
        self.max_bytes = max_bytes
        self.size = 0
        self.dropped = 0
        self._clear_pending = False
        self._stream: list[str] | None = None  # the last output's stream text, in pieces (joined at the end)
        self._displays: dict[str, list[dict[str, Any]]] = {}  # display id -> outputs showing it

    def _clear(self) -> None:
        self.outputs.clear()
        self._stream = None
        self._displays.clear()

    async def put(self, kind: str, content: dict[str, Any]) -> None:
        if kind == "clear_output":
            if content.get("wait"):
                self._clear_pending = True
            else:
                self._clear()
            return
        if self._clear_pending:
            self._clear_pending = False
            self._clear()
        size = _size(content)
        if self.size + size > self.max_bytes:
            self.dropped += size
            return
        self.size += size
        text = str(content.get("text", ""))
        if kind == "stream":
            last = self.outputs[-1] if self.outputs else None
            if last and self._stream is not None and last["name"] == content.get("name"):
                self._stream.append(text)  # one chunk after another: no copy of the whole stream each time
            else:
                self._join_stream()
                self._stream = [text]
                self.outputs.append({"output_type": "stream", "name": content.get("name", "stdout"), "text": ""})
            return
        self._join_stream()
        if kind == "error":
            self.outputs.append(
                {
                    "output_type": "error",
                    "ename": content.get("ename", ""),
                    "evalue": content.get("evalue", ""),
                    "traceback": list(content.get("traceback") or []),
                }
            )
        elif kind == "update_display_data":
            display_id = (content.get("transient") or {}).get("display_id")
            for output in self._displays.get(display_id, []) if display_id else []:
                output["data"], output["metadata"] = content.get("data", {}), content.get("metadata", {})
        else:  # display_data, execute_result
            output = {"output_type": kind, "data": content.get("data", {}), "metadata": content.get("metadata", {})}
            display_id = (content.get("transient") or {}).get("display_id")
            if display_id:
                self._displays.setdefault(display_id, []).append(output)
            self.outputs.append(output)

    def finish(self) -> list[dict[str, Any]]:
        self._join_stream()
        if self.dropped:
            note = f"[... {self.dropped} more bytes of output dropped (over {self.max_bytes} bytes)]\n"
            self.outputs.append({"output_type": "stream", "name": "stderr", "text": note})
        return self.outputs

    def _join_stream(self) -> None:
        if self._stream is not None and self.outputs:
            self.outputs[-1]["text"] = "".join(self._stream)
            self._stream = None


def _size(content: dict[str, Any]) -> int:
    """Bytes of an output message: the size of its JSON as the kernel sent it (``MessageContent.nbytes``), known
    without serializing it again; else a bound from its strings (values of other types count 64 each)."""
    nbytes = getattr(content, "nbytes", 0)
    if nbytes:
        return int(nbytes)
    values = [*(content.get("data") or {}).values(), content.get("text"), *(content.get("traceback") or [])]
    return sum(len(v) if isinstance(v, str) else 64 for v in values)
