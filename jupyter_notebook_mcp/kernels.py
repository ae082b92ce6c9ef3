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
import time
from collections.abc import Awaitable, Callable
from typing import Any

import anyio
from jupyter_client.session import Session
from jupyter_core.utils import ensure_async

from .errors import NotFound, Unavailable
from .kernel_messages import decode, receive, receive_ready
from .kernel_types import Execution, Kernel, KernelChange, KernelDied, KernelSpec, RunningKernel, died_message

log = logging.getLogger(__name__)

__all__ = [
    "Execution",
    "Kernel",
    "KernelChange",
    "KernelDied",
    "KernelSpec",
    "KernelsAdapter",
    "RunningKernel",
    "drain",
]

OutputCallback = Callable[[str, dict[str, Any]], Awaitable[None]]

# After each message awaited from iopub, up to this many more that the socket already holds are read without
# waiting (no loop turn each): the output writer then finds them all queued and writes them in one
# transaction. Bounded so that one drain holds the loop a few milliseconds at most.
DRAIN_MESSAGES = 256
DRAIN_BYTES = 1 << 20
# An error naming the installed kernelspecs names at most this many.
NAMES_IN_MESSAGE = 30
# Switching a notebook's kernel waits this long for a run of ours on the old one to end once interrupted.
RELEASE_TIMEOUT = 10.0


OUTPUT_MESSAGES = frozenset(
    ("stream", "display_data", "execute_result", "error", "update_display_data", "clear_output")
)


def drain(channel: Any) -> list[list[Any]]:
    """The frames of the messages the channel's socket already holds (bounded by ``DRAIN_MESSAGES`` and
    ``DRAIN_BYTES``), read without waiting and without copying: a non-blocking receive never yields to the
    loop. :func:`kernel_messages.decode` decodes them."""
    messages: list[list[Any]] = []
    size = 0
    while len(messages) < DRAIN_MESSAGES and size < DRAIN_BYTES:
        parts = receive_ready(channel)
        if parts is None:
            break
        size += sum(len(part) for part in parts)
        messages.append(parts)
    return messages


class KernelsAdapter:
    def __init__(self, serverapp: Any, *, ready_timeout: float = 60.0) -> None:
        self.serverapp = serverapp
        self.ready_timeout = ready_timeout
        self._clients: dict[str, Any] = {}
        self._locks: dict[str, asyncio.Lock] = {}
        self._switching = asyncio.Lock()  # kernel switches one at a time: two would each start a kernel

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
        name = (await self.kernelspec(kernel_name, for_notebook=True)).name
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
        begun: list[bool] = []  # set by _follow once the kernel began our request (its execute_input)
        try:
            return await self._follow(client, km, kernel_id, msg_id, on_output, timeout, begun)
        except asyncio.CancelledError:
            # The caller gave up: stop the run, and let it finish unwinding before anyone else uses the
            # kernel (a request sent while it unwinds would come back "aborted"). The MCP SDK cancels
            # through anyio scopes, which cancel every later await too: shield this one.
            with anyio.CancelScope(shield=True):
                await self._abandon(client, kernel_id, msg_id, begun=bool(begun))
            raise

    async def _abandon(self, client: Any, kernel_id: str, msg_id: str, *, begun: bool) -> None:
        """Interrupt our run once the kernel began it, and wait for it to end. ipykernel ignores SIGINT
        between requests: an interrupt sent before it began ours (in flight, or queued behind someone else's
        run) would be lost, or stop the other run, and ours would go on. A kernel that never says it began
        (no execute_input within the wait) is interrupted then."""
        with contextlib.suppress(Exception):
            if begun:
                await self.interrupt(kernel_id)
            end = time.monotonic() + 10
            while time.monotonic() < end:
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
    ) -> Execution:
        deadline = time.monotonic() + timeout
        timed_out = False
        count: int | None = None
        next_liveness = 0.0
        while True:
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
                next_liveness = now + 0.25
                if not await ensure_async(km.is_alive()):
                    self._forget(kernel_id)
                    raise KernelDied(died_message(km, running=True))
            first = await receive(client.iopub_channel, 0.1)
            if first is None:
                continue
            idle = False
            queued: list[dict[str, Any] | list[Any]] = [first, *drain(client.iopub_channel)]
            for item in queued:
                msg = item if isinstance(item, dict) else await decode(client.iopub_channel.session, item)
                if msg.get("parent_header", {}).get("msg_id") != msg_id:
                    continue
                kind = msg["msg_type"]
                content = msg["content"]
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

    async def interrupt(self, kernel_id: str) -> None:
        await ensure_async(self._kernels.interrupt_kernel(kernel_id))

    async def restart(self, kernel_id: str) -> Kernel:
        self._forget(kernel_id)
        await ensure_async(self._kernels.restart_kernel(kernel_id))
        km = self._kernels.get_kernel(kernel_id)
        return Kernel(str(km.kernel_name), kernel_id, str(getattr(km, "execution_state", "starting")))

    # -- kernelspecs, running kernels, and a notebook's kernel choice ---------------------------------
    @property
    def default_kernel_name(self) -> str:
        """The server's default kernel (what ``/api/kernelspecs`` reports as ``default``)."""
        return str(self._kernels.default_kernel_name)

    async def kernelspecs(self) -> list[KernelSpec]:
        """The installed kernelspecs, by name (Jupyter skips, and logs, the ones it cannot read)."""
        specs = await ensure_async(self.serverapp.kernel_spec_manager.get_all_specs())
        found = []
        for name, entry in sorted(specs.items()):
            spec = entry.get("spec", {}) if isinstance(entry, dict) else {}
            found.append(KernelSpec(str(name), str(spec.get("display_name") or name), str(spec.get("language") or "")))
        return found

    async def kernelspec(self, name: str | None, *, for_notebook: bool = False) -> KernelSpec:
        """The installed kernelspec ``name`` (None or "": the server's default), or :class:`NotFound` listing them.

        ``for_notebook``: the name comes from a notebook's metadata (the message says how to pick another).
        """
        wanted = name or self.default_kernel_name
        specs = await self.kernelspecs()
        for spec in specs:
            if spec.name == wanted:
                return spec
        names = [spec.name for spec in specs]
        installed = ", ".join(names[:NAMES_IN_MESSAGE]) or "none"
        if len(names) > NAMES_IN_MESSAGE:
            installed += f" and {len(names) - NAMES_IN_MESSAGE} more"
        if for_notebook:
            raise NotFound(
                f"the notebook asks for kernel {wanted!r}, which is not installed; installed: {installed} "
                "(set_notebook_kernel picks one)"
            )
        raise NotFound(f"kernel {wanted!r} is not installed; installed: {installed}")

    async def running(self) -> list[RunningKernel]:
        """The kernels Jupyter runs, each with the paths of the sessions (notebooks, consoles) using it."""
        paths: dict[str, list[str]] = {}
        sessions = getattr(self.serverapp, "session_manager", None)
        if sessions is not None:
            for session in await ensure_async(sessions.list_sessions()):
                kernel = session.get("kernel") or {}
                if kernel.get("id") and session.get("path"):
                    paths.setdefault(str(kernel["id"]), []).append(str(session["path"]))
        return [
            RunningKernel(
                id=str(model["id"]),
                name=str(model.get("name", "")),
                state=str(model.get("execution_state", "unknown")),
                last_activity=model.get("last_activity"),
                connections=int(model.get("connections", 0)),
                paths=tuple(sorted(paths.get(str(model["id"]), []))),
            )
            for model in await ensure_async(self._kernels.list_kernels())
        ]

    async def change_kernel(self, path: str, spec: KernelSpec) -> KernelChange:
        """Make the notebook's Jupyter session run ``spec``, as JupyterLab's kernel picker does.

        That is the sessions API's ``PATCH {"kernel": {"name": ...}}``: start a kernel for the session, point
        the session at it, shut the old one down (waited for unless kernels are pending). A session already
        running a live kernel of that name keeps it (its variables too). The old kernel is left running when
        another session still uses it (a console attached to the notebook's kernel). No session: nothing
        runs, and the next run starts ``spec`` from the notebook's metadata.
        """
        async with self._switching:
            return await self._change_kernel(path, spec)

    async def _change_kernel(self, path: str, spec: KernelSpec) -> KernelChange:
        sessions = self._sessions
        for session in await ensure_async(sessions.list_sessions()):
            if session.get("path") == path and session.get("type", "notebook") == "notebook" and session.get("kernel"):
                break
        else:
            return KernelChange(kernel=None, started=False)
        old = session["kernel"]
        old_id = str(old["id"])
        if old.get("name") == spec.name and old_id in self._kernels:
            return KernelChange(Kernel(spec.name, old_id, str(old.get("execution_state", "unknown"))), started=False)
        try:
            new_id = await sessions.start_kernel_for_session(
                session["id"], path=path, name=session.get("name"), type=session.get("type"), kernel_name=spec.name
            )
        except Exception as exc:  # its message may name server paths: the log has it
            log.exception("could not start kernel %s for %s", spec.name, path)
            self._drop_failed_starts()
            raise Unavailable(
                f"kernel {spec.name!r} could not be started ({type(exc).__name__}; the server log has the details): "
                "the notebook keeps its kernel"
            ) from None
        await sessions.update_session(session["id"], kernel_id=new_id)
        # From here our runs go to the new kernel. One of ours still running on the old one is interrupted
        # and let finish (its reply would be lost if the kernel went down under it); then nothing of ours
        # uses the old kernel while it shuts down.
        lock = self.lock(old_id)
        if lock.locked():
            with contextlib.suppress(Exception):
                await self.interrupt(old_id)
        try:
            await asyncio.wait_for(lock.acquire(), RELEASE_TIMEOUT)
        except TimeoutError:  # still running: it sees the kernel die
            held = False
        else:
            held = True
        try:
            if old_id in self._kernels and not await self._shared(old_id):
                shutdown = asyncio.ensure_future(ensure_async(self._kernels.shutdown_kernel(old_id)))
                if not getattr(self._kernels, "use_pending_kernels", None):
                    await shutdown
            if held:
                self._forget(old_id)
        finally:
            if held:
                lock.release()
        model = self._kernels.kernel_model(new_id)
        return KernelChange(Kernel(spec.name, new_id, str(model.get("execution_state", "starting"))), started=True)

    def _drop_failed_starts(self) -> None:
        """Forget the kernels whose start failed. jupyter_client keeps such a kernel among the pending ones,
        and shutting the server down then fails on it ("Kernel does not exist")."""
        pending = getattr(self._kernels, "_pending_kernels", None)
        if isinstance(pending, dict):
            for kernel_id, task in list(pending.items()):
                if kernel_id not in self._kernels and task.done():
                    del pending[kernel_id]

    async def _shared(self, kernel_id: str) -> bool:
        """Whether a Jupyter session still uses the kernel."""
        for session in await ensure_async(self._sessions.list_sessions()):
            if (session.get("kernel") or {}).get("id") == kernel_id:
                return True
        return False

    async def close(self) -> None:
        for kernel_id in list(self._clients):
            self._forget(kernel_id)
