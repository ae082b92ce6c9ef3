"""``jupyter pair-mcp``: the command line of jupyter-pair-mcp (docs/authorization.md, "Headless agents").

``jupyter pair-mcp grant --level write --folder work --expires 30d --name ci-bot`` mints a headless grant (a
token for a script or CI, shown once with the client command lines), ``grant list`` lists the person's grants,
``grant revoke ID`` revokes one. Each talks to a running Jupyter server of this user, found through Jupyter's
runtime files (``--url``, else the server whose root directory holds the current directory), over its REST API
(``api/mcp/grants``) with that server's own token: the server keeps the grants file, and this command never
writes it behind the server's back. With no server running it says so and exits with status 1.

A ``JupyterApp`` with subcommands, so that later ones (``connect``) sit beside ``grant``.
"""

from __future__ import annotations

import json
import os
import re
import sys
import time
import urllib.error
import urllib.request
from typing import Any

from jupyter_core.application import JupyterApp
from traitlets import Bool, HasTraits, List, Unicode

#: ``--expires`` units.
_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 7 * 86400}


def say(text: str, file: Any = None) -> None:
    """A line for the person (a command line's output is its interface, not a log)."""
    (file or sys.stdout).write(f"{text}\n")


class CommandError(Exception):
    """What the person is told (on stderr) before the command exits with status 1 (``status``: the server's
    HTTP status, when it answered one)."""

    def __init__(self, message: str, status: int = 0) -> None:
        super().__init__(message)
        self.status = status


def seconds(text: str) -> int:
    """``30d``, ``12h``, ``90m``, ``3600`` (seconds) as seconds, or CommandError."""
    found = re.fullmatch(r"\s*(\d+)\s*([smhdw]?)\s*", text)
    if found is None:
        raise CommandError(f"--expires {text!r}: give a number with a unit, like 30d, 12h or 90m")
    return int(found[1]) * _UNITS[found[2] or "s"]


def _inside(path: str, root: str) -> bool:
    path, root = os.path.realpath(path), os.path.realpath(root)
    return path == root or path.startswith(root.rstrip(os.sep) + os.sep)


def choose_server(servers: list[dict[str, Any]], url: str, cwd: str) -> dict[str, Any]:
    """The server ``url`` names (its URL's start), else the one whose root holds ``cwd`` (the deepest root)."""
    if not servers:
        raise CommandError(
            "no running Jupyter server found for this user (start one with `jupyter lab` or `jupyter server`; "
            "this command changes grants only through a running server)"
        )
    if url:
        wanted = url.rstrip("/")
        found = [s for s in servers if str(s.get("url", "")).rstrip("/").startswith(wanted)]
        if not found:
            known = ", ".join(str(s.get("url", "")) for s in servers)
            raise CommandError(f"no running Jupyter server at {url} (running: {known})")
        return found[0]
    holding = [s for s in servers if _inside(cwd, str(s.get("root_dir", "")))]
    if not holding:
        known = ", ".join(f"{s.get('url', '')} (root {s.get('root_dir', '')})" for s in servers)
        raise CommandError(f"no running Jupyter server's root holds {cwd}: choose one with --url (running: {known})")
    return max(holding, key=lambda s: len(os.path.realpath(str(s.get("root_dir", "")))))


def call(server: dict[str, Any], method: str, path: str, body: dict[str, Any] | None = None) -> Any:
    """One REST call to the server with its own token; its JSON answer, or CommandError with its message."""
    url = str(server["url"]).rstrip("/") + "/" + path
    data = json.dumps(body).encode() if body is not None else None
    request = urllib.request.Request(url, data=data, method=method)
    request.add_header("Authorization", f"token {server.get('token', '')}")
    if data is not None:
        request.add_header("Content-Type", "application/json")
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return json.loads(response.read() or b"null")
    except urllib.error.HTTPError as error:
        try:
            message = json.loads(error.read()).get("message", "")
        except (ValueError, AttributeError):
            message = ""
        if error.code == 404 and not message:
            message = "this server has no api/mcp/grants: is jupyter-pair-mcp enabled there, with enable_grants?"
        raise CommandError(f"{method} {path}: HTTP {error.code}: {message or error.reason}", error.code) from None
    except (urllib.error.URLError, OSError) as error:
        raise CommandError(f"could not reach the Jupyter server at {server['url']}: {error}") from None


def _when(stamp: float) -> str:
    return time.strftime("%Y-%m-%d %H:%M", time.localtime(stamp)) if stamp else "never"


class _ServerCommand(JupyterApp):
    """Shared by the subcommands: which server, and how failures end the command."""

    url = Unicode(
        "",
        config=True,
        help="The server's URL (as `jupyter server list` shows it); default: the "
        "running server whose root directory holds the current directory.",
    )
    json_output = Bool(False, config=True, help="Print the server's JSON answer instead of text.")
    aliases = {"url": "_ServerCommand.url"}
    flags = {"json": ({"_ServerCommand": {"json_output": True}}, "Print the server's JSON answer.")}

    def server(self) -> dict[str, Any]:
        from jupyter_server.serverapp import list_running_servers

        return choose_server(list(list_running_servers(self.runtime_dir)), self.url, os.getcwd())

    def start(self) -> None:
        if self.subapp is not None:
            self.subapp.start()
            return
        try:
            self.run()
        except CommandError as error:
            say(f"jupyter pair-mcp: {error}", file=sys.stderr)
            self.exit(1)

    def run(self) -> None:
        raise NotImplementedError


class _GrantOptions(HasTraits):
    """Mixed into the commands that mint a grant (``grant``, ``connect``): what the grant reaches and how it edits,
    their options, and the request that mints it. ``level``, ``expires`` and ``grant_name`` differ in default
    and help between them, so each command declares them again, configurable. A mixin rather than a configurable
    base, so that ``--help-all`` shows each command's options once, in its own section, as before."""

    level = Unicode()
    expires = Unicode()
    grant_name = Unicode()
    folder = List(Unicode(), config=True, help="A folder the grant reaches (repeat it); none: the whole server.")
    propose_only = Bool(False, config=True, help="Every edit of the agent becomes a suggestion to accept or reject.")

    @staticmethod
    def options(command: str) -> tuple[dict[str, Any], dict[str, Any]]:
        """The aliases and flags of ``command`` (its class name: its options are configured under its name)."""
        aliases = {
            **_ServerCommand.aliases,
            "level": f"{command}.level",
            "folder": f"{command}.folder",
            "expires": f"{command}.expires",
            "name": f"{command}.grant_name",
        }
        flags = {
            **_ServerCommand.flags,
            "propose-only": ({command: {"propose_only": True}}, "Every edit becomes a suggestion."),
        }
        return aliases, flags

    def grant_body(self) -> dict[str, Any]:
        """The body of ``POST api/mcp/grants`` (CommandError: a malformed ``--expires``)."""
        return {
            "level": self.level,
            "folders": list(self.folder),
            "expires": seconds(self.expires),
            "name": self.grant_name,
            "propose_only": self.propose_only,
        }


class GrantList(_ServerCommand):
    name = "jupyter-pair-mcp-grant-list"
    description = "List your grants on the running Jupyter server (never their tokens)."

    def run(self) -> None:
        grants = call(self.server(), "GET", "api/mcp/grants")["grants"]
        if self.json_output:
            say(json.dumps(grants, indent=2))
            return
        if not grants:
            say("no grants")
        for g in grants:
            where = ", ".join(g["folders"]) if g["folders"] != [""] else "whole server"
            kind = "headless" if g.get("headless") else "OAuth"
            propose = ", propose only" if g.get("propose_only") else ""
            say(
                f"{g['id']}  {g['client_name']} ({kind}) by {g.get('person_name') or g['person']}: {g['level']}, "
                f"{where}{propose}; created {_when(g['created'])}, last used {_when(g['last_used'])}, "
                f"expires {_when(g['expires'])}"
            )


class GrantRevoke(_ServerCommand):
    name = "jupyter-pair-mcp-grant-revoke"
    description = "Revoke a grant: its tokens stop working and its sessions and runs end at once."

    def run(self) -> None:
        if len(self.extra_args) != 1:
            raise CommandError("name one grant: jupyter pair-mcp grant revoke ID (IDs: jupyter pair-mcp grant list)")
        grant_id = self.extra_args[0]
        if not re.fullmatch(r"[0-9a-f]{1,64}", grant_id):
            raise CommandError(f"{grant_id!r} is not a grant id (jupyter pair-mcp grant list shows them)")
        call(self.server(), "DELETE", f"api/mcp/grants/{grant_id}")
        say(f"revoked {grant_id}")


class GrantApp(_ServerCommand, _GrantOptions):
    name = "jupyter-pair-mcp-grant"
    description = (
        "Mint a grant for a headless agent (CI, a script) on the running Jupyter server: its token is shown "
        "once, with command lines that configure MCP clients with it. `grant list` and `grant revoke ID`."
    )
    examples = "jupyter pair-mcp grant --level write --folder work --expires 30d --name ci-bot"
    subcommands = {
        "list": (GrantList, GrantList.description),
        "revoke": (GrantRevoke, GrantRevoke.description),
    }

    level = Unicode("read", config=True, help="read, write or execute.")
    expires = Unicode("30d", config=True, help="How long the token works: 30d, 12h, 90m (1 hour to 366 days).")
    grant_name = Unicode("headless agent", config=True, help="The name people see for the agent.")
    aliases, flags = _GrantOptions.options("GrantApp")

    def run(self) -> None:
        if self.extra_args:
            raise CommandError(f"unknown subcommand {self.extra_args[0]!r}: grant, grant list, grant revoke ID")
        body = self.grant_body()  # a malformed --expires is told before the server is looked for
        minted = call(self.server(), "POST", "api/mcp/grants", body)
        if self.json_output:
            say(json.dumps(minted, indent=2))
            return
        grant = minted["grant"]
        say(f"Grant {grant['id']} for {grant['client_name']!r}: {grant['level']}, expires {_when(grant['expires'])}.")
        say("Its token, shown this once (keep it like a password):\n")
        say(f"  {minted['token']}\n")
        say(f"Claude Code:\n  {minted['commands']['claude']}\n")
        say(f"mcp-remote (Claude Desktop and other stdio clients):\n{minted['commands']['mcp_remote']}\n")
        say(f"Clients that speak HTTP with headers (VS Code, Cursor):\n{minted['commands']['http_json']}")


class ConnectApp(_ServerCommand, _GrantOptions):
    name = "jupyter-pair-mcp-connect"
    description = (
        "Connect an MCP client that speaks stdio to the running Jupyter server: put this command in the client's "
        "configuration. It connects with a grant of its own (minted with the server's token, cached in your "
        "Jupyter data directory), never with the server's token, and writes nothing to stdout but the protocol."
    )
    examples = '{"command": "jupyter", "args": ["pair-mcp", "connect", "--name", "claude-desktop"]}'

    level = Unicode(
        "write",
        config=True,
        help="The grant's level: read, write (edit documents, not run code) or execute. Default: write.",
    )
    expires = Unicode("30d", config=True, help="How long a minted grant works; minted again when it has expired.")
    grant_name = Unicode("stdio agent", config=True, help="The name people see for the agent (the client's).")
    aliases, flags = _GrantOptions.options("ConnectApp")

    def server(self) -> dict[str, Any]:
        """As ``grant``'s, but with one server running, that one wherever the client started the command: MCP
        clients (Claude Desktop) start local servers in a folder of their own choosing, often ``/`` or home."""
        from jupyter_server.serverapp import list_running_servers

        servers = list(list_running_servers(self.runtime_dir))
        if len(servers) == 1 and not self.url and not _inside(os.getcwd(), str(servers[0].get("root_dir", ""))):
            return dict(servers[0])
        return choose_server(servers, self.url, os.getcwd())

    def run(self) -> None:
        import anyio

        from jupyter_pair_mcp.transport.stdio_bridge import bridge, cache_path, grant_token

        if self.extra_args:
            raise CommandError(f"unexpected argument {self.extra_args[0]!r}")
        server = self.server()

        def rest(method: str, path: str, body: dict[str, Any] | None) -> Any:
            try:
                return call(server, method, path, body)
            except CommandError as error:
                if error.status == 404 and path == "api/mcp/grants" and method == "GET":
                    raise LookupError(path) from None
                raise

        body = self.grant_body()
        base = str(server["url"]).rstrip("/") + "/"
        token = grant_token(rest, cache_path(self.data_dir, base), body)
        if token is None:
            say("this server has no grants (enable_grants is off): connecting with its own token", file=sys.stderr)
            token = str(server.get("token", ""))
        anyio.run(bridge, base + "mcp", token)


class PairMCPApp(JupyterApp):
    name = "jupyter-pair-mcp"
    description = "jupyter-pair-mcp's command line: grants for headless agents on a running Jupyter server."
    subcommands = {
        "grant": (GrantApp, GrantApp.description),
        "connect": (ConnectApp, ConnectApp.description),
    }

    def start(self) -> None:
        if self.subapp is None:
            self.print_help()
            say("jupyter pair-mcp: name a subcommand (grant, connect)", file=sys.stderr)
            self.exit(2)
        super().start()


main = launch_new_instance = PairMCPApp.launch_instance

if __name__ == "__main__":
    main()
