"""A real JupyterHub for the tests: configurable-http-proxy, the hub, and single-user servers with our extension.

JupyterHub comes from the test extra, configurable-http-proxy (and the Node 22 it runs on) from
conformance/package.json, installed by ``npm ci --prefix conformance`` as the conformance suite is. The hub
runs as one process group started by the test: ``SimpleLocalProcessSpawner`` (every user is the current
OS user, with a home under the test's directory) starts ``jupyterhub-singleuser`` in the hub's own process
group (JupyterHub starts each in a new session by default, which no process-group kill would reach), so
stopping the hub, and killing its group if it does not stop in time, leaves no server behind. The proxy
starts in its own session: its pid is read from its pid file and it is killed too. A test process that dies
without its teardown takes the hub down with it (the hub gets SIGTERM, and stops its servers and proxy).

Everything the hub and the servers write (database, cookie secret, homes, logs) is under one directory.
The admin API token is a service's, with the role it needs to create users, start servers and make tokens.
"""

from __future__ import annotations

import asyncio
import contextlib
import ctypes
import json
import os
import secrets
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx2

ROOT = Path(__file__).resolve().parents[1]
NODE_BIN = ROOT / "conformance" / "node_modules" / ".bin"
PROXY = NODE_BIN / "configurable-http-proxy"
NODE = NODE_BIN / "node"
PR_SET_PDEATHSIG = 1  # prctl(2)
MISSING = "configurable-http-proxy not installed: run 'npm ci --prefix conformance'"


def proxy_installed() -> bool:
    return PROXY.exists() and NODE.exists()


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def wait_for(predicate: Callable[[], Any], limit: float, what: str, process: subprocess.Popen[bytes]) -> Any:
    """Poll ``predicate`` until it returns a truthy value; fail early when the hub process has exited."""
    deadline = time.monotonic() + limit
    while True:
        value = predicate()
        if value:
            return value
        if process.poll() is not None:
            raise RuntimeError(f"the hub exited ({process.returncode}) while waiting for {what}")
        if time.monotonic() > deadline:
            raise TimeoutError(f"no {what} within {limit} s")
        time.sleep(0.1)


CONFIG = """\
import os

c = get_config()  # noqa: F821


def named_servers_apart(spawner):
    # docs/jupyterhub.md's setting (here for the server named "apart" only: the other named servers of the
    # tests share their user's home, to show what happens then): a named server in a directory of its own.
    if spawner.name == "apart":
        root = os.path.join(spawner.home_dir, "servers", spawner.name)
        os.makedirs(root, exist_ok=True)
        spawner.notebook_dir = root
    # docs/jupyterhub.md's shorter revocation delay, here for the server named "fresh" only.
    if spawner.name == "fresh":
        spawner.args = [*spawner.args, "--HubOAuth.cache_max_age=2"]
    # docs/jupyterhub.md's "off for everyone", here for carol only.
    if spawner.user.name == "carol":
        spawner.args = [*spawner.args, "--ServerApp.jpserver_extensions=jupyter_pair_mcp=False"]


c.Spawner.pre_spawn_hook = named_servers_apart
c.JupyterHub.ip = "127.0.0.1"
c.JupyterHub.port = {proxy_port}
c.JupyterHub.hub_ip = "127.0.0.1"
c.JupyterHub.hub_port = {hub_port}
c.JupyterHub.db_url = "sqlite:///{dir}/jupyterhub.sqlite"
c.JupyterHub.cookie_secret_file = "{dir}/cookie_secret"
c.JupyterHub.allow_named_servers = True
c.JupyterHub.public_url = "http://127.0.0.1:{proxy_port}/"
c.ConfigurableHTTPProxy.api_url = "http://127.0.0.1:{api_port}"
c.ConfigurableHTTPProxy.command = ["{proxy}"]
c.ConfigurableHTTPProxy.pid_file = "{dir}/proxy.pid"
c.ConfigurableHTTPProxy.auth_token = "{proxy_token}"
c.JupyterHub.authenticator_class = "dummy"
c.Authenticator.allow_all = True
c.JupyterHub.spawner_class = "simple"
c.SimpleLocalProcessSpawner.home_dir_template = "{dir}/home/{{username}}"
c.Spawner.cmd = ["{singleuser}"]
c.Spawner.args = ["--ServerApp.authorizer_class=jupyter_pair_mcp.transport.hubscopes.HubScopesAuthorizer"]
c.Spawner.environment = {environment}


class SessionScopes(list):
    # docs/jupyterhub.md: browser sessions carry the custom:mcp levels their user's roles give for the server;
    # except on servers named "plain", as on a hub without the setting (sessions carry no custom scope). A list
    # that can be called: JupyterHub 6.1 calls a callable for the OAuth client, then puts the setting as it is
    # in the server's environment as JSON, which a plain function fails (500 on every spawn).
    def __call__(self, spawner):
        return [] if spawner.name == "plain" else list(self)


c.Spawner.oauth_client_allowed_scopes = SessionScopes(["custom:mcp:execute"])
c.Spawner.popen_kwargs = {{"start_new_session": False}}
c.Spawner.start_timeout = 90
c.Spawner.http_timeout = 90
c.JupyterHub.services = [{{"name": "tests", "api_token": "{admin_token}"}}]
c.JupyterHub.load_roles = [
    # shares (and the scopes they hand out) too: docs/jupyterhub.md's shares, made by the tests as the owner would
    {{
        "name": "tests",
        "scopes": [
            "admin:users", "admin:servers", "tokens", "shares", "read:users:name", "access:servers",
            "custom:mcp:execute", "custom:mcp:readx", "groups",
        ],
        "services": ["tests"],
    }},
    {{"name": "user", "scopes": ["self", "custom:mcp:execute!user"]}},
    # docs/jupyterhub.md: a level for someone else's server that browser sessions carry comes from a role (a
    # share's custom scopes reach tokens, not the hub's OAuth for the server).
    {{"name": "alice-readers", "scopes": ["custom:mcp:read!server=alice/"], "groups": ["alice-readers"]}},
]
c.JupyterHub.load_groups = {{"alice-readers": {{"users": []}}}}
# docs/jupyterhub.md's scopes: a token made with fewer of them is limited on the servers (HubScopesAuthorizer).
c.JupyterHub.custom_scopes = {{
    "custom:mcp:read": {{"description": "Read"}},
    "custom:mcp:write": {{"description": "Read and edit", "subscopes": ["custom:mcp:read"]}},
    "custom:mcp:execute": {{"description": "Read, edit and run code", "subscopes": ["custom:mcp:write"]}},
    # An admin's typo, as a hub would accept it: no level the servers know (it must allow nothing there).
    "custom:mcp:readx": {{"description": "Misspelt"}},
}}
"""

# Each single-user server: our extension (from this checkout: PYTHONPATH) with the test-only tools, and the
# short autosave the other tests use. The same config directory for every user, as an admin's would be.
SERVER_CONFIG = {
    "ServerApp": {
        "allow_root": True,  # the tests may run as root (containers); the servers are ours alone
        "jpserver_extensions": {"jupyter_pair_mcp": True, "jupyter_server_ydoc": True, "jupyter_server_fileid": True},
    },
    "YDocExtension": {"document_save_delay": 0.1},
    "JupyterPairMCP": {"enable_test_fixtures": True},
}


class Hub:
    """A running JupyterHub: ``url`` is the proxy's public address, ``api`` calls the hub REST API as admin."""

    def __init__(self, directory: Path) -> None:
        self.dir = directory
        self.admin_token = secrets.token_hex(16)
        self.proxy_port = free_port()
        self.url = f"http://127.0.0.1:{self.proxy_port}"
        self.process: subprocess.Popen[bytes] | None = None
        self.client = httpx2.Client(
            base_url=f"{self.url}/hub/api", headers={"Authorization": f"token {self.admin_token}"}, timeout=30
        )
        self.startup_seconds = 0.0

    @property
    def log_path(self) -> Path:
        return self.dir / "hub.log"

    def log(self) -> str:
        """The hub's log and every single-user server's (the spawner hands them the hub's stderr)."""
        _off_the_loop("reading the hub's log")
        return self.log_path.read_text(errors="replace")

    def start(self) -> None:
        config_dir = self.dir / "jupyter-config"
        config_dir.mkdir(parents=True)
        (config_dir / "jupyter_server_config.json").write_text(json.dumps(SERVER_CONFIG))
        environment = {
            "PATH": os.environ.get("PATH", ""),
            "PYTHONPATH": str(ROOT),
            "JUPYTER_CONFIG_DIR": str(config_dir),
            "JUPYTER_PLATFORM_DIRS": "1",
        }
        singleuser = Path(sys.executable).parent / "jupyterhub-singleuser"
        config = CONFIG.format(
            dir=self.dir,
            proxy_port=self.proxy_port,
            hub_port=free_port(),
            api_port=free_port(),
            proxy=PROXY,
            proxy_token=secrets.token_hex(16),
            singleuser=singleuser,
            environment=repr(environment),
            admin_token=self.admin_token,
        )
        (self.dir / "jupyterhub_config.py").write_text(config)
        # The proxy's shebang runs the first `node` on PATH: the Node 22 pinned beside it.
        env = {**os.environ, "PATH": f"{NODE_BIN}{os.pathsep}{os.environ.get('PATH', '')}"}
        started = time.monotonic()
        with self.log_path.open("wb") as log:
            self.process = subprocess.Popen(
                [sys.executable, "-m", "jupyterhub", "-f", str(self.dir / "jupyterhub_config.py")],
                cwd=self.dir,
                env=env,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
                preexec_fn=_stop_with_the_tests,
            )
        wait_for(self._answers, 60, "hub API answering through the proxy", self.process)
        self.startup_seconds = time.monotonic() - started

    def _answers(self) -> bool:
        with contextlib.suppress(httpx2.HTTPError):
            return self.client.get("/").status_code == 200
        return False

    def api(self, method: str, path: str, **kwargs: Any) -> Any:
        _off_the_loop(f"{method} {path}")
        response = self.client.request(method, path, **kwargs)
        assert response.status_code < 300, f"{method} {path}: {response.status_code} {response.text}"
        return response.json() if response.content else None

    def create_users(self, *names: str) -> None:
        self.api("POST", "/users", json={"usernames": list(names)})

    def start_server(self, user: str, name: str = "", limit: float = 90) -> str:
        """Start one of the user's servers and wait until it is ready; return its URL path (``/user/alice/``)."""
        path = f"/users/{user}/servers/{name}" if name else f"/users/{user}/server"
        self.api("POST", path)
        assert self.process is not None

        def ready() -> Any:
            server = self.api("GET", f"/users/{user}")["servers"].get(name)
            return server["url"] if server and server["ready"] else None

        return str(wait_for(ready, limit, f"{user}'s server {name!r} being ready", self.process))

    def stop_server(self, user: str, name: str = "", limit: float = 60) -> None:
        """Stop one of the user's servers and wait until the hub has it stopped (and its route removed)."""
        self.api("DELETE", f"/users/{user}/servers/{name}" if name else f"/users/{user}/server")
        assert self.process is not None
        stopped = lambda: name not in self.api("GET", f"/users/{user}")["servers"]  # noqa: E731
        wait_for(stopped, limit, f"{user}'s server {name!r} stopping", self.process)

    def share(self, owner: str, recipient: str, scopes: list[str] | None = None, server: str = "") -> Any:
        """Share one of ``owner``'s servers with ``recipient`` (``POST /hub/api/shares/<owner>/<server>``);
        without scopes, the hub's default: ``access:servers`` for that server only."""
        body: dict[str, Any] = {"user": recipient}
        if scopes is not None:
            body["scopes"] = scopes
        return self.api("POST", f"/shares/{owner}/{server}", json=body)

    async def ashare(self, owner: str, recipient: str, scopes: list[str] | None = None, server: str = "") -> Any:
        return await asyncio.to_thread(self.share, owner, recipient, scopes, server)

    async def ajoin(self, group: str, user: str) -> None:
        await asyncio.to_thread(self.api, "POST", f"/groups/{group}/users", json={"users": [user]})

    def token(self, user: str, scopes: list[str] | None = None) -> str:
        body: dict[str, Any] = {"note": "jupyter-pair-mcp tests", "expires_in": 3600}
        if scopes is not None:
            body["scopes"] = scopes
        return str(self.api("POST", f"/users/{user}/tokens", json=body)["token"])

    # The same, for a coroutine test: each runs in a worker thread, so that the test's loop (which runs the
    # test's clients, and its server if it has one) is never blocked by a request or by a wait for a server.
    async def atoken(self, user: str, scopes: list[str] | None = None) -> str:
        return await asyncio.to_thread(self.token, user, scopes)

    async def acreate_users(self, *names: str) -> None:
        await asyncio.to_thread(self.create_users, *names)

    async def astart_server(self, user: str, name: str = "", limit: float = 90) -> str:
        return await asyncio.to_thread(self.start_server, user, name, limit)

    async def astop_server(self, user: str, name: str = "", limit: float = 60) -> None:
        await asyncio.to_thread(self.stop_server, user, name, limit)

    async def alog(self) -> str:
        return await asyncio.to_thread(self.log)

    def stop(self) -> None:
        """Stop the hub (it stops the servers and the proxy); whatever is left after 30 s is killed."""
        self.client.close()
        process = self.process
        if process is None:
            return
        proxy_pid = self._proxy_pid()
        if process.poll() is None:
            process.send_signal(signal.SIGTERM)
            with contextlib.suppress(subprocess.TimeoutExpired):
                process.wait(30)
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)  # servers in its group that outlived it
        process.wait()
        if proxy_pid is not None and _is_proxy(proxy_pid):  # the hub stops it; a pid reused since is not ours
            with contextlib.suppress(ProcessLookupError):
                os.kill(proxy_pid, signal.SIGKILL)

    def _proxy_pid(self) -> int | None:
        with contextlib.suppress(OSError, ValueError):
            return int((self.dir / "proxy.pid").read_text().strip())
        return None


def _off_the_loop(what: str) -> None:
    """A blocking call to the hub from a running event loop (a coroutine test's) is a defect of the test."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return  # no loop runs in this thread: a synchronous fixture or test, or a worker thread
    raise AssertionError(f"{what}: a blocking call to the hub on the test's event loop (use Hub's a* methods)")


def _stop_with_the_tests() -> None:
    """In the hub's process before it starts: SIGTERM when the test process dies without its teardown (the
    session watchdog's ``os._exit``, a kill), so the hub still stops its servers and its proxy (Linux)."""
    if sys.platform == "linux":
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGTERM)


def _is_proxy(pid: int) -> bool:
    try:
        return b"configurable-http-proxy" in Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return False
