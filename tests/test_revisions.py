"""The revision store (pure logic): bounded by the bytes Python holds and per principal, content-addressed,
cut reads marked."""

from __future__ import annotations

import sys

from jupyter_pair_mcp.revisions import ENTRY_OVERHEAD, Reader, Revisions, held_bytes, revision_of


def test_a_revision_names_the_text_and_says_when_the_read_was_cut() -> None:
    assert revision_of("a") == revision_of("a") != revision_of("b")
    assert len(revision_of("a")) == 12
    assert revision_of("a", cut=True) == "cut-" + revision_of("a")


def test_texts_are_kept_by_revision_within_a_byte_bound() -> None:
    four = held_bytes("aaaa") + ENTRY_OVERHEAD + sys.getsizeof(revision_of("aaaa"))  # what one 4-char text costs
    store = Revisions(max_bytes=2 * four + 10)
    first = store.served("aaaa")
    second = store.served("bbbb")
    assert store.base(first, live="zzz") is not None
    store.served("cccc")  # over the bound: the least recently used ("bbbb") goes
    assert store.size <= 2 * four + 10
    assert store.base(second, live="zzz") is None
    assert store.base(first, live="zzz") is not None
    assert store.served("x" * (3 * four)) and store.size <= 2 * four + 10  # larger than the bound: not kept at all


def test_bytes_count_what_python_holds_not_characters() -> None:
    ascii_text = "a" * 1_000_000
    emoji_text = "a" * 999_999 + "\U0001f600"  # one emoji: CPython keeps every character in 4 bytes
    assert held_bytes(ascii_text) >= 1_000_000
    assert held_bytes(emoji_text) >= 4 * 1_000_000 + len(emoji_text.encode())  # and a UTF-8 copy it may cache
    assert held_bytes(emoji_text) >= sys.getsizeof(emoji_text)
    store = Revisions(max_bytes=10 * 1024 * 1024)
    for i in range(5):  # 120 edits of a 1 MB text with an emoji once took +444 MB; here the bound holds
        store.served(emoji_text + str(i))
    assert store.size <= 10 * 1024 * 1024
    assert sum(held_bytes(text) for text, _ in store._texts.values()) <= store.size
    assert len(store._texts) == 2  # 5 MB each as held: two fit in 10 MiB


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


def test_principals_remember_their_last_read_per_key_per_client_and_session() -> None:
    store = Revisions()
    key = ("nb", "", "c1")
    alone = Reader("token-a", "agent")
    store.served("one", reader=alone, key=key)
    assert store.last_served(alone, key) == revision_of("one")
    assert store.last_served(Reader("token-b", "agent"), key) is None  # another credential
    assert store.last_served(Reader("token-a", "other agent"), key) is None  # another client on the same token
    # A stateful session's own reads come first; what the principal and client were served backs them up.
    session = Reader("token-a", "agent", "s1")
    assert store.last_served(session, key) == revision_of("one")
    store.served("two", reader=Reader("token-a", "agent", "s2"), key=key)
    store.served("three", reader=session, key=key)
    assert store.last_served(Reader("token-a", "agent", "s2"), key) == revision_of("two")
    assert store.last_served(session, key) == revision_of("three")
    store.forget("token-a", "s2")
    assert store.last_served(Reader("token-a", "agent", "s2"), key) == revision_of("three")  # the client's last
    assert not store.forgot(alone)


def test_a_principals_memory_is_bounded_by_count_and_bytes_and_says_when_it_forgot() -> None:
    store = Revisions(max_per_principal=2)
    reader = Reader("p", "agent")
    store.served("one", reader=reader, key=("nb", "", "c1"))
    store.served("two", reader=reader, key=("nb", "", "c2"))
    assert not store.forgot(reader)
    store.served("three", reader=reader, key=("nb", "", "c3"))
    assert store.memory_size("p")[0] == 2
    assert store.last_served(reader, ("nb", "", "c1")) is None  # the oldest key went...
    assert store.forgot(reader)  # ...so an absent key may have been served: the caller refuses to guess
    assert store.last_served(reader, ("nb", "", "c3")) == revision_of("three")
    assert not store.forgot(Reader("q", "agent"))  # other principals are unaffected

    small = Revisions(max_principal_bytes=4096)
    for i in range(1000):
        small.served("x", reader=reader, key=("a long path/" * 4 + f"nb{i}.ipynb", "", f"cell-{i}"))
    entries, size = small.memory_size("p")
    assert size <= 4096 and 0 < entries < 1000 and small.forgot(reader)
    small.served("x", reader=Reader("r"), key=("p" * 10_000, "", "c"))  # one key larger than the bound
    assert small.memory_size("r")[0] == 0 and small.forgot(Reader("r"))
