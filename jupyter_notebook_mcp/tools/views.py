"""The document a tool call works on: the live room, or one of the caller's forks when ``fork_id`` is given."""

from __future__ import annotations

from typing import Any

from ..rooms import NotebookView, TextView
from .registry import Backends

#: Shared wording for every edit tool's fork_id parameter.
FORK_HELP = "fork_id: edit this fork (from fork_document) instead of the live document; merge it later."


async def notebook_view(b: Backends, ctx: Any, path: str, fork_id: str | None = None) -> NotebookView:
    actor = b.actors.of(ctx)
    if fork_id:
        return await forks(b).notebook(fork_id, path, actor)  # type: ignore[no-any-return]
    return await b.rooms.notebook(path, actor)


async def text_view(b: Backends, ctx: Any, path: str, fork_id: str | None = None) -> TextView:
    actor = b.actors.of(ctx)
    if fork_id:
        return await forks(b).text(fork_id, path, actor)  # type: ignore[no-any-return]
    return await b.rooms.text(path, actor)


def forks(b: Backends) -> Any:
    from ..errors import Unavailable

    if b.forks is None:
        raise Unavailable("forks are not available on this server (the history tool group is off)")
    return b.forks
