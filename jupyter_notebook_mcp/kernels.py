"""Kernels and sessions: the only module that talks to Jupyter's session and kernel managers.

A notebook's kernel is the one of its Jupyter session — the kernel JupyterLab users of that notebook
share. When there is none we create the session (so JupyterLab attaches to the same kernel later).
We talk to the kernel through a client of our own whose *session identity is its own*: a plain
``km.client()`` copies the manager's session id, and ipykernel routes replies to the newest client
with that identity, so another server-side client would silently steal our replies.

Execution runs its own loop with a deadline (``execute_interactive`` has no timeout and misses a dead
kernel), polls the kernel's liveness, interrupts on timeout, and serializes our requests per kernel.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import posixpath
import queue
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

import anyio
import zmq
from jupyter_client.session import Session
from jupyter_core.utils import ensure_async

from .errors import NotFound, Unavailable

log = logging.getLogger(__name__)

OutputCallback = Callable[[str, dict[str, Any]], Awaitable[None]]

# After each message awaited from iopub, up to this many more that the socket already holds are read without
# waiting (no loop turn each): the output writer then finds them all queued and writes them in one
# transaction. Bounded so that one drain holds the loop a few milliseconds at most.
DRAIN_MESSAGES = 256
DRAIN_BYTES = 1 << 20


@dataclass(frozen=True)
class Kernel:
    name: str
    id: str
    state: str


@dataclass
class Execution:
    status: str  # "ok", "error", "timeout", "aborted"
    execution_count: int | None


class KernelDied(Unavailable):
    """The notebook's kernel process is gone: it stopped while running the agent's code, or before it."""


def died_message(km: Any, *, running: bool) -> str:
    """What happened to a dead kernel and what the agent can do, for a run that was cut off or never sent."""
    if running:
        what = "the kernel died while running the cell (it crashed, exited or ran out of memory) before it finished"
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


OUTPUT_MESSAGES = frozenset(
    ("stream", "display_data", "execute_result", "error", "update_display_data", "clear_output")
)


def drain(channel: Any) -> list[dict[str, Any]]:
    """The messages the channel's socket already holds (bounded by ``DRAIN_MESSAGES`` and ``DRAIN_BYTES``),
    read without waiting: a non-blocking receive never yields to the loop."""
    socket = getattr(channel, "socket", None)
    messages: list[dict[str, Any]] = []
    size = 0
    while socket is not None and len(messages) < DRAIN_MESSAGES and size < DRAIN_BYTES:
        try:
            parts = socket.recv_multipart(zmq.DONTWAIT, copy=True)
            if not isinstance(parts, list):  # an asyncio socket hands back a future that is already done
                parts = parts.result()
        except zmq.Again:
            break
        size += sum(len(part) for part in parts)
        _, frames = channel.session.feed_identities(parts)
        messages.append(channel.session.deserialize(frames))
    return messages


class KernelsAdapter:
    def __init__(self, serverapp: Any, *, ready_timeout: float = 60.0) -> None:
        self.serverapp = serverapp
        self.ready_timeout = ready_timeout
        self._clients: dict[str, Any] = {}
        self._locks: dict[str, asyncio.Lock] = {}

    @property
    def _sessions(self) -> Any:
        return self.serverapp.session_manager

    @property
    def _kernels(self) -> Any:
        return self.serverapp.kernel_manager

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

    async def ensure_kernel(self, path: str, kernel_name: str | None) -> Kernel:
        """The notebook's kernel, starting one (and its Jupyter session) from the kernelspec if none runs."""
        existing = await self.kernel_for(path)
        if existing is not None and existing.id in self._kernels:
            return existing
        name = kernel_name or self._kernels.default_kernel_name
        specs = self.serverapp.kernel_spec_manager.get_all_specs()
        if name not in specs:
            installed = ", ".join(sorted(specs))
            raise NotFound(f"the notebook asks for kernel {name!r}, which is not installed; installed: {installed}")
        model = await ensure_async(
            self._sessions.create_session(path=path, name=posixpath.basename(path), type="notebook", kernel_name=name)
        )
        kernel = model["kernel"]
        return Kernel(str(kernel["name"]), str(kernel["id"]), str(kernel.get("execution_state", "starting")))

    async def client(self, kernel_id: str) -> Any:
        """Our kernel client for ``kernel_id`` (started once and kept): its shell, iopub and control channels.

        Hold :meth:`lock` while a request of ours runs on it, so replies and outputs are not mixed up.
        """
        client = self._clients.get(kernel_id)
        if client is not None:
            return client
        km = self._kernels.get_kernel(kernel_id)
        # Our own session identity (same key): see the module docstring.
        session = Session(key=km.session.key, signature_scheme=km.session.signature_scheme)
        client = km.client(session=session)
        client.start_channels()
        try:
            await client.wait_for_ready(timeout=self.ready_timeout)
        except Exception:
            client.stop_channels()
            raise
        self._clients[kernel_id] = client
        return client

    async def _live(self, kernel_id: str) -> Any:
        """The kernel's manager, or :class:`KernelDied` when its process is gone (our client is dropped then)."""
        try:
            km = self._kernels.get_kernel(kernel_id)
        except KeyError:  # Jupyter gave up restarting it and removed it
            self._forget(kernel_id)
            raise KernelDied(
                "the notebook's kernel has died and Jupyter could not restart it, so the cell was not run: "
                "run the cell again to start a new kernel (its variables are lost)"
            ) from None
        if not await ensure_async(km.is_alive()):
            self._forget(kernel_id)
            raise KernelDied(died_message(km, running=False))
        return km

    def _forget(self, kernel_id: str) -> None:
        client = self._clients.pop(kernel_id, None)
        if client is not None:
            with contextlib.suppress(Exception):
                client.stop_channels()

    def lock(self, kernel_id: str) -> asyncio.Lock:
        """Held while our request runs on the kernel: our executions on one kernel queue in order."""
        return self._locks.setdefault(kernel_id, asyncio.Lock())

    async def execute(
        self, kernel_id: str, code: str, on_output: OutputCallback, timeout: float, *, store_history: bool = True
    ) -> Execution:
        """Run ``code``; hand every iopub output message to ``on_output`` as it arrives.

        A kernel that is dead when the run starts — killed between runs, or died in the previous one and not
        restarted yet (Jupyter's restarter polls every few seconds) — is a :class:`KernelDied`, not an error
        of ours; a kernel that is restarting is waited for (``ready_timeout``).
        """
        km = await self._live(kernel_id)
        try:
            client = await self.client(kernel_id)
        except RuntimeError as exc:  # wait_for_ready: "Kernel died before replying" or "didn't respond in time"
            await self._live(kernel_id)
            if "died" in str(exc):  # and was restarted since: the run was not sent
                raise KernelDied(died_message(km, running=False)) from None
            raise Unavailable(
                f"the kernel did not answer within {self.ready_timeout:g} s ({exc}): it may be busy starting; "
                "try again, or restart it with restart_notebook_kernel"
            ) from None
        msg_id = client.execute(code, store_history=store_history, allow_stdin=False, stop_on_error=True)
        try:
            return await self._follow(client, km, kernel_id, msg_id, on_output, timeout)
        except asyncio.CancelledError:
            # The caller gave up: stop the run, and let it finish unwinding before anyone else uses the
            # kernel (a request sent while it unwinds would come back "aborted"). The MCP SDK cancels
            # through anyio scopes, which cancel every later await too: shield this one.
            with anyio.CancelScope(shield=True):
                await self._abandon(client, kernel_id, msg_id)
            raise

    async def _abandon(self, client: Any, kernel_id: str, msg_id: str) -> None:
        with contextlib.suppress(Exception):
            await self.interrupt(kernel_id)
            end = time.monotonic() + 10
            while time.monotonic() < end:
                try:
                    msg = await client.get_iopub_msg(timeout=0.2)
                except queue.Empty:
                    continue
                if (
                    msg.get("parent_header", {}).get("msg_id") == msg_id
                    and msg["msg_type"] == "status"
                    and msg["content"].get("execution_state") == "idle"
                ):
                    break
            await self._reply(client, msg_id)

    async def _follow(
        self, client: Any, km: Any, kernel_id: str, msg_id: str, on_output: OutputCallback, timeout: float
    ) -> Execution:
        deadline = time.monotonic() + timeout
        timed_out = False
        count: int | None = None
        next_liveness = 0.0
        while True:
            now = time.monotonic()
            if not timed_out and now > deadline:
                timed_out = True
                await self.interrupt(kernel_id)
                deadline = now + 10  # let the interrupted run report back
            elif timed_out and now > deadline:
                break
            if now >= next_liveness:
                next_liveness = now + 0.25
                if not await ensure_async(km.is_alive()):
                    self._forget(kernel_id)
                    raise KernelDied(died_message(km, running=True))
            try:
                first = await client.get_iopub_msg(timeout=0.1)
            except queue.Empty:
                continue
            idle = False
            for msg in [first, *drain(client.iopub_channel)]:
                if msg.get("parent_header", {}).get("msg_id") != msg_id:
                    continue
                kind = msg["msg_type"]
                content = msg["content"]
                if kind == "status" and content.get("execution_state") == "idle":
                    idle = True  # the kernel sends nothing of this run after it
                    break
                if kind == "execute_input":
                    count = content.get("execution_count")
                elif kind in OUTPUT_MESSAGES:
                    await on_output(kind, content)
            if idle:
                break
        reply = await self._reply(client, msg_id)
        status = "timeout" if timed_out else str(reply.get("status", "ok")) if reply else "ok"
        if reply and reply.get("execution_count") is not None:
            count = reply["execution_count"]
        return Execution(status=status, execution_count=count)

    async def _reply(self, client: Any, msg_id: str) -> dict[str, Any] | None:
        end = time.monotonic() + 5
        while time.monotonic() < end:
            try:
                msg = await client.get_shell_msg(timeout=0.5)
            except queue.Empty:
                continue
            if msg.get("parent_header", {}).get("msg_id") == msg_id:
                return dict(msg["content"])
        return None

    async def interrupt(self, kernel_id: str) -> None:
        await ensure_async(self._kernels.interrupt_kernel(kernel_id))

    async def restart(self, kernel_id: str) -> Kernel:
        self._forget(kernel_id)
        await ensure_async(self._kernels.restart_kernel(kernel_id))
        km = self._kernels.get_kernel(kernel_id)
        return Kernel(str(km.kernel_name), kernel_id, str(getattr(km, "execution_state", "starting")))

    async def close(self) -> None:
        for kernel_id in list(self._clients):
            self._forget(kernel_id)
