"""Credentials never reach a log line about our endpoints.

Jupyter's access log (``jupyter_server.log.log_request``) scrubs ``token=`` and its kin from the URI it
logs, but Tornado's summary of a failed request does not: every ``HTTPError`` with a message (a wrong
token, a failed XSRF check, a 415) is logged as ``403 POST /user/alice/mcp?token=<token> (ip): ...``, and
an uncaught exception logs the whole request's repr, URI included. Our handlers route both through
:func:`scrub_uri`. It replaces every query value, not only those whose names look secret: the MCP
endpoint has no query parameters of its own, the panel's REST API only a number or two, and a guess at
names would miss a client's ``?t=`` or ``apikey=``. Headers (``Authorization``, ``Cookie``,
``X-XSRFToken``) are never put in a log line by these handlers; Jupyter's error log names only Host,
Accept, Referer (scrubbed) and User-Agent.
"""

from __future__ import annotations

from typing import Any

from tornado import web
from tornado.log import app_log

#: What a query value becomes in a log line (Jupyter's own marker).
SECRET = "[secret]"


def scrub_uri(uri: str) -> str:
    """``uri`` with every query value replaced by :data:`SECRET` (the keys are kept, for diagnosis)."""
    path, mark, query = uri.partition("?")
    if not mark:
        return uri
    parts = []
    for part in query.split("&"):
        key, sep, value = part.partition("=")
        parts.append(f"{key}{sep}{SECRET}" if value else part)
    return f"{path}?{'&'.join(parts)}"


class ScrubbedLogs(web.RequestHandler):
    """Mixin (first in the bases) for our handlers: Tornado's request summaries without credentials."""

    def _request_summary(self) -> str:
        return f"{self.request.method} {scrub_uri(self.request.uri or '')} ({self.request.remote_ip})"

    def log_exception(self, typ: Any, value: Any, tb: Any) -> None:
        if isinstance(value, web.HTTPError):
            super().log_exception(typ, value, tb)  # one line, through _request_summary
            return
        # Tornado's own line adds repr(self.request), the raw URI with it.
        app_log.error("Uncaught exception %s", self._request_summary(), exc_info=(typ, value, tb))
