"""Jupyter AI (jupyter-ai 3, its persona manager and toolkit): the only code that touches its objects."""

from jupyter_pair_mcp.adapters.jupyterai.personas import (
    CHAT_HEADER,
    MODES,
    PERSONA_HEADER,
    ChatPersona,
    JupyterAI,
)
from jupyter_pair_mcp.adapters.jupyterai.toolkit import skip_unloadable_toolkit, toolkit_problem

__all__ = [
    "CHAT_HEADER",
    "MODES",
    "PERSONA_HEADER",
    "ChatPersona",
    "JupyterAI",
    "skip_unloadable_toolkit",
    "toolkit_problem",
]
