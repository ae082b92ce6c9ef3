"""``api/mcp/grants``: a person's grants (docs/authorization.md, docs/rest.md), listed, minted and revoked.

Same stack as :mod:`.rest`: Jupyter's authentication (so a grant's own token is refused here, as everywhere but
``/mcp``: a grant can neither list, mint nor revoke grants; a cookie POST needs Jupyter's XSRF token), then read
on ``contents``. A person sees and revokes the grants they approved; on a single-user server (Jupyter's own
identity provider names every cookie-less token request a new anonymous user) every holder of its token or
password is its one owner, who sees them all.

``POST`` mints a headless grant (CI, scripts: no browser flow) and answers its token once, with the command
lines that configure common clients with it; only the token's hash is kept.
"""

from __future__ import annotations

import json
import re
import shlex
from typing import Any

from jupyter_core.utils import ensure_async
from jupyter_server.base.handlers import APIHandler
from tornado import web

from jupyter_pair_mcp.errors import InvalidArgument, NotFound, PermissionDenied
from jupyter_pair_mcp.services.actors import OWNER, name_person, person_name
from jupyter_pair_mcp.services.grant_records import LEVELS, Grant, normalize_folder
from jupyter_pair_mcp.services.grants import GrantStore
from jupyter_pair_mcp.transport.hub import hub_server
from jupyter_pair_mcp.transport.oauth import LEVEL_NEEDS, normalized_base, origin
from jupyter_pair_mcp.transport.rest import _Handler, _needs_read

#: A headless grant's lifetime bounds, in seconds (the person picks within them; 30 days by default).
MIN_LIFETIME = 3600
MAX_LIFETIME = 366 * 86400
DEFAULT_LIFETIME = 30 * 86400


def client_commands(name: str, url: str, token: str) -> dict[str, str]:
    """Ready-to-paste configurations of common MCP clients for a bearer token (shown once, with the token)."""
    server = re.sub(r"[^A-Za-z0-9_-]+", "-", name).strip("-")[:40] or "jupyter"
    header = f"Authorization: Bearer {token}"
    remote = {
        "mcpServers": {
            server: {
                "command": "npx",
                "args": ["mcp-remote", url, "--header", "Authorization:${AUTH_HEADER}"],
                "env": {"AUTH_HEADER": f"Bearer {token}"},
            }
        }
    }
    http = {"mcpServers": {server: {"type": "http", "url": url, "headers": {"Authorization": f"Bearer {token}"}}}}
    claude = ["claude", "mcp", "add", "--transport", "http", server, url, "--header", header]
    return {
        "claude": shlex.join(claude),
        "mcp_remote": json.dumps(remote, indent=2),
        "http_json": json.dumps(http, indent=2),
    }


class GrantsHandler(_Handler):
    """``GET api/mcp/grants``: the person's grants, newest first (never a token or its hash);
    ``POST``: mint a headless grant."""

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

    @web.authenticated
    @_needs_read
    async def post(self) -> None:
        async def work() -> dict[str, Any]:
            hub = hub_server()
            refusal = hub.grant_refusal(self.current_user) if hub is not None else None
            if refusal:  # on a hub, as on the consent page: the owner alone (docs/jupyterhub.md says why)
                raise PermissionDenied(refusal)
            values = self.body()
            level = values.get("level", "read")
            if level not in LEVELS:
                raise InvalidArgument(f"'level' must be one of {', '.join(LEVELS)}")
            action, resource = LEVEL_NEEDS[level]
            if not await ensure_async(self.authorizer.is_authorized(self, self.current_user, action, resource)):
                raise PermissionDenied(f"you may not {action} {resource} on this server, so you cannot grant it")
            folders = values.get("folders", [])
            if not isinstance(folders, list) or not all(isinstance(f, str) for f in folders):
                raise InvalidArgument("'folders' must be a list of folder paths ([] for the whole server)")
            try:
                folders = [normalize_folder(f) for f in folders if f.strip()]
            except ValueError as exc:
                raise InvalidArgument(str(exc)) from None
            lifetime = values.get("expires", DEFAULT_LIFETIME)
            if not isinstance(lifetime, int) or isinstance(lifetime, bool):
                raise InvalidArgument("'expires' must be a number of seconds")
            if not MIN_LIFETIME <= lifetime <= MAX_LIFETIME:
                raise InvalidArgument(f"'expires' must be between {MIN_LIFETIME} s (1 hour) and 366 days")
            propose_only = values.get("propose_only", False)
            name = values.get("name", "")
            if not isinstance(propose_only, bool) or not isinstance(name, str):
                raise InvalidArgument("'propose_only' must be true or false, 'name' a string")
            url = f"{origin(self)}{normalized_base(self.base_url)}mcp"
            grant, token = self.store.mint(
                name=name,
                person=self.person.username,
                person_name=person_name(self.current_user),
                level=level,
                folders=folders,
                propose_only=propose_only,
                lifetime=float(lifetime),
                resource=url,
            )
            self.set_status(201)
            self.set_header("Cache-Control", "no-store")  # the token is in the answer
            return {"grant": grant.public(), "token": token, "url": url, "commands": client_commands(name, url, token)}

        await self.answer(work)


class GrantHandler(GrantsHandler):
    """``DELETE api/mcp/grants/<id>``: revoke one (its tokens stop working at once); ``PATCH`` with
    ``{"may_move_view"}``: let its agent open documents in this person's JupyterLab (show_in_jupyterlab), or not."""

    @web.authenticated
    @_needs_read
    async def patch(self, grant_id: str) -> None:
        async def work() -> dict[str, Any]:
            grant = self.store.grants.get(grant_id)
            if grant is None or not self.mine(grant):
                raise NotFound(f"no grant {grant_id!r} of yours")
            allowed = self.body().get("may_move_view")
            if not isinstance(allowed, bool):
                raise InvalidArgument("'may_move_view' must be true or false")
            grant = self.store.set_may_move_view(grant_id, allowed)
            return {**grant.public(), "granted_by": grant.person_name or OWNER}

        await self.answer(work)

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
