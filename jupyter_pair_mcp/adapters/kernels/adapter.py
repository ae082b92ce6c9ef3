"""Runs in a notebook's kernel: the only module that follows a request of ours to its end.

Which kernel, and our client of it (a session identity of its own), are :class:`KernelClients`'s
(``clients.py``); choosing and switching kernels :class:`KernelChoice`'s (``choice.py``). Execution runs
its own loop with a deadline (``execute_interactive`` has no timeout and misses a dead kernel), polls the
kernel's liveness, interrupts on timeout, and serializes our requests per kernel. Its messages are read
off the sockets by :mod:`.kernel_messages`, which decodes a big one (a 12 MB figure, a 50 MB image) in a
worker thread in steps that let the GIL go, not on the loop as jupyter_client would.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Awaitable, Callable
from typing import Any

import anyio

from jupyter_pair_mcp.adapters.kernels.clients import KernelClients
from jupyter_pair_mcp.adapters.kernels.gateway import (
    FAILURES,
    failure,
    gateway_of,
    through_gateway,
)
from jupyter_pair_mcp.adapters.kernels.messages import DRAIN_BYTES, DRAIN_MESSAGES, decode, drain, receive
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

OUTPUT_MESSAGES = frozenset(
    ("stream", "display_data", "execute_result", "error", "update_display_data", "clear_output")
)


class KernelsAdapter(KernelClients):
    """Kernels and sessions for tools: runs in a notebook's kernel, over our clients of it (:class:`KernelClients`)
    and its choice (:class:`KernelChoice`)."""

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
