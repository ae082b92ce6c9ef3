"""Kernel restarts as the runs they cut off see them: how many a kernel had, and who made the last one.

A restart ends every run of ours on the kernel: the one the kernel is running (its process is replaced) and the
ones queued behind it in our lock (they were asked of the kernel's state before the restart, which is gone). A run
notes the kernel's restart count when its call begins (:meth:`Restarts.count`); the kernels adapter checks it
before it sends the run and while it follows it, and ends the run with a :class:`KernelRestarted` that names who
restarted the kernel. ``restart_notebook_kernel`` counts a restart before asking Jupyter for it, so the run
following the kernel leaves the kernel client before the restart drops that client (closing its sockets under the
run's await would cancel the run's task: the cancellation escaped the tool and ended the agent's MCP session). A
restart made outside our tools (JupyterLab, the kernels REST API) is seen by the run itself: the kernel's
``shutdown_reply`` with ``restart: true`` on iopub.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass
from typing import Any

from jupyter_pair_mcp.adapters.kernels.messages import decode, drain
from jupyter_pair_mcp.adapters.kernels.values import KernelDied, KernelRestarted, died_message, restarted_message


@dataclass
class _Restarted:
    count: int = 0
    by: str = ""  # the agent that made the last restart; "" for one made outside our tools


class Restarts:
    """Restart counts of the kernels our runs used (one small record per kernel, as the adapter's locks)."""

    def __init__(self) -> None:
        self._kernels: dict[str, _Restarted] = {}

    def count(self, kernel_id: str) -> int:
        """How many restarts of ``kernel_id`` we know of: a run notes it when its call begins."""
        known = self._kernels.get(kernel_id)
        return known.count if known is not None else 0

    def note(self, kernel_id: str, by: str) -> None:
        """``kernel_id`` is being restarted, by the agent named ``by`` ("" when not by one of our tools)."""
        known = self._kernels.setdefault(kernel_id, _Restarted())
        known.count += 1
        known.by = by

    def check(self, kernel_id: str, since: int, *, began: bool) -> None:
        """Raise :class:`KernelRestarted` when the kernel was restarted since ``since`` (a run's noted count)."""
        known = self._kernels.get(kernel_id)
        if known is not None and known.count != since:
            raise KernelRestarted(restarted_message(known.by, began=began))

    def seen(self, kernel_id: str, since: int, message: dict[str, Any]) -> bool:
        """Whether ``message`` (off the kernel's iopub) says the kernel is being restarted: its ``shutdown_reply``
        with ``restart: true``, whoever asked. A restart not counted yet was made outside our tools."""
        if message.get("msg_type") != "shutdown_reply" or not message.get("content", {}).get("restart"):
            return False
        if self.count(kernel_id) == since:
            self.note(kernel_id, "")
        return True

    async def why_gone(self, client: Any, km: Any, kernel_id: str, since: int, began: bool) -> KernelDied:
        """Why the kernel went away under a run: restarted (counted, or its ``shutdown_reply`` still unread on
        the client's iopub: a restart from JupyterLab), or died (:func:`~.values.died_message`)."""
        with contextlib.suppress(Exception):  # what the socket still holds; the run's last outputs are dropped
            for item in drain(client.iopub_channel):
                message = item if isinstance(item, dict) else await decode(client.iopub_channel.session, item)
                self.seen(kernel_id, since, message)
        try:
            self.check(kernel_id, since, began=began)
        except KernelRestarted as exc:
            return exc
        return KernelDied(died_message(km, began=began))
