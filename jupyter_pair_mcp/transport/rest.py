"""The REST API the JupyterLab panel uses: ``{base_url}api/mcp/...`` (docs/rest.md).

Jupyter's own handler stack in front: authentication (token or cookie; a cookie POST needs its XSRF
token), then Jupyter's authorizer for the permission the tools ask for the same work — read on
``contents`` to read a document's activity and agents; write on ``contents`` to stop, allow, undo and
restore (stopping and allowing also within ``stop_agents_users`` when the admin set it). The handlers
only parse and answer: :class:`~.steering.Steering` does the work, and this module is the one place its
errors become HTTP answers — ``{"message": ...}`` with the status of the error's class; anything else is
logged here under a reference and answered 500 without detail.
"""

from __future__ import annotations

import json
import logging
import secrets
from collections.abc import Awaitable, Callable
from typing import Any, cast

from jupyter_core.utils import ensure_async
from jupyter_server.auth.decorator import authorized
from jupyter_server.base.handlers import APIHandler
from tornado import web

from jupyter_pair_mcp.errors import Conflict, InvalidArgument, NotFound, PairMCPError, PermissionDenied, Unavailable
from jupyter_pair_mcp.services.actors import name_person
from jupyter_pair_mcp.services.steering import DEFAULT_ACTIVITY_LIMIT, Person, Steering, refuse_stop
from jupyter_pair_mcp.transport.requestbody import Oversized, load
from jupyter_pair_mcp.transport.scrub import ScrubbedLogs

log = logging.getLogger(__name__)

#: Largest request body the panel's POSTs need (a path and a key or version).
MAX_BODY = 64 * 1024

_STATUS: list[tuple[type[PairMCPError], int]] = [
    (InvalidArgument, 400),
    (PermissionDenied, 403),
    (NotFound, 404),
    (Conflict, 409),
    (Unavailable, 503),
]

_Verb = Callable[..., Awaitable[None]]
_needs_read = cast(Callable[[_Verb], _Verb], authorized("read"))
_needs_write = cast(Callable[[_Verb], _Verb], authorized("write"))


class _Repeated(Exception):
    """A JSON object repeats a key: JSON leaves its meaning undefined, so the body is refused (as /mcp does)."""


def _one_meaning(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    value = dict(pairs)
    if len(value) != len(pairs):
        seen: set[str] = set()
        for key, _ in pairs:
            if key in seen:
                raise _Repeated(key)
            seen.add(key)
    return value


def status_of(error: PairMCPError) -> int:
    return next((status for kind, status in _STATUS if isinstance(error, kind)), 400)


class _Handler(ScrubbedLogs, APIHandler):
    """Shared by the panel's handlers: the service, the person, the body, and the error boundary."""

    auth_resource = "contents"

    def initialize(self, steering: Steering) -> None:
        self.steering = steering

    @property
    def person(self) -> Person:
        user = self.current_user
        return Person(str(getattr(user, "username", "") or ""), name_person(user))

    def body(self) -> dict[str, Any]:
        raw = self.request.body or b""
        if len(raw) > MAX_BODY:
            raise InvalidArgument(f"the request body is larger than {MAX_BODY} bytes")
        try:
            value = load(raw or b"{}", object_pairs_hook=_one_meaning)
        except _Repeated as exc:
            raise InvalidArgument(f"the key {str(exc)[:40]!r} appears more than once in one object") from None
        except Oversized as exc:  # too deep: Python's parser would raise RecursionError (a 500)
            raise InvalidArgument(str(exc)) from None
        except ValueError:
            raise InvalidArgument('the request body is not JSON: send an object like {"path": "a.ipynb"}') from None
        if not isinstance(value, dict):
            raise InvalidArgument("the request body must be a JSON object")
        return value

    def text(self, values: dict[str, Any], name: str) -> str:
        value = values.get(name)
        if not isinstance(value, str) or not value:
            raise InvalidArgument(f"{name!r} is required, as a string")
        return value

    def number(self, name: str, default: int | None) -> int | None:
        raw = self.get_query_argument(name, None)
        if raw is None or raw == "":
            return default
        try:
            return int(raw)
        except ValueError:
            raise InvalidArgument(f"{name!r} must be an integer, not {raw[:40]!r}") from None

    async def answer(self, work: Callable[[], Awaitable[dict[str, Any]]]) -> None:
        """Run ``work`` and answer its result as JSON, or its error as ``{"message"}`` with its status."""
        try:
            result = await work()
        except PairMCPError as exc:
            self.set_status(status_of(exc))
            self.finish(json.dumps({"message": str(exc)}))
            return
        except Exception:
            ref = secrets.token_hex(4)
            log.exception("MCP panel request failed (ref %s)", ref)
            self.set_status(500)
            self.finish(json.dumps({"message": f"internal error (ref {ref}); the Jupyter server log has the details"}))
            return
        self.finish(json.dumps(result))


class ActivityHandler(_Handler):
    """``GET api/mcp/activity?path=&after=&limit=``: a page of a document's activity."""

    @web.authenticated
    @_needs_read
    async def get(self) -> None:
        async def work() -> dict[str, Any]:
            path = self.get_query_argument("path", "")
            limit = self.number("limit", DEFAULT_ACTIVITY_LIMIT)
            assert limit is not None
            return await self.steering.activity(path, self.number("after", None), limit)

        await self.answer(work)


class AgentsHandler(_Handler):
    """``GET api/mcp/agents?path=``: the agents in a document, and whether this person may stop them."""

    @web.authenticated
    @_needs_read
    async def get(self) -> None:
        async def work() -> dict[str, Any]:
            may_write = bool(await self._may("write"))
            return await self.steering.agents(self.get_query_argument("path", ""), self.person.username, may_write)

        await self.answer(work)

    async def _may(self, action: str) -> bool:
        return bool(await ensure_async(self.authorizer.is_authorized(self, self.current_user, action, "contents")))


class AgentActionHandler(_Handler):
    """``POST api/mcp/agents/<key>/stop`` and ``.../allow`` with ``{"path"}``."""

    @web.authenticated
    @_needs_write
    async def post(self, key: str, action: str) -> None:
        async def work() -> dict[str, Any]:
            person = self.person
            if not self.steering.may_stop(person.username):
                raise refuse_stop(person.name)
            path = self.text(self.body(), "path")
            if action == "stop":
                return await self.steering.stop(key, path, person)
            return await self.steering.allow(key, path, person)

        await self.answer(work)


class UndoHandler(_Handler):
    """``POST api/mcp/undo`` with ``{"path", "agent", "count"?}``: undo an agent's last edits; with
    ``{"path", "restore": true}``: undo the person's own last restore."""

    @web.authenticated
    @_needs_write
    async def post(self) -> None:
        async def work() -> dict[str, Any]:
            values = self.body()
            if values.get("restore") is True:  # the person's own last restore
                return await self.steering.undo_restore(self.text(values, "path"), self.person)
            count = values.get("count", 1)
            if not isinstance(count, int) or isinstance(count, bool):
                raise InvalidArgument("'count' must be an integer (1-100)")
            return await self.steering.undo(self.text(values, "path"), self.text(values, "agent"), count, self.person)

        await self.answer(work)


class RestoreHandler(_Handler):
    """``POST api/mcp/restore`` with ``{"path", "version", "keep_people_edits"?}``: bring a document back to a
    version (or take back only the agents' changes since it)."""

    @web.authenticated
    @_needs_write
    async def post(self) -> None:
        async def work() -> dict[str, Any]:
            values = self.body()
            version = values.get("version")
            if isinstance(version, int) and not isinstance(version, bool):
                version = str(version)
            if not isinstance(version, str) or not version:
                raise InvalidArgument("'version' is required: a version_id from the document's history")
            keep = values.get("keep_people_edits", False)
            if not isinstance(keep, bool):
                raise InvalidArgument("'keep_people_edits' must be true or false")
            return await self.steering.restore(self.text(values, "path"), version, self.person, keep_people=keep)

        await self.answer(work)


def handlers(steering: Steering) -> list[tuple[str, type[APIHandler], dict[str, Any]]]:
    """The routes, relative to the server's base URL."""
    kwargs = {"steering": steering}
    return [
        (r"/api/mcp/activity", ActivityHandler, kwargs),
        (r"/api/mcp/agents", AgentsHandler, kwargs),
        (r"/api/mcp/agents/([^/]+)/(stop|allow)", AgentActionHandler, kwargs),
        (r"/api/mcp/undo", UndoHandler, kwargs),
        (r"/api/mcp/restore", RestoreHandler, kwargs),
    ]
