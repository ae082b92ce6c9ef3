"""Forks an agent drafts in: bounded in number and idle age, owned by the Jupyter user who made them.

The registry lives on the extension app (no module state). Forks idle longer than ``ttl`` seconds are
discarded by a sweep that runs while any fork exists; past ``max_per_user`` forks of one user, or
``max_forks`` in all, a new fork is refused (an agent's unmerged draft is never dropped to make room),
so one user cannot take every slot.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from jupyter_pair_mcp.adapters.rooms import NotebookView, RoomsAdapter, TextView
from jupyter_pair_mcp.adapters.rooms.forks import ForkDocument
from jupyter_pair_mcp.errors import InvalidArgument, NotFound, PermissionDenied, Unavailable

log = logging.getLogger(__name__)


@dataclass
class Fork:
    fork_id: str
    path: str
    kind: str
    owner: str
    title: str
    description: str
    synchronize: bool
    document: ForkDocument
    last_used: float  # on the service's clock
    created: float = field(default_factory=time.time)

    @property
    def room_id(self) -> str:
        return self.fork_id


class ForkService:
    def __init__(
        self,
        rooms: RoomsAdapter,
        *,
        max_forks: int = 20,
        max_per_user: int = 10,
        ttl: float = 3600.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.rooms = rooms
        self.max_forks = max_forks
        self.max_per_user = max_per_user
        self.ttl = ttl
        self.clock = clock  # idle ages are measured on it (tests control time through it)
        self._forks: dict[str, Fork] = {}
        self._sweeper: asyncio.Task[None] | None = None

    @property
    def count(self) -> int:
        return len(self._forks)

    def listed(self, actor: Any, path: str | None = None) -> list[Fork]:
        return [f for f in self._forks.values() if f.owner == actor.username and (path is None or f.path == path)]

    async def create(
        self, path: str, kind: str, actor: Any, *, title: str, description: str, synchronize: bool
    ) -> Fork:
        await self.sweep()
        mine = sum(1 for f in self._forks.values() if f.owner == actor.username)
        if self.max_per_user and mine >= self.max_per_user:
            raise Unavailable(
                f"you already hold {mine} forks (the limit per user): merge or discard some of yours with "
                "merge_document_fork or discard_document_fork (list_document_forks lists them)"
            )
        if self.max_forks and len(self._forks) >= self.max_forks:
            yours = f"{mine} of them yours: merge or discard those" if mine else "none of them yours: try again later"
            raise Unavailable(
                f"this server already holds {len(self._forks)} forks (its limit), {yours}; unused forks expire "
                f"after {self.ttl:g} s"
            )
        live, _ = await self.rooms._document(path, kind)
        document = ForkDocument(live, kind, path, synchronize=synchronize)
        fork_id = uuid.uuid4().hex
        fork = Fork(fork_id, path, kind, actor.username, title, description, synchronize, document, self.clock())
        server = self._websocket_server()
        if server is not None:
            try:
                await document.serve(server, fork_id)
            except Exception:  # the draft works without a viewable room
                log.warning("could not serve fork %s as a collaboration room", fork_id, exc_info=True)
        self._forks[fork_id] = fork
        self._start_sweeper()
        return fork

    def get(self, fork_id: str, path: str, actor: Any) -> Fork:
        fork = self._forks.get(str(fork_id))
        if fork is None:
            raise NotFound(
                f"no fork {fork_id!r}: it was merged, discarded, or expired after {self.ttl:g} s unused; "
                "create one with fork_document"
            )
        if fork.owner != actor.username:
            raise PermissionDenied(f"fork {fork_id!r} belongs to another user")
        if fork.path != path:
            raise InvalidArgument(f"fork {fork_id!r} is a fork of {fork.path!r}, not {path!r}")
        fork.last_used = self.clock()
        return fork

    async def _follow(self, fork: Fork) -> None:
        if fork.synchronize:
            live, _ = await self.rooms._document(fork.path, fork.kind)
            fork.document.follow(live.ydoc)

    async def notebook(self, fork_id: str, path: str, actor: Any) -> NotebookView:
        fork = self.get(fork_id, path, actor)
        if fork.kind != "notebook":
            raise InvalidArgument(f"fork {fork_id!r} is a text document's fork: use the document tools")
        await self._follow(fork)
        return fork.document.notebook_view(actor)

    async def text(self, fork_id: str, path: str, actor: Any) -> TextView:
        fork = self.get(fork_id, path, actor)
        if fork.kind != "file":
            raise InvalidArgument(f"fork {fork_id!r} is a notebook's fork: use the notebook tools")
        await self._follow(fork)
        return fork.document.text_view(actor)

    async def merge(self, fork_id: str, path: str, actor: Any, *, discard: bool) -> tuple[Fork, list[str]]:
        fork = self.get(fork_id, path, actor)
        if fork.kind == "notebook":  # refused when a person locked the notebook, or a cell the fork changed, since
            view = await self.rooms.notebook(path, actor)
            view.check_cells(fork.document.touched, "merge a fork's changes into")
            live: Any = view._nb
        else:
            live, _ = await self.rooms._document(path, fork.kind)
        summaries = list(fork.document.summaries)
        label = f"merged fork {fork.title!r}" if fork.title else f"merged fork {fork_id[:8]}"
        detail = "; ".join(summaries[-5:]) if summaries else "no edits"
        fork.document.merge_into(live, self.rooms.journal, actor, f"{label}: {detail}"[:500], catch_up=not discard)
        fork.document.summaries.clear()
        fork.document.touched.clear()
        if discard:
            await self.discard(fork_id, path, actor)
        return fork, summaries

    async def discard(self, fork_id: str, path: str, actor: Any) -> Fork:
        fork = self.get(fork_id, path, actor)
        self._forks.pop(fork.fork_id, None)
        await fork.document.close(self._websocket_server())
        return fork

    async def sweep(self, *, now: float | None = None) -> list[str]:
        """Discard forks unused for longer than ``ttl``."""
        now = self.clock() if now is None else now
        expired = [f for f in self._forks.values() if self.ttl and now - f.last_used > self.ttl]
        for fork in expired:
            self._forks.pop(fork.fork_id, None)
            await fork.document.close(self._websocket_server())
            log.info("Discarded fork %s of %s after %.0f s unused", fork.fork_id, fork.path, now - fork.last_used)
        return [f.fork_id for f in expired]

    def _websocket_server(self) -> Any:
        ydoc = self.rooms._ydoc_extension()
        return getattr(ydoc, "ywebsocket_server", None) if ydoc is not None else None

    def _start_sweeper(self) -> None:
        if self.ttl and (self._sweeper is None or self._sweeper.done()):
            self._sweeper = asyncio.get_running_loop().create_task(self._sweep_forever())

    async def _sweep_forever(self) -> None:
        interval = max(0.2, min(self.ttl / 4, 60.0))
        while self._forks:
            await asyncio.sleep(interval)
            try:
                await self.sweep()
            except Exception:
                log.exception("sweeping expired forks failed")

    async def close(self) -> None:
        if self._sweeper is not None:
            self._sweeper.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self._sweeper
        for fork in list(self._forks.values()):
            await fork.document.close(self._websocket_server())
        self._forks.clear()
