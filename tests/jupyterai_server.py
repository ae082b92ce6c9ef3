"""A ``jupyter server`` process with Jupyter AI 3 and this package, as a person runs it (tests/test_jupyterai.py).

Its extensions are the ones the environment enables (jupyter-ai's and ours, from their jupyter_server_config.d
files): nothing about MCP servers is configured, so what a persona's agent gets comes from the setting alone. The
root holds a notebook, a chat and, in ``.jupyter/personas/``, tests/fake_acp_persona.py, whose agent is
tests/fake_acp_agent.py; what that agent saw is in ``agent_log`` (one JSON object a line).
"""

from __future__ import annotations

import json
import os
import secrets
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import httpx2

from .kernel_gateway import free_port
from .patience import patient

START_LIMIT = 90.0
STOP_LIMIT = 20.0
TESTS = Path(__file__).resolve().parent

#: The fake persona's id: Jupyter AI names a local persona by its file's stem and its class.
FAKE_PERSONA = "jupyter-ai-personas::fake_acp_persona::FakeAcpPersona"

EMPTY_NOTEBOOK = {"cells": [], "metadata": {}, "nbformat": 4, "nbformat_minor": 5}


class JupyterAIServer:
    def __init__(self, base: Path, *, args: tuple[str, ...] = ()) -> None:
        self.base = base
        self.root = base / "root"
        self.log = base / "server.log"
        self.agent_log = base / "agent.log"
        self.port = free_port()
        self.token = secrets.token_hex(16)
        self.url = f"http://127.0.0.1:{self.port}"
        self.args = args
        self.process: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        personas = self.root / ".jupyter" / "personas"
        personas.mkdir(parents=True)
        shutil.copy(TESTS / "fake_acp_persona.py", personas / "fake_acp_persona.py")
        (self.root / "note.ipynb").write_text(json.dumps(EMPTY_NOTEBOOK))
        for chat in ("talk.chat", "other.chat"):
            (self.root / chat).write_text("{}")
        env = {
            **os.environ,
            "JUPYTER_CONFIG_DIR": str(self.base / "config"),
            "JUPYTER_DATA_DIR": str(self.base / "data"),
            "JUPYTER_RUNTIME_DIR": str(self.base / "runtime"),
            "FAKE_ACP_AGENT": str(TESTS / "fake_acp_agent.py"),
            "FAKE_ACP_LOG": str(self.agent_log),
            # The server runs the package under test (this checkout), whichever copy the environment installed.
            "PYTHONPATH": os.pathsep.join(p for p in (str(TESTS.parent), os.environ.get("PYTHONPATH", "")) if p),
        }
        argv = [
            sys.executable,
            "-m",
            "jupyter_server",
            "--no-browser",
            "--allow-root",
            "--ServerApp.ip=127.0.0.1",
            f"--ServerApp.port={self.port}",
            "--ServerApp.port_retries=0",
            f"--IdentityProvider.token={self.token}",
            f"--ServerApp.root_dir={self.root}",
            *self.args,
        ]
        with self.log.open("ab") as out:
            self.process = subprocess.Popen(argv, cwd=self.base, env=env, stdout=out, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + patient(START_LIMIT)
        try:
            while "MCP endpoint: " not in self.text():
                if self.process.poll() is not None:
                    raise AssertionError(f"the server exited ({self.process.returncode}): {self.text()[-3000:]}")
                if time.monotonic() > deadline:
                    raise AssertionError(f"the server did not start in time: {self.text()[-3000:]}")
                time.sleep(0.05)  # re-check the condition (not a wait for a time)
        except BaseException:
            self.stop()
            raise

    def text(self) -> str:
        return self.log.read_text(errors="replace")

    def agent_events(self) -> list[dict[str, Any]]:
        if not self.agent_log.exists():
            return []
        lines = self.agent_log.read_text().split("\n")[:-1]  # whole lines only: the agent may be writing one
        return [json.loads(line) for line in lines if line.strip()]

    @property
    def headers(self) -> dict[str, str]:
        return {"Authorization": f"token {self.token}"}

    def get(self, path: str) -> Any:
        return httpx2.get(f"{self.url}/{path}", headers=self.headers, timeout=10).json()

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
