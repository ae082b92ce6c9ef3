"""Unit tests of the bounded, scoped in-memory event store (no server involved)."""

from __future__ import annotations

from typing import Any

import pytest
from mcp.server.streamable_http import EventMessage
from mcp_types import JSONRPCMessage, JSONRPCNotification, JSONRPCResponse

from jupyter_pair_mcp.protocol.event_store import MemoryEventStore, ScopedEventStore


class FakeClock:
    """A settable clock for the age bound."""

    def __init__(self, now: float = 1000.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


def progress(n: int) -> JSONRPCMessage:
    return JSONRPCNotification(jsonrpc="2.0", method="notifications/progress", params={"progressToken": "p", "n": n})


def result(request_id: int, value: Any) -> JSONRPCMessage:
    return JSONRPCResponse(jsonrpc="2.0", id=request_id, result={"value": value})


class Replayed:
    """Collects what a replay sends."""

    def __init__(self) -> None:
        self.events: list[EventMessage] = []

    async def __call__(self, event: EventMessage) -> None:
        self.events.append(event)

    @property
    def ids(self) -> list[str | None]:
        return [e.event_id for e in self.events]

    @property
    def messages(self) -> list[JSONRPCMessage]:
        return [e.message for e in self.events]


async def replay(view: ScopedEventStore, last_event_id: str) -> tuple[str | None, Replayed]:
    sink = Replayed()
    stream_id = await view.replay_events_after(last_event_id, sink)
    return stream_id, sink


def make_store(**kwargs: Any) -> tuple[MemoryEventStore, FakeClock]:
    clock = FakeClock()
    return MemoryEventStore(clock=clock, **kwargs), clock


# --- replay basics -------------------------------------------------------------------------------


async def test_replay_returns_events_strictly_after_id_in_order() -> None:
    store, _ = make_store()
    view = store.scoped()
    ids = [await view.store_event("7", progress(i)) for i in range(5)]
    assert len(set(ids)) == 5

    stream_id, sink = await replay(view, ids[1])

    assert stream_id == "7"
    assert sink.ids == ids[2:]
    assert sink.messages == [progress(2), progress(3), progress(4)]


async def test_replay_after_last_event_sends_nothing_but_names_stream() -> None:
    store, _ = make_store()
    view = store.scoped()
    ids = [await view.store_event("s", progress(i)) for i in range(3)]

    stream_id, sink = await replay(view, ids[-1])

    assert stream_id == "s"
    assert sink.events == []


async def test_replayed_ids_resume_further() -> None:
    """An id received during a replay can itself be used to resume."""
    store, _ = make_store()
    view = store.scoped()
    ids = [await view.store_event("s", progress(i)) for i in range(4)]

    _, first = await replay(view, ids[0])
    assert first.ids == ids[1:]
    _, second = await replay(view, first.ids[1] or "")
    assert second.ids == ids[3:]
    assert second.messages == [progress(3)]


async def test_replay_only_touches_the_stream_of_the_id() -> None:
    store, _ = make_store()
    view = store.scoped()
    a0 = await view.store_event("a", progress(0))
    b0 = await view.store_event("b", result(1, "b0"))
    a1 = await view.store_event("a", progress(1))
    b1 = await view.store_event("b", result(1, "b1"))

    stream_a, sink_a = await replay(view, a0)
    stream_b, sink_b = await replay(view, b0)

    assert (stream_a, sink_a.ids) == ("a", [a1])
    assert (stream_b, sink_b.ids) == ("b", [b1])
    assert sink_b.messages == [result(1, "b1")]


async def test_priming_events_get_ids_but_are_never_replayed() -> None:
    store, _ = make_store()
    view = store.scoped()
    priming = await view.store_event("s", None)
    first = await view.store_event("s", progress(0))
    second_priming = await view.store_event("s", None)
    last = await view.store_event("s", progress(1))

    assert len({priming, first, second_priming, last}) == 4
    assert store.event_count == 4

    stream_id, sink = await replay(view, priming)

    assert stream_id == "s"
    assert sink.ids == [first, last]
    assert all(m is not None for m in sink.messages)


async def test_replay_from_priming_only_stream() -> None:
    store, _ = make_store()
    view = store.scoped()
    priming = await view.store_event("s", None)

    stream_id, sink = await replay(view, priming)

    assert stream_id == "s"
    assert sink.events == []


# --- isolation between scopes --------------------------------------------------------------------


async def test_two_views_have_different_scopes() -> None:
    store, _ = make_store()
    assert store.scoped().scope != store.scoped().scope


async def test_view_never_replays_another_views_events() -> None:
    store, _ = make_store()
    alice, bob = store.scoped(), store.scoped()
    alice_ids = [await alice.store_event("1", progress(i)) for i in range(3)]
    bob_ids = [await bob.store_event("1", result(1, f"bob{i}")) for i in range(3)]

    # Bob presents Alice's exact event ids: nothing.
    for event_id in alice_ids:
        stream_id, sink = await replay(bob, event_id)
        assert stream_id is None
        assert sink.events == []
    # And the other way round.
    for event_id in bob_ids:
        stream_id, sink = await replay(alice, event_id)
        assert stream_id is None
        assert sink.events == []


async def test_forged_id_with_other_scope_token_replays_nothing() -> None:
    store, _ = make_store()
    alice, bob = store.scoped(), store.scoped()
    alice_first = await alice.store_event("1", progress(0))
    await alice.store_event("1", progress(1))
    await bob.store_event("1", progress(99))
    _, number, seq = alice_first.split(".")

    # Bob's own scope token grafted onto Alice's stream number: Bob's store has no such
    # stream of his own that holds Alice's events.
    stream_id, sink = await replay(bob, f"{bob.scope}.{number}.{seq}")
    assert sink.events == []
    assert stream_id is None

    # A made-up scope token with Alice's stream/sequence numbers, presented to Alice.
    stream_id, sink = await replay(alice, f"{'0' * 16}.{number}.{seq}")
    assert stream_id is None
    assert sink.events == []


async def test_same_stream_id_in_two_scopes_stays_separate() -> None:
    store, _ = make_store()
    alice, bob = store.scoped(), store.scoped()
    a0 = await alice.store_event("1", progress(0))
    b0 = await bob.store_event("1", result(1, "bob-0"))
    a1 = await alice.store_event("1", progress(1))
    b1 = await bob.store_event("1", result(1, "bob-1"))

    assert store.stream_count == 2

    stream_id, sink = await replay(alice, a0)
    assert stream_id == "1"
    assert sink.ids == [a1]
    assert sink.messages == [progress(1)]

    stream_id, sink = await replay(bob, b0)
    assert stream_id == "1"
    assert sink.ids == [b1]
    assert sink.messages == [result(1, "bob-1")]


# --- bounds --------------------------------------------------------------------------------------


async def test_per_stream_cap_drops_oldest_events() -> None:
    store, _ = make_store(max_events_per_stream=3)
    view = store.scoped()
    ids = [await view.store_event("s", progress(i)) for i in range(5)]

    assert store.event_count == 3

    # Resuming from an id that has been dropped replays what is left after it.
    stream_id, sink = await replay(view, ids[0])
    assert stream_id == "s"
    assert sink.ids == ids[2:]
    assert sink.messages == [progress(2), progress(3), progress(4)]


async def test_total_stream_cap_evicts_least_recently_written_stream() -> None:
    store, _ = make_store(max_streams=2)
    view = store.scoped()
    a0 = await view.store_event("a", progress(0))
    b0 = await view.store_event("b", progress(10))
    # Writing to "a" again makes "b" the least recently written stream.
    a1 = await view.store_event("a", progress(1))
    c0 = await view.store_event("c", progress(20))
    c1 = await view.store_event("c", progress(21))

    assert store.stream_count == 2
    assert store.event_count == 4

    stream_id, sink = await replay(view, b0)
    assert stream_id is None
    assert sink.events == []

    stream_id, sink = await replay(view, a0)
    assert (stream_id, sink.ids) == ("a", [a1])
    stream_id, sink = await replay(view, c0)
    assert (stream_id, sink.ids) == ("c", [c1])


async def test_stream_cap_is_shared_across_scopes() -> None:
    store, _ = make_store(max_streams=1)
    alice, bob = store.scoped(), store.scoped()
    a0 = await alice.store_event("1", progress(0))
    await alice.store_event("1", progress(1))
    b0 = await bob.store_event("1", progress(2))
    b1 = await bob.store_event("1", progress(3))

    assert store.stream_count == 1
    stream_id, sink = await replay(alice, a0)
    assert (stream_id, sink.events) == (None, [])
    stream_id, sink = await replay(bob, b0)
    assert (stream_id, sink.ids) == ("1", [b1])


async def test_evicted_stream_id_restarts_as_a_new_stream() -> None:
    """An old event id does not resume into a fresh stream that reuses the same stream id."""
    store, _ = make_store(max_streams=1)
    view = store.scoped()
    old = await view.store_event("s", progress(0))
    await view.store_event("other", progress(1))  # evicts "s"
    new0 = await view.store_event("s", progress(2))  # evicts "other", "s" starts again
    new1 = await view.store_event("s", progress(3))

    stream_id, sink = await replay(view, old)
    assert stream_id is None
    assert sink.events == []
    stream_id, sink = await replay(view, new0)
    assert (stream_id, sink.ids) == ("s", [new1])


async def test_expired_events_are_not_replayed() -> None:
    store, clock = make_store(max_age=10)
    view = store.scoped()
    first = await view.store_event("s", None)
    old = await view.store_event("s", progress(0))
    clock.advance(6)
    fresh = await view.store_event("s", progress(1))

    stream_id, sink = await replay(view, first)
    assert stream_id == "s"
    assert sink.ids == [old, fresh]

    clock.advance(5)  # "old" is now 11s old, "fresh" 5s
    stream_id, sink = await replay(view, first)
    assert stream_id == "s"
    assert sink.ids == [fresh]
    assert sink.messages == [progress(1)]

    clock.advance(6)  # everything is older than max_age
    stream_id, sink = await replay(view, first)
    assert sink.events == []


async def test_event_exactly_max_age_old_is_still_replayed() -> None:
    store, clock = make_store(max_age=10)
    view = store.scoped()
    first = await view.store_event("s", None)
    event = await view.store_event("s", progress(0))
    clock.advance(10)

    _, sink = await replay(view, first)
    assert sink.ids == [event]


async def test_expired_streams_are_purged_on_next_store() -> None:
    store, clock = make_store(max_age=10)
    view = store.scoped()
    other = store.scoped()
    stale = await view.store_event("stale", progress(0))
    await other.store_event("stale-too", progress(0))
    clock.advance(8)
    live0 = await view.store_event("live", progress(1))
    clock.advance(5)  # "stale" streams last written 13s ago, "live" 5s ago

    # Nothing is purged until something is stored.
    assert store.stream_count == 3
    live1 = await view.store_event("live", progress(2))

    assert store.stream_count == 1
    assert store.event_count == 2
    stream_id, sink = await replay(view, stale)
    assert (stream_id, sink.events) == (None, [])
    stream_id, sink = await replay(view, live0)
    assert (stream_id, sink.ids) == ("live", [live1])


async def test_recent_write_keeps_stream_alive() -> None:
    store, clock = make_store(max_age=10)
    view = store.scoped()
    e0 = await view.store_event("s", progress(0))
    clock.advance(8)
    e1 = await view.store_event("s", progress(1))
    clock.advance(8)  # e0 is 16s old, but the stream was written 8s ago
    await view.store_event("other", progress(2))

    assert store.stream_count == 2
    stream_id, sink = await replay(view, e0)
    assert (stream_id, sink.ids) == ("s", [e1])


# --- dropping scopes -----------------------------------------------------------------------------


async def test_release_drops_only_that_scopes_streams() -> None:
    store, _ = make_store()
    alice, bob = store.scoped(), store.scoped()
    a = [await alice.store_event(s, progress(i)) for i, s in enumerate(["1", "2", "1"])]
    b = [await bob.store_event(s, progress(i)) for i, s in enumerate(["1", "1"])]
    assert store.stream_count == 3

    alice.release()

    assert store.stream_count == 1
    assert store.event_count == 2
    stream_id, sink = await replay(alice, a[0])
    assert (stream_id, sink.events) == (None, [])
    stream_id, sink = await replay(bob, b[0])
    assert (stream_id, sink.ids) == ("1", [b[1]])


async def test_drop_scope_of_unknown_scope_is_harmless() -> None:
    store, _ = make_store()
    view = store.scoped()
    e0 = await view.store_event("s", progress(0))
    e1 = await view.store_event("s", progress(1))

    store.drop_scope("no-such-scope")

    assert store.stream_count == 1
    stream_id, sink = await replay(view, e0)
    assert (stream_id, sink.ids) == ("s", [e1])


async def test_released_view_can_store_again_as_new_streams() -> None:
    store, _ = make_store()
    view = store.scoped()
    old = await view.store_event("s", progress(0))
    view.release()
    new0 = await view.store_event("s", progress(1))
    new1 = await view.store_event("s", progress(2))

    assert new0 != old
    stream_id, sink = await replay(view, old)
    assert (stream_id, sink.events) == (None, [])
    stream_id, sink = await replay(view, new0)
    assert (stream_id, sink.ids) == ("s", [new1])


# --- malformed ids and construction --------------------------------------------------------------


@pytest.mark.parametrize(
    "event_id",
    [
        "x",
        "a.b.c",
        "",
        "s.1",
        "..",
        "1.2.3.4",
        "{scope}.-1.0",
        "{scope}.0.-1",
        "{scope}..0",
        "{scope}.0.",
        "{scope}.0.x",
        "{scope}.0",
        "{scope}.0.0.0",
    ],
)
async def test_malformed_ids_replay_nothing(event_id: str) -> None:
    store, _ = make_store()
    view = store.scoped()
    for i in range(3):
        await view.store_event("s", progress(i))

    stream_id, sink = await replay(view, event_id.format(scope=view.scope))

    assert stream_id is None
    assert sink.events == []


async def test_unknown_stream_number_replays_nothing() -> None:
    store, _ = make_store()
    view = store.scoped()
    event_id = await view.store_event("s", progress(0))
    _, number, _ = event_id.split(".")

    stream_id, sink = await replay(view, f"{view.scope}.{int(number) + 1}.0")

    assert (stream_id, sink.events) == (None, [])


async def test_non_ascii_digit_id_replays_nothing() -> None:
    store, _ = make_store()
    view = store.scoped()
    await view.store_event("s", progress(0))

    stream_id, sink = await replay(view, f"{view.scope}.\u00b2.0")

    assert (stream_id, sink.events) == (None, [])


@pytest.mark.parametrize(
    "kwargs",
    [
        {"max_events_per_stream": 0},
        {"max_events_per_stream": -1},
        {"max_streams": 0},
        {"max_streams": -5},
        {"max_age": 0},
        {"max_age": -1.0},
    ],
)
def test_constructor_rejects_non_positive_bounds(kwargs: dict[str, Any]) -> None:
    with pytest.raises(ValueError, match="positive"):
        MemoryEventStore(**kwargs)


def test_constructor_accepts_minimal_bounds() -> None:
    store = MemoryEventStore(max_events_per_stream=1, max_streams=1, max_age=0.001)
    assert (store.max_events_per_stream, store.max_streams, store.max_age) == (1, 1, 0.001)
    assert (store.stream_count, store.event_count) == (0, 0)


class TestByteBounds:
    async def test_a_result_over_the_event_bound_is_delivered_but_replays_as_an_error(self) -> None:
        store, _ = make_store(max_event_bytes=1000)
        view = store.scoped()
        first = await view.store_event("1", None)  # the SDK's priming event
        await view.store_event("1", progress(1))
        await view.store_event("1", result(1, "x" * 5000))
        assert store.byte_count < 1000
        _, sink = await replay(view, first)
        assert [type(m).__name__ for m in sink.messages] == ["JSONRPCNotification", "JSONRPCError"]
        error = sink.messages[1]
        assert error.id == 1  # type: ignore[union-attr]
        assert "not kept for replay" in error.error.message  # type: ignore[union-attr]

    async def test_a_session_is_bounded_in_bytes_oldest_first(self) -> None:
        store, _ = make_store(max_event_bytes=10_000, max_session_bytes=3000)
        view, other = store.scoped(), store.scoped()
        await other.store_event("9", result(9, "o" * 500))
        first = await view.store_event("1", None)
        for n in range(10):
            await view.store_event("1", result(n, "v" * 500))
        assert store.scope_bytes(view.scope) <= 3000
        assert store.scope_bytes(other.scope) > 0  # another session's events are not this session's budget
        _, sink = await replay(view, first)
        kinds = [type(m).__name__ for m in sink.messages]
        assert kinds[:1] == ["JSONRPCError"] and kinds[-1] == "JSONRPCResponse"
        assert len(kinds) == 10  # every result is answered: kept, or as "not kept"

    async def test_all_sessions_together_are_bounded_in_bytes(self) -> None:
        store, _ = make_store(max_event_bytes=10_000, max_session_bytes=100_000, max_total_bytes=5000)
        views = [store.scoped() for _ in range(5)]
        for n, view in enumerate(views):
            for k in range(4):
                await view.store_event(str(k), result(n * 10 + k, "t" * 500))
        assert store.byte_count <= 5000
        assert store.scope_bytes(views[-1].scope) > 0  # the newest writes are kept

    async def test_dropping_a_stream_or_session_releases_its_bytes(self) -> None:
        store, _ = make_store(max_streams=2)
        view = store.scoped()
        for stream in ("1", "2", "3"):
            await view.store_event(stream, result(1, "z" * 100))
        assert store.stream_count == 2
        kept = store.byte_count
        assert 0 < kept == store.scope_bytes(view.scope)
        view.release()
        assert store.byte_count == 0 and store.scope_bytes(view.scope) == 0

    async def test_a_full_stream_releases_the_bytes_of_what_it_drops(self) -> None:
        store, _ = make_store(max_events_per_stream=3)
        view = store.scoped()
        for n in range(10):
            await view.store_event("1", result(n, "w" * 100))
        assert store.event_count == 3
        assert store.byte_count == sum(
            len(result(n, "w" * 100).model_dump_json(by_alias=True, exclude_unset=True)) for n in range(7, 10)
        )


# --- what a kept event costs the garbage collector -----------------------------------------------------------


async def test_a_kept_result_is_its_text_not_its_objects() -> None:
    """A result is kept as its JSON text: one string the garbage collector does not track, where its pydantic
    model and dicts were dozens of objects that every full collection walked (1 000 results are kept under a
    load of 100 sessions). The store keeps no reference to the message it was given, and replays it equal."""
    import gc
    import weakref

    store, _ = make_store()
    view = store.scoped()
    first = await view.store_event("0", progress(0))
    message = JSONRPCResponse(jsonrpc="2.0", id=0, result={"content": [{"type": "text", "text": "x"}], "n": [1]})
    given = weakref.ref(message)
    await view.store_event("0", message)
    del message
    assert given() is None, "the store holds the message's objects"
    (kept,) = [e.data for stream in store._streams.values() for e in stream.events if e.answers == 0]
    assert not gc.is_tracked(kept)
    _, sink = await replay(view, first)
    assert sink.messages == [
        JSONRPCResponse(jsonrpc="2.0", id=0, result={"content": [{"type": "text", "text": "x"}], "n": [1]})
    ]
