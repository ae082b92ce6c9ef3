"""A throwaway Jupyter server in a subprocess for benchmarks: loopback only, own config dirs, cleaned up."""

from __future__ import annotations

import json
import os
import secrets
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, Self


def summary(samples: list[float]) -> dict[str, float]:
    """p50, p95 and count of millisecond samples."""
    ordered = sorted(samples)
    return {
        "p50": statistics.median(ordered),
        "p95": ordered[min(len(ordered) - 1, int(len(ordered) * 0.95))],
        "n": len(ordered),
    }


async def timed(call: Callable[[], Awaitable[Any]], iterations: int) -> list[float]:
    """Milliseconds per awaited ``call()``, ``iterations`` times in a row."""
    samples = []
    for _ in range(iterations):
        started = time.perf_counter()
        await call()
        samples.append((time.perf_counter() - started) * 1000)
    return samples


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def rss_mb(pid: int) -> float:
    """Resident memory of a process in MB (Linux /proc)."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


def cpu_seconds(pid: int) -> float:
    """CPU time a process has used so far, user and system, all its threads (Linux /proc; not its children)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


class JupyterProcess:
    """``with JupyterProcess() as server``: a Jupyter server on 127.0.0.1 with our extension."""

    def __init__(
        self,
        *extra_args: str,
        startup_timeout: float = 60.0,
        python: Path | None = None,
        config: dict[str, Any] | None = None,
    ) -> None:
        """``python``: another environment's interpreter (its own venv: ours is left out of its environment);
        ``config``: a ``jupyter_server_config.json`` for the server's throwaway config directory."""
        self.python = python
        self.config = config
        self.extra_args = list(extra_args)
        self.startup_timeout = startup_timeout
        self.token = secrets.token_hex(16)
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self._tmp = Path(tempfile.mkdtemp(prefix="jnmcp-bench-"))
        self.root = self._tmp / "root"
        self.root.mkdir()
        self._process: subprocess.Popen[bytes] | None = None
        self.started_in: float = 0.0

    @property
    def pid(self) -> int:
        assert self._process is not None
        return self._process.pid

    def __enter__(self) -> Self:
        if self.config:
            (self._tmp / "config").mkdir(exist_ok=True)
            (self._tmp / "config" / "jupyter_server_config.json").write_text(json.dumps(self.config))
        inherited = (
            os.environ
            if self.python is None
            else {k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV", "PYTHONPATH", "PYTHONHOME")}
        )
        env = {
            **inherited,
            # A relative entry (``PYTHONPATH=.`` to test a checkout) would resolve against the server's cwd.
            **(
                {"PYTHONPATH": os.pathsep.join(map(os.path.abspath, inherited["PYTHONPATH"].split(os.pathsep)))}
                if inherited.get("PYTHONPATH")
                else {}
            ),
            "JUPYTER_CONFIG_DIR": str(self._tmp / "config"),
            "JUPYTER_DATA_DIR": str(self._tmp / "data"),
            "JUPYTER_RUNTIME_DIR": str(self._tmp / "runtime"),
        }
        args = [
            str(self.python or sys.executable),
            "-m",
            "jupyter_server",
            "--no-browser",
            "--allow-root",
            "--ip=127.0.0.1",
            f"--port={self.port}",
            f"--ServerApp.token={self.token}",
            f"--ServerApp.root_dir={self.root}",
            "--ServerApp.port_retries=0",
            f"--BaseFileIdManager.db_path={self._tmp / 'file_id.db'}",
            f"--SQLiteYStore.db_path={self._tmp / 'ystore.db'}",
            *self.extra_args,
        ]
        started = time.perf_counter()
        self._log = (self._tmp / "server.log").open("wb")
        self._process = subprocess.Popen(args, cwd=self._tmp, env=env, stdout=self._log, stderr=subprocess.STDOUT)
        try:
            self._wait_ready()
        except BaseException:  # a failed or interrupted start leaves no process and no temp dir behind
            self.__exit__()
            raise
        self.started_in = time.perf_counter() - started
        return self

    def _wait_ready(self) -> None:
        assert self._process is not None
        deadline = time.monotonic() + self.startup_timeout
        while time.monotonic() < deadline:
            if self._process.poll() is not None:
                raise RuntimeError(f"jupyter exited early:\n{(self._tmp / 'server.log').read_text()[-3000:]}")
            try:
                with urllib.request.urlopen(f"{self.url}/api/status?token={self.token}", timeout=1):
                    return
            except urllib.error.HTTPError as answer:
                if answer.code == 404:  # it serves, under another base_url (an extra argument)
                    return
                time.sleep(0.05)
            except OSError:
                time.sleep(0.05)
        raise RuntimeError("jupyter did not start in time")

    @property
    def log_text(self) -> str:
        """What the server printed so far (stdout and stderr)."""
        self._log.flush()
        return (self._tmp / "server.log").read_text(errors="replace")

    def stop(self, timeout: float = 20.0) -> int:
        """A graceful stop, as a service manager does it: SIGTERM, then wait (bounded) for the exit code.

        The temporary directory stays until ``__exit__``, so the files can be read once the server is gone.
        """
        assert self._process is not None
        if self._process.poll() is None:
            self._process.terminate()
        try:
            return self._process.wait(timeout)
        except subprocess.TimeoutExpired:
            self._process.kill()
            self._process.wait(5)
            raise RuntimeError(f"jupyter did not stop within {timeout} s of SIGTERM") from None

    def restart(self, timeout: float = 20.0) -> None:
        """:meth:`stop`, then start again on the same directories, root, token and port (a service restarted)."""
        self.stop(timeout)
        self._log.close()
        self.__enter__()

    def __exit__(self, *exc: Any) -> None:
        if self._process is not None and self._process.poll() is None:
            self._process.terminate()
            try:
                self._process.wait(10)
            except subprocess.TimeoutExpired:
                self._process.kill()
                self._process.wait(5)
        self._log.close()
        shutil.rmtree(self._tmp, ignore_errors=True)


class RawSession:
    """A legacy MCP session over plain HTTP: isolates the server's cost from the SDK client's."""

    def __init__(self, http: Any, url: str) -> None:
        self.http = http
        self.url = url
        self.headers = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
        self.next_id = 0

    async def open(self) -> None:
        params = {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "bench", "version": "0"}}
        response = await self.http.post(self.url, json=self._rpc("initialize", params), headers=self.headers)
        self.headers = {
            **self.headers,
            "mcp-session-id": response.headers["mcp-session-id"],
            "mcp-protocol-version": "2025-11-25",
        }
        await self.http.post(
            self.url, json={"jsonrpc": "2.0", "method": "notifications/initialized"}, headers=self.headers
        )

    def _rpc(self, method: str, params: Any) -> dict[str, Any]:
        self.next_id += 1
        return {"jsonrpc": "2.0", "id": self.next_id, "method": method, "params": params}

    async def request(self, method: str, params: Any) -> dict[str, Any]:
        """One JSON-RPC request; returns the response message (parsed from the SSE or JSON body)."""
        body = self._rpc(method, params)
        response = await self.http.post(self.url, json=body, headers=self.headers)
        if response.headers.get("content-type", "").startswith("application/json"):
            return dict(response.json())
        for line in response.text.splitlines():
            if line.startswith("data:") and len(line) > 6:
                message = json.loads(line[5:])
                if message.get("id") == body["id"]:
                    return dict(message)
        raise RuntimeError(f"no response in {response.text[:200]}")

    async def call(self, name: str, **arguments: Any) -> Any:
        """A tool's structured result (answered as one JSON body or an SSE stream); a tool error raises."""
        message = await self.request("tools/call", {"name": name, "arguments": arguments})
        if message["result"].get("isError"):
            raise RuntimeError(message["result"]["content"][0]["text"])
        return message["result"]["structuredContent"]
