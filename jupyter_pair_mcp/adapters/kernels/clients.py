"""Our clients of a notebook's kernel, and the kernel's life: finding it, starting it, restarting it.

A notebook's kernel is the one of its Jupyter session — the kernel JupyterLab users of that notebook
share. When there is none we create the session (so JupyterLab attaches to the same kernel later).
We talk to the kernel through a client of our own whose *session identity is its own*: a plain
``km.client()`` copies the manager's session id, and ipykernel routes replies to the newest client
with that identity, so another server-side client would silently steal our replies.

The base of :class:`~jupyter_pair_mcp.adapters.kernels.adapter.KernelsAdapter`, kept apart from the run
(``adapter.py``: following a request's messages to its end) because this is about which kernel and which
client, and when they are gone.
"""

from __future__ import annotations

import asyncio
import posixpath
import queue
import time
from typing import Any

from jupyter_client.session import Session
from jupyter_core.utils import ensure_async

from jupyter_pair_mcp.adapters.kernels.choice import KernelChoice
from jupyter_pair_mcp.adapters.kernels.gateway import (
    client_for,
    closed,
    gateway_of,
    start_channels,
    stop_channels,
    through_gateway,
)
from jupyter_pair_mcp.adapters.kernels.messages import receive
from jupyter_pair_mcp.adapters.kernels.restarts import Restarts
from jupyter_pair_mcp.adapters.kernels.values import Kernel, KernelDied, cut_off, died_message

# A restart waits this long for the run of ours following the kernel to leave its client (it sees the restart
# within one receive, 0.1 s) before it drops the client.
RESTART_RELEASE_TIMEOUT = 10.0


class KernelClients(KernelChoice):
    """A notebook's kernel, our client of it (one per kernel, kept), its lock, its interrupt and restart."""

    def __init__(self, serverapp: Any, *, ready_timeout: float = 60.0) -> None:
        self.serverapp = serverapp
        self.ready_timeout = ready_timeout
        self._clients: dict[str, Any] = {}
        self._locks: dict[str, asyncio.Lock] = {}
        self._switching = asyncio.Lock()  # kernel switches one at a time: two would each start a kernel
        self._stopping: set[asyncio.Future[None]] = set()  # gateway clients' channels being stopped (a thread each)
        self.restarts = Restarts()  # what a run checks: was its kernel restarted since its call began

    @through_gateway
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

    @through_gateway
    async def ensure_kernel(self, path: str, kernel_name: str | None) -> Kernel:
        """The notebook's kernel, starting one (and its Jupyter session) from the kernelspec if none runs."""
        existing = await self.kernel_for(path)
        if existing is not None and existing.id in self._kernels:
            return existing
        name = (await self.kernelspec(kernel_name, for_notebook=True)).name
        model = await ensure_async(
            self._sessions.create_session(path=path, name=posixpath.basename(path), type="notebook", kernel_name=name)
        )
        kernel = model["kernel"]
        return Kernel(str(kernel["name"]), str(kernel["id"]), str(kernel.get("execution_state", "starting")))

    @through_gateway
    async def client(self, kernel_id: str) -> Any:
        """Our kernel client for ``kernel_id`` (started once and kept): its shell, iopub and control channels.

        Hold :meth:`lock` while a request of ours runs on it, so replies and outputs are not mixed up.
        """
        client = self._clients.get(kernel_id)
        if client is not None and not closed(client):
            return client
        self._forget(kernel_id)
        km = self._kernels.get_kernel(kernel_id)
        # Our own session identity (same key): see the module docstring.
        session = Session(key=km.session.key, signature_scheme=km.session.signature_scheme)
        client = client_for(km, session)
        try:
            await start_channels(client, self._stopping)
            if isinstance(client.shell_channel, queue.Queue):
                await self._answers(client, km)
            else:
                await ensure_async(client.wait_for_ready(timeout=self.ready_timeout))
        except BaseException:
            stop_channels(client, self._stopping)
            raise
        self._clients[kernel_id] = client
        return client

    async def _answers(self, client: Any, km: Any) -> None:
        """Wait until a gateway kernel answers ``kernel_info`` (``wait_for_ready`` does not work there: a kernel
        that takes over a second, busy with a person's cell, makes it ask the gateway's kernel manager for a
        local process, and fail). The gateway's iopub is live once its websocket is open: no check of it."""
        deadline = time.monotonic() + self.ready_timeout
        while await self.reply(client, client.kernel_info(), min(1.0, self.ready_timeout)) is None:
            if not await self._alive(km):
                raise RuntimeError("Kernel died before replying to kernel_info")
            if time.monotonic() > deadline:
                raise RuntimeError(f"Kernel didn't respond in {self.ready_timeout:g} seconds")

    async def _live(self, kernel_id: str, began: bool | None = None) -> Any:
        """The kernel's manager, or :class:`KernelDied` when its process is gone (our client is dropped then);
        ``began`` says what became of a run under way (:func:`~.values.cut_off`), None before one was sent."""
        try:
            km = self._kernels.get_kernel(kernel_id)
        except KeyError:  # Jupyter gave up restarting it and removed it
            self._forget(kernel_id)
            raise KernelDied(
                f"the notebook's kernel has died and Jupyter could not restart it: {cut_off(began)}; run the cell "
                "again to start a new kernel (its variables are lost)"
            ) from None
        if not await self._alive(km):
            self._forget(kernel_id)
            where = gateway_of(self.serverapp)
            if where is not None:  # the gateway no longer has it: Jupyter forgets it (and its session) on a list
                await ensure_async(self._kernels.list_kernels())
                raise KernelDied(
                    f"the kernel gateway at {where} no longer has the notebook's kernel (the gateway restarted, or "
                    f"culled or shut down the kernel): {cut_off(began)}; run it again to start a new kernel (its "
                    "variables are lost)"
                )
            raise KernelDied(died_message(km, began=began))
        return km

    @staticmethod
    async def _alive(km: Any) -> bool:
        """Whether the kernel runs. A gateway's kernel manager says True once more for a kernel the gateway no
        longer has (it forgets its model then): that is a dead kernel too."""
        return bool(await ensure_async(km.is_alive())) and getattr(km, "has_kernel", True) is not False

    def _forget(self, kernel_id: str) -> None:
        client = self._clients.pop(kernel_id, None)
        if client is not None:
            stop_channels(client, self._stopping)

    def lock(self, kernel_id: str) -> asyncio.Lock:
        """Held while our request runs on the kernel: our executions on one kernel queue in order."""
        return self._locks.setdefault(kernel_id, asyncio.Lock())

    @staticmethod
    async def reply(client: Any, msg_id: str, timeout: float = 5.0) -> dict[str, Any] | None:
        """The shell reply to our request ``msg_id`` within ``timeout`` seconds (None if none came); other
        replies on our client's shell channel are skipped."""
        end = time.monotonic() + timeout
        while (left := end - time.monotonic()) > 0:
            msg = await receive(client.shell_channel, min(left, 0.5))
            if msg is not None and msg.get("parent_header", {}).get("msg_id") == msg_id:
                return dict(msg["content"])
        return None

    @through_gateway
    async def interrupt(self, kernel_id: str) -> None:
        await ensure_async(self._kernels.interrupt_kernel(kernel_id))

    @through_gateway
    async def restart(self, kernel_id: str, by: str = "") -> Kernel:
        """Restart the kernel as the agent named ``by``: our runs on it, running or queued, end with a
        :class:`KernelRestarted` naming it. The run following the kernel leaves our client before the client is
        dropped (closing its sockets under the run would cancel the run's task); the restart holds the kernel's
        lock, so runs asked for meanwhile go to the new kernel."""
        self.restarts.note(kernel_id, by)
        lock = self.lock(kernel_id)
        try:
            await asyncio.wait_for(lock.acquire(), RESTART_RELEASE_TIMEOUT)
        except TimeoutError:  # a run still holds it (its reply is late): it sees the restart and drops the client
            held = False
        else:
            held = True
        try:
            if held:
                self._forget(kernel_id)
            await ensure_async(self._kernels.restart_kernel(kernel_id))
        finally:
            if held:
                lock.release()
        km = self._kernels.get_kernel(kernel_id)
        name = km.kernel_name or (getattr(km, "kernel", None) or {}).get("name", "")  # a gateway's: its model's
        return Kernel(str(name), kernel_id, str(getattr(km, "execution_state", "starting")))

    async def close(self) -> None:
        for kernel_id in list(self._clients):
            self._forget(kernel_id)
        if self._stopping:
            await asyncio.wait(set(self._stopping), timeout=10)
