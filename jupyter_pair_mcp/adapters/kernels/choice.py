"""A notebook's kernel choice: installed kernelspecs, running kernels, and switching a notebook's kernel.

A part of :class:`~jupyter_pair_mcp.adapters.kernels.adapter.KernelsAdapter` (its base class), kept
apart because choosing a kernel is the session API's business — what JupyterLab's kernel picker does —
while the adapter's own module runs code in a kernel.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from typing import Any

from jupyter_core.utils import ensure_async

from jupyter_pair_mcp.adapters.kernels.gateway import through_gateway
from jupyter_pair_mcp.adapters.kernels.values import Kernel, KernelChange, KernelSpec, RunningKernel
from jupyter_pair_mcp.errors import NotFound, PairMCPError, Unavailable

log = logging.getLogger(__name__)

# An error naming the installed kernelspecs names at most this many.
NAMES_IN_MESSAGE = 30
# Switching a notebook's kernel waits this long for a run of ours on the old one to end once interrupted.
RELEASE_TIMEOUT = 10.0


class KernelChoice:
    """Kernelspecs, running kernels and a notebook's kernel switch, on the adapter's Jupyter managers."""

    serverapp: Any
    _switching: asyncio.Lock

    @property
    def _sessions(self) -> Any:
        return self.serverapp.session_manager

    @property
    def _kernels(self) -> Any:
        return self.serverapp.kernel_manager

    def lock(self, kernel_id: str) -> asyncio.Lock:
        """The lock our runs on ``kernel_id`` hold (the adapter's)."""
        raise NotImplementedError

    async def interrupt(self, kernel_id: str) -> None:
        raise NotImplementedError

    def _forget(self, kernel_id: str) -> None:
        raise NotImplementedError

    @property
    def default_kernel_name(self) -> str:
        """The server's default kernel (what ``/api/kernelspecs`` reports as ``default``)."""
        return str(self._kernels.default_kernel_name)

    @through_gateway
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
        specs = await self.kernelspecs()  # first: a gateway's default is known once its kernelspecs were read
        wanted = name or self.default_kernel_name
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

    @through_gateway
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

    @through_gateway
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
            new_id = await ensure_async(
                sessions.start_kernel_for_session(
                    session["id"], path=path, name=session.get("name"), type=session.get("type"), kernel_name=spec.name
                )
            )
        except PairMCPError:
            raise
        except Exception as exc:  # its message may name server paths: the log has it
            log.exception("could not start kernel %s for %s", spec.name, path)
            self._drop_failed_starts()
            raise Unavailable(
                f"kernel {spec.name!r} could not be started ({type(exc).__name__}; the server log has the details): "
                "the notebook keeps its kernel"
            ) from None
        await ensure_async(sessions.update_session(session["id"], kernel_id=new_id))
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
        model = await ensure_async(self._kernels.kernel_model(new_id)) or {}  # a gateway's manager: a coroutine
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
