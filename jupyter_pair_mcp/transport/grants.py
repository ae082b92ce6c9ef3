"""``api/mcp/grants``: a person's grants (docs/authorization.md, docs/rest.md), listed and revoked.

Same stack as :mod:`.rest`: Jupyter's authentication (so a grant's own token is refused here, as everywhere but
``/mcp``: a grant can neither list nor revoke grants), then read on ``contents``. A person sees and revokes the
grants they approved; on a single-user server (Jupyter's own identity provider names every cookie-less token
request a new anonymous user) every holder of its token or password is its one owner, who sees them all.
"""

from __future__ import annotations

from typing import Any

from jupyter_server.base.handlers import APIHandler
from tornado import web

from jupyter_pair_mcp.errors import NotFound
from jupyter_pair_mcp.services.actors import OWNER, name_person
from jupyter_pair_mcp.services.grants import Grant, GrantStore
from jupyter_pair_mcp.transport.rest import _Handler, _needs_read


class GrantsHandler(_Handler):
    """``GET api/mcp/grants``: the person's grants, newest first (never a token or its hash)."""

    def initialize(self, store: GrantStore, single_user: bool) -> None:  # type: ignore[override]
        self.store = store
        self.single_user = single_user

    def mine(self, grant: Grant) -> bool:
        return self.single_user or grant.person == self.person.username

    @web.authenticated
    @_needs_read
    async def get(self) -> None:
        async def work() -> dict[str, Any]:
            grants = sorted((g for g in self.store.grants.values() if self.mine(g)), key=lambda g: -g.created)
            return {"grants": [{**g.public(), "granted_by": g.person_name or OWNER} for g in grants]}

        await self.answer(work)


class GrantHandler(GrantsHandler):
    """``DELETE api/mcp/grants/<id>``: revoke one (its tokens stop working at once)."""

    @web.authenticated
    @_needs_read
    async def delete(self, grant_id: str) -> None:
        async def work() -> dict[str, Any]:
            grant = self.store.grants.get(grant_id)
            if grant is None or not self.mine(grant):
                raise NotFound(f"no grant {grant_id!r} of yours")
            self.store.revoke(grant_id, by=name_person(self.current_user))
            return {"revoked": grant_id}

        await self.answer(work)


def handlers(store: GrantStore, single_user: bool) -> list[tuple[str, type[APIHandler], dict[str, Any]]]:
    kwargs = {"store": store, "single_user": single_user}
    return [
        (r"/api/mcp/grants", GrantsHandler, kwargs),
        (r"/api/mcp/grants/([0-9a-f]{1,64})", GrantHandler, kwargs),
    ]
