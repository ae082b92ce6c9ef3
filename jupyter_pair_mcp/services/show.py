"""Moving a person's view when the person allows it: an agent asks, the person's JupyterLab shows (docs/awareness.md).

An agent may ask the JupyterLab of the person it works for — the person who approved its grant — to open a
document and bring a cell into view, only when that person turned "May move my view" on for that grant (off by
default, kept in the grant). Agents using a Jupyter credential have no identity that lasts beyond a session,
so nothing to attach the setting to: they are refused, and told to connect with a grant.

The request travels in two steps so that nobody else's tab can see or forge it: a Jupyter event (the event bus
every JupyterLab tab already subscribes to) carries only its id and whom it is for; the person's tab then claims
it over REST (``api/mcp/show/<id>/claim``), which answers only that person (on a single-user server, any tab:
all are the owner's), and reports over REST whether it showed it. The tool waits for that report a bounded time
and says what happened: shown, refused by the tab, or nobody took it — never that the view moved when it did not.
"""

from __future__ import annotations

import asyncio
import logging
import secrets
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from jupyter_pair_mcp.adapters.rooms import awareness as aw

log = logging.getLogger(__name__)

SCHEMA_ID = "https://github.com/jupyter-pair-mcp/jupyter-pair-mcp/events/show_request/v1"
SCHEMA_PATH = Path(__file__).parent / "event_schemas" / "show_request" / "v1.yaml"

#: Requests waiting at once (each lives as long as its tool call, which waits a bounded time).
MAX_PENDING = 64
#: Seconds a tab of the person has to take a request, then to show it (opening a large notebook takes a while).
CLAIM_WAIT = 10.0
SHOW_WAIT = 20.0


@dataclass
class ShowRequest:
    """One agent's request to show ``path`` (and ``cell_id``) to the Jupyter user ``to``."""

    id: str
    to: str  # the person's Jupyter username; "" when any tab may take it (a single-user server)
    path: str
    cell_id: str | None
    agent: str  # the agent's name, as the person sees it
    claimed: asyncio.Event = field(default_factory=asyncio.Event)
    answered: asyncio.Event = field(default_factory=asyncio.Event)
    ticket: str = ""  # given to the tab that claimed it: only that tab reports
    ok: bool = False
    message: str = ""


class ShowRequests:
    """The requests waiting for a person's JupyterLab, and the events that announce them."""

    def __init__(self, event_logger: Any, grants: Any, *, single_user: bool) -> None:
        self.event_logger = event_logger
        self.grants = grants  # the GrantStore (None: grants are off): where "May move my view" is kept
        self.single_user = single_user
        self.claim_wait, self.show_wait = CLAIM_WAIT, SHOW_WAIT
        self._pending: dict[str, ShowRequest] = {}
        if event_logger is not None:
            event_logger.register_event_schema(SCHEMA_PATH)

    def grant_of(self, grant_id: str) -> Any:
        """The live grant ``grant_id`` (None: none, or grants are off)."""
        return self.grants.grants.get(grant_id) if self.grants is not None and grant_id else None

    def open(self, to: str, path: str, cell_id: str | None, agent: str) -> ShowRequest | None:
        """A new request, announced to the person's tabs; None when too many wait already."""
        if self.event_logger is None or len(self._pending) >= MAX_PENDING:
            return None
        request = ShowRequest(secrets.token_hex(8), "" if self.single_user else to, path, cell_id, agent)
        self._pending[request.id] = request
        try:
            self.event_logger.emit(schema_id=SCHEMA_ID, data={"request": request.id, "to": request.to})
        except Exception:
            log.warning("MCP: could not announce a show request", exc_info=True)
            self._pending.pop(request.id, None)
            return None
        return request

    def has_tab(self, global_room: Any, to: str) -> bool:
        """Whether a JupyterLab tab of ``to`` (any person's, on a single-user server) is connected now: a person
        publishes a ``user`` in JupyterLab's global awareness room, agents an ``agent`` besides."""
        for state in aw.states(global_room).values() if global_room is not None else ():
            user = state.get("user") if isinstance(state, dict) else None
            if not isinstance(user, dict) or isinstance(state.get("agent"), dict):
                continue  # no one, or an agent
            if self.single_user or user.get("username") == to:
                return True
        return False

    async def wait(self, request: ShowRequest) -> str:
        """How the request ended: "shown", "refused" (the tab said why), "unclaimed" or "unanswered"."""
        for event, waited in ((request.claimed, "unclaimed"), (request.answered, "unanswered")):
            try:
                await asyncio.wait_for(event.wait(), self.claim_wait if waited == "unclaimed" else self.show_wait)
            except TimeoutError:
                return waited
        return "shown" if request.ok else "refused"

    def close(self, request: ShowRequest) -> None:
        """The tool call is over: the request can no longer be claimed."""
        self._pending.pop(request.id, None)

    def _mine(self, request_id: str, username: str) -> ShowRequest | None:
        request = self._pending.get(request_id)
        if request is None or (request.to and request.to != username):
            return None
        return request

    def claim(self, request_id: str, username: str) -> ShowRequest | None:
        """The request for the tab of ``username`` to show, once (None: not theirs, over, or another tab's)."""
        request = self._mine(request_id, username)
        if request is None or request.claimed.is_set():
            return None
        request.claimed.set()
        request.ticket = secrets.token_hex(16)
        return request

    def answer(self, request_id: str, username: str, ticket: str, ok: bool, message: str) -> bool:
        """The claiming tab's report (``ticket`` from its claim): shown, or why not."""
        request = self._mine(request_id, username)
        if request is None or not request.ticket or not secrets.compare_digest(ticket, request.ticket):
            return False
        if request.answered.is_set():
            return False
        request.ok, request.message = ok, message
        request.answered.set()
        return True
