"""Jupyter AI's personas as this server sees them: where their MCP servers are set, who a chat's persona is
answering, and how its turn is cancelled.

Jupyter AI 3 (``jupyter_ai_persona_manager``) keeps one ``PersonaManager`` per open chat, made with the persona
manager extension app as its parent, so it reads its settings from that app's configuration when the chat opens.
Its trait ``builtin_mcp_servers`` lists the MCP servers every persona's agent gets in ACP ``session/new`` (merged
with the workspace's ``.jupyter/mcp_settings.json``); each HTTP entry gets ``X-Jupyter-Chat-Id`` and
``X-JupyterAI-Persona-Id`` headers. The live managers are in the web app's settings
(``["jupyter-ai"]["persona-managers"][chat_id]``); a persona answering a message has it as
``processing_message`` (its ``sender`` is the person). jupyter_server_mcp 0.3's client routing reads the same.

Only this module touches those objects (duck-typed: the package is not a dependency).
"""

from __future__ import annotations

import importlib
import logging
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

log = logging.getLogger(__name__)

PERSONA_MANAGER = "jupyter_ai_persona_manager"
CHAT_HEADER = "X-Jupyter-Chat-Id"
PERSONA_HEADER = "X-JupyterAI-Persona-Id"

#: Jupyter's default identity provider names a token user by a random hex id: no one's name.
_RANDOM_ID = re.compile(r"[0-9a-f]{32}")

MODES = ("replace", "add", "off")


@dataclass(frozen=True)
class ChatPersona:
    """A persona of one chat, and the person whose message it is answering ("" when it answers none)."""

    chat_id: str
    persona_id: str
    persona: str  # the persona's name in the chat ("Claude")
    person: str  # the Jupyter username of the message's sender
    person_name: str  # how people know them ("" when Jupyter knows no name)


class JupyterAI:
    """Jupyter AI in one Jupyter server (``present`` is False when it is not installed or not loaded)."""

    def __init__(self, serverapp: Any) -> None:
        self.serverapp = serverapp

    def _app(self) -> Any:
        manager = getattr(self.serverapp, "extension_manager", None)
        apps = getattr(manager, "extension_apps", {}) or {}
        for app in apps.get(PERSONA_MANAGER, ()):
            return app
        return None

    @property
    def present(self) -> bool:
        return self._app() is not None

    @property
    def identifies_chats(self) -> bool:
        """Whether this Jupyter AI tells which chat and persona an agent's call comes from (the identity headers
        and ``processing_message`` came with jupyter-ai 3.2's persona manager 0.2; 3.1's has neither)."""
        try:
            base = importlib.import_module("jupyter_ai_persona_manager.base_persona").BasePersona
        except Exception:
            return False
        return hasattr(base, "processing_message") and hasattr(base, "_inject_identity_headers")

    def register(self, entry: dict[str, Any], mode: str, *, toolkit_loads: bool) -> list[str]:
        """Put ``entry`` among the MCP servers of chats opened from now on; return the servers' names.

        ``replace``: the servers the admin configured (if any) and this one, never Jupyter AI's own toolkit;
        ``add``: also the toolkit (when it can load) or what the admin configured. An entry with this URL that
        the admin wrote is replaced (it would carry a stale credential)."""
        app = self._app()
        if app is None or mode not in ("replace", "add"):
            return []
        section = app.config.PersonaManager
        configured = "builtin_mcp_servers" in section
        current = [dict(e) for e in (section.builtin_mcp_servers or [])] if configured else []
        toolkit = self._toolkit_entry(app.config)
        if mode == "replace":
            base = [e for e in current if e.get("url") != toolkit["url"]]
        else:
            base = current if configured else ([toolkit] if toolkit_loads else [])
        servers = [e for e in base if e.get("url") != entry["url"]] + [entry]
        section.builtin_mcp_servers = servers
        return [str(e.get("name", "")) for e in servers]

    @staticmethod
    def _toolkit_entry(config: Any) -> dict[str, Any]:
        """The entry Jupyter AI's persona manager makes for its toolkit by default (its own rule)."""
        toolkit = config.get("MCPExtensionApp", {})
        port = toolkit.get("mcp_port", 3001)
        name = toolkit.get("mcp_name", "Jupyter MCP Server")
        return {"type": "http", "name": name, "url": f"http://localhost:{port}/mcp", "headers": []}

    def _persona(self, chat_id: str, persona_id: str) -> tuple[Any, Any]:
        settings = getattr(getattr(self.serverapp, "web_app", None), "settings", {}) or {}
        managers = settings.get("jupyter-ai", {}).get("persona-managers", {})
        manager = managers.get(chat_id)
        personas = getattr(manager, "personas", None) or {}
        return manager, personas.get(persona_id)

    def persona(self, chat_id: str, persona_id: str) -> ChatPersona | None:
        """The live persona of a chat (None: no such chat open, or no such persona in it)."""
        try:
            manager, persona = self._persona(chat_id, persona_id)
            if persona is None:
                return None
            message = getattr(persona, "processing_message", None)
            sender = str(getattr(message, "sender", "") or "") if message is not None else ""
            name = ""
            if sender and not _RANDOM_ID.fullmatch(sender):
                user = manager.chat.get_user(sender)
                name = str(getattr(user, "display_name", "") or getattr(user, "name", "") or sender)
            label = str(getattr(persona, "name", "") or "Agent")[:48]
            return ChatPersona(chat_id, persona_id, label, sender, name[:64])
        except Exception:  # their state is theirs: a shape we do not know is no persona, never a failed request
            log.debug("Jupyter AI persona lookup failed", exc_info=True)
            return None

    def on_cancel(self, chat_id: str, persona_id: str, listener: Callable[[], None]) -> None:
        """Call ``listener()`` whenever the persona's turn is cancelled (the chat's stop button, or :meth:`cancel`).

        Jupyter AI tells no one but the agent (ACP ``session/cancel``); its stop calls the persona's
        ``cancel_response``, which is wrapped here, once per persona object."""
        _, persona = self._persona(chat_id, persona_id)
        if persona is None or getattr(persona, "_pair_mcp_cancel", None) is not None:
            return
        original = persona.cancel_response

        async def cancel_response() -> None:
            try:
                listener()
            except Exception:
                log.exception("a Jupyter AI cancel listener failed")
            await original()

        persona._pair_mcp_cancel = listener
        persona.cancel_response = cancel_response

    async def cancel(self, chat_id: str, persona_id: str, note: str = "") -> bool:
        """End the persona's turn as the chat's stop button does (ACP ``session/cancel``); say ``note`` there."""
        _, persona = self._persona(chat_id, persona_id)
        if persona is None or not getattr(persona, "processing", False):
            return False
        await persona.cancel_response()
        if note:
            try:
                persona.send_message(note)
            except Exception:
                log.debug("could not tell the chat", exc_info=True)
        return True
