"""Versions of a document, built from the rooms' stored updates and their provenance.

Every stored update is one transaction. An agent's edit (one tool call) is one version; a restore is
one version; the outputs an execution writes fold into one version per run; people's keystrokes fold
into one version while they keep typing (gaps under ``fold_interval``). A version's id is the row id
of its last update, so ids are stable while later versions are added; the state "at" a version is the
document after that update. Listing reads metadata only — never the updates — so its cost does not
depend on the document's size.
"""

from __future__ import annotations

import asyncio
import bisect
from dataclasses import dataclass, field
from typing import Any

from jupyter_pair_mcp.adapters.rooms import RoomsAdapter, Row
from jupyter_pair_mcp.adapters.rooms.restore import (
    replay,
    restore_notebook,
    restore_text,
    touched_since,
    version_cells,
    version_page,
    version_text,
    without_agents,
)
from jupyter_pair_mcp.adapters.rooms.undo import UndoResult, UndoTracker
from jupyter_pair_mcp.errors import InvalidArgument, NotFound
from jupyter_pair_mcp.models.history import RestoreChange, RestoreResult, UndoEditsResult


@dataclass
class Version:
    version_id: str
    timestamp: float
    source: str  # "agent", "user", "restore" or "disk" (the room reloaded its file, changed by another program)
    author: str
    summary: str
    updates: int = 1
    first_rowid: int = 0
    authors: list[str] = field(default_factory=list)
    kind: str = "edit"  # "edit", "run", "load", "squashed"


@dataclass
class RestoreOutcome:
    version_id: str | None  # the new version (None when the document already matched)
    restored_from: str
    changes: list[dict[str, Any]]
    user_edits_reverted: list[str]  # cells (notebooks) people edited after the version, now reverted
    note: str


class HistoryService:
    def __init__(self, rooms: RoomsAdapter, *, fold_interval: float = 60.0) -> None:
        self.rooms = rooms
        self.fold_interval = fold_interval
        self.undo = UndoTracker(rooms.journal)

    async def versions(self, path: str, kind: str) -> list[Version]:
        """All versions, oldest first."""
        return fold(await self.rooms.history_rows(path, kind), self.fold_interval)

    async def content(self, path: str, kind: str, version_id: str) -> tuple[Version, Any]:
        """A version and its replayed document."""
        rowid = _rowid(version_id)
        rows = await self.rooms.history_rows(path, kind, upto=rowid, updates=True)
        if not rows or rows[-1].rowid != rowid:
            raise NotFound(
                f"no version {version_id!r} in the history of {path!r} (it never existed, or was squashed "
                "into the oldest version when history reached its bound): list versions with get_document_history"
            )
        version = fold([Row(r.rowid, r.timestamp, r.metadata) for r in rows], self.fold_interval)[-1]
        version.version_id = version_id
        doc = await asyncio.to_thread(replay, rows)
        return version, doc

    async def restore(
        self, path: str, kind: str, version_id: str, actor: Any, *, keep_people: bool = False
    ) -> RestoreOutcome:
        """Bring the document back to a version. ``keep_people``: take back only the agents' changes since it
        (their edits, runs and restores), keeping what people typed after it (the panel's "Restore before"), so
        only a cell an agent inserted and a person then typed in is lost, and the outcome names it."""
        rowid = _rowid(version_id)
        rows = await self.rooms.history_rows(path, kind, updates=True)
        cut = next((n for n, row in enumerate(rows) if row.rowid == rowid), None)
        if cut is None:
            raise NotFound(
                f"no version {version_id!r} in the history of {path!r}: list versions with get_document_history"
            )
        if keep_people:
            old = await asyncio.to_thread(without_agents, rows, cut, kind)
        else:
            old = await asyncio.to_thread(replay, rows[: cut + 1])
        touched = await asyncio.to_thread(lambda: touched_since(replay(rows[: cut + 1]), rows[cut + 1 :], kind))
        summary = f"restored version {version_id}" + (" keeping people's edits since" if keep_people else "")
        # Re-acquire the live room only now, and write synchronously: no await between read and edit.
        if kind == "notebook":
            view = await self.rooms.notebook(path, actor)
            changes = restore_notebook(view, old, summary)
            # Keeping people's edits, only a removed cell loses any of their typing.
            changed = {
                str(c["cell_id"]) for c in changes if c.get("cell_id") and (not keep_people or c["change"] == "deleted")
            }
            reverted = sorted(changed & touched.by_user)
        else:
            text_view = await self.rooms.text(path, actor)
            changed_text = restore_text(text_view, old, summary)
            changes = [{"cell_id": None, "change": "text restored"}] if changed_text else []
            reverted = ["text"] if changed_text and touched.by_user and not keep_people else []
        note = (
            f"this reverted edits people made after version {version_id} ({', '.join(reverted)}); "
            "they stay in history: undo this restore, or restore the version before it, to bring them back"
            if reverted
            else "no edit made by people after that version was reverted"
        )
        new_id = None
        if changes:
            latest = await self.rooms.history_rows(path, kind)
            key = getattr(actor, "key", None)
            restores = [r for r in latest if r.metadata.get("source") == "restore" and r.metadata.get("actor") == key]
            new_id = str(restores[-1].rowid) if restores else None
        return RestoreOutcome(new_id, version_id, changes, reverted, note if changes else "already identical")

    async def undo_edits(self, path: str, kind: str, actor: Any, count: int) -> UndoResult:
        if kind == "notebook":
            view = await self.rooms.notebook(path, actor)
            # cell ids from the room's cell index (kept current by the undo's own events), not read from cells
            check = (lambda cells: view.check_cells(cells, "undo an edit of")) if view.guarded else None
            return self.undo.undo(view.ydoc, actor, count, path=path, kind=kind, ids=lambda: view.ids, check=check)
        ydoc = (await self.rooms.text(path, actor)).ydoc
        return self.undo.undo(ydoc, actor, count, path=path, kind=kind)

    async def edit_versions(self, path: str, kind: str, serials: set[str]) -> dict[str, tuple[str, str | None]]:
        """For agent edits named by their journal serial: the version holding each, and the version before it
        (the document just before the edit; None when it is the first)."""
        if not serials:
            return {}
        rows = await self.rooms.history_rows(path, kind)
        return await asyncio.to_thread(_edit_versions, rows, self.fold_interval, serials)


def _edit_versions(rows: list[Row], interval: float, serials: set[str]) -> dict[str, tuple[str, str | None]]:
    versions = fold(rows, interval)
    at = {row.rowid: n for n, row in enumerate(rows)}
    starts = [at.get(v.first_rowid, -1) for v in versions]  # each version's rows begin there, in order
    found: dict[str, tuple[str, str | None]] = {}
    for n, row in enumerate(rows):
        serial = row.metadata.get("edit")
        if not isinstance(serial, str) or serial not in serials:
            continue
        v = bisect.bisect_right(starts, n) - 1
        if v >= 0:
            found[str(serial)] = (versions[v].version_id, versions[v - 1].version_id if v > 0 else None)
    return found


def _rowid(version_id: str) -> int:
    try:
        value = int(str(version_id).strip())
    except ValueError:
        raise InvalidArgument(
            f"version_id {version_id!r} is not a version id: use a version_id from get_document_history"
        ) from None
    if value < 1:
        raise InvalidArgument(f"version_id {version_id!r} is not a version id: use one from get_document_history")
    return value


def fold(rows: list[Row], interval: float) -> list[Version]:
    """Group stored updates into versions (oldest first)."""
    versions: list[Version] = []
    previous_ts: float | None = None
    for n, row in enumerate(rows):
        meta = row.metadata
        source = str(meta.get("source") or "user")
        last = versions[-1] if versions else None
        if meta.get("squashed"):
            versions.append(_version(row, "user", "", str(meta.get("summary", "older history")), "squashed"))
        elif n == 0:
            versions.append(_version(row, "user", "", "content as loaded from the file", "load"))
        elif source == "server":
            continue  # the room's own bookkeeping (saved flag); replayed, never listed
        elif source == "user":
            authors = [str(a) for a in meta.get("authors") or []]
            gap = row.timestamp - previous_ts if previous_ts is not None else None
            if (
                last is not None
                and last.kind == "edit"
                and last.source == "user"
                and gap is not None
                and gap < interval
            ):
                _extend(last, row)
                last.authors.extend(a for a in authors if a not in last.authors)
            else:
                versions.append(_version(row, "user", "", "", "edit", authors))
        elif source == "disk":
            versions.append(
                _version(row, "disk", str(meta.get("author") or "file on disk"), str(meta.get("summary") or ""), "load")
            )
        elif source == "run":
            summary = str(meta.get("summary") or "wrote outputs")
            author = str(meta.get("author") or "")
            if last is not None and last.kind == "run" and last.summary == summary and last.author == author:
                _extend(last, row)
            else:
                versions.append(_version(row, "agent", author, summary, "run"))
        else:
            kind = "edit"
            versions.append(_version(row, source, str(meta.get("author") or ""), str(meta.get("summary") or ""), kind))
        previous_ts = row.timestamp
    for version in versions:
        if version.source == "user" and version.kind == "edit":
            who = ", ".join(version.authors) or "a collaborator"
            version.author = ", ".join(version.authors)
            version.summary = f"{version.updates} change{'s' if version.updates != 1 else ''} by {who}"
    return versions


def _version(row: Row, source: str, author: str, summary: str, kind: str, authors: list[str] | None = None) -> Version:
    return Version(
        version_id=str(row.rowid),
        timestamp=row.timestamp,
        source=source,
        author=author,
        summary=summary,
        first_rowid=row.rowid,
        authors=list(authors or []),
        kind=kind,
    )


def _extend(version: Version, row: Row) -> None:
    version.version_id = str(row.rowid)
    version.timestamp = row.timestamp
    version.updates += 1


__all__ = ["HistoryService", "RestoreOutcome", "Version", "fold", "version_cells", "version_page", "version_text"]


def undo_report(path: str, result: UndoResult) -> UndoEditsResult:
    """What an undo did, as the tool and the activity panel both report it."""
    note = (
        f"undid {len(result.undone)} edit(s)"
        if not result.removed_cells
        else "undoing inserted cells removed them, with anything people typed into them since "
        "(restore the version before this undo to get that back)"
    )
    return UndoEditsResult(
        path=path, undone=result.undone, remaining=result.remaining, removed_cells=result.removed_cells, note=note
    )


def restore_report(path: str, outcome: Any) -> RestoreResult:
    """What a restore did, as the tool and the activity panel both report it."""
    return RestoreResult(
        path=path,
        restored_from=outcome.restored_from,
        version_id=outcome.version_id,
        changes=[RestoreChange(cell_id=c.get("cell_id"), change=str(c["change"])) for c in outcome.changes],
        user_edits_reverted=outcome.user_edits_reverted,
        note=outcome.note,
    )
