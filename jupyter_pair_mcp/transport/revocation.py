"""A revoked grant ends everything it was doing, at once (docs/authorization.md).

Revoking a grant (the client's RFC 7009 revoke, a person's ``DELETE api/mcp/grants/<id>``, or a newer grant past
``max_grants_per_person``) makes its tokens unknown, which refuses only the *next* request. What is already
running goes on without this: a cell run in a kernel, an MCP task, a listen stream, an open legacy session. So
the grant store tells :class:`GrantEnder`, which ends them, in an order that lets the client hear why: first
its runs (each call answers with a tool error naming who revoked the grant), its tasks and listen streams, then
its sessions, each once the answers of its calls in flight are sent.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import Any

from jupyter_pair_mcp.request_state import fingerprint
from jupyter_pair_mcp.services.actors import grant_key
from jupyter_pair_mcp.services.grant_records import Grant

log = logging.getLogger(__name__)


def revoked_message(by: str) -> str:
    """What the grant's calls in flight are told (it names who revoked it, never a token or a path)."""
    return (
        f"the grant was revoked by {by}: this client may no longer use this server; "
        "connect it again (a person approves it in Jupyter) to continue"
    )


class GrantEnder:
    """Ends the sessions, runs, tasks and listen streams of a revoked grant."""

    def __init__(
        self,
        *,
        principal_key: bytes,
        execution: Any,
        subscriptions: Any,
        endpoint: Callable[[], Any],
        presence: Any = None,
    ) -> None:
        self.principal_key = principal_key
        self.execution = execution
        self.subscriptions = subscriptions
        self.endpoint = endpoint  # the built endpoint (runner and tasks), or None before the first request
        self.presence = presence
        self._ending: set[asyncio.Task[None]] = set()

    def revoked(self, grant: Grant, by: str) -> None:
        """The grant store's listener: runs are stopped now; sessions end in a task (they wait for answers)."""
        key = grant_key(grant.id)
        principal = fingerprint(self.principal_key, f"grant:{grant.id}")
        reason = revoked_message(by)
        runs = self.execution.interrupt(lambda actor: getattr(actor, "key", None) == key, None, reason)
        endpoint = self.endpoint()
        tasks = endpoint.tasks.end(principal, reason) if endpoint is not None else 0
        streams = self.subscriptions.end_streams(principal)
        agent = self.presence.agent(f"mcp-agent-{key}") if self.presence is not None else None
        if agent is not None:  # out of every room now, a stateless agent too (it has no session to end)
            self.presence.ended(agent.actor)
        log.info("MCP grant %s revoked: %d run(s), %d task(s), %d stream(s) ended", grant.id, runs, tasks, streams)
        if endpoint is None:
            return
        try:
            ending = asyncio.get_running_loop().create_task(self._end_sessions(endpoint, principal, grant.id))
        except RuntimeError:  # no loop (a command-line revoke): there are no sessions either
            return
        self._ending.add(ending)
        ending.add_done_callback(self._ending.discard)

    async def _end_sessions(self, endpoint: Any, principal: str, grant_id: str) -> None:
        try:
            ended = await endpoint.runner.manager.end_principal(principal)
        except Exception:
            log.exception("ending the sessions of revoked MCP grant %s failed", grant_id)
            return
        if ended:
            log.info("MCP grant %s revoked: %d session(s) ended", grant_id, ended)
