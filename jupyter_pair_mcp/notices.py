"""Notices: what the server must tell the agent beside a tool's result, found while the call ran.

Some news about a document reaches no tool's return value: the file was rewritten on disk by another
program and the live document reloaded from it, or the room cannot write the file (read-only, disk
full), so the agent's edits are live but not on disk. Lower layers add such a notice to the call under
way (:func:`note`); :class:`CallNotices`, a server middleware around ``tools/call``, gives each call its
:class:`CallNotes` and puts what was noted into the result: a ``notice`` key of the structured content
and a first text block (the last one of an error, whose own message stays first), so clients that read
either see it.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Mapping
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any

log = logging.getLogger(__name__)

#: Notices one result carries at most (each is a sentence or two).
MAX_NOTES = 4
#: Seconds the looks before a call answers may take together (a merge of a changed file among them).
FINISH_WAIT = 30.0


@dataclass
class CallNotes:
    """One tool call: whether it only reads, who makes it, and the notices for its result."""

    read_only: bool
    principal: str | None = None  # the actor key, set once the call is authorized
    notes: list[str] = field(default_factory=list)
    checked: set[str] = field(default_factory=set)  # rooms whose news this call has been given already
    #: Looks to take once the call's work is done, before it answers (its documents' files, again).
    finishers: list[Callable[[], Awaitable[None]]] = field(default_factory=list)

    async def finish(self) -> None:
        """Run the looks before answering; they add notices, never fail the call (its work is done)."""
        for finisher in self.finishers:
            try:
                await asyncio.wait_for(finisher(), FINISH_WAIT)
            except Exception as exc:
                log.debug("a look before answering failed: %s", type(exc).__name__)

    def add(self, text: str) -> None:
        if text not in self.notes and len(self.notes) < MAX_NOTES:
            self.notes.append(text)


_CALL: ContextVar[CallNotes | None] = ContextVar("jupyter_pair_mcp_call", default=None)


def current() -> CallNotes | None:
    """The tool call under way in this task (None outside a tool call: resources, background work)."""
    return _CALL.get()


class CallNotices:
    """Server middleware: gives every ``tools/call`` its :class:`CallNotes` and puts its notices in the result."""

    def __init__(self, read_only_of: Callable[[str], bool]) -> None:
        self.read_only_of = read_only_of

    async def __call__(self, ctx: Any, call_next: Any) -> Any:
        params = ctx.params if ctx.method == "tools/call" else None
        if not isinstance(params, Mapping):
            return await call_next(ctx)
        name = params.get("name")
        notes = CallNotes(read_only=self.read_only_of(name) if isinstance(name, str) else True)
        token = _CALL.set(notes)
        try:
            result = await call_next(ctx)
            await notes.finish()
        finally:
            _CALL.reset(token)
        return with_notes(result, notes.notes) if notes.notes else result


def with_notes(result: Any, notes: list[str]) -> Any:
    """``result`` (a wire mapping or a result model) with the notices first in its content and in its structure."""
    text = "Notice: " + " ".join(notes)
    block = {"type": "text", "text": text}
    if isinstance(result, Mapping):
        out = dict(result)
        content = list(out.get("content") or [])
        # A result leads with the notice; an error keeps its own message first.
        out["content"] = [*content, block] if out.get("isError") else [block, *content]
        structured = out.get("structuredContent")
        if isinstance(structured, Mapping):
            out["structuredContent"] = {**structured, "notice": text}
        return out
    blocks = getattr(result, "content", None)
    if isinstance(blocks, list) and hasattr(result, "model_copy"):
        from mcp_types import TextContent

        notice = TextContent(type="text", text=text)
        update: dict[str, Any] = {
            "content": [*blocks, notice] if getattr(result, "is_error", False) else [notice, *blocks]
        }
        structured = getattr(result, "structured_content", None)
        if isinstance(structured, Mapping):
            update["structured_content"] = {**structured, "notice": text}
        return result.model_copy(update=update)
    return result


__all__ = ["CallNotes", "CallNotices", "current", "with_notes"]
