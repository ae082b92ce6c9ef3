"""A person's stop of a grant's agent outlives a server restart, as the grant does (issue 32, known gaps).

A real Jupyter server process: a person approves an SDK OAuth client, stops its agent in a notebook, and the
server restarts (SIGTERM, then a new process on the same data directory). The agent's next edit, with the same
access token, is refused with the stop's message; the stop is in the file next to the grants (mode 0600);
allowed again, the agent edits.
"""

from __future__ import annotations

import asyncio
import os
import re
import stat
from pathlib import Path
from typing import Any

import httpx2
import pytest

from benchmarks.jupyter_process import JupyterProcess, RawSession
from jupyter_pair_mcp.services.actors import grant_key

from .conftest import notebook_json, within
from .test_grants import oauth_connect
from .test_heap import started

STOPPED = "A person (the server's owner) stopped this agent in 'held.ipynb'"


async def start(server: JupyterProcess) -> None:
    await asyncio.to_thread(server.__enter__)
    await asyncio.to_thread(started, server)


async def edit(server: JupyterProcess, bearer: dict[str, str], content: str) -> Any:
    """One edit by the grant's agent in a new session (legacy era)."""
    async with httpx2.AsyncClient(headers=bearer, timeout=60) as http:
        session = RawSession(http, f"{server.url}/mcp")
        await within(session.open())
        update = {"cell_id": "c0", "content": content}
        call = session.call("batch_update_notebook_cells", path="held.ipynb", exec=False, updates=[update])
        return await within(call)


async def test_a_stop_of_a_grants_agent_holds_after_a_restart(monkeypatch: pytest.MonkeyPatch) -> None:
    # The server process imports this checkout's package (not whichever one is installed).
    checkout = str(Path(__file__).resolve().parents[1])
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(filter(None, [checkout, os.environ.get("PYTHONPATH")])))
    server = JupyterProcess()
    (server.root / "held.ipynb").write_text(notebook_json([{"cell_type": "code", "source": "a = 1", "id": "c0"}]))
    try:
        await start(server)
        person = {"Authorization": f"Bearer {server.token}"}
        api = f"{server.url}/api/mcp"
        async with oauth_connect(f"{server.url}/mcp", server.token, level="write") as (client, storage):
            await within(client.list_tools())
        assert storage.tokens is not None
        bearer = {"Authorization": f"Bearer {storage.tokens.access_token}"}
        await edit(server, bearer, "a = 2")
        async with httpx2.AsyncClient(headers=person, timeout=60) as http:
            (grant,) = (await within(http.get(f"{api}/grants"))).json()["grants"]
            key = grant_key(grant["id"])
            stopped = await within(http.post(f"{api}/agents/{key}/stop", json={"path": "held.ipynb"}))
            assert stopped.status_code == 200, stopped.text
        await asyncio.to_thread(server.restart)  # the same data directory, root and port
        await asyncio.to_thread(started, server)

        with pytest.raises(RuntimeError, match=re.escape(STOPPED)):  # the tool error
            await edit(server, bearer, "a = 3")
        kept = server._tmp / "data" / "pair_mcp_stops.json"  # next to the grants, the person's alone
        assert stat.S_IMODE(os.stat(kept).st_mode) == 0o600
        async with httpx2.AsyncClient(headers=person, timeout=60) as http:
            agents = (await within(http.get(f"{api}/agents", params={"path": "held.ipynb"}))).json()["agents"]
            assert [(a["key"], a["stopped"], a["stopped_by"]) for a in agents] == [(key, True, "the server's owner")]
            allowed = await within(http.post(f"{api}/agents/{key}/allow", json={"path": "held.ipynb"}))
            assert allowed.status_code == 200, allowed.text
        await edit(server, bearer, "a = 4")  # allowed again: it edits (a tool error would raise)
    finally:
        await asyncio.to_thread(server.__exit__)
