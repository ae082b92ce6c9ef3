"""The audit trail: every tool call that changes a document or runs code, as a Jupyter event.

Admins already ship Jupyter's own events (``contents_service``, ``kernel_actions``) with
``c.EventLogger.handlers``; ours go the same way, under :data:`SCHEMA_ID` (``docs/audit.md``). An event
says who (the Jupyter user, the MCP client, the agent's key), what (the tool, the document and the cell
ids it names) and how it ended (ok, error, refused, and how long it took) — never a cell's source, the
code run, a text, or a credential: only the named arguments below are read, never the whole arguments.

Cheap by construction: a bounded number of cell ids is looked at, whatever the call sent, and Jupyter's
event logger returns at once when nothing listens.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Mapping
from itertools import islice
from pathlib import Path
from typing import Any

log = logging.getLogger(__name__)

#: The schema's ``$id`` (a URI naming it, not an address to fetch).
SCHEMA_ID = "https://github.com/jupyter-pair-mcp/jupyter-pair-mcp/events/tool_call/v1"
SCHEMA_PATH = Path(__file__).parent / "event_schemas" / "tool_call" / "v1.yaml"

#: Cell ids one event lists at most (``cells_truncated`` says when the call named more).
MAX_CELLS = 20
#: Characters of a path one event carries at most.
MAX_PATH = 512
#: Characters of a cell id one event carries at most.
MAX_CELL_ID = 128

#: The arguments naming a document, in the order the first one found is taken.
PATH_ARGUMENTS = ("path", "document_path")
_SNAKE = re.compile(r"(?<!^)(?=[A-Z])")


def error_kind(exc: BaseException) -> str:
    """``InvalidArgument`` → ``invalid_argument``: the error class, as the schema's ``error`` names it."""
    return _SNAKE.sub("_", type(exc).__name__).lower()[:40]


def named_cells(arguments: Mapping[str, Any]) -> tuple[list[str], bool]:
    """The cell ids a call's arguments name (at most :data:`MAX_CELLS`), and whether there were more."""
    found: list[str] = []
    more = False

    def add(value: Any) -> None:
        nonlocal more
        if not isinstance(value, str):
            return
        if len(found) < MAX_CELLS:
            found.append(value[:MAX_CELL_ID])
        else:
            more = True

    for key in ("cell_id", "after_cell_id"):
        add(arguments.get(key))
    ids = arguments.get("cell_ids")
    if isinstance(ids, list):
        for value in islice(ids, MAX_CELLS + 1):
            add(value)
        more = more or len(ids) > MAX_CELLS
    updates = arguments.get("updates")
    if isinstance(updates, list):
        for update in islice(updates, MAX_CELLS + 1):
            # a validated argument is a model; the dict form is for calls made without the SDK's validation
            add(update.get("cell_id") if isinstance(update, Mapping) else getattr(update, "cell_id", None))
        more = more or len(updates) > MAX_CELLS
    return found, more


class AuditTrail:
    """Emits :data:`SCHEMA_ID` events on the server's event logger (registered here, once per server)."""

    def __init__(self, event_logger: Any) -> None:
        self.event_logger = event_logger
        if event_logger is not None:
            event_logger.register_event_schema(SCHEMA_PATH)

    def tool_call(
        self,
        actor: Any,
        tool: str,
        arguments: Mapping[str, Any],
        outcome: str,
        error: str | None,
        duration_ms: float,
    ) -> None:
        """Emit one tool call's event. Never raises: an audit listener's trouble must not fail the call."""
        if self.event_logger is None:
            return
        path = next((v for k in PATH_ARGUMENTS if isinstance(v := arguments.get(k), str)), "")
        cells, more = named_cells(arguments)
        data: dict[str, Any] = {
            "principal": str(getattr(actor, "username", "") or ""),
            "client": str(getattr(actor, "client", "") or ""),
            "agent": str(getattr(actor, "name", "") or ""),
            "agent_key": str(getattr(actor, "key", "") or ""),
            "tool": tool,
            "path": path[:MAX_PATH],
            "cells": cells,
            "cells_truncated": more,
            "outcome": outcome,
            "duration_ms": round(duration_ms, 3),
        }
        if error is not None:
            data["error"] = error
        try:
            self.event_logger.emit(schema_id=SCHEMA_ID, data=data)
        except Exception:
            log.warning("MCP: could not emit the audit event of a %s call", tool, exc_info=True)
