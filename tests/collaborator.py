"""A real second collaborator: joins a document's room over the collaboration websocket.

It does what JupyterLab does — ``PUT /api/collaboration/session/<path>``, then the room websocket
with the session id — and keeps its own pycrdt document in sync through pycrdt's ``Provider``, so
tests can watch agent edits arrive and make edits of their own that the server sees as a human's.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Callable
from typing import Any
from urllib.parse import quote

from jupyter_ydoc import YNotebook, YUnicode
from pycrdt import (
    Assoc,
    Awareness,
    Doc,
    Provider,
    StickyIndex,
    Text,
    YMessageType,
    create_awareness_message,
    read_message,
)
from tornado.httpclient import AsyncHTTPClient, HTTPRequest
from tornado.websocket import WebSocketClientConnection, websocket_connect

from jupyter_pair_mcp.adapters.rooms.cellindex import cells_json

from .patience import patient

GLOBAL_ROOM = "JupyterLab:globalAwareness"


class _Channel:
    """pycrdt's Channel protocol over a Tornado websocket client."""

    def __init__(self, ws: WebSocketClientConnection, path: str, on_awareness: Callable[[bytes], None]) -> None:
        self._ws = ws
        self._path = path
        self._on_awareness = on_awareness
        self.held: list[bytes] | None = None

    @property
    def path(self) -> str:
        return self._path

    def __aiter__(self) -> _Channel:
        return self

    async def __anext__(self) -> bytes:
        while True:
            message = await self._ws.read_message()
            if message is None:
                raise StopAsyncIteration
            data = message if isinstance(message, bytes) else message.encode()
            if data[:1] == bytes([YMessageType.AWARENESS]):
                # pycrdt's Provider ignores awareness: feed it to the collaborator's own Awareness.
                self._on_awareness(read_message(data[1:]))
                continue
            return data

    async def send(self, message: bytes) -> None:
        if self.held is not None:  # offline: the server has not seen these edits yet
            self.held.append(message)
            return
        await self._ws.write_message(message, binary=True)

    async def release(self) -> None:
        held, self.held = self.held or [], None
        for message in held:
            await self._ws.write_message(message, binary=True)

    async def recv(self) -> bytes:
        return await self.__anext__()


class Collaborator:
    """``async with Collaborator(...) as c``: a synced replica of the room's document (kind "notebook" or
    "file"; "chat": a Jupyter chat, its maps read from ``c.doc``), or, with kind "global", a JupyterLab tab in
    the global awareness room (path unused)."""

    def __init__(
        self, server_root: str, base_url: str, token: str, path: str, kind: str = "notebook", sync_limit: float = 10
    ) -> None:
        self.server_root = server_root
        self.sync_limit = sync_limit
        self.base_url = base_url
        self.token = token
        self.path = path
        self.kind = kind
        self.doc = Doc()
        self.document: Any = (
            YNotebook(self.doc) if kind == "notebook" else YUnicode(self.doc) if kind == "file" else None
        )
        self.changes = 0
        self._offline_changes = 0
        self._changed = asyncio.Event()
        self.awareness = Awareness(self.doc)
        self._aware = asyncio.Event()
        self._subscription: Any = None
        self._task: asyncio.Task[None] | None = None
        self._ws: WebSocketClientConnection | None = None

    async def __aenter__(self) -> Collaborator:
        headers = {"Authorization": f"token {self.token}"}
        ws_root = self.server_root.replace("http://", "ws://")
        if self.kind == "global":  # JupyterLab's global awareness room: no document, no session
            self.room_id = GLOBAL_ROOM
            url = f"{ws_root}{self.base_url}api/collaboration/room/{self.room_id}"
        else:
            fmt, kind = ("json", "notebook") if self.kind == "notebook" else ("text", self.kind)  # file, chat
            response = await AsyncHTTPClient().fetch(
                f"{self.server_root}{self.base_url}api/collaboration/session/{quote(self.path)}",
                method="PUT",
                body=json.dumps({"format": fmt, "type": kind}),
                headers=headers,
            )
            session = json.loads(response.body)
            self.room_id = f"{fmt}:{kind}:{session['fileId']}"
            url = f"{ws_root}{self.base_url}api/collaboration/room/{self.room_id}?sessionId={session['sessionId']}"
        self._ws = await websocket_connect(HTTPRequest(url, headers=headers), max_message_size=1 << 30)
        self._subscription = self.doc.observe(self._on_change)
        self.channel = _Channel(self._ws, self.room_id, self._on_awareness)
        self.provider = Provider(self.doc, self.channel)
        self._task = asyncio.ensure_future(self.provider.start())
        await asyncio.wait_for(self.provider.started.wait(), patient(10))
        await asyncio.wait_for(self.provider.synced.wait(), patient(self.sync_limit))
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def close(self) -> None:
        if self._task is not None:
            await self.provider.stop()
            self._task.cancel()
            self._task = None
        if self._ws is not None:
            self._ws.close()
            self._ws = None

    def _on_change(self, event: Any) -> None:
        self.changes += 1
        self._changed.set()

    def _on_awareness(self, update: bytes) -> None:
        self.awareness.apply_awareness_update(update, "remote")
        self._aware.set()

    # -- awareness ------------------------------------------------------------------------------------
    def others(self) -> dict[int, dict[str, Any]]:
        """Awareness states of everyone else in the room (browsers and agents), by client id."""
        return {cid: s for cid, s in self.awareness.states.items() if cid != self.awareness.client_id and s}

    def agents(self) -> list[dict[str, Any]]:
        return [s for s in self.others().values() if "agent" in s]

    async def wait_awareness(self, predicate: Callable[[], Any], limit: float = 5.0) -> Any:
        """``predicate()``'s first truthy value, re-checked on every awareness message received (``limit``: an
        idle machine's seconds, times the suite's patience)."""
        limit = patient(limit)
        started = time.perf_counter()
        while not (value := predicate()):
            remaining = limit - (time.perf_counter() - started)
            if remaining <= 0:
                raise AssertionError(f"awareness never matched within {limit}s: {self.others()}")
            self._aware.clear()
            try:
                await asyncio.wait_for(self._aware.wait(), min(remaining, 0.1))
            except TimeoutError:
                pass
        return value

    async def set_awareness(self, state: dict[str, Any] | None) -> None:
        """Publish this person's awareness state (user, cursors, autosave) as JupyterLab does."""
        self.awareness.set_local_state(state)
        update = self.awareness.encode_awareness_update([self.awareness.client_id])
        assert self._ws is not None
        await self._ws.write_message(create_awareness_message(update), binary=True)

    def _ytext(self, index: int | None) -> Any:
        return self.doc.get("source", type=Text) if index is None else self.document.ycells[index]["source"]

    def relative(self, index: int | None, position: int) -> dict[str, Any]:
        """A Yjs relative position (all four keys) at character ``position`` of cell ``index`` (None: the file)."""
        ytext = self._ytext(index)
        text = str(ytext)
        units = len(text[:position].encode("utf-16-le")) // 2
        length = len(text.encode("utf-16-le")) // 2
        sticky = (
            StickyIndex.new(ytext, units, Assoc.AFTER)
            if units < length
            else StickyIndex.new(ytext, length, Assoc.BEFORE)
        ).to_json()
        return {k: sticky.get(k) for k in ("type", "tname", "item")} | {"assoc": sticky.get("assoc", 0)}

    def locate(self, relative: dict[str, Any]) -> tuple[int | None, int]:
        """(cell index or None, character offset) of a relative position, found by brute force over every
        position of every cell: independent of the server's decoding."""
        texts = (
            [(None, self._ytext(None))]
            if self.kind != "notebook"
            else list(enumerate(self.document.ycells[i]["source"] for i in range(self.document.cell_number)))
        )
        for index, ytext in texts:
            text = str(ytext)
            for position in range(len(text) + 1):
                wanted = {k: relative.get(k) for k in ("type", "tname", "item", "assoc")}
                if self.relative(index, position) == wanted:
                    return index, position
        raise AssertionError(f"relative position {relative} is in no cell")

    # -- reading the replica ------------------------------------------------------------------------
    def text(self) -> str:
        """A text document's content (for kind="file")."""
        return str(self.document.get())

    def type_text(self, position: int, text: str) -> None:
        """Insert ``text`` at character ``position`` of a text document."""
        ysource = self.doc.get("source", type=Text)
        ysource.insert(len(str(ysource)[:position].encode()), text)

    def cells(self) -> list[dict[str, Any]]:
        return [self.document.get_cell(i) for i in range(self.document.cell_number)]

    def sources(self) -> list[str]:
        return [str(cell["source"]) for cell in self.cells()]

    def ids(self) -> list[str]:
        """Cell ids in order, from one JSON conversion (index access per cell would be quadratic)."""
        return [str(cell.get("id", "")) for cell in cells_json(self.document.ycells)]

    async def wait_until(self, predicate: Callable[[], bool], limit: float = 5.0) -> float:
        """Seconds until ``predicate()`` holds on the replica, re-checked on every change it receives (``limit``:
        an idle machine's seconds, times the suite's patience)."""
        limit = patient(limit)
        started = time.perf_counter()
        while not predicate():
            remaining = limit - (time.perf_counter() - started)
            if remaining <= 0:
                raise AssertionError(f"collaborator did not see the change within {limit}s: {self.sources()[:20]}")
            self._changed.clear()
            try:
                await asyncio.wait_for(self._changed.wait(), min(remaining, 0.05))
            except TimeoutError:
                pass
        return time.perf_counter() - started

    def execution_state(self, index: int) -> str | None:
        """The cell's run state ("running"/"idle"), which get_cell() strips."""
        value = self.document.ycells[index].get("execution_state")
        return None if value is None else str(value)

    def source(self, index: int) -> str:
        """One cell's source, read without converting the others."""
        return str(self.document.ycells[index]["source"])

    def go_offline(self) -> None:
        """Keep this person's next edits local, as if their connection lagged (truly concurrent edits)."""
        self.channel.held = []
        self._offline_changes = self.changes

    async def go_online(self, limit: float = 5.0) -> None:
        """Send the edits made while offline; the CRDT merges them with whatever happened meanwhile. First the
        provider hands the channel its queued updates: one message per change of the replica (its own, and
        the server's it echoes), counted by the same observer as ``changes``."""
        held = self.channel.held
        assert held is not None, "go_offline() first"
        limit = patient(limit)
        deadline = time.perf_counter() + limit
        while len(held) < self.changes - self._offline_changes:
            assert time.perf_counter() < deadline, f"the provider did not hand its updates over within {limit} s"
            await asyncio.sleep(0.005)
        await self.channel.release()

    # -- editing like a person ------------------------------------------------------------------------
    def type_into(self, index: int, position: int, text: str) -> None:
        """Insert ``text`` at character ``position`` of cell ``index`` (as a keystroke burst)."""
        ytext = self.document.ycells[index]["source"]
        offset = len(str(ytext)[:position].encode())
        ytext.insert(offset, text)

    def insert_cell(self, index: int, source: str, cell_type: str = "code") -> str:
        cell: dict[str, Any] = {"cell_type": cell_type, "source": source, "metadata": {}}
        if cell_type == "code":
            cell.update(outputs=[], execution_count=None)
        ycell = self.document.create_ycell(cell)
        self.document.ycells.insert(index, ycell)
        return str(ycell["id"])

    def delete_cell(self, index: int) -> None:
        del self.document.ycells[index]
