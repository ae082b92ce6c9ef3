"""Review mode on the agent's side: an edit made as a proposal, and get_suggestion (group ``history``).

An edit tool asked to propose (``propose``), or called while review mode applies to its caller (the
server's ``review_mode``, or the person's own switch for their Jupyter identity), makes its edit in a
suggestion instead of the live document (recorded per cell, nothing copied) and returns at once with it
(services/suggestions.py). The agent is told of every later state change by a ``notifications/message``
on its session while that session is open, and reads the state with ``get_suggestion``.
"""

from __future__ import annotations

import asyncio
import logging
import weakref
from typing import Annotated, Any

from mcp.server.mcpserver import Context
from mcp_types.version import MODERN_PROTOCOL_VERSIONS
from pydantic import Field

from jupyter_pair_mcp.errors import InvalidArgument, PermissionDenied, Unavailable
from jupyter_pair_mcp.models.suggestions import SuggestionResult
from jupyter_pair_mcp.tools.registry import READ, Backends, ToolSpec

log = logging.getLogger(__name__)

#: The logger name of the notifications that tell an agent its suggestion's new state.
LOGGER = "jupyter-pair-mcp.suggestions"


#: execution_skipped of a proposal asked to run: nothing runs in a suggestion.
PROPOSED = "proposed: nothing runs until a person accepts it (run it then)"


class Proposal:
    """One edit call's proposal, when it is one: the draft its edit is recorded in, discarded if the edit fails;
    ``draft`` is None when the edit goes to the live document (or to the agent's fork)."""

    def __init__(
        self, b: Backends, ctx: Context, path: str, kind: str, propose: bool | None, fork_id: str | None
    ) -> None:
        self.b, self.ctx, self.path, self.kind, self.fork_id = b, ctx, path, kind, fork_id
        self.propose = bool(propose)
        self.draft: Any = None

    async def __aenter__(self) -> Proposal:
        service = self.b.suggestions
        if service is None:
            if self.propose:
                raise Unavailable("suggestions are not available on this server (the history tool group is off)")
            return self
        actor = self.b.actors.of(self.ctx)
        if not service.proposing(actor, self.propose):
            return self
        if self.fork_id:
            if self.propose:
                raise InvalidArgument("propose works on the live document: leave out fork_id (a fork is a draft)")
            return self  # an agent's fork is a private draft already: review applies when it is merged
        self.draft = await service.draft(self.path, self.kind, actor)
        return self

    async def __aexit__(self, kind: Any, error: Any, trace: Any) -> None:
        if error is not None and self.draft is not None:
            await self.b.suggestions.drop(self.draft)

    async def notebook_view(self) -> Any:
        return await self.b.suggestions.view(self.draft) if self.draft is not None else None

    async def text_view(self) -> Any:
        return await self.b.suggestions.view(self.draft) if self.draft is not None else None

    async def finish(self) -> dict[str, Any]:
        """Register the draft's edit as a pending suggestion; the suggestion, for the result's ``suggestion``."""
        suggestion = await self.b.suggestions.submit(self.draft, notify=_notifier(self.ctx))
        return dict(suggestion.as_json())


def refuse_in_review(b: Backends, ctx: Context, fork_id: str | None, tool: str) -> None:
    """Edit tools that cannot propose are refused while review mode applies to the caller (not in its forks)."""
    if fork_id or b.suggestions is None or not b.suggestions.proposing(b.actors.of(ctx), False):
        return
    raise PermissionDenied(
        f"review mode is on for you: {tool} cannot propose; make the change with the edit tools (they propose it "
        "for people to accept)"
    )


def _notifier(ctx: Context) -> Any:
    """Sends the suggestion's new state as a ``notifications/message`` on the agent's session, on its standalone
    stream, while that session's connection lives (held weakly). A 2026-era connection has no such stream
    (log messages only ride the request that asked for them): its agent reads the state with get_suggestion."""
    connection = getattr(getattr(ctx, "session", None), "_connection", None)  # ServerSession keeps it there
    if connection is None or getattr(connection, "protocol_version", "") in MODERN_PROTOCOL_VERSIONS:
        return None
    try:
        ref = weakref.ref(connection)
    except TypeError:
        return None
    loop = asyncio.get_running_loop()

    def notify(suggestion: Any) -> None:
        target = ref()
        if target is None:
            return
        data = notification_data(suggestion)
        params = {"level": "info", "logger": LOGGER, "data": data}
        task = loop.create_task(target.outbound.notify("notifications/message", params))
        task.add_done_callback(_quiet)

    return notify


#: Cells a notification lists at most (each with its state, and why when it conflicts).
MAX_NOTIFIED_CELLS = 50


def notification_data(suggestion: Any) -> dict[str, Any]:
    """A state change as an agent is told it: the suggestion, its state and, per cell, its state and why it
    conflicts (so an agent learns which of its cells a person's accept of another suggestion changed)."""
    data: dict[str, Any] = {"suggestion_id": suggestion.id, "state": suggestion.state, "path": suggestion.path}
    if suggestion.reason:
        data["reason"] = suggestion.reason[:500]
    if suggestion.cells:
        cells = []
        for cell in suggestion.cells[:MAX_NOTIFIED_CELLS]:
            entry = {"cell_id": cell.cell_id, "state": cell.state}
            if cell.reason:
                entry["reason"] = cell.reason[:500]
            cells.append(entry)
        data["cells"] = cells
    return data


def _quiet(task: asyncio.Task[Any]) -> None:
    if not task.cancelled() and task.exception() is not None:  # the session closed: get_suggestion still tells
        log.debug("suggestion notification not sent: %s", type(task.exception()).__name__)


def suggestion_tools(b: Backends) -> list[ToolSpec]:
    async def get_suggestion(
        ctx: Context, suggestion_id: Annotated[str, Field(description="From an edit's result.")]
    ) -> SuggestionResult:
        """A suggestion's state, per cell."""
        if b.suggestions is None:
            raise Unavailable("suggestions are not available on this server")
        found = b.suggestions.get_own(suggestion_id, b.actors.of(ctx))
        return SuggestionResult.model_validate(await b.suggestions.shown(found))

    return [ToolSpec(get_suggestion, "history", "Read a suggestion", READ, read_only=True)]
