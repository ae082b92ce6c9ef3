"""Nothing outlives the server (issue 31 item 9): the scan worker process, and what multiprocessing started with
it, end with the Jupyter server however it ends — a graceful stop, or SIGKILL, where no code of the server runs.

A big notebook's scan runs in a worker process (adapters/rooms/scanning.py). A Jupyter killed by a timeout left
that worker (262 MB) and multiprocessing's resource tracker running for good. Shown on a server process of its
own: its process tree is read from /proc before it is stopped, then every process of it must be gone.
"""

from __future__ import annotations

import json
import os
import signal
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx2
import pytest

from benchmarks.jupyter_process import JupyterProcess

from .conftest import autosaved, call_tool, document_room, notebook_json, until

pytestmark = pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads the process tree from /proc")

ROOT = Path(__file__).resolve().parent.parent

#: A notebook whose encoded document is well past the scanner's in-place bound (512 KiB): scanned in the worker.
CELLS = [{"cell_type": "code", "source": f"needle_{i} = {'x' * 400!r}", "id": f"c{i}"} for i in range(2000)]


@dataclass(frozen=True)
class Proc:
    pid: int
    started: int  # clock ticks after boot: a pid reused later is another process
    cmdline: str


def _stat(pid: int) -> tuple[int, str, int] | None:
    """(parent pid, state, start time) of a process, None when it is gone."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except (FileNotFoundError, ProcessLookupError):
        return None
    return int(fields[1]), fields[0], int(fields[19])


def descendants(root: int) -> list[Proc]:
    """Every process below ``root`` now."""
    parents: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit() and (stat := _stat(int(entry.name))) is not None:
            parents.setdefault(stat[0], []).append(int(entry.name))
    found, todo = [], list(parents.get(root, []))
    while todo:
        pid = todo.pop()
        stat = _stat(pid)
        if stat is None:
            continue
        try:
            cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except FileNotFoundError:
            continue
        found.append(Proc(pid, stat[2], cmdline))
        todo.extend(parents.get(pid, []))
    return found


def alive(proc: Proc) -> bool:
    """Still running: there, the same process, and not a zombie waiting for a parent to reap it."""
    stat = _stat(proc.pid)
    return stat is not None and stat[2] == proc.started and stat[1] != "Z"


def scan_in_the_worker(server: JupyterProcess) -> None:
    """A search of a big notebook, over MCP: the scanner starts its worker process for it."""
    (server.root / "big.ipynb").write_text(notebook_json(CELLS))
    headers = {
        "Authorization": f"Bearer {server.token}",
        "Accept": "application/json, text/event-stream",
        "Content-Type": "application/json",
    }
    url = f"{server.url}/mcp"
    init = {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}}
    with httpx2.Client(headers=headers, timeout=120) as http:
        opened = http.post(url, json={"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": init})
        assert opened.status_code == 200, opened.text
        headers = {"mcp-session-id": opened.headers["mcp-session-id"], "mcp-protocol-version": "2025-11-25"}
        http.post(url, json={"jsonrpc": "2.0", "method": "notifications/initialized"}, headers=headers)
        params: dict[str, Any] = {"name": "search_notebook", "arguments": {"path": "big.ipynb", "query": "needle_1999"}}
        answer = http.post(
            url, json={"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": params}, headers=headers
        )
        assert answer.status_code == 200, answer.text
        text = answer.text if answer.text.startswith("{") else answer.text.split("data:", 2)[-1]
        result = json.loads(text)["result"]
        assert not result.get("isError") and result["structuredContent"]["matches"], result


def until_gone(processes: list[Proc], limit: float = 60.0) -> None:
    deadline = time.monotonic() + limit
    while left := [p for p in processes if alive(p)]:
        assert time.monotonic() < deadline, f"still running {limit} s after the server ended: {left}"
        time.sleep(0.1)


@pytest.mark.parametrize("how", ["SIGKILL", "SIGTERM"])
def test_the_scan_worker_ends_with_the_server(how: str, monkeypatch: pytest.MonkeyPatch) -> None:
    # The server imports this checkout (the package may be installed from another).
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])))
    with JupyterProcess() as server:
        scan_in_the_worker(server)
        tree = descendants(server.pid)
        workers = [p for p in tree if "multiprocessing" in p.cmdline]
        assert workers, f"no worker process was started: {tree}"
        if how == "SIGKILL":  # no code of the server runs: nothing it could do on its way out
            os.kill(server.pid, signal.SIGKILL)
            assert server._process is not None
            server._process.wait(30)
        else:
            server.stop()
        until_gone(tree)


async def test_a_copy_lost_with_its_worker_is_seeded_again(
    mcp_client: Any, make_notebook: Any, extension: Any, jp_serverapp: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A big notebook's save reads the copy of its document kept in the copy worker (adapters/rooms/replicas.py).
    The worker killed (out of memory, say), the next save finds the copy gone, encodes the room once to seed it
    in a new worker, and writes the live content; the save after reads the new copy again."""
    monkeypatch.setattr(extension.rooms.scanner, "in_place_bytes", 0)  # every notebook is big
    replicas = extension.rooms._reader.replicas
    path = make_notebook("copied.ipynb", count=20)

    async def edit_and_save(client: Any, n: int) -> None:
        updates = [{"index": 0, "content": f"x = {n}"}]
        await call_tool(client, "batch_update_notebook_cells", path=path, exec=False, updates=updates)
        assert (await call_tool(client, "save_notebook", path=path))["saved"] is True
        await autosaved(jp_serverapp, path)
        room = document_room(jp_serverapp, path)
        on_disk = json.loads((Path(jp_serverapp.root_dir) / path).read_text())
        assert "".join(on_disk["cells"][0]["source"]) == f"x = {n}"
        live = room._document.get()["cells"]
        assert [(c["id"], "".join(c["source"])) for c in on_disk["cells"]] == [(c["id"], c["source"]) for c in live]

    async with mcp_client() as client:
        await edit_and_save(client, 1)
        assert replicas.seeds == 1 and replicas.reads >= 1  # (the autosave after the edit may read it too)
        first = replicas.pid()
        assert first is not None
        os.kill(first, signal.SIGKILL)
        await until(lambda: (_stat(first) or (0, "Z"))[1] == "Z", what="the copy worker's end")
        await edit_and_save(client, 2)
        assert replicas.seeds == 2, "seeded again, once"
        assert replicas.pid() not in (None, first)
        reads = replicas.reads
        await edit_and_save(client, 3)
        assert replicas.seeds == 2 and replicas.reads > reads, "the new copy read, nothing encoded"
