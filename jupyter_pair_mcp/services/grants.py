"""Grants: what a person let one MCP client do, and the tokens that carry it (docs/authorization.md).

A grant is made when a person approves a client on Jupyter's consent page: the client (its registered id
and the name it gave), the person, a level (read, write or execute), where (the whole server or some
folders), whether every edit is only proposed, and an expiry. The client then holds an access token (short
lived) and a refresh token (rotated on every use) for it; they reach only the MCP endpoint and are never
Jupyter tokens. Tokens are kept only as SHA-256 hashes, in a JSON file in Jupyter's data directory (mode
0600, replaced atomically), so grants survive a restart and a copy of the file gives no one a token (registered
clients' secrets are hashed too: ``client_secrets.py``).

A *headless* grant (``mint``: CI, scripts, no browser) has no client registration and no refresh token: one
long-lived access token, valid until the grant's own expiry, which the person chose. It is revoked, listed
and bounded per person like every other grant.

Pure bookkeeping: no HTTP, no MCP SDK. The OAuth protocol around it is ``protocol/oauth.py``'s; the records
it keeps (grants, pending consents, codes) and their rules are ``grant_records.py``'s.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import secrets
import tempfile
import time
from collections.abc import Callable
from dataclasses import asdict
from typing import Any

from jupyter_pair_mcp.request_state import GRANT_TOKEN_PREFIX
from jupyter_pair_mcp.services.client_secrets import stored_form
from jupyter_pair_mcp.services.grant_records import LEVELS, Code, Grant, Pending, clean_name, digest

log = logging.getLogger(__name__)

#: Prefixes that tell a grant's tokens from Jupyter's at a glance (no hashing of every Jupyter token).
ACCESS_PREFIX = f"{GRANT_TOKEN_PREFIX}at_"
REFRESH_PREFIX = f"{GRANT_TOKEN_PREFIX}rt_"

#: How long an authorization code lives (RFC 6749 §4.1.2 recommends at most 10 minutes).
CODE_TTL = 300.0
#: How long a consent page waits for the person.
PENDING_TTL = 900.0
#: Pending consents and codes held at once (each is bounded by its TTL too).
MAX_PENDING = 256
#: Registered clients kept (dynamic registration is open to anyone who can reach the server).
MAX_CLIENTS = 500


class GrantStore:
    """Grants, registered clients, pending consents and codes; grants and clients persisted in ``path``."""

    def __init__(self, path: str, *, max_per_person: int = 20, access_ttl: float = 3600.0) -> None:
        self.path = path
        self.max_per_person = max_per_person
        self.access_ttl = access_ttl
        self.grants: dict[str, Grant] = {}
        self.clients: dict[str, dict[str, Any]] = {}
        self.pending: dict[str, Pending] = {}
        self.codes: dict[str, Code] = {}
        self._by_access: dict[str, str] = {}
        self._by_refresh: dict[str, str] = {}
        self._revoked: list[Callable[[Grant, str], None]] = []
        self._load()

    def on_revoke(self, listener: Callable[[Grant, str], None]) -> None:
        """Call ``listener(grant, by)`` when a grant is revoked (``by`` names who or what did it): a token check
        refuses only the next request, so whoever keeps sessions, runs, tasks or streams of it ends them."""
        self._revoked.append(listener)

    # -- persistence ------------------------------------------------------------------------------
    def _load(self) -> None:
        try:
            with open(self.path, encoding="utf-8") as f:
                data = json.load(f)
        except FileNotFoundError:
            return
        except (OSError, ValueError):
            log.warning("MCP grants file unreadable; starting without grants (it is replaced on the next change)")
            return
        # stored_form: a file written before secrets were hashed is hashed on its next save.
        self.clients = {str(k): stored_form(v) for k, v in data.get("clients", {}).items() if isinstance(v, dict)}
        for raw in data.get("grants", []):
            with contextlib.suppress(TypeError, ValueError):
                grant = Grant(**raw)
                if grant.level in LEVELS:
                    self.grants[grant.id] = grant
        self._reindex()

    def _reindex(self) -> None:
        self._by_access = {h: g.id for g in self.grants.values() for h in g.access}
        self._by_refresh = {g.refresh: g.id for g in self.grants.values() if g.refresh}

    def save(self) -> None:
        """Write the file atomically, readable by its owner only: live grants and the clients they belong to
        (a registration alone is kept in memory: registration is open to anyone who reaches the server)."""
        now = time.time()
        for grant_id in [g.id for g in self.grants.values() if g.expires < now]:
            self._drop(grant_id)
        used = {g.client_id for g in self.grants.values()}
        clients = {k: v for k, v in self.clients.items() if k in used}
        folder = os.path.dirname(self.path) or "."
        os.makedirs(folder, exist_ok=True)
        payload = json.dumps({"clients": clients, "grants": [asdict(g) for g in self.grants.values()]})
        fd, tmp = tempfile.mkstemp(prefix=".pair_mcp_grants.", dir=folder)
        try:
            os.fchmod(fd, 0o600)
            with os.fdopen(fd, "w", encoding="utf-8") as f:
                f.write(payload)
            os.replace(tmp, self.path)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
            raise

    # -- clients ----------------------------------------------------------------------------------
    def add_client(self, client_id: str, info: dict[str, Any]) -> None:
        """Keep a registration (in memory until a grant uses it); past MAX_CLIENTS the oldest unused go."""
        if len(self.clients) >= MAX_CLIENTS:
            used = {g.client_id for g in self.grants.values()}
            for old in [c for c in self.clients if c not in used][: len(self.clients) - MAX_CLIENTS + 1]:
                del self.clients[old]
        self.clients[client_id] = stored_form(info)

    # -- consent ----------------------------------------------------------------------------------
    def _sweep(self, now: float) -> None:
        for key in [k for k, p in self.pending.items() if now - p.created > PENDING_TTL]:
            del self.pending[key]
        for key in [k for k, c in self.codes.items() if c.expires < now]:
            del self.codes[key]
        while len(self.pending) >= MAX_PENDING:
            del self.pending[next(iter(self.pending))]
        while len(self.codes) >= MAX_PENDING:
            del self.codes[next(iter(self.codes))]

    def begin(self, pending: Pending) -> None:
        self._sweep(time.time())
        self.pending[pending.id] = pending

    def approve(
        self,
        pending_id: str,
        *,
        person: str,
        person_name: str,
        level: str,
        folders: list[str],
        propose_only: bool,
        lifetime: float,
    ) -> tuple[Pending, str]:
        """Make the grant a person approved; return the request and its authorization code."""
        if level not in LEVELS:
            raise ValueError(f"level must be one of {', '.join(LEVELS)}")
        pending = self.pending.pop(pending_id)  # KeyError: answered already, or expired
        now = time.time()
        self._make_room(person)
        grant = Grant(
            id=secrets.token_hex(8),
            client_id=pending.client_id,
            client_name=pending.client_name,
            person=person,
            person_name=person_name,
            level=level,
            folders=sorted(set(folders)) or [""],
            propose_only=propose_only,
            created=now,
            expires=now + lifetime,
            resource=pending.resource,
        )
        self.grants[grant.id] = grant
        code = secrets.token_urlsafe(32)
        self.codes[digest(code)] = Code(
            grant_id=grant.id,
            client_id=pending.client_id,
            redirect_uri=pending.redirect_uri,
            redirect_uri_explicit=pending.redirect_uri_explicit,
            code_challenge=pending.code_challenge,
            resource=pending.resource,
            expires=now + CODE_TTL,
        )
        self.save()
        return pending, code

    def _make_room(self, person: str) -> None:
        """Revoke the person's oldest grants so that one more fits in ``max_per_person``."""
        mine = sorted((g for g in self.grants.values() if g.person == person), key=lambda g: g.created)
        for old in mine[: max(0, len(mine) - self.max_per_person + 1)]:
            log.info("MCP grant %s of %s revoked: over max_grants_per_person", old.id, person)
            self._drop(old.id, "the limit of grants per person (max_grants_per_person)")

    def mint(
        self,
        *,
        name: str,
        person: str,
        person_name: str,
        level: str,
        folders: list[str],
        propose_only: bool,
        lifetime: float,
        resource: str,
    ) -> tuple[Grant, str]:
        """A headless grant and its one token (shown once: only its hash is kept), valid for ``lifetime``."""
        if level not in LEVELS:
            raise ValueError(f"level must be one of {', '.join(LEVELS)}")
        now = time.time()
        self._make_room(person)
        grant_id = secrets.token_hex(8)
        grant = Grant(
            id=grant_id,
            client_id=f"headless-{grant_id}",
            client_name=clean_name(name or "headless agent"),
            person=person,
            person_name=person_name,
            level=level,
            folders=sorted(set(folders)) or [""],
            propose_only=propose_only,
            created=now,
            expires=now + lifetime,
            resource=resource,
            headless=True,
        )
        token = ACCESS_PREFIX + secrets.token_urlsafe(32)
        grant.access[digest(token)] = grant.expires
        self.grants[grant.id] = grant
        self._reindex()
        self.save()
        return grant, token

    def code(self, code: str) -> Code | None:
        found = self.codes.get(digest(code))
        return found if found is not None and found.expires >= time.time() else None

    # -- tokens -----------------------------------------------------------------------------------
    def redeem(self, code: str) -> tuple[Grant, str, str]:
        """Spend a code (once): the grant and its first access and refresh tokens."""
        found = self.codes.pop(digest(code), None)
        grant = self.grants.get(found.grant_id) if found is not None else None
        if grant is None:
            raise KeyError("unknown code")
        return grant, *self._issue(grant)

    def rotate(self, refresh_token: str) -> tuple[Grant, str, str]:
        """A new token pair for a refresh token, which is spent: each refresh token works once."""
        grant = self.by_refresh(refresh_token)
        if grant is None:
            raise KeyError("unknown refresh token")
        return grant, *self._issue(grant)

    def _issue(self, grant: Grant) -> tuple[str, str]:
        now = time.time()
        for h in [h for h, exp in grant.access.items() if exp < now]:
            del grant.access[h]
        access = ACCESS_PREFIX + secrets.token_urlsafe(32)
        refresh = REFRESH_PREFIX + secrets.token_urlsafe(32)
        grant.access[digest(access)] = min(now + self.access_ttl, grant.expires)
        grant.refresh = digest(refresh)
        grant.last_used = now
        self._reindex()
        self.save()
        return access, refresh

    def by_access(self, token: str) -> Grant | None:
        """The live grant an access token belongs to (None: unknown, expired, or its grant expired)."""
        if not token.startswith(ACCESS_PREFIX):
            return None
        h = digest(token)
        grant = self.grants.get(self._by_access.get(h, ""))
        now = time.time()
        if grant is None or grant.access.get(h, 0) < now or grant.expires < now:
            return None
        grant.last_used = now  # written with the next change of the file
        return grant

    def by_refresh(self, token: str) -> Grant | None:
        if not token.startswith(REFRESH_PREFIX):
            return None
        grant = self.grants.get(self._by_refresh.get(digest(token), ""))
        return grant if grant is not None and grant.expires >= time.time() else None

    def revoke(self, grant_id: str, by: str = "its client") -> bool:
        """End a grant and every token of it; ``by`` (who did) is what its sessions' calls are told."""
        if not self._drop(grant_id, by):
            return False
        self.save()
        return True

    def _drop(self, grant_id: str, by: str | None = None) -> bool:
        """Forget a grant; ``by`` set: it was revoked (not expired), and the listeners are told."""
        grant = self.grants.pop(grant_id, None)
        if grant is None:
            return False
        self._reindex()
        for listener in self._revoked if by is not None else []:
            try:
                listener(grant, str(by))
            except Exception:  # one failing listener must not keep the grant alive, nor the others from ending it
                log.exception("a grant revocation listener failed")
        return True

    def set_may_move_view(self, grant_id: str, allowed: bool) -> Grant:
        """Let a grant's agent move its person's view, or not (KeyError: no such grant)."""
        grant = self.grants[grant_id]
        if grant.may_move_view != allowed:
            grant.may_move_view = allowed
            self.save()
        return grant

    def of_person(self, person: str) -> list[Grant]:
        return [g for g in self.grants.values() if g.person == person]
