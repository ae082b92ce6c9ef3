"""``jupyter pair-mcp connect``'s two halves: the grant it connects with, and the stdio to HTTP bridge.

An MCP client that speaks only stdio launches the command; the command connects to the running server's
``{base_url}mcp`` with a headless grant of its own (docs/authorization.md, "Connecting over stdio") rather than
with the server's token, so the agent is a grant agent people see, stop and revoke, with a level and folders.
The grant's token is cached per server in the user's Jupyter data directory (mode 0600: never under the
server's root, where an agent could read it) and minted again when the server no longer lists it (revoked,
expired or about to expire) or the command's options changed.

The bridge forwards JSON-RPC messages as they are, both ways: the SDK's stdio server transport on one side,
its Streamable HTTP client transport on the other. It is not an MCP session itself: the client's initialize
reaches the server, whose answer reaches the client, so capabilities, notifications, progress, cancellation
and server-to-client requests all pass through.
"""

from __future__ import annotations

import hashlib
import os
import sys
import time
from collections.abc import Callable
from typing import Any

from jupyter_pair_mcp.services import private_file

#: ``call(method, path, body)``: one REST call to the server with its own token (cli.call, bound to a server).
Call = Callable[[str, str, "dict[str, Any] | None"], Any]

#: A cached token expiring sooner than this is minted again at launch rather than fail mid-session.
RENEW_BEFORE = 3600.0


def cache_path(data_dir: str, url: str) -> str:
    """Where the grant for the server at ``url`` is cached: the data dir, one file per server."""
    digest = hashlib.sha256(url.rstrip("/").encode()).hexdigest()[:16]
    return os.path.join(data_dir, "jupyter_pair_mcp", "connect", f"{digest}.json")


def _wanted(body: dict[str, Any], cached: dict[str, Any]) -> bool:
    """Whether the cached grant was minted with the options given now."""
    return all(cached.get(key) == body[key] for key in ("level", "folders", "name", "propose_only"))


def grant_token(call: Call, path: str, body: dict[str, Any]) -> str | None:
    """The bearer token to connect with: the cached grant's when the server still lists it with the same
    options, else a newly minted one (the old one revoked: it is replaced); None when the server has no
    grants (``enable_grants`` off), where only its own token works on the endpoint."""
    cached = private_file.read(path, "cached grant") or {}
    try:
        listed = call("GET", "api/mcp/grants", None)["grants"]
    except LookupError:  # the server answered 404: no api/mcp/grants
        return None
    by_id = {g["id"]: g for g in listed}
    old = by_id.get(cached.get("id", ""))
    if old is not None and _wanted(body, cached) and old["expires"] - time.time() > RENEW_BEFORE:
        return str(cached["token"])
    minted = call("POST", "api/mcp/grants", body)
    private_file.write(path, {**body, "id": minted["grant"]["id"], "token": minted["token"]})
    if old is not None:
        call("DELETE", f"api/mcp/grants/{old['id']}", None)
    return str(minted["token"])


def _say(text: str) -> None:
    """stdout is the protocol: everything for the person goes to stderr."""
    sys.stderr.write(f"jupyter pair-mcp connect: {text}\n")
    sys.stderr.flush()


class Stamp:
    """The routing headers the SDK's client session would set on each message (the bridge has no session).

    Handshake era: ``MCP-Protocol-Version``, the version the server answered to ``initialize``, on every message
    after it. 2026-07-28 era: each request names its version in ``_meta``; its headers repeat the version, the
    method and the name the request is about (``Mcp-Name``), which the server checks against the body."""

    def __init__(self) -> None:
        self.version: str | None = None
        self.initializing: set[Any] = set()

    def outgoing(self, item: Any) -> Any:
        from mcp.shared.inbound import (
            MCP_METHOD_HEADER,
            MCP_NAME_HEADER,
            MCP_PROTOCOL_VERSION_HEADER,
            NAME_BEARING_METHODS,
            encode_header_value,
        )
        from mcp.shared.message import ClientMessageMetadata, SessionMessage

        message = item.message
        method = getattr(message, "method", None)
        if method == "initialize":
            self.initializing.add(message.id)
            return item
        params = getattr(message, "params", None) or {}
        modern = (params.get("_meta") or {}).get("io.modelcontextprotocol/protocolVersion")
        headers: dict[str, str] = {}
        if isinstance(modern, str) and method is not None:
            headers = {MCP_PROTOCOL_VERSION_HEADER: modern, MCP_METHOD_HEADER: method}
            name_key = NAME_BEARING_METHODS.get(method)
            if name_key is not None and isinstance(name := params.get(name_key), str):
                headers[MCP_NAME_HEADER] = encode_header_value(name)
        elif self.version is not None:
            headers = {MCP_PROTOCOL_VERSION_HEADER: self.version}
        return SessionMessage(message, metadata=ClientMessageMetadata(headers=headers)) if headers else item

    def incoming(self, item: Any) -> None:
        message = item.message
        if getattr(message, "id", None) in self.initializing:
            self.initializing.discard(message.id)
            result = getattr(message, "result", None)
            if isinstance(result, dict) and isinstance(result.get("protocolVersion"), str):
                self.version = result["protocolVersion"]


async def bridge(url: str, token: str) -> None:
    """Forward MCP messages between this process's stdio and the server's endpoint until stdin closes."""
    import anyio
    import httpx2
    from mcp.client.streamable_http import streamable_http_client
    from mcp.server.stdio import stdio_server
    from mcp.shared._httpx_utils import create_mcp_http_client

    refused = False

    async def on_response(response: httpx2.Response) -> None:
        nonlocal refused
        if response.status_code == 401 and not refused:  # revoked or expired while connected
            refused = True
            _say("the server refused this connection's grant (revoked or expired): the next launch mints another")

    http = create_mcp_http_client(headers={"Authorization": f"Bearer {token}"})
    http.event_hooks["response"].append(on_response)
    async with (
        http,
        streamable_http_client(url, http_client=http) as (remote_read, remote_write),
        stdio_server() as (local_read, local_write),
        anyio.create_task_group() as group,
    ):
        stamp = Stamp()

        async def pump(source: Any, sink: Any, side: str, last: bool) -> None:
            async for item in source:
                if isinstance(item, Exception):
                    _say(f"dropped a message the {side} sent that is not JSON-RPC: {type(item).__name__}")
                    continue
                if last:
                    item = stamp.outgoing(item)
                else:
                    stamp.incoming(item)
                await sink.send(item)
            if last:  # the client closed stdin: end the session (the HTTP transport sends its DELETE)
                group.cancel_scope.cancel()

        group.start_soon(pump, local_read, remote_write, "client", True)
        group.start_soon(pump, remote_read, local_write, "server", False)
