"""The document a tool call works on — the live room, or one of the caller's forks when ``fork_id`` is
given — and the revisions of what the call reads from it or bases its edit on."""

from __future__ import annotations

from typing import Any

from ..errors import Conflict
from ..revisions import Base
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


class Reads:
    """Revisions for one tool call: records what it serves and finds the base its edits name.

    Keys are (path, fork id, cell id) — the cell id is "" for a text document — so that in a stateful
    session the last revision served at a key is the base of an edit that names none.
    """

    def __init__(self, b: Backends, ctx: Any, path: str, fork_id: str | None = None) -> None:
        actor = b.actors.of(ctx)
        self._revisions = b.revisions
        self._session = actor.key if actor.session_id else None
        self._path = path
        self._fork = fork_id or ""

    def served(self, text: str, cell_id: str = "", *, cut: bool = False) -> str:
        """Record that this call returned ``text`` (cut: only its start) and return its revision."""
        return self._revisions.served(text, cut=cut, session=self._session, key=(self._path, self._fork, cell_id))

    def base(self, revision: str | None, live: str, cell_id: str = "") -> Base | None:
        """The base of an edit: the text behind ``revision``, else the last one served to this session here.

        An explicit revision the server no longer holds (and that is not the live text's) is an error;
        a remembered one that is gone only means the edit applies to the live text, as without revisions.
        """
        key = (self._path, self._fork, cell_id)
        explicit = revision is not None
        revision = revision if revision is not None else self._revisions.last_served(self._session, key)
        if revision is None:
            return None
        base = self._revisions.base(revision, live)
        if base is None and explicit:
            where = f"cell {cell_id!r}" if cell_id else self._path
            raise Conflict(
                f"base_revision {revision!r} of {where} is not known here (the server keeps recent reads, bounded, "
                "and forgets them on restart) and the text has changed since: re-read it and redo your edit; "
                "nothing was applied"
            )
        return base
