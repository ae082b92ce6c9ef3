"""Group ``awareness``: the agent as a visible collaborator, and who else is working where.

Sessions are jupyter-collaboration's open rooms (session_id = room id); people are whoever publishes
a ``user`` in a room's awareness (a browser tab each); agents are told apart by the ``agent`` field of
their state. Positions are 1-based lines and columns counted in characters, as in search results.
The session tools (open rooms, joining and leaving them) are ``awareness_sessions.py``'s.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Annotated, Any

from mcp.server.mcpserver import Context
from pydantic import Field

from jupyter_pair_mcp.adapters.rooms import awareness as aw
from jupyter_pair_mcp.adapters.rooms.text import line_column
from jupyter_pair_mcp.errors import InvalidArgument, NotFound, Unavailable
from jupyter_pair_mcp.models.awareness import (
    Activities,
    ActivityEntry,
    DocumentFocus,
    OkResult,
    OnlineUser,
    OnlineUsers,
    Position,
    Selection,
    StatusResult,
    UserCursor,
    UserCursors,
    UserPresence,
)
from jupyter_pair_mcp.services.agent_identity import user_id as agent_user_id
from jupyter_pair_mcp.services.global_presence import GLOBAL_ROOM
from jupyter_pair_mcp.services.presence import STATUSES, PresenceService
from jupyter_pair_mcp.services.presence_focus import focused
from jupyter_pair_mcp.tools.awareness_sessions import open_rooms, presence_service, session_tools
from jupyter_pair_mcp.tools.notebook import check_max
from jupyter_pair_mcp.tools.params import DocumentPath, NotebookPath, OnlyDocument
from jupyter_pair_mcp.tools.registry import READ, Backends, ToolSpec

MAX_MESSAGE = 500
MAX_POINT_MESSAGE = 200
MAX_METADATA = 4096


def _iso(timestamp: float | None) -> str | None:
    return datetime.fromtimestamp(timestamp, UTC).isoformat() if timestamp is not None else None


def offset_of(text: str, position: Position, what: str, where: str, base: int = 1) -> int:
    """The character offset of a line/column counted from ``base`` (1, or 0: see :func:`base_of`), or an error
    naming the valid range in that base.

    Counted and cut by str methods (C loops): a Python loop over the lines of a 3.9 MB text held the event loop
    over 100 ms.
    """
    line, column = position.line - base + 1, position.column - base + 1  # 1-based from here on
    count = text.count("\n") + 1
    said = " (read as 0-based: a line or column 0 was given)" if base == 0 else ""
    if not 1 <= line <= count:
        valid = f"{base}-{count - 1 + base}"
        raise InvalidArgument(f"{what} line {position.line} out of range: {where} has {count} line(s) ({valid}){said}")
    rest = text.split("\n", line - 1)[-1]  # from the line's start to the end of the text
    start = len(text) - len(rest)
    end = rest.find("\n")
    width = end if end >= 0 else len(rest)
    if not 1 <= column <= width + 1:
        raise InvalidArgument(
            f"{what} column {position.column} out of range: line {position.line} of {where} has {width} "
            f"character(s), so columns {base}-{width + base}{said}"
        )
    return start + column - 1


def base_of(positions: list[Position]) -> int:
    """0 when any line or column of a call is 0 (only a 0-based caller sends one, as the seed designs did: their
    example selects to column 0), else 1. A call without a 0 cannot be told apart and is read 1-based."""
    return 0 if any(p.line == 0 or p.column == 0 for p in positions) else 1


def awareness_tools(b: Backends) -> list[ToolSpec]:
    """The group's tools: about people here, about sessions (``awareness_sessions.py``) last."""

    def service() -> PresenceService:
        return presence_service(b)

    async def get_online_users(ctx: Context, document_path: OnlyDocument = None) -> OnlineUsers:
        """Who (people, agents) is in which open document now."""
        presence = service()
        me = agent_user_id(presence.touch(b.actors.of(ctx)).actor)
        path = (await b.contents.require_document(document_path))[0] if document_path is not None else None
        lab = focused(aw.room(b.rooms, GLOBAL_ROOM))
        users: dict[str, OnlineUser] = {}
        for _, kind, room_path, room in open_rooms(b, path):
            presence.focus.watch(room)
            tabs: dict[str, list[aw.Participant]] = {}
            for p in aw.participants(room):  # what get_notebook's collaboration.users lists, room by room
                tabs.setdefault(str(p.user["username"]), []).append(p)
            cells = await _cells(room_path, kind, room, tabs)
            for uid, mine in tabs.items():
                p = mine[0]
                user = users.get(uid)
                if user is None:
                    user = users[uid] = OnlineUser(
                        user_id=uid,
                        name=str(p.user.get("name") or uid),
                        display_name=str(p.user.get("display_name") or p.user.get("name") or uid),
                        color=p.user.get("color") if isinstance(p.user.get("color"), str) else None,
                        documents=[],
                        is_agent=p.agent is not None,
                        is_you=uid == me,
                        focused_document=lab[uid][2] if uid in lab else None,
                    )
                if room_path not in user.documents:
                    user.documents.append(room_path)
                    cell_id, index = cells.get(uid, (None, None))
                    typing = presence.focus.typing(room, [t.client_id for t in mine])
                    user.positions.append(DocumentFocus(path=room_path, cell_id=cell_id, index=index, typing=typing))
        return OnlineUsers(users=list(users.values()))

    async def _cells(
        path: str, kind: str, room: Any, tabs: dict[str, list[aw.Participant]]
    ) -> dict[str, tuple[str, int]]:
        """Per user, the cell (id, index) a tab of theirs is in; the index from the room's cell index."""
        if kind != "notebook":
            return {}
        await b.rooms.notebook(path)  # the room's cell index, built once per room
        found = service().focus.cells(room, tabs, lambda c: b.rooms.cell_positions(path, [c])[c])
        if not found:
            return {}
        positions = b.rooms.cell_positions(path, list(set(found.values())))
        return {uid: (c, i) for uid, c in found.items() if (i := positions.get(c)) is not None}

    async def get_user_presence(
        ctx: Context,
        user_id: Annotated[str, Field(description="From get_online_users.")],
        document_path: Annotated[str | None, Field(description="Status in this document.")] = None,
    ) -> UserPresence:
        """A user's status, last activity, current document."""
        presence = service()
        presence.touch(b.actors.of(ctx))
        path = (await b.contents.require_document(document_path))[0] if document_path is not None else None
        documents: list[str] = []
        latest: tuple[float, str] | None = None
        for _, _, room_path, room in open_rooms(b, None):
            for p in aw.participants(room):
                if p.user.get("username") != user_id:
                    continue
                if room_path not in documents:
                    documents.append(room_path)
                if p.last_updated is not None and (latest is None or p.last_updated > latest[0]):
                    latest = (p.last_updated, room_path)
        agent = presence.agent(user_id)
        if agent is None and not documents:
            raise NotFound(f"user {user_id!r} is not in any open document: get_online_users lists who is")
        # Agents report the status they set; people are online while they are in a document.
        status = agent.status if agent is not None else "online" if documents else "offline"
        if path is not None and path not in documents:
            status = "offline"
        return UserPresence(
            user_id=user_id,
            status=status,
            message=agent.message if agent is not None else None,
            last_activity=_iso(agent.last_activity if agent is not None else latest[0] if latest else None),
            current_document=agent.current_document if agent is not None else latest[1] if latest else None,
            documents=documents,
            is_agent=agent is not None,
        )

    async def set_user_presence(
        ctx: Context,
        status: Annotated[str, Field(description="online, away, busy or offline.")] = "online",
        message: Annotated[str | None, Field(description="Note shown with it.")] = None,
    ) -> StatusResult:
        """Set this agent's status; offline leaves all documents till it acts."""
        if status not in STATUSES:
            raise InvalidArgument(f"status {status!r} is not one of {', '.join(STATUSES)}")
        if message is not None and len(message) > MAX_MESSAGE:
            raise InvalidArgument(f"message has {len(message)} characters; at most {MAX_MESSAGE}")
        service().set_status(b.actors.of(ctx), status, message)
        return StatusResult(status=status, message=message)

    async def get_user_cursors(ctx: Context, document_path: DocumentPath) -> UserCursors:
        """Everyone's cursor in a document: cell, 1-based line/column, selection."""
        service().touch(b.actors.of(ctx))
        path, kind = await b.contents.require_document(document_path)
        rooms = open_rooms(b, path)
        cursors: list[UserCursor] = []
        unplaced = 0
        for _, _, _, room in rooms[:1]:
            for p in aw.participants(room):
                for raw in p.cursors[:1]:  # the primary cursor; JupyterLab sends one per client
                    placed = aw.place(room, kind, raw)
                    if placed is None:
                        unplaced += 1
                        continue
                    line, column = line_column(placed.text, placed.head)
                    selection = None
                    if placed.anchor != placed.head:
                        lo, hi = sorted((placed.anchor, placed.head))
                        start, end = line_column(placed.text, lo), line_column(placed.text, hi)
                        selection = Selection(
                            start=Position(line=start[0], column=start[1]), end=Position(line=end[0], column=end[1])
                        )
                    cursors.append(
                        UserCursor(
                            user_id=str(p.user["username"]),
                            name=str(p.user.get("display_name") or p.user.get("name") or p.user["username"]),
                            is_agent=p.agent is not None,
                            cell_id=placed.cell_id,
                            line=line,
                            column=column,
                            selection=selection,
                        )
                    )
        return UserCursors(document_path=path, cursors=cursors, unplaced=unplaced)

    async def update_cursor_position(
        ctx: Context,
        document_path: DocumentPath,
        position: Annotated[Position, Field(description="Caret.")],
        cell_id: Annotated[str | None, Field(description="Cell (default: your cursor's).")] = None,
        selection: Annotated[Selection | None, Field(description="Selection; position is one end.")] = None,
    ) -> OkResult:
        """Show this agent and its cursor in a document."""
        presence = service()
        actor = b.actors.of(ctx)
        path, kind = await b.contents.require_document(document_path)
        if kind == "notebook":
            view = await b.rooms.notebook(path, actor)
            if not cell_id:  # the seed designs took a notebook cursor without a cell: the agent's cursor's cell
                mine = presence.cursor_cell(actor, path)
                mine = mine if mine is not None and view.find(mine) is not None else None  # not deleted since
                cell_id = mine or (view.ids[0] if view.cell_count == 1 else None)  # (ids: no cell read)
            if not cell_id:
                raise InvalidArgument(
                    f"cell_id is required for notebooks: the position is inside that cell's source, and this agent "
                    f"has no cursor in {path!r} yet (it has {view.cell_count} cells): give cell_id"
                )
            text = view.cell(view.resolve(cell_id=cell_id)).source
            where = f"cell {cell_id!r}"
        else:
            if cell_id is not None:
                raise InvalidArgument(f"{path!r} is a text file: leave cell_id out")
            text = (await b.rooms.text(path, actor)).text
            where = repr(path)
        base = base_of([position, *([selection.start, selection.end] if selection is not None else [])])
        head = anchor = offset_of(text, position, "position", where, base)
        if selection is not None:
            start = offset_of(text, selection.start, "selection start", where, base)
            end = offset_of(text, selection.end, "selection end", where, base)
            if head not in (start, end):
                raise InvalidArgument("position must be the selection's start or end (where the caret is drawn)")
            anchor = end if head == start else start
        if not presence.move(actor, path, kind, cell_id, anchor, head):
            raise Unavailable(f"the live room of {path!r} closed while the cursor was being placed: retry")
        return OkResult(ok=True)

    async def point_at(
        ctx: Context,
        path: NotebookPath,
        cell_id: Annotated[str | None, Field(description="Omit to stop pointing.")] = None,
        message: Annotated[str | None, Field(description="Label, max 200 chars.")] = None,
    ) -> OkResult:
        """Point people at a cell with a label; never moves their view."""
        message = message or ""
        if len(message) > MAX_POINT_MESSAGE:
            raise InvalidArgument(f"message has {len(message)} characters; at most {MAX_POINT_MESSAGE}: keep it short")
        actor = b.actors.of(ctx)
        path = await b.contents.require(path, "notebook")
        view = await b.rooms.notebook(path, actor)
        if cell_id is not None:
            view.resolve(cell_id=cell_id)  # an unknown cell is an error naming the notebook's cells
        if not service().point(actor, path, cell_id, message):
            raise Unavailable(f"the live room of {path!r} closed while pointing: retry")
        return OkResult(ok=True)

    async def get_user_activity(
        ctx: Context,
        document_path: OnlyDocument = None,
        limit: Annotated[int, Field(description="Entry limit (1-1000).")] = 20,
    ) -> Activities:
        """Recent agent activity (edits, runs, broadcasts)."""
        check_max("limit", limit, 1000)
        presence = service()
        presence.touch(b.actors.of(ctx))
        path = b.contents.normalize(document_path) if document_path is not None else None
        return Activities(
            activities=[
                ActivityEntry(
                    timestamp=_iso(a.timestamp) or "",
                    user_id=a.user_id,
                    name=a.name,
                    type=a.type,
                    document_path=a.document_path,
                    description=a.description,
                    metadata=a.metadata,
                )
                for a in presence.activities(path, limit)
            ]
        )

    async def broadcast_user_activity(
        ctx: Context,
        activity_type: Annotated[str, Field(description="Like 'analyzing' (max 64 chars).")],
        description: Annotated[str, Field(description="What, in a sentence.")],
        document_path: Annotated[str | None, Field(description="Document it is about.")] = None,
        metadata: Annotated[dict[str, Any] | None, Field(description="JSON object, max 4 KB.")] = None,
    ) -> OkResult:
        """Tell people what this agent is doing (shown and logged)."""
        if not activity_type.strip() or len(activity_type) > 64:
            raise InvalidArgument("activity_type must be 1-64 characters, like 'analyzing' or 'reviewing'")
        if not description.strip() or len(description) > MAX_MESSAGE:
            raise InvalidArgument(f"description must be 1-{MAX_MESSAGE} characters")
        if metadata is not None and len(json.dumps(metadata, default=str)) > MAX_METADATA:
            raise InvalidArgument(f"metadata is larger than {MAX_METADATA} bytes as JSON: keep it small")
        presence = service()
        actor = b.actors.of(ctx)
        path, kind = await b.contents.require_document(document_path) if document_path is not None else (None, None)
        entry = presence.record(actor, activity_type, path, description, metadata, kind="broadcast")
        presence.broadcast(actor, entry, kind)
        return OkResult(ok=True)

    return [
        ToolSpec(get_online_users, "awareness", "Who is online", READ, read_only=True),
        ToolSpec(get_user_presence, "awareness", "A user's presence", READ, read_only=True),
        ToolSpec(set_user_presence, "awareness", "Set the agent's status", READ, read_only=False),
        ToolSpec(get_user_cursors, "awareness", "Collaborators' cursors", READ, read_only=True),
        ToolSpec(update_cursor_position, "awareness", "Move the agent's cursor", READ, read_only=False),
        ToolSpec(point_at, "awareness", "Point people at a cell", READ, read_only=False),
        ToolSpec(get_user_activity, "awareness", "Recent agent activity", READ, read_only=True),
        ToolSpec(broadcast_user_activity, "awareness", "Announce an activity", READ, read_only=False, idempotent=False),
        *session_tools(b),
    ]
