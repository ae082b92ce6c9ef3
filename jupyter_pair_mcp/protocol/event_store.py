"""A bounded, scoped, in-memory event store for resumable MCP streams.

The SDK replays an SSE stream after a reconnect (``Last-Event-ID``) from an ``EventStore``, but it
hands the store nothing but a stream id, and stream ids are JSON-RPC request ids: ``1`` in one
session is ``1`` in every other. A store keyed by stream id alone replays one session's results to
another (a verified leak). So the shared :class:`MemoryEventStore` holds the storage and bounds,
and each MCP session gets its own :class:`ScopedEventStore` view (see
:class:`jupyter_pair_mcp.protocol.sessions.ScopedSessionManager`). Event ids carry the view's random
scope token; a view only ever replays events stored through itself. Sessions are bound to the
credential that created them, so an event is replayed only to the principal *and* session that
produced it.

Bounds: events per stream (oldest dropped), streams in total (least recently written dropped), age
(events older than ``max_age`` are never replayed and are purged as new events arrive), and bytes — per
session and in total, the oldest events of the least recently written streams giving way first. The
SDK gives no "stream finished" hook, so without these the store would grow with every request: counts
alone let 40 results of 41 MB hold 1.6 GB until their session ended.

An event larger than ``max_event_bytes`` is delivered as usual but not kept, and an event evicted for
bytes is forgotten; when either was a result, a client resuming past it receives, in its place, an
error response for that request saying the result was not kept and to call again — never silence
that would leave it waiting.
"""

from __future__ import annotations

import secrets
import time
from collections import OrderedDict, deque
from collections.abc import Callable
from dataclasses import dataclass, field

from mcp.server.streamable_http import EventCallback, EventId, EventMessage, EventStore, StreamId
from mcp_types import ErrorData, JSONRPCError, JSONRPCMessage, JSONRPCResponse, jsonrpc_message_adapter

#: JSON-RPC error code of the stand-in for a result that was not kept (the implementation-defined range).
NOT_KEPT = -32001


@dataclass
class _Event:
    seq: int
    # The message as the SDK sends it (its JSON text), None: not kept (too large or evicted), or the SDK's priming
    # event. Text, not the message's objects: a kept event is one object the garbage collector does not walk,
    # where a result's pydantic model and dicts were dozens (1 000 results kept under a load of 100 sessions).
    data: str | None
    stored_at: float
    size: int = 0
    answers: str | int | None = None  # the request id it is the result of
    lost_result: str | int | None = None  # the request id of a result that was not kept


@dataclass
class _Stream:
    """One SSE stream of one session: its events in order, oldest first."""

    scope: str
    stream_id: StreamId
    number: int
    events: deque[_Event]
    next_seq: int = 0
    last_write: float = field(default=0.0)
    kept_from: int = 0  # events before this index keep no message: eviction resumes here


class MemoryEventStore:
    """The shared storage behind every session's :class:`ScopedEventStore`.

    All access happens on the server's event loop, so no lock is needed.
    """

    def __init__(
        self,
        *,
        max_events_per_stream: int = 1000,
        max_streams: int = 1000,
        max_age: float = 600.0,
        max_event_bytes: int = 4 * 1024 * 1024,
        max_session_bytes: int = 64 * 1024 * 1024,
        max_total_bytes: int = 256 * 1024 * 1024,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if min(max_events_per_stream, max_streams, max_event_bytes, max_session_bytes, max_total_bytes) < 1:
            raise ValueError("event store bounds must be positive")
        if max_age <= 0:
            raise ValueError("event store bounds must be positive")
        self.max_events_per_stream = max_events_per_stream
        self.max_streams = max_streams
        self.max_age = max_age
        self.max_event_bytes = max_event_bytes
        self.max_session_bytes = max_session_bytes
        self.max_total_bytes = max_total_bytes
        self._clock = clock
        self._bytes = 0
        self._scope_bytes: dict[str, int] = {}
        # (scope, stream number) -> stream, least recently written first.
        self._streams: OrderedDict[tuple[str, int], _Stream] = OrderedDict()
        # (scope, stream id) -> stream number, so a stream keeps its number while it lives.
        self._numbers: dict[tuple[str, StreamId], int] = {}
        self._next_number = 0

    def scoped(self) -> ScopedEventStore:
        """A view for one new session, with a fresh unguessable scope token."""
        return ScopedEventStore(self, secrets.token_hex(8))

    @property
    def stream_count(self) -> int:
        return len(self._streams)

    @property
    def event_count(self) -> int:
        return sum(len(s.events) for s in self._streams.values())

    @property
    def byte_count(self) -> int:
        """Bytes of the events kept (their JSON size)."""
        return self._bytes

    def scope_bytes(self, scope: str) -> int:
        return self._scope_bytes.get(scope, 0)

    def drop_scope(self, scope: str) -> None:
        """Forget every stream of a session that has ended: nothing can resume it any more."""
        for key in [k for k in self._streams if k[0] == scope]:
            self._remove(key)

    def store(self, scope: str, stream_id: StreamId, message: JSONRPCMessage | None) -> EventId:
        now = self._clock()
        self._purge_expired(now)
        number = self._numbers.get((scope, stream_id))
        if number is None:
            number = self._next_number
            self._next_number += 1
            self._numbers[(scope, stream_id)] = number
            self._streams[(scope, number)] = _Stream(scope, stream_id, number, deque(maxlen=self.max_events_per_stream))
            while len(self._streams) > self.max_streams:
                self._remove(next(iter(self._streams)))
        key = (scope, number)
        stream = self._streams[key]
        self._streams.move_to_end(key)
        seq = stream.next_seq
        stream.next_seq += 1
        stream.last_write = now
        data = message.model_dump_json(by_alias=True, exclude_unset=True) if message is not None else None
        size = len(data) if data is not None else 0
        answers = _result_id(message) if message is not None else None
        if len(stream.events) == stream.events.maxlen:
            self._forget(stream, stream.events[0])  # the deque drops it on append
            stream.kept_from = max(0, stream.kept_from - 1)
        if size > self.max_event_bytes:
            stream.events.append(_Event(seq, None, now, 0, answers, lost_result=answers))
        else:
            stream.events.append(_Event(seq, data, now, size, answers))
            self._count(scope, size)
            self._fit(scope)
        return f"{scope}.{number}.{seq}"

    async def replay(self, scope: str, last_event_id: EventId, send: EventCallback) -> StreamId | None:
        """Send every event after ``last_event_id`` on its stream, if that id belongs to ``scope``."""
        parsed = _parse_event_id(last_event_id)
        if parsed is None or parsed[0] != scope:
            return None
        _, number, seq = parsed
        stream = self._streams.get((scope, number))
        if stream is None:
            return None
        oldest_allowed = self._clock() - self.max_age
        for event in list(stream.events):
            if event.seq <= seq or event.stored_at < oldest_allowed:
                continue
            message = jsonrpc_message_adapter.validate_json(event.data) if event.data is not None else None
            message = message if message is not None else _not_kept(event.lost_result)
            if message is not None:
                await send(EventMessage(message, f"{scope}.{number}.{event.seq}"))
        return stream.stream_id

    def _purge_expired(self, now: float) -> None:
        oldest_allowed = now - self.max_age
        # Streams are ordered by last write, so expired ones sit at the front.
        while self._streams:
            key, stream = next(iter(self._streams.items()))
            if stream.last_write >= oldest_allowed:
                break
            self._remove(key)

    def _remove(self, key: tuple[str, int]) -> None:
        stream = self._streams.pop(key)
        self._numbers.pop((stream.scope, stream.stream_id), None)
        for event in stream.events:
            self._forget(stream, event)

    def _count(self, scope: str, size: int) -> None:
        self._bytes += size
        total = self._scope_bytes.get(scope, 0) + size
        if total:
            self._scope_bytes[scope] = total
        else:
            self._scope_bytes.pop(scope, None)

    def _forget(self, stream: _Stream, event: _Event) -> None:
        """Stop counting an event (it leaves the store, or only its message does)."""
        if event.size:
            self._count(stream.scope, -event.size)
            event.size = 0

    def _fit(self, scope: str) -> None:
        """Evict the oldest kept events — of this session, then of anyone — until both byte bounds hold.

        One pass over the streams, least recently written first; each stream resumes where its last
        eviction stopped, so staying at a bound costs no rescan of what was evicted before.
        """
        for owner, limit in ((scope, self.max_session_bytes), (None, self.max_total_bytes)):

            def over(owner: str | None = owner, limit: int = limit) -> bool:
                return (self._scope_bytes.get(owner, 0) if owner is not None else self._bytes) > limit

            for (stream_scope, _), stream in self._streams.items():
                if not over():
                    break
                if owner is not None and stream_scope != owner:
                    continue
                while stream.kept_from < len(stream.events) and over():
                    event = stream.events[stream.kept_from]
                    if event.data is not None:
                        self._forget(stream, event)
                        event.lost_result = event.answers
                        event.data = None
                    stream.kept_from += 1


def _result_id(message: JSONRPCMessage) -> str | int | None:
    """The request id a message answers, when it is a result (its loss must be told on replay)."""
    return message.id if isinstance(message, JSONRPCResponse) else None


def _not_kept(request_id: str | int | None) -> JSONRPCMessage | None:
    if request_id is None:
        return None
    return JSONRPCError(
        jsonrpc="2.0",
        id=request_id,
        error=ErrorData(
            code=NOT_KEPT,
            message="the result of this request was not kept for replay (it was larger than the server keeps, "
            "or the event store needed the room): call the tool again",
        ),
    )


class ScopedEventStore(EventStore):
    """One session's view of the shared store: it stores and replays only its own events."""

    def __init__(self, shared: MemoryEventStore, scope: str) -> None:
        self._shared = shared
        self.scope = scope

    async def store_event(self, stream_id: StreamId, message: JSONRPCMessage | None) -> EventId:
        return self._shared.store(self.scope, stream_id, message)

    async def replay_events_after(self, last_event_id: EventId, send_callback: EventCallback) -> StreamId | None:
        return await self._shared.replay(self.scope, last_event_id, send_callback)

    def release(self) -> None:
        self._shared.drop_scope(self.scope)


def _parse_event_id(event_id: str) -> tuple[str, int, int] | None:
    parts = event_id.split(".")
    if len(parts) != 3:
        return None
    scope, number, seq = parts
    # Only ASCII digits: str.isdigit() also accepts characters like '²' that int() rejects.
    if not (number.isascii() and number.isdigit() and seq.isascii() and seq.isdigit()):
        return None
    return scope, int(number), int(seq)
