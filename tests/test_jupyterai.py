"""Jupyter AI's agents work through this endpoint with one setting (docs/jupyter-ai.md).

A real ``jupyter server`` with jupyter-ai 3 and this package installed in one environment; a fake ACP agent
(tests/fake_acp_agent.py) is a Jupyter AI persona (tests/fake_acp_persona.py). A person's chat message, written
into the chat's live document as JupyterLab's chat does, makes Jupyter AI run the agent's turn; the agent calls
the MCP servers it was handed in ``session/new``. Nothing but this package's default ``JupyterPairMCP.jupyter_ai``
gives it this endpoint.

These tests need jupyter-ai, which cannot be installed in one pip command with this package's test extra
(jupyter-ai 3.2's toolkit pins mcp<2): they skip without it, and scripts/test.sh runs them in a second virtual
environment where jupyter-ai is installed first (docs/jupyter-ai.md, "Testing").
"""

from __future__ import annotations

import asyncio
import importlib.util
import json
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from .collaborator import Collaborator
from .jupyterai_server import FAKE_PERSONA, JupyterAIServer
from .patience import patient

pytestmark = pytest.mark.skipif(
    importlib.util.find_spec("jupyter_ai_persona_manager") is None, reason="jupyter-ai is not installed here"
)


@pytest.fixture
def ai_server(tmp_path: Path) -> Iterator[JupyterAIServer]:
    server = JupyterAIServer(tmp_path)
    server.start()
    try:
        yield server
    finally:
        server.stop()


async def until(predicate: Callable[[], Any], what: str, limit: float = 30.0) -> Any:
    """``predicate()``'s first truthy value, re-checked until ``limit`` (an idle machine's seconds)."""
    deadline = time.monotonic() + patient(limit)
    while not (value := predicate()):
        if time.monotonic() > deadline:
            raise AssertionError(f"never happened: {what}")
        await asyncio.sleep(0.05)  # re-check the condition (not a wait for a time)
    return value


def send_chat_message(chat: Collaborator, sender: str, display_name: str, body: str, to: str) -> None:
    """What JupyterLab's chat does for a person's message to a persona (the persona picker's metadata)."""
    from pycrdt import Array, Map

    users = chat.doc.get("users", type=Map)
    messages = chat.doc.get("messages", type=Array)
    with chat.doc.transaction():
        users[sender] = {"username": sender, "name": display_name, "display_name": display_name}
        messages.append(
            Map(
                {
                    "type": "msg",
                    "body": body,
                    "id": str(uuid.uuid4()),
                    "time": time.time(),
                    "sender": sender,
                    "raw_time": False,
                    "metadata": {"to_persona": to},
                }
            )
        )


async def chat_ready(server: JupyterAIServer, path: str) -> Collaborator:
    """Open a chat as JupyterLab does, and wait until Jupyter AI's persona manager announced the chat's personas
    (a Jupyter event, which JupyterLab gets on /api/events/subscribe): from then on a message is routed to them."""
    from pycrdt import Map
    from tornado.httpclient import HTTPRequest
    from tornado.websocket import websocket_connect

    url = server.url.replace("http://", "ws://") + "/api/events/subscribe"
    events = await websocket_connect(HTTPRequest(url, headers=server.headers))
    try:
        chat = Collaborator(server.url, "/", server.token, path, kind="chat", sync_limit=30)
        await chat.__aenter__()
        try:
            deadline = time.monotonic() + patient(60)
            while True:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    raise AssertionError(f"Jupyter AI never announced the personas of {path}")
                message = await asyncio.wait_for(events.read_message(), remaining)
                assert message is not None, "the events websocket closed"
                event = json.loads(message)
                if str(event.get("schema_id", "")).endswith("jupyter_ai_persona_manager/personas/v1") and event.get(
                    "personas"
                ):
                    break
            # The chat takes messages once loaded: it ignores what arrives while its document is "dirty" (the
            # server clears that with its first save).
            state = chat.doc.get("state", type=Map)
            await until(lambda: state.get("dirty") is False, f"{path} was loaded", 30)
            return chat
        except BaseException:
            await chat.close()
            raise
    finally:
        events.close()


def events(server: JupyterAIServer, kind: str) -> list[dict[str, Any]]:
    return [e for e in server.agent_events() if e.get("event") == kind]


async def test_a_chat_persona_gets_this_endpoint_by_the_setting_alone_and_edits_the_live_room_as_the_person(
    ai_server: JupyterAIServer,
) -> None:
    async with Collaborator(ai_server.url, "/", ai_server.token, "note.ipynb") as notebook:
        chat = await chat_ready(ai_server, "talk.chat")
        try:
            send_chat_message(chat, "alice", "Alice", "insert note.ipynb hello-from-the-chat", FAKE_PERSONA)
            await notebook.wait_until(lambda: "hello-from-the-chat" in notebook.sources(), 60)
            agent = await notebook.wait_awareness(
                lambda: next((s for s in notebook.agents() if "Fakebot" in json.dumps(s)), None), 20
            )
            await until(lambda: events(ai_server, "turn_end"), "the agent's turn ended")
        finally:
            await chat.close()
    assert agent["user"]["name"] == "Fakebot (Jupyter AI) · Alice (AI agent)"
    (new,) = events(ai_server, "session/new")
    assert new["servers"] == [
        {
            "name": "jupyter",
            "url": f"{ai_server.url}/mcp",
            "headers": ["Authorization", "X-Jupyter-Chat-Id", "X-JupyterAI-Persona-Id"],
            "minted": True,
        }
    ]
    (called,) = events(ai_server, "called")
    assert not called["error"], called
    (bare,) = events(ai_server, "bare")  # the credential without the chat's headers names no agent: refused
    assert bare["status"] == 403 and "Jupyter AI" in bare["body"], bare
    assert events(ai_server, "prompt")[0]["guidance"]  # Jupyter AI's note naming insert_cell reached the agent
    log = ai_server.text()
    assert "error adding extension" not in log and "Traceback" not in log
    assert ai_server.token not in json.dumps(ai_server.agent_events())  # never the login token


async def test_two_chats_are_two_agents(ai_server: JupyterAIServer) -> None:
    async with Collaborator(ai_server.url, "/", ai_server.token, "note.ipynb") as notebook:
        first = await chat_ready(ai_server, "talk.chat")
        second = await chat_ready(ai_server, "other.chat")
        try:
            send_chat_message(first, "alice", "Alice", "insert note.ipynb from-alice", FAKE_PERSONA)
            send_chat_message(second, "bob", "Bob", "insert note.ipynb from-bob", FAKE_PERSONA)
            await notebook.wait_until(lambda: {"from-alice", "from-bob"} <= set(notebook.sources()), 60)
            await until(lambda: len(events(ai_server, "turn_end")) == 2, "both turns ended")
            names = await notebook.wait_awareness(
                lambda: (
                    len(n := {s["user"]["name"] for s in notebook.agents() if "Fakebot" in s["user"]["name"]}) >= 2
                    and n
                ),
                20,
            )
        finally:
            await first.close()
            await second.close()
    assert names == {"Fakebot (Jupyter AI) · Alice (AI agent)", "Fakebot (Jupyter AI) · Bob (AI agent)"}
    assert len({e["session"] for e in events(ai_server, "called")}) == 2  # two ACP sessions, one per chat


def chat_bodies(chat: Collaborator) -> list[str]:
    from pycrdt import Array

    return [str(m.get("body", "")) for m in chat.doc.get("messages", type=Array).to_py() or []]


async def test_our_stop_ends_the_agents_chat_turn_and_the_chat_says_so(ai_server: JupyterAIServer) -> None:
    import httpx2

    async with Collaborator(ai_server.url, "/", ai_server.token, "note.ipynb") as notebook:
        chat = await chat_ready(ai_server, "talk.chat")
        try:
            send_chat_message(chat, "alice", "Alice", "hold note.ipynb", FAKE_PERSONA)
            await until(lambda: events(ai_server, "step"), "the agent edits the notebook, turn after turn")
            agent = await notebook.wait_awareness(
                lambda: next((s for s in notebook.agents() if "Fakebot" in s["user"]["name"]), None), 20
            )
            key = agent["user"]["username"].removeprefix("mcp-agent-")
            async with httpx2.AsyncClient(headers=ai_server.headers, timeout=30) as client:
                stopped = await client.post(f"{ai_server.url}/api/mcp/agents/{key}/stop", json={"path": "note.ipynb"})
            assert stopped.status_code == 200, stopped.text
            assert stopped.json().get("ended_turn") is True
            await until(lambda: events(ai_server, "cancel"), "the agent was sent ACP session/cancel")
            await until(lambda: events(ai_server, "turn_end"), "the agent's turn ended")
            await until(
                lambda: any("stopped me in note.ipynb" in b for b in chat_bodies(chat)), "the chat says who stopped it"
            )
        finally:
            await chat.close()


async def test_the_chats_stop_ends_the_agents_run_in_the_notebook(ai_server: JupyterAIServer) -> None:
    import httpx2
    from pycrdt import Map

    async with Collaborator(ai_server.url, "/", ai_server.token, "note.ipynb") as notebook:
        chat = await chat_ready(ai_server, "talk.chat")
        try:
            send_chat_message(chat, "alice", "Alice", "run note.ipynb", FAKE_PERSONA)

            def running() -> bool:
                sources = notebook.sources()
                at = next((i for i, s in enumerate(sources) if "time.sleep(300)" in s), None)
                return at is not None and notebook.execution_state(at) == "running"

            await notebook.wait_until(running, 60)
            chat_id = chat.doc.get("metadata", type=Map).get("id")
            async with httpx2.AsyncClient(headers=ai_server.headers, timeout=30) as client:
                cancelled = await client.post(f"{ai_server.url}/api/ai/personas/cancel", params={"chat_id": chat_id})
            assert cancelled.status_code == 200, cancelled.text
            assert cancelled.json()["cancelled"] == [FAKE_PERSONA]
            (called,) = await until(lambda: events(ai_server, "called"), "the agent's call ended with the run")
        finally:
            await chat.close()
    assert called["error"] and "stopped this turn in the Jupyter AI chat" in called["text"], called


async def test_a_stop_of_one_chats_agent_leaves_the_same_persona_in_another_chat_working(
    ai_server: JupyterAIServer,
) -> None:
    import httpx2

    async with Collaborator(ai_server.url, "/", ai_server.token, "note.ipynb") as notebook:
        first = await chat_ready(ai_server, "talk.chat")
        second = await chat_ready(ai_server, "other.chat")
        try:
            send_chat_message(first, "alice", "Alice", "hold note.ipynb", FAKE_PERSONA)
            send_chat_message(second, "bob", "Bob", "hold note.ipynb", FAKE_PERSONA)
            await until(lambda: len({e["session"] for e in events(ai_server, "step")}) == 2, "both agents edit")
            agents = await notebook.wait_awareness(
                lambda: (
                    len(a := {s["user"]["name"]: s for s in notebook.agents() if "Fakebot" in s["user"]["name"]}) == 2
                    and a
                ),
                20,
            )
            alice = agents["Fakebot (Jupyter AI) · Alice (AI agent)"]["user"]["username"].removeprefix("mcp-agent-")
            async with httpx2.AsyncClient(headers=ai_server.headers, timeout=30) as client:
                stopped = await client.post(f"{ai_server.url}/api/mcp/agents/{alice}/stop", json={"path": "note.ipynb"})
            assert stopped.status_code == 200, stopped.text
            (ended,) = await until(lambda: events(ai_server, "turn_end"), "alice's agent's turn ended")

            def bobs_steps() -> int:
                return len([e for e in events(ai_server, "step") if e["session"] != ended["session"]])

            steps = bobs_steps()
            await until(lambda: bobs_steps() > steps, "bob's agent goes on editing")
        finally:
            await first.close()
            await second.close()
    assert not [e for e in events(ai_server, "refused") if e["session"] != ended["session"]]
