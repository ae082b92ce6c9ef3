"""A fake ACP agent: what Jupyter AI runs as a persona's agent, speaking ACP (JSON-RPC, one message a line) on
stdio, and calling the MCP servers it was given over HTTP — standard library only, so it runs in any venv.

It answers ``initialize`` (HTTP MCP servers supported), ``session/new`` and ``session/load`` (noting the MCP
servers it got), ``session/prompt`` and ``session/cancel``. A prompt's last line is its order:

- ``insert <path> <text>``: insert a markdown cell with ``<text>`` through the server named "jupyter";
- ``hold <path>``: insert cells one after another until the turn is cancelled or a call is refused;
- ``run <path>``: insert a code cell that runs for minutes (the call returns when the run ends);
- ``wait <path> <text>``: insert a markdown cell with ``<text>``, then keep the turn open until it is cancelled
  (an agent thinking between edits: its turn is still running when a person stops it).

What it saw goes, one JSON object a line, to the file named by ``FAKE_ACP_LOG`` (never a credential: of a header
only its name, and whether it is a bearer of the kind the server mints).
"""

from __future__ import annotations

import json
import os
import sys
import threading
import urllib.error
import urllib.request
from typing import Any

_out = threading.Lock()
_sessions: dict[str, dict[str, Any]] = {}
_cancelled: set[str] = set()
_cancel_events: dict[str, threading.Event] = {}


def log(**event: Any) -> None:
    path = os.environ.get("FAKE_ACP_LOG")
    if path:
        with _out, open(path, "a", encoding="utf-8") as f:
            f.write(json.dumps(event) + "\n")


def send(message: dict[str, Any]) -> None:
    with _out:
        sys.stdout.write(json.dumps(message) + "\n")
        sys.stdout.flush()


def update(session: str, text: str) -> None:
    send(
        {
            "jsonrpc": "2.0",
            "method": "session/update",
            "params": {
                "sessionId": session,
                "update": {"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": text}},
            },
        }
    )


class MCP:
    """A minimal MCP client over Streamable HTTP (JSON or SSE answers)."""

    def __init__(self, server: dict[str, Any]) -> None:
        self.url = server["url"]
        self.headers = {h["name"]: h["value"] for h in server.get("headers", [])}
        self.session: str | None = None
        self.next_id = 0

    def post(self, method: str, params: dict[str, Any], notify: bool = False) -> Any:
        body: dict[str, Any] = {"jsonrpc": "2.0", "method": method, "params": params}
        if not notify:
            self.next_id += 1
            body["id"] = self.next_id
        headers = {
            **self.headers,
            "Content-Type": "application/json",
            "Accept": "application/json, text/event-stream",
            "MCP-Protocol-Version": "2025-11-25",
        }
        if self.session:
            headers["Mcp-Session-Id"] = self.session
        request = urllib.request.Request(self.url, json.dumps(body).encode(), headers, method="POST")
        with urllib.request.urlopen(request, timeout=60) as response:
            self.session = response.headers.get("Mcp-Session-Id") or self.session
            raw = response.read().decode()
        if notify:
            return None
        if raw.lstrip().startswith("{"):
            return json.loads(raw)
        for line in raw.splitlines():
            if line.startswith("data:") and line[5:].strip().startswith("{"):
                message = json.loads(line[5:])
                if message.get("id") == body["id"]:
                    return message
        return None

    def start(self) -> None:
        info = {"name": "fake-acp-agent", "version": "1"}
        self.post("initialize", {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": info})
        self.post("notifications/initialized", {}, notify=True)

    def call(self, name: str, **arguments: Any) -> dict[str, Any]:
        answer = self.post("tools/call", {"name": name, "arguments": arguments}) or {}
        return answer.get("result") or {"isError": True, "content": [{"type": "text", "text": str(answer)}]}


def text_of(result: dict[str, Any]) -> str:
    return " ".join(str(c.get("text", "")) for c in result.get("content", []))


def prompt(request_id: Any, params: dict[str, Any]) -> None:
    session = params["sessionId"]
    _cancelled.discard(session)
    cancelled = _cancel_events[session] = threading.Event()
    text = " ".join(str(block.get("text", "")) for block in params.get("prompt", []))
    order = text.strip().splitlines()[-1].split(" ", 2) if text.strip() else [""]
    servers = _sessions.get(session, {}).get("mcpServers", [])
    server = next((s for s in servers if s.get("name") == "jupyter"), None)
    log(event="prompt", session=session, order=order[0], guidance="insert_cell" in text)
    stop = "end_turn"
    try:
        if server is None:
            update(session, "no jupyter MCP server")
        elif order[0] == "insert":
            bare = MCP({**server, "headers": [h for h in server["headers"] if h["name"] == "Authorization"]})
            try:  # the credential alone, naming no chat persona
                bare.start()
                log(event="bare", status=200)
            except urllib.error.HTTPError as exc:
                log(event="bare", status=exc.code, body=exc.read().decode(errors="replace")[:300])
            mcp = MCP(server)
            mcp.start()
            result = mcp.call(
                "batch_insert_notebook_cells", path=order[1], cells=[{"content": order[2], "cell_type": "markdown"}]
            )
            log(event="called", session=session, error=bool(result.get("isError")), text=text_of(result)[:300])
            update(session, "inserted" if not result.get("isError") else "refused: " + text_of(result)[:200])
        elif order[0] == "run":  # a long cell: the call lasts as long as the run
            mcp = MCP(server)
            mcp.start()
            cells = [{"content": "import time\ntime.sleep(300)", "cell_type": "code"}]
            result = mcp.call("batch_insert_notebook_cells", path=order[1], cells=cells)
            log(event="called", session=session, error=bool(result.get("isError")), text=text_of(result)[:600])
        elif order[0] == "wait":
            mcp = MCP(server)
            mcp.start()
            cells = [{"content": order[2], "cell_type": "markdown"}]
            result = mcp.call("batch_insert_notebook_cells", path=order[1], cells=cells)
            log(event="called", session=session, error=bool(result.get("isError")), text=text_of(result)[:300])
            cancelled.wait(600)  # until session/cancel (the server ends the agent at its own stop)
        elif order[0] == "hold":
            mcp = MCP(server)
            mcp.start()
            n = 0
            while session not in _cancelled and n < 200:
                n += 1
                result = mcp.call(
                    "batch_insert_notebook_cells",
                    path=order[1],
                    cells=[{"content": f"step {n}", "cell_type": "markdown"}],
                )
                if result.get("isError"):
                    log(event="refused", session=session, text=text_of(result)[:300])
                    break
                log(event="step", session=session, n=n)
            if session in _cancelled:
                stop = "cancelled"
    except Exception as exc:  # the test reads the log
        log(event="failed", session=session, error=repr(exc)[:300])
    if session in _cancelled:
        stop = "cancelled"
    log(event="turn_end", session=session, stop=stop)
    send({"jsonrpc": "2.0", "id": request_id, "result": {"stopReason": stop}})


def main() -> None:
    for line in sys.stdin:
        if not line.strip():
            continue
        message = json.loads(line)
        method, params, request_id = message.get("method"), message.get("params") or {}, message.get("id")
        if method == "initialize":
            capabilities = {"loadSession": True, "mcpCapabilities": {"http": True, "sse": False}}
            result = {"protocolVersion": 1, "agentCapabilities": capabilities, "authMethods": []}
            send({"jsonrpc": "2.0", "id": request_id, "result": result})
        elif method in ("session/new", "session/load"):
            session = params.get("sessionId") or f"fake-{os.getpid()}-{len(_sessions) + 1}"
            servers = params.get("mcpServers", [])
            _sessions[session] = {"mcpServers": servers}
            seen = [
                {
                    "name": s.get("name"),
                    "url": s.get("url"),
                    "headers": sorted(h["name"] for h in s.get("headers", [])),
                    "minted": any(
                        h["name"] == "Authorization" and h["value"].startswith("Bearer jpmcp_ai_")
                        for h in s.get("headers", [])
                    ),
                }
                for s in servers
            ]
            log(event=method, session=session, servers=seen)
            send(
                {
                    "jsonrpc": "2.0",
                    "id": request_id,
                    "result": {"sessionId": session} if method == "session/new" else {},
                }
            )
        elif method == "session/prompt":
            threading.Thread(target=prompt, args=(request_id, params), daemon=True).start()
        elif method == "session/cancel":
            _cancelled.add(params.get("sessionId", ""))
            _cancel_events.get(params.get("sessionId", ""), threading.Event()).set()
            log(event="cancel", session=params.get("sessionId"))
        elif request_id is not None:
            send({"jsonrpc": "2.0", "id": request_id, "error": {"code": -32601, "message": f"no method {method}"}})


if __name__ == "__main__":
    try:
        main()
    except KeyboardInterrupt:  # Jupyter AI ends its agents with the server (SIGINT to their process group)
        pass
