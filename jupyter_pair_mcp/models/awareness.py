"""Parameter and result models of the ``awareness`` tools (their input and output schemas)."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, Field


class Position(BaseModel):
    line: int = Field(description="Line, 1-based.")
    column: int = Field(description="Column in chars, 1-based.")


class Selection(BaseModel):
    start: Position = Field(description="Start.")
    end: Position = Field(description="End.")


class DocumentFocus(BaseModel):
    path: str
    cell_id: str | None = Field(default=None, description="The cell they are in (notebooks).")
    index: int | None = Field(default=None, description="That cell's index, 0-based.")
    typing: bool = Field(default=False, description="Typed here within the last few seconds.")


class OnlineUser(BaseModel):
    user_id: str = Field(description="The awareness username (agents: mcp-agent-<key>).")
    name: str
    display_name: str
    color: str | None
    documents: list[str] = Field(description="Paths of the open documents this user is in.")
    is_agent: bool = Field(description="True for MCP agents (their awareness state carries an 'agent' field).")
    is_you: bool = Field(default=False, description="True for the calling agent itself.")
    focused_document: str | None = Field(default=None, description="The document focused in JupyterLab.")
    positions: list[DocumentFocus] = Field(default_factory=list, description="Per document: cell, typing.")


class OnlineUsers(BaseModel):
    users: list[OnlineUser]


class UserPresence(BaseModel):
    user_id: str
    status: str = Field(description="online, away, busy or offline (people in a room are online).")
    message: str | None = None
    last_activity: str | None = Field(description="ISO 8601 time of the user's last call or awareness update.")
    current_document: str | None = Field(description="The document the user was last active in.")
    documents: list[str] = Field(default_factory=list)
    is_agent: bool = False


class StatusResult(BaseModel):
    status: str
    message: str | None = None


class UserCursor(BaseModel):
    user_id: str
    name: str
    is_agent: bool
    cell_id: str | None = Field(description="Notebooks: the cell the cursor is in; null for text files.")
    line: int = Field(description="1-based line of the cursor (its head).")
    column: int = Field(description="1-based column of the cursor (its head).")
    selection: Selection | None = Field(description="The selected range when something is selected, else null.")


class UserCursors(BaseModel):
    document_path: str
    cursors: list[UserCursor]
    unplaced: int = Field(default=0, description="Cursors that point at text no longer in the document.")


class OkResult(BaseModel):
    ok: bool
    detail: str | None = None


class ActivityEntry(BaseModel):
    timestamp: str = Field(description="ISO 8601, UTC.")
    user_id: str
    name: str
    type: str = Field(description="edit, execution, restore, or a type an agent broadcast.")
    document_path: str | None
    description: str
    metadata: dict[str, Any] | None = None


class Activities(BaseModel):
    activities: list[ActivityEntry] = Field(description="Newest first.")


class Participant(BaseModel):
    user_id: str
    name: str
    is_agent: bool


class CollabSession(BaseModel):
    session_id: str = Field(description="The room id; pass it to join_session or leave_session.")
    document_path: str
    room_id: str
    type: str = Field(description="notebook or file")
    participants: list[Participant]
    connections: int = Field(description="Websocket clients connected to the room (browser tabs).")


class CollabSessions(BaseModel):
    sessions: list[CollabSession]


class JoinResult(BaseModel):
    session_id: str
    document_path: str
    participants: list[Participant]
