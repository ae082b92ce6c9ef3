"""The MCP ``logging`` capability: a session's own log lines, sent to it (docs/endpoint.md, "Logging").

While a session's tool call runs, the records this package logs in its context (the call's own task, the tasks
it starts and the threads it hands work to: contextvars follow them) are collected for that call; when the call
ends they are sent to its client as ``notifications/message`` on the call's own stream, before its result.
Records of other sessions' calls and of the server's own background work (autosave, rooms closing) never run in
that context, so a client sees its own warnings only. ``logging/setLevel`` sets the session's threshold
(``warning`` until it does); a 2026-07-28 client opts in per request through ``_meta`` instead, and the SDK's
rule applies on top.

Bounded: at most :data:`MAX_RECORDS` lines per call (the rest counted in one last line), each cut at
:data:`MAX_CHARS`; the message only (``getMessage()``), never a traceback; the server's root directory removed
from it and any other absolute path replaced, so no server path reaches a client. The package logs no secrets
(transport/scrub.py, tests/test_log_scrub.py).
"""

from __future__ import annotations

import logging
import re
from contextvars import ContextVar
from typing import Any

import mcp_types as types
from mcp.server.connection import allowed_log_levels

#: MCP's levels, lowest first (RFC 5424's, as the spec names them).
LEVELS: tuple[str, ...] = ("debug", "info", "notice", "warning", "error", "critical", "alert", "emergency")
#: A session's threshold until it sends logging/setLevel.
DEFAULT_LEVEL = "warning"
#: Lines one call sends at most, and characters of each.
MAX_RECORDS = 20
MAX_CHARS = 1000
#: Where a connection keeps its level (``Connection.state``).
_STATE_KEY = "jupyter_pair_mcp.log_level"

_collected: ContextVar[list[logging.LogRecord] | None] = ContextVar("jupyter_pair_mcp_session_log", default=None)
_ABSOLUTE = re.compile(r"(?<![\w.:/])/(?:[^\s/'\"]+/)*[^\s/'\"]+")


def mcp_level(levelno: int) -> str:
    if levelno >= logging.CRITICAL:
        return "critical"
    if levelno >= logging.ERROR:
        return "error"
    if levelno >= logging.WARNING:
        return "warning"
    return "info" if levelno >= logging.INFO else "debug"


class _Collector(logging.Handler):
    """On the package's logger: a record logged inside a session's call joins that call's lines. Not an output
    of the log: app.py still gives the package logger the server's handlers when it has only this one."""

    collects_session_lines = True

    def emit(self, record: logging.LogRecord) -> None:
        lines = _collected.get()
        if lines is not None and len(lines) <= MAX_RECORDS:
            lines.append(record)


def install() -> None:
    """Put the collector on the package's logger, once per process (servers of one process share it)."""
    package = logging.getLogger("jupyter_pair_mcp")
    if not any(isinstance(h, _Collector) for h in package.handlers):
        package.addHandler(_Collector())


def _connection(ctx: Any) -> Any:
    return getattr(getattr(ctx, "session", None), "_connection", None)  # as protocol/listen.py: no public accessor


def session_level(ctx: Any) -> str:
    state = getattr(_connection(ctx), "state", None)
    return str(state.get(_STATE_KEY, DEFAULT_LEVEL)) if isinstance(state, dict) else DEFAULT_LEVEL


async def set_level(ctx: Any, params: types.SetLevelRequestParams) -> types.EmptyResult:
    """``logging/setLevel``: this session's threshold (other sessions keep theirs)."""
    state = getattr(_connection(ctx), "state", None)
    if isinstance(state, dict):
        state[_STATE_KEY] = params.level
    return types.EmptyResult()


def scrub(text: str, root: str) -> str:
    """``text`` without the server's root directory and with no other absolute path, cut to MAX_CHARS."""
    if root:
        text = text.replace(root.rstrip("/") + "/", "").replace(root.rstrip("/"), ".")
    text = _ABSOLUTE.sub("<path>", text)
    return text if len(text) <= MAX_CHARS else text[: MAX_CHARS - 1] + "…"


class SessionLog:
    """Server middleware: a tool call's log lines go to its own client when the call ends."""

    def __init__(self, root: str) -> None:
        self.root = root
        install()

    async def __call__(self, ctx: Any, call_next: Any) -> Any:
        if getattr(ctx, "method", None) != "tools/call" or getattr(ctx, "request_id", None) is None:
            return await call_next(ctx)
        lines: list[logging.LogRecord] = []
        token = _collected.set(lines)
        try:
            return await call_next(ctx)
        finally:
            _collected.reset(token)
            if lines:
                await self.send(ctx, lines)

    async def send(self, ctx: Any, lines: list[logging.LogRecord]) -> None:
        threshold = LEVELS.index(session_level(ctx))
        allowed = allowed_log_levels(ctx.protocol_version, ctx.meta)
        sent = 0
        for record in lines[:MAX_RECORDS]:
            level = mcp_level(record.levelno)
            if LEVELS.index(level) < threshold or level not in allowed:
                continue
            await self.notify(ctx, level, scrub(record.getMessage(), self.root), record.name)
            sent += 1
        if len(lines) > MAX_RECORDS and sent:
            await self.notify(ctx, "warning", f"more log lines of this call were left out (over {MAX_RECORDS})", None)

    @staticmethod
    async def notify(ctx: Any, level: str, message: str, logger: str | None) -> None:
        params = types.LoggingMessageNotificationParams(level=level, data=message, logger=logger)  # type: ignore[arg-type]
        notification = types.LoggingMessageNotification(params=params)
        try:
            await ctx.session.send_notification(notification, related_request_id=ctx.request_id)
        except Exception:  # the client went away: its lines go with it (the server's log has them)
            return


def register(server: Any, root: str) -> None:
    """Advertise ``logging`` and serve ``logging/setLevel`` (the low-level server advertises the capability
    when the method has a handler); collect each call's lines, innermost of our middleware."""
    server._lowlevel_server.add_request_handler("logging/setLevel", types.SetLevelRequestParams, set_level)
    server.middleware.append(SessionLog(root))
