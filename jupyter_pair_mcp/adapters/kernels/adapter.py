"""Kernels and sessions: the only module that talks to Jupyter's session and kernel managers.

A notebook's kernel is the one of its Jupyter session — the kernel JupyterLab users of that notebook
share. When there is none we create the session (so JupyterLab attaches to the same kernel later).
We talk to the kernel through a client of our own whose *session identity is its own*: a plain
``km.client()`` copies the manager's session id, and ipykernel routes replies to the newest client
with that identity, so another server-side client would silently steal our replies.

Execution runs its own loop with a deadline (``execute_interactive`` has no timeout and misses a dead
kernel), polls the kernel's liveness, interrupts on timeout, and serializes our requests per kernel. Its
messages are read off the sockets by :mod:`.kernel_messages`, which decodes a big one (a 12 MB figure, a
50 MB image) in a worker thread in steps that let the GIL go, not on the loop as jupyter_client would.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import posixpath
import queue
import time
from collections.abc import Awaitable, Callable
from typing import Any

import anyio
from jupyter_client.session import Session
from jupyter_core.utils import ensure_async

from jupyter_pair_mcp.adapters.kernels.choice import KernelChoice
from jupyter_pair_mcp.adapters.kernels.gateway import (
    FAILURES,
    client_for,
    closed,
    failure,
    gateway_of,
    start_channels,
    stop_channels,
    through_gateway,
)
from jupyter_pair_mcp.adapters.kernels.messages import DRAIN_BYTES, DRAIN_MESSAGES, decode, drain, receive
from jupyter_pair_mcp.adapters.kernels.restarts import Restarts
from jupyter_pair_mcp.adapters.kernels.values import (
    ChannelClosed,
    Execution,
    Kernel,
    KernelChange,
    KernelDied,
    KernelRestarted,
    KernelSpec,
    RunningKernel,
    cut_off,
    died_message,
)
from jupyter_pair_mcp.errors import Unavailable

log = logging.getLogger(__name__)

__all__ = [
    "DRAIN_BYTES",
    "DRAIN_MESSAGES",
    "Execution",
    "Kernel",
    "KernelChange",
    "KernelDied",
    "KernelRestarted",
    "KernelSpec",
    "KernelsAdapter",
    "RunningKernel",
    "drain",
]

OutputCallback = Callable[[str, dict[str, Any]], Awaitable[None]]

# How often a run checks that its kernel is alive: a gateway's kernel manager asks the gateway over HTTP each time.
LIVENESS_EVERY = 0.25
GATEWAY_LIVENESS_EVERY = 1.0
# A status the kernel did not send: the server's websocket to a gateway kernel says that the kernel died
# ("restarting": the gateway's restarter is bringing it back; "dead": it could not).
DIED_STATES = frozenset(("restarting", "dead"))
# A restart waits this long for the run of ours following the kernel to leave its client (it sees the restart
# within one receive, 0.1 s) before it drops the client.
RESTART_RELEASE_TIMEOUT = 10.0


OUTPUT_MESSAGES = frozenset(
    ("stream", "display_data", "execute_result", "error", "update_display_data", "clear_output")
)


class KernelsAdapter(KernelChoice):
    """Kernels and sessions for tools: runs in a notebook's kernel, and its choice (:class:`KernelChoice`)."""

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

    @through_gateway
    async def execute(
        self,
        kernel_id: str,
        code: str,
        on_output: OutputCallback,
        timeout: float,
        *,
        store_history: bool = True,
        since: int | None = None,
    ) -> Execution:
        """Run ``code``; hand every iopub output message to ``on_output`` as it arrives.

        A kernel that is dead when the run starts — killed between runs, or died in the previous one and not
        restarted yet (Jupyter's restarter polls every few seconds) — is a :class:`KernelDied`, not an error
        of ours; a kernel that is restarting is waited for (``ready_timeout``). A restart of the kernel after
        ``since`` (its :attr:`restarts` count when the caller's call began; default: now) ends the run with a
        :class:`KernelRestarted`, and a kernel or gateway going away under the run says how far it got.
        """
        since = self.restarts.count(kernel_id) if since is None else since
        km = await self._live(kernel_id)
        try:
            client = await self.client(kernel_id)
        except RuntimeError as exc:  # wait_for_ready: "Kernel died before replying" or "didn't respond in time"
            await self._live(kernel_id)
            if "died" in str(exc):  # and was restarted since: the run was not sent
                raise KernelDied(died_message(km, began=None)) from None
            raise Unavailable(
                f"the kernel did not answer within {self.ready_timeout:g} s ({exc}): it may be busy starting; "
                "try again, or restart it with restart_notebook_kernel"
            ) from None
        self.restarts.check(kernel_id, since, began=False)  # restarted while this call waited: nothing sent
        msg_id = client.execute(code, store_history=store_history, allow_stdin=False, stop_on_error=True)
        begun: list[bool] = []  # set by _follow once the kernel began our request (its execute_input)
        try:
            return await self._follow(client, km, kernel_id, msg_id, on_output, timeout, begun, since)
        except asyncio.CancelledError:
            # The caller gave up: stop the run, and let it finish unwinding before anyone else uses the
            # kernel (a request sent while it unwinds would come back "aborted"). The MCP SDK cancels
            # through anyio scopes, which cancel every later await too: shield this one.
            with anyio.CancelScope(shield=True):
                await self._abandon(client, kernel_id, msg_id, begun=bool(begun), since=since)
            raise
        except KernelRestarted:
            self._forget(kernel_id)  # the caller holds the kernel's lock: no other run reads this client
            raise
        except FAILURES as exc:  # the gateway went away under the run: say how far it got, not "nothing was run"
            where = gateway_of(self.serverapp)
            if where is None:
                raise
            log.warning("The kernel gateway at %s failed during a run: %s: %s", where, type(exc).__name__, exc)
            raise failure(where, exc, bool(begun)) from None

    async def _abandon(self, client: Any, kernel_id: str, msg_id: str, *, begun: bool, since: int) -> None:
        """Interrupt our run once the kernel began it, and wait for it to end. ipykernel ignores SIGINT
        between requests: an interrupt sent before it began ours (in flight, or queued behind someone else's
        run) would be lost, or stop the other run, and ours would go on. A kernel that never says it began
        (no execute_input within the wait) is interrupted then."""
        with contextlib.suppress(Exception):
            if begun:
                await self.interrupt(kernel_id)
            end = time.monotonic() + 10
            while time.monotonic() < end:
                if self.restarts.count(kernel_id) != since:
                    return  # the kernel is being restarted: the run ends with it, and no reply will come
                msg = await receive(client.iopub_channel, 0.2)
                if msg is None:
                    continue
                if msg.get("parent_header", {}).get("msg_id") != msg_id:
                    continue
                if msg["msg_type"] == "execute_input" and not begun:
                    begun = True
                    await self.interrupt(kernel_id)
                    end = time.monotonic() + 10
                elif msg["msg_type"] == "status" and msg["content"].get("execution_state") == "idle":
                    break
            else:
                if not begun:
                    await self.interrupt(kernel_id)
            await self.reply(client, msg_id)

    async def _follow(
        self,
        client: Any,
        km: Any,
        kernel_id: str,
        msg_id: str,
        on_output: OutputCallback,
        timeout: float,
        begun: list[bool],
        since: int,
    ) -> Execution:
        deadline = time.monotonic() + timeout
        timed_out = False
        count: int | None = None
        remote = gateway_of(self.serverapp) is not None
        every = GATEWAY_LIVENESS_EVERY if remote else LIVENESS_EVERY
        next_liveness = time.monotonic() + every if remote else 0.0  # a gateway's was just asked (_live)
        while True:
            self.restarts.check(kernel_id, since, began=bool(begun))  # a restart ends the run (restart())
            now = time.monotonic()
            if not timed_out and now > deadline:
                timed_out = True
                log.info("A run timed out after %g s: interrupting it once the kernel began it", timeout)
                if begun:  # else once its execute_input comes (see _abandon)
                    await self.interrupt(kernel_id)
                deadline = now + 10  # let the interrupted run report back
            elif timed_out and now > deadline:
                if not begun:
                    await self.interrupt(kernel_id)
                break
            if now >= next_liveness:
                next_liveness = now + every
                if not await self._alive(km):
                    gone = await self.restarts.why_gone(client, km, kernel_id, since, bool(begun))  # reads the client
                    self._forget(kernel_id)
                    raise gone
            try:
                first = await receive(client.iopub_channel, 0.1)
            except ChannelClosed:  # the kernel is gone (KernelDied), or the gateway (its error), or the connection
                self._forget(kernel_id)
                await self._live(kernel_id, bool(begun))
                raise ChannelClosed(cut_off(bool(begun))) from None
            if first is None:
                continue
            idle = False
            queued: list[dict[str, Any] | list[Any]] = [first, *drain(client.iopub_channel)]
            for item in queued:
                msg = item if isinstance(item, dict) else await decode(client.iopub_channel.session, item)
                kind = msg["msg_type"]
                content = msg["content"]
                if kind == "status" and content.get("execution_state") in DIED_STATES and not msg["parent_header"]:
                    gone = await self.restarts.why_gone(client, km, kernel_id, since, bool(begun))  # reads the client
                    self._forget(kernel_id)
                    raise gone
                if self.restarts.seen(kernel_id, since, msg):  # its shutdown_reply: restarted, by whoever
                    self.restarts.check(kernel_id, since, began=bool(begun))
                if msg.get("parent_header", {}).get("msg_id") != msg_id:
                    continue
                if kind == "status" and content.get("execution_state") == "idle":
                    idle = True  # the kernel sends nothing of this run after it
                    break
                if kind == "execute_input":
                    count = content.get("execution_count")
                    begun.append(True)
                    if timed_out:
                        await self.interrupt(kernel_id)
                        deadline = time.monotonic() + 10
                elif kind in OUTPUT_MESSAGES:
                    await on_output(kind, content)
            if idle:
                break
        reply = await self.reply(client, msg_id)
        # No reply at all (the kernel went away under the run): never report that as a success.
        status = "timeout" if timed_out else str(reply.get("status", "ok")) if reply else "aborted"
        if reply and reply.get("execution_count") is not None:
            count = reply["execution_count"]
        return Execution(status=status, execution_count=count)

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
