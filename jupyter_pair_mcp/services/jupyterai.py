"""Jupyter AI's agents as agents of this endpoint: the credential the server mints for them, and who each is.

Jupyter AI runs agents (Claude Code, Codex, Gemini, Goose... over ACP) inside the Jupyter server and hands each
the MCP servers of its persona manager (docs/jupyter-ai.md). At start this server mints one credential for them:
a grant (the kind a person approves for an MCP client, docs/authorization.md) that no person approved and no
file holds — its token lives in this process's memory and in the entry given to Jupyter AI, never on disk, never
the login token — and that is refused from anywhere but this host (the agents run here, as the server's
children). A new one is minted at every start, so an agent's copy dies with the server.

One credential, many agents: Jupyter AI stamps each request with the chat and the persona
(``X-Jupyter-Chat-Id``, ``X-JupyterAI-Persona-Id``), and these headers are believed only with this credential.
Each chat's persona becomes a grant of its own (:class:`ChatGrant`, derived per request): its own key, principal
and sessions — so one person's stop of it leaves the same agent in other chats alone — named for the persona and
the person whose message it answers ("Claude (Jupyter AI) · alice"), whose review switch and history it uses.
"""

from __future__ import annotations

import hashlib
import hmac
import ipaddress
import secrets
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from typing import Any

from jupyter_pair_mcp.adapters.jupyterai import CHAT_HEADER, PERSONA_HEADER, JupyterAI
from jupyter_pair_mcp.request_state import GRANT_TOKEN_PREFIX
from jupyter_pair_mcp.services.grant_records import Grant, digest

#: How the minted token starts: a grant's shape (the /mcp handler looks for it), never a Jupyter token's.
TOKEN_PREFIX = f"{GRANT_TOKEN_PREFIX}ai_"

#: Name of this endpoint among a Jupyter AI agent's MCP servers (agents prefix tool names with it).
SERVER_NAME = "jupyter"

#: Why a Jupyter AI agent's run ended when its turn was stopped in the chat (its call fails with this).
CHAT_STOPPED = "A person stopped this turn in the Jupyter AI chat, and this run with it."

#: People remembered per chat persona between turns (for an agent's call while it answers no message).
MAX_REMEMBERED = 1024


@dataclass
class ChatGrant(Grant):
    """The Jupyter AI credential's grant; with ``chat`` set, one chat persona's share of it."""

    loopback_only: bool = True
    chat: str = ""
    persona: str = ""


class JupyterAIAccess:
    """The minted credential, the MCP server entry carrying it, and the per-chat grants of its requests."""

    def __init__(self, jupyter_ai: JupyterAI, *, own_addresses: tuple[str, ...] = ()) -> None:
        self.jupyter_ai = jupyter_ai
        self.own_addresses = own_addresses
        self._token = TOKEN_PREFIX + secrets.token_urlsafe(32)
        self._hash = digest(self._token)
        now = time.time()
        self.grant = ChatGrant(
            id="jupyter-ai",  # stable, unlike its token: a chat persona's stop outlives a restart, as a grant's does
            client_id="jupyter-ai",
            client_name="Jupyter AI",
            person="",
            person_name="",
            level="execute",  # the agents run in the server's process tree already: nothing more to withhold
            folders=[""],
            propose_only=False,
            created=now,
            expires=float("inf"),
        )
        self._last_person: dict[str, tuple[str, str]] = {}
        self._chats: dict[str, tuple[str, str]] = {}  # a chat grant's id -> (chat id, persona id)
        #: Told a chat grant's id when its turn is cancelled in the chat (the app stops its runs).
        self.cancelled: Callable[[str], None] | None = None

    def entry(self, url: str) -> dict[str, Any]:
        """The MCP server entry given to Jupyter AI's persona manager (ACP's HTTP server shape)."""
        return {
            "type": "http",
            "name": SERVER_NAME,
            "url": url,
            "headers": [{"name": "Authorization", "value": f"Bearer {self._token}"}],
        }

    def grant_of(self, token: str) -> ChatGrant | None:
        """The credential's grant, when ``token`` is the minted one (compared in constant time)."""
        if not token.startswith(TOKEN_PREFIX):
            return None
        return self.grant if hmac.compare_digest(digest(token), self._hash) else None

    def accepts(self, remote_ip: str | None) -> bool:
        """Whether a request comes from this host: loopback, or the address the server itself listens on."""
        if not remote_ip:
            return False
        if remote_ip in self.own_addresses:
            return True
        try:
            return ipaddress.ip_address(remote_ip.split("%", 1)[0]).is_loopback
        except ValueError:
            return False

    def chat_grant(self, remote_ip: str | None, headers: Mapping[str, str]) -> ChatGrant | None:
        """The grant of the chat persona a request names, or None: not from this host, or no live persona."""
        if not self.accepts(remote_ip):
            return None
        chat_id = str(headers.get(CHAT_HEADER, "") or "").strip()
        persona_id = str(headers.get(PERSONA_HEADER, "") or "").strip()
        if not chat_id or not persona_id:
            return None
        found = self.jupyter_ai.persona(chat_id, persona_id)
        if found is None:
            return None
        key = f"{chat_id}\n{persona_id}"
        person, person_name = found.person, found.person_name
        if person:
            self._last_person.pop(key, None)
            self._last_person[key] = (person, person_name)
            while len(self._last_person) > MAX_REMEMBERED:
                del self._last_person[next(iter(self._last_person))]
        else:  # between turns: the person it answered last
            person, person_name = self._last_person.get(key, ("", ""))
        suffix = hashlib.sha256(key.encode()).hexdigest()[:12]
        grant_id = f"{self.grant.id}-{suffix}"
        if grant_id not in self._chats:
            self.jupyter_ai.on_cancel(chat_id, persona_id, lambda: self._cancelled(grant_id))
        self._chats.pop(grant_id, None)
        self._chats[grant_id] = (chat_id, persona_id)
        while len(self._chats) > MAX_REMEMBERED:
            del self._chats[next(iter(self._chats))]
        return replace(
            self.grant,
            id=grant_id,
            client_name=f"{found.persona} (Jupyter AI)",
            person=person,
            person_name=person_name,
            chat=chat_id,
            persona=persona_id,
        )

    def _cancelled(self, grant_id: str) -> None:
        if self.cancelled is not None:
            self.cancelled(grant_id)

    async def end_turn(self, actor: Any, path: str, person: Any) -> bool:
        """A person stopped ``actor`` in ``path``: when it is a chat's persona, end its turn as the chat's stop
        button does (ACP ``session/cancel``) and say so in the chat. Whether a turn was ended."""
        chat = self._chats.get(str(getattr(actor, "grant", "") or ""))
        if chat is None:
            return False
        by = str(getattr(person, "name", "") or getattr(person, "username", "") or "someone")
        note = f"{by} stopped me in {path} from Jupyter's agent panel, so this turn ends here (ask them to allow me)."
        return await self.jupyter_ai.cancel(*chat, note=note)


def local_url(ip: str, port: int, base_url: str, *, https: bool = False) -> tuple[str, tuple[str, ...]]:
    """The endpoint's address for agents on this host, and the server's own address a request may come from.

    A server on every interface (or on loopback, or "localhost") is reached on loopback; one bound to a single
    other address is reached there, and that address counts as this host's."""
    scheme = "https" if https else "http"
    path = "/" + "/".join(p for p in [*base_url.strip("/").split("/"), "mcp"] if p)
    own: tuple[str, ...] = ()
    if ip in ("", "0.0.0.0", "*", "localhost"):
        host = "127.0.0.1"
    elif ip == "::":
        host = "[::1]"
    else:
        try:
            loopback = ipaddress.ip_address(ip).is_loopback
        except ValueError:  # a host name: reach it by name, accept what it is from
            loopback = False
        own = () if loopback else (ip,)
        host = f"[{ip}]" if ":" in ip else ip
    return f"{scheme}://{host}:{port}{path}", own
