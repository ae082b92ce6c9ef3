"""Kernels and sessions: the only module that talks to Jupyter's session and kernel managers.

For now it answers which kernel a notebook is attached to (the one JupyterLab users of that notebook
share); running code arrives with the execution tools.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from jupyter_core.utils import ensure_async


@dataclass(frozen=True)
class Kernel:
    name: str
    id: str
    state: str


class KernelsAdapter:
    def __init__(self, serverapp: Any) -> None:
        self.serverapp = serverapp

    async def kernel_for(self, path: str) -> Kernel | None:
        """The kernel of the Jupyter session whose path is ``path``, or None."""
        sessions = getattr(self.serverapp, "session_manager", None)
        if sessions is None:
            return None
        for session in await ensure_async(sessions.list_sessions()):
            if session.get("path") == path and session.get("kernel"):
                kernel = session["kernel"]
                return Kernel(
                    str(kernel.get("name", "")),
                    str(kernel.get("id", "")),
                    str(kernel.get("execution_state", "unknown")),
                )
        return None
