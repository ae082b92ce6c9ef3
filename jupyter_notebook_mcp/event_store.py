"""A bounded, scoped, in-memory event store for resumable MCP streams.

The SDK replays an SSE stream after a reconnect (``Last-Event-ID``) from an ``EventStore``, but it
hands the store nothing but a stream id, and stream ids are JSON-RPC request ids: ``1`` in one
session is ``1`` in every other. A store keyed by stream id alone replays one session's results to
another (a verified leak). So the shared :class:`MemoryEventStore` holds the storage and bounds,
and each MCP session gets its own :class:`ScopedEventStore` view (see
:class:`jupyter_notebook_mcp.sessions.ScopedSessionManager`). Event ids carry the view's random
scope token; a view only ever replays events stored through itself. Sessions are bound to the
credential that created them, so an event is replayed only to the principal *and* session that
produced it.

Bounds: events per stream (oldest dropped), streams in total (least recently written dropped) and
age (events older than ``max_age`` are never replayed and are purged as new events arrive). The SDK
gives no "stream finished" hook, so without these the store would grow with every request.
"""

from __future__ import annotations

import secrets
import time
from collections import OrderedDict, deque
from collections.abc import Callable
from dataclasses import dataclass, field

from mcp.server.streamable_http import EventCallback, EventId, EventMessage, EventStore, StreamId
from mcp_types import JSONRPCMessage


@dataclass
class _Event:
    seq: int
    message: JSONRPCMessage | None
    stored_at: float


@dataclass
class _Stream:
    """One SSE stream of one session: its events in order, oldest first."""

    scope: str
    stream_id: StreamId
    number: int
    events: deque[_Event]
    next_seq: int = 0
    last_write: float = field(default=0.0)


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
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if max_events_per_stream < 1 or max_streams < 1 or max_age <= 0:
            raise ValueError("event store bounds must be positive")
        self.max_events_per_stream = max_events_per_stream
        self.max_streams = max_streams
        self.max_age = max_age
        self._clock = clock
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
        stream.events.append(_Event(seq, message, now))
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
            if event.seq <= seq or event.stored_at < oldest_allowed or event.message is None:
                continue
            await send(EventMessage(event.message, f"{scope}.{number}.{event.seq}"))
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
