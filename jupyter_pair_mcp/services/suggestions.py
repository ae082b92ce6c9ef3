"""Review mode: agents' edits as suggestions people accept or reject, cell by cell (docs/review.md).

A suggestion is an agent's edit recorded instead of made: the edit tool runs against a proposal's view of the
live document (``adapters/rooms/proposing.py``), which records per cell what the edit changes and the text it
changes, so the live document is untouched until a person accepts, and a suggestion holds what it changes, never
a copy of the document. Accepting merges exactly that change three-way onto whatever the live text is by then
(``adapters/rooms/review.py``). Accepting one suggestion carries every other pending suggestion on the same cells
onto the new live text, or marks it ``conflict`` with the reason.

Bounds (``suggestion_bounds.py``): pending suggestions per document (with each principal's share of it), per
principal, and the bytes they hold per principal and in all (a new proposal is refused past them, nothing
pending is dropped to make room); an age after which a pending suggestion expires (its agent is told); a bounded
number of finished ones kept for ``get_suggestion``, holding only what a listing shows. State lives on the
extension app, in memory. What an agent is told of its suggestions that became conflicts is ``suggestion_news.py``'s.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
import uuid
from collections.abc import Callable
from typing import Any

from jupyter_pair_mcp.adapters.rooms import RoomsAdapter
from jupyter_pair_mcp.adapters.rooms.merge import MergeConflict
from jupyter_pair_mcp.adapters.rooms.proposing import ProposedNotebook, ProposedText, held_bytes
from jupyter_pair_mcp.adapters.rooms.review import CellProposal, apply_cells, apply_text, live_sources, rebased
from jupyter_pair_mcp.errors import Conflict, InvalidArgument, NotFound, PermissionDenied
from jupyter_pair_mcp.services.activity import Activity, ActivityLog
from jupyter_pair_mcp.services.suggestion import OPEN, Draft, Notify, Suggestion
from jupyter_pair_mcp.services.suggestion_bounds import SuggestionBounds
from jupyter_pair_mcp.services.suggestion_news import ConflictNews

log = logging.getLogger(__name__)


class SuggestionService:
    def __init__(
        self,
        rooms: RoomsAdapter,
        log: ActivityLog | None = None,
        history: Any = None,  # services.history.HistoryService: the version an accept made
        contents: Any = None,  # adapters.contents.ContentsAdapter: the REST API's paths
        *,
        review_mode: bool = False,
        bounds: SuggestionBounds | None = None,
        ttl: float = 3600.0,
        max_kept: int = 200,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.rooms, self.log, self.history, self.contents = rooms, log, history, contents
        self.review_mode = review_mode
        self.bounds, self.ttl = bounds or SuggestionBounds(), ttl
        self.max_kept = max_kept
        self.clock = clock  # expiry is measured on it (tests control time through it)
        #: Jupyter usernames who asked (PUT api/mcp/review) that agents acting as them propose.
        self.reviewers: set[str] = set()
        #: A single-user server (Jupyter's own identity provider: every holder of its token or password is
        #: its one owner, and it names each cookie-less token request a new anonymous user): one person's
        #: switch is the owner's, so it applies to every agent.
        self.single_user = False
        self._all: dict[str, Suggestion] = {}  # insertion order: oldest first
        self._drafts: dict[str, Draft] = {}  # proposals whose edit is under way: they count against the bounds
        self._sweeper: asyncio.Task[None] | None = None
        #: Agents' suggestions that became conflicts since their last call, told on it (suggestion_news.py).
        self._news = ConflictNews()

    # -- who proposes ---------------------------------------------------------------------------------
    def proposing(self, actor: Any, asked: bool) -> bool:
        """Whether an agent's edit is a proposal: asked for, its grant's "propose only", the server's
        review_mode, or its person's switch."""
        if asked or self.review_mode or bool(getattr(actor, "proposes", False)):
            return True
        return self.reviewing(str(getattr(actor, "username", "")))

    def reviewing(self, username: str) -> bool:
        """Whether the person's own switch is on for agents acting as ``username``."""
        return bool(self.reviewers) if self.single_user else username in self.reviewers

    def set_review(self, username: str, enabled: bool) -> None:
        if self.single_user:
            self.reviewers.clear()
        if enabled:
            self.reviewers.add(username)
        else:
            self.reviewers.discard(username)

    # -- proposing ------------------------------------------------------------------------------------
    async def draft(self, path: str, kind: str, actor: Any) -> Draft:
        """One proposal under way, after checking the count bounds (nothing pending is dropped to make room)."""
        await self.sweep()
        self.bounds.check_count(self._pending(), path, actor.principal)
        draft = Draft(uuid.uuid4().hex, path, kind, actor)
        self._drafts[draft.id] = draft  # held until submitted or dropped: concurrent proposals count it
        return draft

    def _pending(self) -> list[Any]:
        return [s for s in self._all.values() if s.state in OPEN] + list(self._drafts.values())

    async def view(self, draft: Draft) -> Any:
        """The proposal's view of the live document, for the edit tool (use it synchronously, as a live view):
        it reads the room and records the edit (``adapters/rooms/proposing.py``)."""
        if draft.kind == "notebook":
            draft.view = ProposedNotebook(await self.rooms.notebook(draft.path, draft.actor))
        else:
            draft.view = ProposedText(await self.rooms.text(draft.path, draft.actor))
        return draft.view

    async def drop(self, draft: Draft) -> None:
        """Discard a draft whose edit failed (nothing was proposed)."""
        self._drafts.pop(draft.id, None)
        draft.view = None

    async def submit(self, draft: Draft, summary: str | None = None, notify: Notify | None = None) -> Suggestion:
        """Register what the draft's edit recorded as a pending suggestion, within the byte bounds."""
        view = draft.view
        summary = summary or (view.summary if view is not None else "") or "an edit"
        now = self.clock()
        suggestion = Suggestion(
            draft.id, draft.path, draft.kind, draft.actor, summary[:500], time.time(), now + self.ttl, self.ttl,
            notify=notify,
        )  # fmt: skip
        if isinstance(view, ProposedNotebook):
            suggestion.cells = view.changes
        elif isinstance(view, ProposedText) and view.text_change is not None:
            suggestion.text = view.text_change
        changed = bool(suggestion.cells) or (suggestion.text is not None and suggestion.text[0] != suggestion.text[1])
        await self.drop(draft)
        if not changed:
            raise InvalidArgument("the edit changes nothing: nothing was proposed")
        suggestion.size = held_bytes(suggestion.cells, suggestion.text)
        self.bounds.check_bytes(self._pending(), draft.actor.principal, suggestion.size)
        self._all[suggestion.id] = suggestion
        self._record(suggestion, "propose", f"proposed {summary}", None)
        self._trim()
        self._start_sweeper()
        return suggestion

    # -- reading --------------------------------------------------------------------------------------
    def listed(self, path: str) -> list[Suggestion]:
        return [s for s in self._all.values() if s.path == path]

    async def document(self, path: str) -> dict[str, Any]:
        """A document's suggestions, oldest first, for the REST API (``GET api/mcp/suggestions?path=``)."""
        if not path:
            raise InvalidArgument("'path' is required: the document's path")
        if self.contents is not None:
            path, _ = await self.contents.require_document(path)
        await self.sweep()
        return {"path": path, "suggestions": [await self.shown(s) for s in self.listed(path)]}

    def get(self, suggestion_id: str) -> Suggestion:
        found = self._all.get(str(suggestion_id))
        if found is None:
            raise NotFound(
                f"no suggestion {suggestion_id!r}: it never existed, or it was finished long ago and forgotten"
            )
        return found

    def get_own(self, suggestion_id: str, actor: Any) -> Suggestion:
        found = self.get(suggestion_id)
        if found.owner != actor.principal:
            raise PermissionDenied(f"suggestion {suggestion_id!r} was made with another credential")
        return found

    # -- deciding -------------------------------------------------------------------------------------
    def _chosen(self, suggestion: Suggestion, cells: list[str] | None) -> list[CellProposal]:
        if suggestion.state not in ("pending", "conflict"):
            raise Conflict(f"suggestion {suggestion.id} is {suggestion.state} already")
        if cells is None:
            return [c for c in suggestion.cells if c.state in ("pending", "conflict")]
        known = {c.cell_id: c for c in suggestion.cells}
        unknown = [c for c in cells if c not in known]
        if unknown:
            raise InvalidArgument(f"suggestion {suggestion.id} changes no cell {unknown[0]!r}")
        return [known[c] for c in cells if known[c].state in ("pending", "conflict")]

    async def accept(self, suggestion_id: str, cells: list[str] | None, person: Any) -> Suggestion:
        """Merge the chosen pending cells (all when None) into the live document: one agent transaction."""
        await self.sweep()
        suggestion = self.get(suggestion_id)
        if suggestion.busy:  # two people deciding at once: the first one's decision stands
            raise Conflict(f"suggestion {suggestion.id} is being decided right now: list it again")
        suggestion.busy = True
        try:
            return await self._accept(suggestion, cells, person)
        finally:
            suggestion.busy = False

    async def _accept(self, suggestion: Suggestion, cells: list[str] | None, person: Any) -> Suggestion:
        chosen = self._chosen(suggestion, cells)
        label = f"accepted suggestion {suggestion.id[:8]} ({suggestion.summary}) by {person.name}"[:500]
        if suggestion.kind == "notebook":
            pending = [c for c in chosen if c.state == "pending"]
            if not pending:
                raise Conflict(self._conflict_text(suggestion, chosen))
            view = await self.rooms.notebook(suggestion.path, suggestion.actor)
            outcome, suggestion.edit = apply_cells(view, pending, label)
            for cell in pending:
                why = outcome.get(cell.cell_id)
                cell.state, cell.reason = ("accepted", None) if why is None else ("conflict", why)
            if all(outcome.get(c.cell_id) is not None for c in pending):
                self._changed(suggestion)  # its agent learns it conflicts now
                raise Conflict(self._conflict_text(suggestion, pending))
            applied = [c for c in pending if c.state == "accepted"]
            await self._carry_others(suggestion, [c.cell_id for c in applied])
        else:
            if suggestion.text_state != "pending" or suggestion.text is None:
                raise Conflict(f"suggestion {suggestion.id} is {suggestion.text_state}: {suggestion.reason or ''}")
            text_view = await self.rooms.text(suggestion.path, suggestion.actor)
            why, suggestion.edit = apply_text(text_view, suggestion.text[0], suggestion.text[1], label)
            if why is not None:
                suggestion.text_state, suggestion.reason = "conflict", why
                self._changed(suggestion)
                raise Conflict(f"suggestion {suggestion.id} conflicts: {why}; reject it or let the agent redo it")
            suggestion.text_state = "accepted"
            await self._carry_others(suggestion, [])
        await self._finish(suggestion, "accept", person, label)
        return suggestion

    async def reject(self, suggestion_id: str, cells: list[str] | None, person: Any) -> Suggestion:
        """Discard the chosen cells of a suggestion (all when None); the live document is not touched."""
        await self.sweep()
        suggestion = self.get(suggestion_id)
        if suggestion.busy:
            raise Conflict(f"suggestion {suggestion.id} is being accepted right now: list it again")
        if suggestion.kind == "notebook":
            for cell in self._chosen(suggestion, cells):
                cell.state, cell.reason = "rejected", None
        else:
            if suggestion.state not in ("pending", "conflict"):
                raise Conflict(f"suggestion {suggestion.id} is {suggestion.state} already")
            suggestion.text_state = "rejected"
        label = f"rejected suggestion {suggestion.id[:8]} ({suggestion.summary}) by {person.name}"
        await self._finish(suggestion, "reject", person, label)
        return suggestion

    def _conflict_text(self, suggestion: Suggestion, cells: list[CellProposal]) -> str:
        reasons = "; ".join(f"cell {c.cell_id}: {c.reason}" for c in cells if c.reason)[:1000]
        return f"suggestion {suggestion.id} conflicts, nothing was applied: {reasons or 'no pending cell'}"

    async def _carry_others(self, accepted: Suggestion, cell_ids: list[str]) -> None:
        """Carry the other pending suggestions on the cells just changed onto their new live text."""
        others = [s for s in self._all.values() if s is not accepted and s.path == accepted.path]
        others = [s for s in others if s.state == "pending"]
        if not others:
            return
        if accepted.kind == "file":
            live = (await self.rooms.text(accepted.path, None)).text
            for other in others:
                if other.text is not None and other.text_state == "pending":
                    try:
                        other.text = (live, rebased(other.text[0], other.text[1], live))
                    except MergeConflict:
                        other.text_state = "conflict"
                        other.reason = f"accepting suggestion {accepted.id[:8]} changed the same text"
                    self._changed(other)
            return
        touched = set(cell_ids)
        needed = {c.cell_id for o in others for c in o.cells if c.cell_id in touched and c.change != "insert"}
        sources = live_sources(await self.rooms.notebook(accepted.path, None), needed)
        for other in others:
            changed = False
            for cell in other.cells:
                if cell.state != "pending" or cell.cell_id not in touched or cell.change == "insert":
                    continue
                changed = True
                now = sources.get(cell.cell_id)
                why = f"accepting suggestion {accepted.id[:8]} "
                if now is None:
                    cell.state, cell.reason = "conflict", why + "deleted the cell"
                elif cell.change == "delete":
                    cell.before = now  # deleting it still deletes what is there now: the person sees the diff
                else:
                    try:
                        cell.after = rebased(cell.before or "", cell.after or "", now)
                        cell.before = now
                    except MergeConflict:
                        cell.state, cell.reason = "conflict", why + "changed the same text of the cell"
            if changed:
                self._changed(other)

    async def shown(self, suggestion: Suggestion) -> dict[str, Any]:
        """The suggestion as JSON, with the history version its accept made once history has stored it."""
        if suggestion.edit and suggestion.version is None and self.history is not None:
            with contextlib.suppress(Exception):  # history off or unreadable: the version stays unknown
                found = await self.history.edit_versions(suggestion.path, suggestion.kind, {suggestion.edit})
                suggestion.version = found.get(suggestion.edit, (None, None))[0]
        return suggestion.as_json()

    async def _finish(self, suggestion: Suggestion, kind: str, person: Any, label: str) -> None:
        suggestion.settle()
        self._record(suggestion, kind, label, person)
        self._changed(suggestion)
        if suggestion.state not in OPEN:
            suggestion.release()

    def _changed(self, suggestion: Suggestion) -> None:
        """Tell the suggestion's agent its new state: a notification on its session now (when it has a stream),
        and a conflict also as a notice on its next call (:meth:`news`), in either era."""
        suggestion.settle()
        if suggestion.state == "conflict":
            self._news.tell(suggestion)
        if suggestion.notify is not None:
            try:
                suggestion.notify(suggestion)
            except Exception:  # a closed session: the agent reads the state with get_suggestion
                log.debug("could not notify suggestion %s", suggestion.id, exc_info=True)

    def news(self, key: str) -> str | None:
        """What the agent ``key`` must be told on its call: its suggestions that conflict now and why (once)."""
        return self._news.news(key, self._all.get)

    def _record(self, suggestion: Suggestion, kind: str, description: str, person: Any) -> None:
        if self.log is None:
            return
        actor = suggestion.actor
        cells = tuple(c.cell_id for c in suggestion.cells)
        self.log.add(
            Activity(
                timestamp=time.time(),
                user_id=person.username if person is not None else actor.username,
                name=person.name if person is not None else actor.name,
                type=kind,
                document_path=suggestion.path,
                description=description,
                actor=actor,
                cells=cells,
                by=person.name if person is not None else None,
                kind=kind,
                metadata={"suggestion": suggestion.id},
            )
        )

    def _trim(self) -> None:
        """Forget the oldest finished suggestions past ``max_kept``."""
        finished = [s for s in self._all.values() if s.state not in OPEN]
        for old in finished[: max(0, len(self._all) - self.max_kept)]:
            self._all.pop(old.id, None)

    # -- expiry ---------------------------------------------------------------------------------------
    async def sweep(self, *, now: float | None = None) -> list[str]:
        """Expire pending suggestions older than ``ttl``; their agents are told."""
        now = self.clock() if now is None else now
        expired = [s for s in self._all.values() if s.state in OPEN and self.ttl and now > s.deadline]
        for suggestion in expired:
            for cell in suggestion.cells:
                if cell.state in OPEN:
                    cell.state = "expired"
            if suggestion.text_state in OPEN:
                suggestion.text_state = "expired"
            suggestion.settle()
            self._record(suggestion, "expire", f"suggestion {suggestion.id[:8]} expired unreviewed", None)
            self._changed(suggestion)
            suggestion.release()
            log.info("Suggestion %s on %s expired after %.0f s", suggestion.id, suggestion.path, self.ttl)
        return [s.id for s in expired]

    def _start_sweeper(self) -> None:
        if self.ttl and (self._sweeper is None or self._sweeper.done()):
            self._sweeper = asyncio.get_running_loop().create_task(self._sweep_forever())

    async def _sweep_forever(self) -> None:
        interval = max(0.2, min(self.ttl / 4, 60.0))
        while any(s.state in OPEN for s in self._all.values()):
            await asyncio.sleep(interval)
            try:
                await self.sweep()
            except Exception:
                log.exception("sweeping expired suggestions failed")

    async def close(self) -> None:
        if self._sweeper is not None:
            self._sweeper.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self._sweeper
        self._all.clear()
        self._drafts.clear()
        self._news.clear()
