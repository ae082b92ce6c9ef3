"""``{base_url}mcp/health``: is the endpoint alive (docs/endpoint.md, "Health").

The one path under ``mcp`` that answers without credentials, so that a load balancer, a JupyterHub health check
or a client's "is it up" probe need no token: ``{"status": "ok"}`` and nothing else, since anyone may ask. A
person authenticated to Jupyter (its token, a login) also gets the details an operator wants: the version, the
MCP sessions open and the collaboration rooms open. A grant's token is not a person's login here (Jupyter does
not know it), so an agent gets the minimal answer: nothing it could not learn by calling tools.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from jupyter_core.utils import ensure_async
from jupyter_server.auth.decorator import allow_unauthenticated
from jupyter_server.base.handlers import APIHandler


class HealthHandler(APIHandler):
    """``GET {base_url}mcp/health``."""

    auth_resource = "contents"

    def initialize(self, details: Callable[[], dict[str, Any]]) -> None:
        self.details = details

    @allow_unauthenticated
    async def get(self) -> None:
        answer: dict[str, Any] = {"status": "ok"}
        user = self.current_user
        if user is not None and await ensure_async(self.authorizer.is_authorized(self, user, "read", "contents")):
            answer.update(self.details())
        self.set_header("Cache-Control", "no-store")
        self.finish(answer)


def handlers(details: Callable[[], dict[str, Any]]) -> list[tuple[str, type[APIHandler], dict[str, Any]]]:
    return [(r"/mcp/health", HealthHandler, {"details": details})]
