"""jupyter-notebook-mcp: an MCP endpoint inside Jupyter for agents that work in live notebooks."""

from __future__ import annotations

from typing import Any

from ._version import __version__

__all__ = ["__version__"]


def _jupyter_server_extension_points() -> list[dict[str, Any]]:
    from .app import JupyterNotebookMCP

    return [{"module": "jupyter_notebook_mcp", "app": JupyterNotebookMCP}]


def _jupyter_labextension_paths() -> list[dict[str, str]]:
    """Where the built JupyterLab extension is (``jupyter labextension develop`` links it from here)."""
    return [{"src": "labextension", "dest": "jupyter-notebook-mcp"}]
