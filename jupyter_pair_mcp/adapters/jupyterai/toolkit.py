"""Jupyter AI's own MCP toolkit (``jupyter_server_mcp``), and whether it can load next to this package.

jupyter-ai 3.2 pins ``jupyter-server-mcp<0.4``, which pins ``fastmcp<4``, whose server needs ``mcp<2``; this
package needs ``mcp>=2.3``. pip installs both without a word (the ``mcp<2`` pin sits in fastmcp-slim's extras,
which neither its resolver, for a package already installed, nor ``pip check`` looks at), and then
``jupyter_server_mcp`` fails to import (``cannot import name 'request_ctx' from 'mcp.server.lowlevel.server'``):
jupyter_server logs "error adding extension" with a traceback, and Jupyter AI's persona manager silently gives its
agents no built-in MCP server. This module tells that from the installed versions alone (importing fastmcp to
find out costs more than a second), so the server can say it once, plainly, and skip loading what cannot load.
"""

from __future__ import annotations

import logging
from importlib.metadata import PackageNotFoundError, version
from typing import Any

log = logging.getLogger(__name__)

#: Jupyter AI's toolkit extension (an MCP server of its own, on its own port).
TOOLKIT = "jupyter_server_mcp"


def _major(text: str) -> int:
    head = text.split(".", 1)[0]
    return int(head) if head.isdigit() else 0


def toolkit_problem() -> str | None:
    """Why Jupyter AI's toolkit cannot load in this environment, or None (it can, or is not installed)."""
    try:
        version("jupyter-server-mcp")
        fastmcp = version("fastmcp-slim") if _installed("fastmcp-slim") else version("fastmcp")
        mcp = version("mcp")
    except PackageNotFoundError:
        return None
    if _major(fastmcp) < 4 and _major(mcp) >= 2:  # fastmcp 3 serves only with mcp 1, fastmcp 4 only with mcp 2
        return (
            f"Jupyter AI's MCP toolkit (jupyter_server_mcp) cannot load: its fastmcp {fastmcp} needs mcp<2, "
            f"and jupyter-pair-mcp needs mcp>=2.3 (mcp {mcp} is installed)"
        )
    return None


def _installed(name: str) -> bool:
    try:
        version(name)
    except PackageNotFoundError:
        return False
    return True


def skip_unloadable_toolkit() -> None:
    """Keep jupyter_server from trying to load a toolkit that cannot import (and logging a traceback for it).

    Called while jupyter_server adds this package's extension, which comes before ``jupyter_server_mcp`` (the
    extensions are added in name order): the toolkit is marked disabled for this server only (no config file is
    written), so jupyter_server skips it instead of failing on it. The app's start says why, once
    (:func:`toolkit_problem`). Nothing happens when the toolkit can load, or when no server is being set up.
    """
    if toolkit_problem() is None:
        return
    try:
        from jupyter_server.serverapp import ServerApp

        if not ServerApp.initialized():
            return
        extensions: dict[str, Any] = ServerApp.instance().jpserver_extensions
        if extensions.get(TOOLKIT):
            extensions[TOOLKIT] = False  # a value changed in place: the manager's walk over this dict goes on
    except Exception:  # never keep the server from starting over a courtesy
        log.debug("could not skip Jupyter AI's toolkit", exc_info=True)
