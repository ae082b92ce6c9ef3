"""What the kernels adapter hands out: kernels, kernelspecs, runs, and what a dead kernel means for a run.

Kept apart from :mod:`jupyter_pair_mcp.adapters.kernels.adapter` (which talks to Jupyter's managers) so that the values
stay small and importable anywhere below the tools.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from jupyter_pair_mcp.errors import KernelGatewayError, Unavailable


@dataclass(frozen=True)
class Kernel:
    name: str
    id: str
    state: str


@dataclass(frozen=True)
class KernelSpec:
    """An installed kernelspec: what a notebook's ``metadata.kernelspec`` names."""

    name: str
    display_name: str
    language: str

    def metadata(self) -> dict[str, Any]:
        """The notebook metadata JupyterLab writes for this kernel (``language_info`` until the kernel fills it)."""
        return {
            "kernelspec": {"name": self.name, "display_name": self.display_name, "language": self.language},
            "language_info": {"name": self.language},
        }


@dataclass(frozen=True)
class RunningKernel:
    id: str
    name: str
    state: str
    last_activity: str | None
    connections: int
    paths: tuple[str, ...]  # of the Jupyter sessions using it


@dataclass(frozen=True)
class KernelChange:
    """What ``change_kernel`` did to the notebook's session: the kernel it has now (None: no session)."""

    kernel: Kernel | None
    started: bool


class MessageContent(dict[str, Any]):
    """A kernel message's content, and ``nbytes``: the size of its JSON as the kernel sent it, so that what an
    output costs is known without serializing it again."""

    nbytes: int = 0

    @classmethod
    def of(cls, content: Any, nbytes: int) -> MessageContent:
        made = cls(content if isinstance(content, dict) else {})
        made.nbytes = nbytes
        return made


@dataclass
class Execution:
    status: str  # "ok", "error", "timeout", "aborted"
    execution_count: int | None


class KernelDied(Unavailable):
    """The notebook's kernel process is gone: it stopped while running the agent's code, or before it."""


class KernelRestarted(KernelDied):
    """The kernel was restarted (by an agent's ``restart_notebook_kernel``, or from JupyterLab) while a run of ours
    was on it or queued for it: the run ends, and the call says who restarted the kernel."""


class ChannelClosed(KernelGatewayError):
    """A gateway kernel client's websocket closed: the gateway stopped, or the kernel was shut down on it."""

    def __init__(self, outcome: str = "") -> None:
        """``outcome``: what became of the run (:func:`cut_off`), when the closed connection carried one."""
        super().__init__(
            "the connection to the notebook's kernel through the kernel gateway closed (the gateway stopped or "
            f"the kernel was shut down){f': {outcome}' if outcome else ''}; check that the gateway is running, then "
            "try again"
        )


def cut_off(began: bool | None) -> str:
    """What became of a run when its kernel went away: ``began`` is None when no run was sent, else whether the
    kernel had said it began the cell (its ``execute_input``)."""
    if began is None:
        return "nothing was run"
    if began:
        return "the run was cut off after it began"
    return "the kernel had not begun the cell, so it was not run"


def restarted_message(by: str, *, began: bool) -> str:
    """A run ended by a restart: who restarted the kernel (an agent's name; "" when it was not one of our tools)."""
    who = f"by {by}" if by else "from JupyterLab (or another client of the Jupyter server)"
    if began:
        what = f"the kernel was restarted {who} while the cell ran, so the run was cut off after it began"
    else:
        what = f"the kernel was restarted {who} before the cell began, so it was not run"
    return f"{what}; the kernel's variables are lost: run the cells it needs again"


def died_message(km: Any, *, began: bool | None) -> str:
    """What happened to a dead kernel and what the agent can do, for a run that was cut off or never sent
    (``began`` as for :func:`cut_off`)."""
    if began:
        what = (
            "the kernel died while running the cell (it crashed, exited or ran out of memory), so the run was cut "
            "off after it began"
        )
    elif began is False:
        # Sent, but the kernel never said it began the cell: a kernel that dies at once (os._exit, a crash in the
        # cell's first line) dies before its "began" message leaves it, so "not run" would be a guess.
        what = (
            "the kernel died while running the cell or just before it began it (it crashed, exited or ran out of "
            "memory; it had not said it began the cell)"
        )
    else:
        what = "the notebook's kernel has died (it crashed, exited or ran out of memory), so the cell was not run"
    if getattr(km, "autorestart", False) and getattr(km, "_restarter", None) is not None:
        way_out = (
            "Jupyter is restarting it: run the cell again in a few seconds, or restart it now with "
            "restart_notebook_kernel"
        )
    else:
        way_out = "restart it with restart_notebook_kernel"
    return f"{what}; its variables are lost. {way_out}"
