"""``api/mcp/show/<id>/claim`` and ``.../done``: a person's JupyterLab takes an agent's request to show a document
and says whether it did (services/show.py; docs/rest.md).

Same stack as :mod:`.rest`: Jupyter's authentication (a grant's token is refused here: an agent can neither take
nor answer a request), then read on ``contents``. A request is answered only to the person it is for (on a
single-user server, to any of the owner's tabs), once: the first tab to claim it gets a ticket, and only that
ticket reports the outcome.
"""

from __future__ import annotations

from typing import Any

from jupyter_server.base.handlers import APIHandler
from tornado import web

from jupyter_pair_mcp.errors import InvalidArgument, NotFound
from jupyter_pair_mcp.services.grant_records import clean_name
from jupyter_pair_mcp.services.show import ShowRequests
from jupyter_pair_mcp.transport.rest import _Handler, _needs_read

#: Characters of a tab's reason kept (it reaches the agent).
MAX_REASON = 300


class ShowHandler(_Handler):
    """``POST api/mcp/show/<id>/claim``: the request, with the ticket to report with; ``.../done`` with
    ``{"ticket", "ok", "message"?}``: the outcome."""

    def initialize(self, show: ShowRequests) -> None:  # type: ignore[override]
        self.show = show

    @web.authenticated
    @_needs_read
    async def post(self, request_id: str, step: str) -> None:
        async def work() -> dict[str, Any]:
            username = self.person.username
            if step == "claim":
                request = self.show.claim(request_id, username)
                if request is None:
                    raise NotFound(f"no request {request_id!r} for you to take (another tab took it, or it is over)")
                return {
                    "path": request.path,
                    "cell_id": request.cell_id,
                    "agent": request.agent,
                    "ticket": request.ticket,
                }
            values = self.body()
            ok, ticket, message = values.get("ok"), values.get("ticket"), values.get("message", "")
            if not isinstance(ok, bool) or not isinstance(ticket, str) or not isinstance(message, str):
                raise InvalidArgument("'ok' must be true or false, 'ticket' and 'message' strings")
            reason = clean_name(message, limit=MAX_REASON, fallback="")
            if not self.show.answer(request_id, username, ticket, ok, reason):
                raise NotFound(f"no request {request_id!r} of this tab to report on (it is over, or answered)")
            return {"request": request_id}

        await self.answer(work)


def handlers(show: ShowRequests) -> list[tuple[str, type[APIHandler], dict[str, Any]]]:
    return [(r"/api/mcp/show/([0-9a-f]{1,32})/(claim|done)", ShowHandler, {"show": show})]
