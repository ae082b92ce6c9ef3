"""A Jupyter Kernel Gateway process on a loopback port for the tests (tests/test_gateway.py)."""

from __future__ import annotations

import os
import secrets
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx2

# How long the gateway may take to answer /api after it was started, or to exit once asked.
START_LIMIT = 60.0
STOP_LIMIT = 15.0


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class Gateway:
    """A ``jupyter kernelgateway`` process on a loopback port, started and stopped by the tests."""

    def __init__(self, cwd: Path, log: Path, *, token: bool = False) -> None:
        self.cwd, self.log = cwd, log
        self.port = free_port()
        self.token = secrets.token_hex(16) if token else ""
        self.url = f"http://127.0.0.1:{self.port}"
        self.process: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        argv = [
            sys.executable,
            "-m",
            "kernel_gateway",
            "--KernelGatewayApp.ip=127.0.0.1",
            f"--KernelGatewayApp.port={self.port}",
            "--KernelGatewayApp.port_retries=0",
            "--JupyterWebsocketPersonality.list_kernels=True",
            f"--KernelGatewayApp.auth_token={self.token}",
        ]
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
        with self.log.open("ab") as out:
            self.process = subprocess.Popen(argv, cwd=self.cwd, env=env, stdout=out, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + START_LIMIT
        try:
            while not self.answers():
                if self.process.poll() is not None:
                    raise AssertionError(f"the kernel gateway exited ({self.process.returncode}): {self.tail()}")
                if time.monotonic() > deadline:
                    raise AssertionError(f"the kernel gateway did not answer within {START_LIMIT} s: {self.tail()}")
                time.sleep(0.05)  # re-check the condition (not a wait for a time)
        except BaseException:  # not left running
            self.stop()
            raise

    def answers(self) -> bool:
        try:
            return httpx2.get(f"{self.url}/api", headers=self.headers, timeout=2).status_code == 200
        except httpx2.HTTPError:
            return False

    @property
    def headers(self) -> dict[str, str]:
        return {"Authorization": f"token {self.token}"} if self.token else {}

    def stop(self) -> None:
        process, self.process = self.process, None
        if process is None or process.poll() is not None:
            return
        process.terminate()
        try:
            process.wait(STOP_LIMIT)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(STOP_LIMIT)

    def kill(self) -> None:
        """The gateway crashes (its kernels, started with its pid as their parent, exit after it)."""
        process, self.process = self.process, None
        if process is not None:
            process.kill()
            process.wait(STOP_LIMIT)

    def tail(self) -> str:
        return self.log.read_text(errors="replace")[-2000:]
