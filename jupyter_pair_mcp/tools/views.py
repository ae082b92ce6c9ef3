"""The document a tool call works on — the live room, or one of the caller's forks when ``fork_id`` is
given — and the revisions of what the call reads from it or bases its edit on."""

from __future__ import annotations

from typing import Any

from jupyter_pair_mcp.adapters.rooms import NotebookView, TextView
from jupyter_pair_mcp.errors import Conflict
from jupyter_pair_mcp.render import cut
from jupyter_pair_mcp.revisions import Base, Reader
from jupyter_pair_mcp.tools.registry import Backends

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
    from jupyter_pair_mcp.errors import Unavailable

    if b.forks is None:
        raise Unavailable("forks are not available on this server (the history tool group is off)")
    return b.forks


class Reads:
    """Revisions for one tool call: records what it serves and finds the base its edits name.

    Keys are (path, fork id, cell id) — the cell id is "" for a text document — remembered per principal
    (and client name, and stateful session first), so that the last revision served at a key is the base
    of an edit that names none, in every protocol era (revisions.py).
    """

    def __init__(self, b: Backends, ctx: Any, path: str, fork_id: str | None = None) -> None:
        actor = b.actors.of(ctx)
        self._revisions = b.revisions
        self._reader = Reader(actor.principal, actor.client, actor.key if actor.session_id else None)
        self._path = path
        self._fork = fork_id or ""

    def served(self, text: str, cell_id: str = "", *, cut: bool = False) -> str:
        """Record that this call returned ``text`` (cut: only its start) and return its revision."""
        return self._revisions.served(text, cut=cut, reader=self._reader, key=(self._path, self._fork, cell_id))

    def base(self, revision: str | None, live: str, cell_id: str = "") -> Base | None:
        """The base of an edit: the text behind ``revision``, else the last one served to this reader here.

        None (the edit applies to the live text as asked) only when no revision is given and this principal
        was never served the text. When the server cannot tell the base — the revision names a text it no
        longer holds and the text has changed since, or its memory of what it served here was dropped — the
        edit is refused with the live text and its revision: applying it to the live text could delete what
        a person typed since the agent's read.
        """
        key = (self._path, self._fork, cell_id)
        where = f"cell {cell_id!r}" if cell_id else self._path
        kept = "the server keeps recent reads, bounded, and forgets them on restart"
        if revision is not None:
            base = self._revisions.base(revision, live)
            if base is None:
                raise self._refused(
                    live,
                    f"base_revision {revision!r} of {where} is not known here ({kept}) and the text has changed since",
                )
            return base
        remembered = self._revisions.last_served(self._reader, key)
        if remembered is None:
            if not self._revisions.forgot(self._reader):
                return None
            raise self._refused(
                live,
                f"the server no longer remembers which text of {where} you read ({kept}), so "
                "your edit could delete what others typed since; give base_revision",
            )
        base = self._revisions.base(remembered, live)
        if base is None:
            raise self._refused(
                live,
                f"the text of {where} you last read (revision {remembered}) is not known here "
                f"any more ({kept}) and the text has changed since, so your edit could delete what "
                "others typed",
            )
        return base

    def _refused(self, live: str, why: str) -> Conflict:
        """The refusal of an edit whose base is unknown: the live text, and its revision to base the redo on
        (kept, so that it works even if a person types on)."""
        now = self._revisions.served(live)
        return Conflict(
            f"{why}: nothing was applied. It now reads (revision {now}):\n{cut(live, 2000)}\n"
            f"Redo your change on this text and send it with base_revision {now!r}."
        )
