"""Group ``awareness``, its session tools: the open document rooms (sessions), joining and leaving them.

A session is jupyter-collaboration's open room of one document (session_id = room id). These tools name
rooms and who is connected to them, and put the agent in or take it out of one; the tools about people
(their presence, cursors, activity) are ``awareness.py``'s, which also lists this module's tools with its
own, in one group. The helpers both use (the presence service, the open rooms) live here, the lower of
the two modules.
"""

from __future__ import annotations

from typing import Annotated, Any

from mcp.server.mcpserver import Context
from pydantic import Field

from jupyter_pair_mcp.adapters.rooms import awareness as aw
from jupyter_pair_mcp.errors import InvalidArgument, NotFound, Unavailable
from jupyter_pair_mcp.models.awareness import CollabSession, CollabSessions, JoinResult, OkResult, Participant
from jupyter_pair_mcp.services.presence import PresenceService
from jupyter_pair_mcp.tools.params import OnlyDocument
from jupyter_pair_mcp.tools.registry import READ, Backends, ToolSpec

SessionId = Annotated[str | None, Field(description="From get_active_sessions.")]
SessionPath = Annotated[str | None, Field(description="Or the document.")]


def _participants(room: Any) -> list[Participant]:
    found = []
    for p in aw.people(room):
        uid = str(p.user["username"])
        name = str(p.user.get("display_name") or p.user.get("name") or uid)
        found.append(Participant(user_id=uid, name=name, is_agent=p.agent is not None))
    return found


def _is_under(path: str, directory: str) -> bool:
    """Whether ``path`` is inside ``directory`` (both normalized API paths; "" is the root)."""
    return not directory or path.startswith(directory + "/")


def presence_service(b: Backends) -> PresenceService:
    """The presence service, or an actionable error when this server runs without one."""
    if not isinstance(b.presence, PresenceService):
        raise Unavailable("presence is not running on this server (the awareness group has no backend)")
    return b.presence


def open_rooms(b: Backends, path: str | None) -> list[tuple[str, str, str, Any]]:
    """``(room_id, kind, path, room)`` of open document rooms, only ``path``'s when given."""
    found = []
    for room_id, kind, room in aw.document_rooms(b.rooms):
        room_path = aw.room_path(b.rooms, room_id)
        if room_path is not None and (path is None or room_path == path):
            found.append((room_id, kind, room_path, room))
    return found


def session_tools(b: Backends) -> list[ToolSpec]:
    async def require_directory(directory: str) -> str:
        """The normalized path of an existing directory ("" for the root), else an actionable error."""
        normalized = b.contents.normalize(directory, allow_root=True)
        kind = await b.contents.kind(normalized, normalized=True)
        if kind != "directory":
            found = f"is a {kind}" if kind else "does not exist"
            raise NotFound(f"directory {normalized!r} {found}: give a directory (list_documents finds them)")
        return normalized

    async def get_active_sessions(
        ctx: Context,
        document_path: OnlyDocument = None,
        directory: Annotated[str | None, Field(description="Only under this directory.")] = None,
    ) -> CollabSessions:
        """Open document rooms (sessions) and who is in each."""
        presence_service(b).touch(b.actors.of(ctx))
        path = (await b.contents.require_document(document_path))[0] if document_path is not None else None
        under = await require_directory(directory) if directory is not None else None
        return CollabSessions(
            sessions=[
                CollabSession(
                    session_id=room_id,
                    document_path=room_path,
                    room_id=room_id,
                    type=kind,
                    participants=_participants(room),
                    connections=len(aw.clients(room)),
                )
                for room_id, kind, room_path, room in open_rooms(b, path)
                if under is None or _is_under(room_path, under)
            ]
        )

    def open_session(session_id: str) -> tuple[str, str, str, Any]:
        for entry in open_rooms(b, None):
            if entry[0] == session_id:
                return entry
        raise NotFound(
            f"no open collaboration session {session_id!r}: get_active_sessions lists them (session_id is the "
            "room id, like 'json:notebook:<file id>'), or give the document's path as document_path"
        )

    def one_of(session_id: str | None, document_path: str | None) -> None:
        if (session_id is None) == (document_path is None):
            raise InvalidArgument(
                "give either session_id (from get_active_sessions) or document_path (the document's path), not "
                + ("both" if session_id is not None else "neither")
            )

    async def join_session(ctx: Context, session_id: SessionId = None, document_path: SessionPath = None) -> JoinResult:
        """Join a document's session (people see you in it)."""
        one_of(session_id, document_path)
        actor = b.actors.of(ctx)
        if document_path is not None:
            # By path: the document's room is opened if nobody has it open yet, as create_notebook_session does.
            path, kind = await b.contents.require_document(document_path)
            if kind == "notebook":
                await b.rooms.notebook(path, actor)
            else:
                await b.rooms.text(path, actor)
            presence = presence_service(b).enter(actor, path, kind)
            room = aw.room(b.rooms, presence.room_id) if presence is not None else None
            if presence is None or room is None:
                raise Unavailable(f"the live room of {path!r} closed while joining: retry")
            return JoinResult(session_id=presence.room_id, document_path=path, participants=_participants(room))
        assert session_id is not None
        room_id, _, room_path, room = open_session(session_id)
        if presence_service(b).join(actor, room_id) is None:
            raise Unavailable(f"session {session_id!r} closed while joining: get_active_sessions lists open ones")
        return JoinResult(session_id=room_id, document_path=room_path, participants=_participants(room))

    async def leave_session(ctx: Context, session_id: SessionId = None, document_path: SessionPath = None) -> OkResult:
        """Leave a session until the agent acts there again."""
        one_of(session_id, document_path)
        presence = presence_service(b)
        actor = b.actors.of(ctx)
        if document_path is not None:
            path, kind = await b.contents.require_document(document_path)
            room_id = b.rooms.room_id(path, kind, create_id=False)
            if room_id is not None and presence.leave(actor, room_id):
                return OkResult(ok=True)
            return OkResult(ok=True, detail="this agent was not in that document's session")
        assert session_id is not None
        if presence.leave(actor, session_id):
            return OkResult(ok=True)
        open_session(session_id)  # unknown sessions are an error; known ones the agent was not in are not
        return OkResult(ok=True, detail="this agent was not in that session")

    return [
        ToolSpec(get_active_sessions, "awareness", "Open collaboration sessions", READ, read_only=True),
        ToolSpec(join_session, "awareness", "Join a collaboration session", READ, read_only=False),
        ToolSpec(leave_session, "awareness", "Leave a collaboration session", READ, read_only=False),
    ]
