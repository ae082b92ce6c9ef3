"""The revision store (pure logic): bounded by bytes and per session, content-addressed, cut reads marked."""

from __future__ import annotations

from jupyter_notebook_mcp.revisions import Revisions, revision_of


def test_a_revision_names_the_text_and_says_when_the_read_was_cut() -> None:
    assert revision_of("a") == revision_of("a") != revision_of("b")
    assert len(revision_of("a")) == 12
    assert revision_of("a", cut=True) == "cut-" + revision_of("a")


def test_texts_are_kept_by_revision_within_a_byte_bound() -> None:
    store = Revisions(max_bytes=10)
    first = store.served("aaaa")
    second = store.served("bbbb")
    assert store.base(first, live="zzz") is not None
    store.served("cccc")  # 12 bytes: the least recently used ("bbbb") goes
    assert store.size <= 10
    assert store.base(second, live="zzz") is None
    assert store.base(first, live="zzz") is not None
    assert store.served("x" * 11) and store.size <= 10  # larger than the bound: not kept at all


def test_an_unknown_revision_of_the_live_text_is_the_live_text() -> None:
    store = Revisions(max_bytes=0)
    base = store.base(revision_of("live"), live="live")
    assert base is not None and base.text == "live" and not base.cut
    assert store.base(revision_of("old"), live="live") is None


def test_a_cut_read_is_a_cut_base() -> None:
    store = Revisions()
    revision = store.served("long text", cut=True)
    base = store.base(revision, live="long text!")
    assert base is not None and base.cut and base.text == "long text"


def test_sessions_remember_their_last_read_per_key_bounded_and_forgotten() -> None:
    store = Revisions(max_per_session=2)
    store.served("one", session="s", key=("nb", "", "c1"))
    store.served("two", session="s", key=("nb", "", "c2"))
    store.served("three", session="s", key=("nb", "", "c3"))
    assert store.last_served("s", ("nb", "", "c1")) is None  # the oldest key went
    assert store.last_served("s", ("nb", "", "c3")) == revision_of("three")
    assert store.last_served(None, ("nb", "", "c3")) is None  # stateless: nothing remembered
    assert store.last_served("other", ("nb", "", "c3")) is None
    store.forget("s")
    assert store.last_served("s", ("nb", "", "c3")) is None
