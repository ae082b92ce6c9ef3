"""jupyter-pair-mcp: an MCP endpoint inside Jupyter for agents that work in live notebooks."""

from __future__ import annotations

from typing import Any

from jupyter_pair_mcp._version import __version__

__all__ = ["__version__"]


def _jupyter_server_extension_points() -> list[dict[str, Any]]:
    from jupyter_pair_mcp.adapters.jupyterai import skip_unloadable_toolkit
    from jupyter_pair_mcp.app import JupyterPairMCP

    # jupyter_server asks this while adding the extensions, before Jupyter AI's toolkit (docs/jupyter-ai.md)
    skip_unloadable_toolkit()
    return [{"module": "jupyter_pair_mcp", "app": JupyterPairMCP}]


def _jupyter_labextension_paths() -> list[dict[str, str]]:
    """Where the built JupyterLab extension is (``jupyter labextension develop`` links it from here)."""
    return [{"src": "labextension", "dest": "jupyter-pair-mcp"}]
