"""jupyter-pair-mcp: an MCP endpoint inside Jupyter for agents that work in live notebooks."""

from __future__ import annotations

from typing import Any

from jupyter_pair_mcp._version import __version__

__all__ = ["__version__"]


def _jupyter_server_extension_points() -> list[dict[str, Any]]:
    from jupyter_pair_mcp.app import JupyterPairMCP

    return [{"module": "jupyter_pair_mcp", "app": JupyterPairMCP}]
