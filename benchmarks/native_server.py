"""The same MCP server as the extension's, served natively by uvicorn: the baseline for bridge overhead.

    python benchmarks/native_server.py ROOT_DIR PORT

Same tools, event store and session manager as inside Jupyter; what differs is only the front: no
Tornado, no Jupyter auth, no ASGI bridge. Tools still call Jupyter's authorizer API, so a stand-in
that allows everything is put where the Jupyter handler would be.
"""

from __future__ import annotations

import sys
from typing import Any

import uvicorn
from jupyter_server.services.contents.filemanager import AsyncFileContentsManager

from jupyter_pair_mcp.adapters.contents.adapter import ContentsAdapter
from jupyter_pair_mcp.adapters.kernels.adapter import KernelsAdapter
from jupyter_pair_mcp.adapters.rooms import RoomsAdapter
from jupyter_pair_mcp.protocol.event_store import MemoryEventStore
from jupyter_pair_mcp.protocol.server import build_server, build_session_manager
from jupyter_pair_mcp.request_state import STATE_HANDLER, STATE_USER
from jupyter_pair_mcp.services.execution import ExecutionService
from jupyter_pair_mcp.tools.registry import GROUPS, Backends


class _AllowAll:
    def is_authorized(self, *args: Any) -> bool:
        return True


class _Handler:
    authorizer = _AllowAll()


class _User:
    username = "bench"


def make_app(root: str) -> Any:
    rooms, kernels = RoomsAdapter(None), KernelsAdapter(None)
    backends = Backends(
        ContentsAdapter(AsyncFileContentsManager(root_dir=root)),
        rooms,
        kernels,
        ExecutionService(rooms, kernels, max_output_length=2000),
    )
    server, _ = build_server(backends, groups=GROUPS, read_only=False)
    manager = build_session_manager(
        server,
        event_store=MemoryEventStore(),
        retry_interval_ms=1000,
        session_idle_timeout=1800,
        max_sessions=1000,
        max_request_body_size=4 * 1024 * 1024,
    )

    async def app(scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "lifespan":
            await receive()
            async with manager.run():
                await send({"type": "lifespan.startup.complete"})
                await receive()
            await send({"type": "lifespan.shutdown.complete"})
            return
        scope["state"] = {STATE_HANDLER: _Handler(), STATE_USER: _User()}
        await manager.handle_request(scope, receive, send)

    return app


if __name__ == "__main__":
    uvicorn.run(make_app(sys.argv[1]), host="127.0.0.1", port=int(sys.argv[2]), log_level="warning", lifespan="on")
