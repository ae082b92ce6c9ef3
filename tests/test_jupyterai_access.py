"""The Jupyter AI credential and identities, as pure logic (tests/test_jupyterai.py runs them in a real Jupyter
with jupyter-ai): the minted token is the only one it takes, from this host only, for a chat persona that is
live; each chat persona is its own agent, named for the persona and the person it answers."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest
from traitlets.config import Config

from jupyter_pair_mcp.adapters.jupyterai import CHAT_HEADER, PERSONA_HEADER, ChatPersona, JupyterAI, toolkit
from jupyter_pair_mcp.request_state import STATE_GRANT
from jupyter_pair_mcp.services.actors import Actors
from jupyter_pair_mcp.services.jupyterai import JupyterAIAccess, local_url


class Personas:
    """Jupyter AI's live personas, as the adapter answers (chat id, persona id) -> ChatPersona."""

    def __init__(self, **live: ChatPersona) -> None:
        self.live = {(p.chat_id, p.persona_id): p for p in live.values()}

        self.listeners: dict[tuple[str, str], Any] = {}

    def persona(self, chat_id: str, persona_id: str) -> ChatPersona | None:
        return self.live.get((chat_id, persona_id))

    def on_cancel(self, chat_id: str, persona_id: str, listener: Any) -> None:
        self.listeners[(chat_id, persona_id)] = listener


ALICE = ChatPersona("chat-1", "jupyter-ai-personas::x::Claude", "Claude", "alice", "Alice")
BOB = ChatPersona("chat-2", "jupyter-ai-personas::x::Claude", "Claude", "bob", "Bob")


def access(**live: ChatPersona) -> JupyterAIAccess:
    return JupyterAIAccess(Personas(**live))  # type: ignore[arg-type]


def token_of(a: JupyterAIAccess) -> str:
    value = a.entry("http://127.0.0.1:8888/mcp")["headers"][0]["value"]
    return str(value).removeprefix("Bearer ")


def headers(p: ChatPersona) -> dict[str, str]:
    return {CHAT_HEADER: p.chat_id, PERSONA_HEADER: p.persona_id}


def test_only_the_minted_token_is_taken_and_each_start_mints_another() -> None:
    first, second = access(), access()
    assert first.grant_of(token_of(first)) is first.grant
    assert first.grant_of(token_of(second)) is None
    assert first.grant_of("jpmcp_at_" + token_of(first)) is None
    assert token_of(first).startswith("jpmcp_ai_") and token_of(first) != token_of(second)


@pytest.mark.parametrize(
    ("remote", "taken"),
    [("127.0.0.1", True), ("127.8.0.1", True), ("::1", True), ("10.0.0.5", False), ("192.168.1.2", False), ("", False)],
)
def test_the_credential_is_taken_from_this_host_only(remote: str, taken: bool) -> None:
    assert (access(a=ALICE).chat_grant(remote, headers(ALICE)) is not None) is taken


def test_the_servers_own_address_counts_as_this_host() -> None:
    a = access(a=ALICE)
    a.own_addresses = ("10.0.0.5",)
    assert a.chat_grant("10.0.0.5", headers(ALICE)) is not None


def test_a_request_naming_no_live_chat_persona_is_refused() -> None:
    a = access(a=ALICE)
    assert a.chat_grant("127.0.0.1", {}) is None
    assert a.chat_grant("127.0.0.1", headers(BOB)) is None  # that chat is not open


def actor_of(grant: Any) -> Any:
    request = SimpleNamespace(scope={"state": {STATE_GRANT: grant}})
    return Actors().of(SimpleNamespace(request_context=SimpleNamespace(request=request)))


def test_each_chat_persona_is_its_own_agent_named_for_the_persona_and_the_person() -> None:
    a = access(a=ALICE, b=BOB)
    alice, bob = actor_of(a.chat_grant("127.0.0.1", headers(ALICE))), actor_of(a.chat_grant("::1", headers(BOB)))
    assert alice.name == "Claude (Jupyter AI) · Alice" and bob.name == "Claude (Jupyter AI) · Bob"
    assert alice.key != bob.key and alice.grant != bob.grant
    assert (alice.username, bob.username) == ("alice", "bob")  # their review switches, their history
    assert alice.label == "Claude (Jupyter AI)"


def test_between_turns_the_agent_keeps_the_person_it_answered_last() -> None:
    personas = Personas(a=ALICE)
    a = JupyterAIAccess(personas)  # type: ignore[arg-type]
    first = actor_of(a.chat_grant("127.0.0.1", headers(ALICE)))
    personas.live[(ALICE.chat_id, ALICE.persona_id)] = ChatPersona(ALICE.chat_id, ALICE.persona_id, "Claude", "", "")
    later = actor_of(a.chat_grant("127.0.0.1", headers(ALICE)))
    assert later.key == first.key and later.name == "Claude (Jupyter AI) · Alice"


@pytest.mark.parametrize(
    ("ip", "url", "own"),
    [
        ("localhost", "http://127.0.0.1:8888/base/mcp", ()),
        ("0.0.0.0", "http://127.0.0.1:8888/base/mcp", ()),
        ("127.0.0.1", "http://127.0.0.1:8888/base/mcp", ()),
        ("::", "http://[::1]:8888/base/mcp", ()),
        ("10.1.2.3", "http://10.1.2.3:8888/base/mcp", ("10.1.2.3",)),
    ],
)
def test_the_endpoint_is_given_at_an_address_of_this_host(ip: str, url: str, own: tuple[str, ...]) -> None:
    assert local_url(ip, 8888, "/base/", https=False) == (url, own)


def persona_manager_app(config: Config) -> Any:
    app = SimpleNamespace(config=config)
    return SimpleNamespace(extension_manager=SimpleNamespace(extension_apps={"jupyter_ai_persona_manager": [app]}))


ENTRY = {"type": "http", "name": "jupyter", "url": "http://127.0.0.1:8888/mcp", "headers": []}
TOOLKIT = {"type": "http", "name": "Jupyter MCP Server", "url": "http://localhost:3001/mcp", "headers": []}


@pytest.mark.parametrize(
    ("mode", "configured", "toolkit_loads", "servers"),
    [
        ("replace", None, True, [ENTRY]),
        ("add", None, True, [TOOLKIT, ENTRY]),
        ("add", None, False, [ENTRY]),
        (
            "replace",
            [TOOLKIT, {"name": "mine", "url": "http://x/mcp"}],
            True,
            [{"name": "mine", "url": "http://x/mcp"}, ENTRY],
        ),
        ("add", [{"name": "mine", "url": "http://x/mcp"}], True, [{"name": "mine", "url": "http://x/mcp"}, ENTRY]),
        ("off", None, True, None),
    ],
)
def test_the_setting_sets_the_persona_managers_servers(
    mode: str, configured: list[dict[str, Any]] | None, toolkit_loads: bool, servers: list[dict[str, Any]] | None
) -> None:
    config = Config()
    if configured is not None:
        config.PersonaManager.builtin_mcp_servers = configured
    JupyterAI(persona_manager_app(config)).register(ENTRY, mode, toolkit_loads=toolkit_loads)
    expected = configured if servers is None else servers
    assert config.PersonaManager.get("builtin_mcp_servers") == expected


def test_a_toolkit_that_cannot_load_next_to_mcp_2_is_named(monkeypatch: pytest.MonkeyPatch) -> None:
    versions = {"jupyter-server-mcp": "0.3.0", "fastmcp-slim": "3.4.11", "mcp": "2.3.0"}

    def version(name: str) -> str:
        if name not in versions:
            raise toolkit.PackageNotFoundError(name)
        return versions[name]

    monkeypatch.setattr(toolkit, "version", version)
    problem = toolkit.toolkit_problem()
    assert problem is not None and "fastmcp 3.4.11 needs mcp<2" in problem
    versions["fastmcp-slim"] = "4.2.3"
    assert toolkit.toolkit_problem() is None
    del versions["jupyter-server-mcp"]
    versions["fastmcp-slim"] = "3.4.11"
    assert toolkit.toolkit_problem() is None


def test_the_instructions_map_jupyter_ais_tool_names_to_ours() -> None:
    """Jupyter AI's note to every agent names insert_cell, edit_cell, delete_cell and read_notebook."""
    import re
    from pathlib import Path

    from jupyter_pair_mcp.protocol.server import INSTRUCTIONS

    ours = set(re.findall(r"^### `(\w+)`", (Path(__file__).parent.parent / "docs" / "tools.md").read_text(), re.M))
    note = " ".join(INSTRUCTIONS.split()).split("other notebook tools mean these:")[1]
    mapping = dict(re.findall(r"(\w+) is (\w+)", note))
    assert {"insert_cell", "edit_cell", "delete_cell", "read_notebook"} <= set(mapping)
    assert set(mapping.values()) <= ours


def test_the_chats_stop_of_a_persona_names_that_chat_personas_grant_only() -> None:
    personas = Personas(a=ALICE, b=BOB)
    a = JupyterAIAccess(personas)  # type: ignore[arg-type]
    told: list[str] = []
    a.cancelled = told.append
    alice, bob = a.chat_grant("127.0.0.1", headers(ALICE)), a.chat_grant("127.0.0.1", headers(BOB))
    assert alice is not None and bob is not None
    personas.listeners[(ALICE.chat_id, ALICE.persona_id)]()
    assert told == [alice.id]
