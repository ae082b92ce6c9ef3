"""Claude Code's CLI reaches "Connected" through MCP authorization, with no token copied (issue 32).

Not a test (it needs Claude Code's CLI, a 400 MB binary from npm, and no CI runs it): a one-off that shows the
README's no-token line working. It starts a throwaway Jupyter server with ``grants_only`` (so the server's token
cannot be what lets Claude in), gives Claude Code a throwaway ``HOME``, then runs, printing each command and what
it printed:

1. ``claude mcp add --transport http jupyter <url>`` (no header);
2. ``claude mcp list``: "Needs authentication" (the 401 and its resource metadata);
3. ``claude mcp login jupyter`` under a pseudo-terminal (it refuses to run without one), with ``BROWSER`` set to
   tests/consent_browser.py: the person's part over HTTP, as tests/test_grants.py does it (Jupyter's login with
   the token, the consent page's ``_xsrf``, approve), then Claude Code's loopback callback;
4. ``claude mcp list``: "Connected";

and lists the grant the server now holds (``GET api/mcp/grants``). No Anthropic account or API key is involved:
these subcommands talk only to the MCP server.

    npm install --prefix /tmp/claude-code @anthropic-ai/claude-code
    python benchmarks/connect_claude_code.py --claude /tmp/claude-code/node_modules/.bin/claude
"""

from __future__ import annotations

import argparse
import json
import os
import pty
import re
import select
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.jupyter_process import JupyterProcess

BROWSER_SCRIPT = Path(__file__).resolve().parents[1] / "tests" / "consent_browser.py"
ANSI = re.compile(r"\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)|\x1b\[[0-9;?]*[A-Za-z]|\r")


def show(command: list[str], output: str) -> None:
    print(f"$ {' '.join(command)}")
    print("\n".join("  " + line for line in ANSI.sub("", output).strip().splitlines()))


def run(command: list[str], env: dict[str, str], timeout: float = 120) -> str:
    done = subprocess.run(
        command, env=env, cwd=env["HOME"], capture_output=True, text=True, timeout=timeout, stdin=subprocess.DEVNULL
    )
    show(command, done.stdout + done.stderr)
    return done.stdout + done.stderr


def run_in_pty(command: list[str], env: dict[str, str], timeout: float = 120) -> str:
    """Run ``command`` with a terminal as its stdin/stdout (``claude mcp login`` asks for one); its output."""
    primary, secondary = pty.openpty()
    process = subprocess.Popen(
        command, env=env, cwd=env["HOME"], stdin=secondary, stdout=secondary, stderr=secondary, close_fds=True
    )
    os.close(secondary)
    chunks: list[bytes] = []
    deadline = time.monotonic() + timeout
    try:
        while time.monotonic() < deadline:
            ready, _, _ = select.select([primary], [], [], 0.5)
            if ready:
                try:
                    chunk = os.read(primary, 4096)
                except OSError:  # the terminal closed: the process ended
                    break
                if not chunk:
                    break
                chunks.append(chunk)
            elif process.poll() is not None:
                break
    finally:
        if process.poll() is None:
            process.terminate()
        process.wait(10)
        os.close(primary)
    output = b"".join(chunks).decode("utf-8", "replace")
    show(command, output)
    return output


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--claude", default=shutil.which("claude") or "claude", help="Claude Code's CLI")
    parser.add_argument("--level", default="write", choices=["read", "write", "execute"])
    parser.add_argument("--base-url", default="/", help="Jupyter's base_url (a proxy's or a hub's: /jupyter/)")
    args = parser.parse_args()
    home = Path(tempfile.mkdtemp(prefix="claude-home-"))
    try:
        base = "/" + args.base_url.strip("/") + "/" if args.base_url.strip("/") else "/"
        with JupyterProcess("--JupyterPairMCP.grants_only=True", f"--ServerApp.base_url={base}") as server:
            url = f"{server.url}{base}mcp"
            browser = home / "browser"
            browser.write_text(f'#!/bin/sh\nexec "{sys.executable}" "{BROWSER_SCRIPT}" "$@"\n')
            browser.chmod(0o755)
            env = {
                "PATH": os.environ.get("PATH", ""),
                "HOME": str(home),
                "TERM": "xterm",
                "BROWSER": str(browser),
                "JUPYTER_TOKEN": server.token,  # for the consent page's login only; Claude Code never gets it
                "CONSENT_LEVEL": args.level,
                "CONSENT_LOG": str(home / "consent.log"),
            }
            claude = args.claude
            run([claude, "--version"], env)
            run([claude, "mcp", "add", "--transport", "http", "jupyter", url], env)
            run([claude, "mcp", "list"], env)
            run_in_pty([claude, "mcp", "login", "jupyter"], env)
            print("browser steps (tests/consent_browser.py):")
            log = home / "consent.log"
            print("\n".join("  " + line for line in (log.read_text() if log.exists() else "(none)\n").splitlines()))
            listed = run([claude, "mcp", "list"], env)
            request = urllib.request.Request(
                f"{server.url}{base}api/mcp/grants", headers={"Authorization": f"Bearer {server.token}"}
            )
            with urllib.request.urlopen(request, timeout=10) as answer:
                grants = json.load(answer)
            print("grants on the server:", json.dumps(grants, indent=2))
            connected = "Connected" in ANSI.sub("", listed)
            print("RESULT:", "Claude Code is Connected" if connected else "Claude Code did not reach Connected")
            return 0 if connected else 1
    finally:
        shutil.rmtree(home, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
