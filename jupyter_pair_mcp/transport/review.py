"""The REST API of review mode (docs/rest.md, docs/review.md): a document's suggestions, accepting and
rejecting them cell by cell, and a person's own review switch.

Same stack as :mod:`.rest`: Jupyter's authentication, then its authorizer for what the tools need for the
same work — read on ``contents`` to list suggestions and read one's switch, write on ``contents`` to
accept (it edits the live document) and reject. The handlers only parse and answer:
:class:`~jupyter_pair_mcp.services.suggestions.SuggestionService` does the work.

The switch is by Jupyter username because that is the one identity a person's browser and the agents they
run share: an agent authenticates with the person's token (or a token of the same user), so "agents acting
as me propose" is exactly "calls authenticated as my username propose"; a person cannot put other users'
agents into review mode (only the admin's ``review_mode`` does that). On a single-user server (Jupyter's own
identity provider, which names every cookie-less token request a new anonymous user) all its users are its
one owner, so the switch applies to every agent there.
"""

from __future__ import annotations

from typing import Any

from jupyter_server.base.handlers import APIHandler
from tornado import web

from jupyter_pair_mcp.errors import InvalidArgument
from jupyter_pair_mcp.services.suggestions import SuggestionService
from jupyter_pair_mcp.transport.rest import _Handler, _needs_read, _needs_write

#: Cells one accept or reject may name (a batch edit changes at most 200).
MAX_CELLS = 1000


class _ReviewHandler(_Handler):
    def initialize(self, suggestions: SuggestionService) -> None:  # type: ignore[override]
        self.suggestions = suggestions

    def cells(self, values: dict[str, Any]) -> list[str] | None:
        cells = values.get("cells")
        if cells is None:
            return None
        if not isinstance(cells, list) or not all(isinstance(c, str) and c for c in cells) or len(cells) > MAX_CELLS:
            raise InvalidArgument(f"'cells' must be a list of at most {MAX_CELLS} cell ids, or left out for all")
        return cells


class SuggestionsHandler(_ReviewHandler):
    """``GET api/mcp/suggestions?path=``: a document's suggestions, oldest first."""

    @web.authenticated
    @_needs_read
    async def get(self) -> None:
        await self.answer(lambda: self.suggestions.document(self.get_query_argument("path", "")))


class SuggestionActionHandler(_ReviewHandler):
    """``POST api/mcp/suggestions/<id>/accept`` and ``.../reject`` with ``{"cells"?}``."""

    @web.authenticated
    @_needs_write
    async def post(self, suggestion_id: str, action: str) -> None:
        async def work() -> dict[str, Any]:
            cells = self.cells(self.body())
            if action == "accept":
                done = await self.suggestions.accept(suggestion_id, cells, self.person)
            else:
                done = await self.suggestions.reject(suggestion_id, cells, self.person)
            return await self.suggestions.shown(done)

        await self.answer(work)


class ReviewHandler(_ReviewHandler):
    """``GET api/mcp/review`` and ``PUT api/mcp/review {"enabled"}``: this person's own review switch."""

    def state(self) -> dict[str, Any]:
        username = self.person.username
        return {"enabled": self.suggestions.reviewing(username), "server": self.suggestions.review_mode}

    @web.authenticated
    @_needs_read
    async def get(self) -> None:
        async def work() -> dict[str, Any]:
            return self.state()

        await self.answer(work)

    @web.authenticated
    @_needs_read
    async def put(self) -> None:
        async def work() -> dict[str, Any]:
            enabled = self.body().get("enabled")
            if not isinstance(enabled, bool):
                raise InvalidArgument("'enabled' is required, true or false")
            if not self.person.username:
                raise InvalidArgument("this request has no Jupyter username to switch review mode for")
            self.suggestions.set_review(self.person.username, enabled)
            return self.state()

        await self.answer(work)


def handlers(suggestions: SuggestionService) -> list[tuple[str, type[APIHandler], dict[str, Any]]]:
    """The routes, relative to the server's base URL."""
    kwargs = {"suggestions": suggestions}
    return [
        (r"/api/mcp/suggestions", SuggestionsHandler, kwargs),
        (r"/api/mcp/suggestions/([0-9a-f]{1,64})/(accept|reject)", SuggestionActionHandler, kwargs),
        (r"/api/mcp/review", ReviewHandler, kwargs),
    ]
