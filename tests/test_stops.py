"""Pure logic of the activity log and the stop store: numbering, paging, bounds, who a stop holds."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path
from typing import Any

import pytest

from jupyter_pair_mcp.errors import AgentStopped, Unavailable
from jupyter_pair_mcp.services.activity import MAX_CELLS, MAX_SUMMARY, Activity, ActivityLog
from jupyter_pair_mcp.services.actors import Actor
from jupyter_pair_mcp.services.stops import REFUSAL_LOG_INTERVAL, Stops


def actor(key: str, principal: str = "p1", client: str = "agent") -> Actor:
    return Actor(key=key, name=client, client=client, session_id=None, username="u", principal=principal)


def note(path: str, type: str = "edit", text: str = "did", cells: tuple[str, ...] = ()) -> Activity:
    return Activity(0.0, "u", "n", type, path, text, cells=cells)


def test_the_log_numbers_pages_and_bounds_its_entries() -> None:
    log = ActivityLog(max_entries=5)
    for n in range(7):
        log.add(note("a" if n % 2 else "b", text=f"entry {n}"))
    assert log.latest == 7
    assert [e.seq for e in log.newest(None, 10)] == [7, 6, 5, 4, 3]  # the two oldest were dropped
    assert [e.seq for e in log.page("a", after=None, limit=10)[0]] == [4, 6]
    assert log.page("a", after=0, limit=1) == ([log.newest("a", 2)[1]], True)
    assert log.page("a", after=4, limit=1)[0][0].seq == 6 and log.page("a", after=4, limit=1)[1] is False
    assert log.page("a", after=7, limit=5) == ([], False)


def test_an_entry_is_cut_to_its_bounds_and_its_kind_is_the_recorders() -> None:
    log = ActivityLog()
    long = log.add(note("a", text="x" * 10_000, cells=("", *(f"c{n}" for n in range(100)))))
    assert len(long.description) == MAX_SUMMARY and len(long.cells) == MAX_CELLS
    assert log.add(note("a", type="execution")).kind == "run"
    assert log.add(note("a", type="stop")).kind == "broadcast"  # only the server records a stop
    stop = note("a", type="stop")
    stop.kind = "stop"
    assert log.add(stop).kind == "stop"


def test_a_stop_holds_the_key_or_the_credential_and_client_in_its_document_only() -> None:
    stops = Stops(log=ActivityLog())
    stops.add(actor("k1"), "a.ipynb", "alice")
    assert stops.add(actor("k1"), "a.ipynb", "bob").by == "alice"  # stopping again changes nothing
    for same in (actor("k1", principal="other"), actor("k2")):  # its key, or a new session of it
        with pytest.raises(AgentStopped, match="alice"):
            stops.check(same, "a.ipynb")
    stops.check(actor("k3", client="another agent"), "a.ipynb")  # another client name
    stops.check(actor("k3", principal="p2"), "a.ipynb")  # another credential
    stops.check(actor("k1"), "b.ipynb")  # another document
    assert stops.holds(actor("k2")) and not stops.holds(actor("k3", principal="p2"))
    assert stops.remove("k1", "a.ipynb") is not None and stops.remove("k1", "a.ipynb") is None
    stops.check(actor("k1"), "a.ipynb")


def test_a_stop_holds_through_every_name_of_the_file() -> None:
    files = {
        "a.ipynb": ("real:/r/a", "inode:1"),
        "link.ipynb": ("real:/r/a", "inode:1"),
        "hard.ipynb": ("real:/r/h", "inode:1"),
    }
    stops = Stops(identity=lambda path: files.get(path, (f"real:/r/{path}",)))
    stops.add(actor("k1"), "link.ipynb", "alice")
    for same in ("a.ipynb", "link.ipynb", "hard.ipynb"):
        with pytest.raises(AgentStopped):
            stops.check(actor("k1"), same)
        assert stops.where("a.ipynb")(same) and [s.key for s in stops.in_document(same)] == ["k1"]
    stops.check(actor("k1"), "b.ipynb")
    assert not stops.where("a.ipynb")("b.ipynb")
    assert stops.remove("k1", "hard.ipynb") is not None  # allowed through any of its names too
    stops.check(actor("k1"), "a.ipynb")
    assert stops._alias == {}


def test_refusals_are_logged_once_per_interval() -> None:
    now = [0.0]
    log = ActivityLog()
    stops = Stops(log=log, clock=lambda: now[0])
    stops.add(actor("k1"), "a.ipynb", "alice")
    for _ in range(3):
        with pytest.raises(AgentStopped):
            stops.check(actor("k1"), "a.ipynb", "get_notebook")
    now[0] += REFUSAL_LOG_INTERVAL
    with pytest.raises(AgentStopped):
        stops.check(actor("k1"), "a.ipynb")
    assert [e.kind for e in log.newest(None, 10)] == ["refused", "refused"]
    assert stops.get("k1", "a.ipynb").refused == 4  # type: ignore[union-attr]


def test_the_store_is_bounded_per_document_and_in_all() -> None:
    stops = Stops(max_per_document=2, max_total=3)
    stops.add(actor("k1", principal="p1"), "a", "alice")
    stops.add(actor("k2", principal="p2"), "a", "alice")
    with pytest.raises(Unavailable, match="in this document"):
        stops.add(actor("k3", principal="p3"), "a", "alice")
    stops.add(actor("k3", principal="p3"), "b", "alice")
    with pytest.raises(Unavailable, match="in all"):
        stops.add(actor("k4", principal="p4"), "c", "alice")
    stops.remove("k1", "a")
    stops.add(actor("k4", principal="p4"), "c", "alice")


def test_stops_of_grants_agents_are_kept_in_a_private_file_and_read_back(tmp_path: Any) -> None:
    """A grant's agent's stop is written (0600) and read back by the next server; a stop of an agent on the
    server's token is not (its client name holds no one after a restart); bounded; a revoked grant's go."""
    path = str(tmp_path / "data" / "pair_mcp_stops.json")
    stops = Stops(path=path, max_total=2)
    granted = Actor(key="g1", name="G", client="G", session_id=None, username="u", principal="p", grant="id1")
    stops.add(granted, "a.ipynb", "the server's owner")
    stops.add(actor("k1"), "a.ipynb", "the server's owner")
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    again = Stops(path=path)
    with pytest.raises(AgentStopped, match="the server's owner"):  # by its key alone: a new principal key
        again.check(Actor(key="g1", name="G", client="renamed", session_id=None, username="u"), "a.ipynb")
    again.check(actor("k1"), "a.ipynb")  # the token's agent's stop ended with the server
    assert [s.grant for s in again.in_document("a.ipynb")] == ["id1"]
    again.forget_grant("id1")  # revoked
    assert not again and not Stops(path=path)
    Path(path).write_text("{not json")
    assert not Stops(path=path)  # an unreadable file: no stops, and it is replaced on the next change
    many = [s.kept() | {"key": f"g{n}", "grant": f"id{n}"} for n in range(5) for s in [stops.of(granted, "a.ipynb")]]
    Path(path).write_text(json.dumps({"stops": many}))
    assert len(Stops(path=path, max_total=3).in_document("a.ipynb")) == 3  # bounded when read back too
