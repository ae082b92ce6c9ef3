"""Where Debian's headless Chromium is and how it is started, for the browser tests and scripts/screenshots.py.

No pytest here: the screenshot script imports it too.
"""

from __future__ import annotations

import os
import shutil

# Debian's package (chromium-headless-shell) puts the binary here; /usr/bin/chromium-headless-shell is a
# wrapper script that does not exec, so ending it would leave the browser running.
CANDIDATES = (
    "/usr/lib/chromium/chromium-headless-shell",
    "/usr/lib/chromium/headless_shell",
    "/usr/bin/chromium-headless-shell",
)
# A closed network: no update checks, sync, QUIC or other background traffic; no GPU; no sandbox (root).
# Playwright gives each launch a fresh profile (a new --user-data-dir) and removes it afterwards.
FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
INSTALL_HINT = "run 'bash scripts/install_browser.sh' (Debian's chromium-headless-shell, as root)"


def executable() -> str | None:
    """The headless Chromium to drive: ``CHROMIUM_HEADLESS_SHELL`` if set, else Debian's package's binary."""
    configured = os.environ.get("CHROMIUM_HEADLESS_SHELL")
    if configured:
        return configured if os.access(configured, os.X_OK) else None
    for candidate in CANDIDATES:
        if os.access(candidate, os.X_OK):
            return candidate
    return shutil.which("chromium-headless-shell")
