"""The three-way merge (pure logic): agent changes move onto the live text past a person's, or conflict."""

from __future__ import annotations

import asyncio
import itertools
import random
import re
from types import SimpleNamespace
from typing import Any

import pytest
from pycrdt import Array, Doc, Map, Text

from jupyter_pair_mcp.adapters.rooms import merge as merge_module
from jupyter_pair_mcp.adapters.rooms.merge import (
    Hunk,
    MergeConflict,
    apply,
    apply_hunks,
    bounded,
    diff,
    ops_budget,
    rebase,
    shared_budgets,
)
from jupyter_pair_mcp.adapters.rooms.replace import plan_text
from jupyter_pair_mcp.adapters.rooms.textdoc import TextView


@pytest.mark.parametrize(
    ("old", "new"),
    [
        ("", ""),
        ("", "abc"),
        ("abc", ""),
        ("abc", "abc"),
        ("human", "hmn"),
        ("print(1)\nprint(2)\n", "print(1)\nx = 3\nprint(2)\n"),
        ("héllo wörld", "hello world!"),
        ("a" * 50 + "b" + "a" * 50, "a" * 50 + "c" + "a" * 50),
    ],
)
def test_diff_turns_old_into_new(old: str, new: str) -> None:
    hunks = diff(old, new)
    assert apply(old, hunks) == new
    for first, second in itertools.pairwise(hunks):
        assert first.end <= second.start


def test_diff_finds_separate_changes_and_keeps_a_rewritten_word_whole() -> None:
    hunks = diff("one two three four", "ONE two three FOUR")
    assert [h.insert for h in hunks] == ["ONE", "FOUR"]
    assert diff("x = compute(1)", "x = other(1)") == [Hunk(4, 11, "other")]


def test_diff_falls_back_to_one_hunk_past_its_work_bound() -> None:
    rng = random.Random(1)
    old = "".join(rng.choice("ab") for _ in range(400))
    new = "".join(rng.choice("ab") for _ in range(400))
    hunks = diff(old, new, max_work=100)
    assert len(hunks) == 1
    assert apply(old, hunks) == new


def test_append_while_a_person_types_keeps_both() -> None:
    base = "human"
    live = "human typing"  # the person typed after the agent's read
    agent = diff(base, base + "\nappended")
    assert apply(live, rebase(base, agent, live)) == "human typing\nappended"


def test_person_typing_before_the_agent_span_shifts_it() -> None:
    base = "x = 1\ny = 2\n"
    live = "# note\nx = 1\ny = 2\n"
    agent = diff(base, "x = 1\ny = 3\n")
    assert apply(live, rebase(base, agent, live)) == "# note\nx = 1\ny = 3\n"


def test_person_typing_inside_the_agent_span_is_a_conflict() -> None:
    base = "value = compute(x)"
    live = "value = compute_fast(x)"
    agent = diff(base, "value = other(x)")
    with pytest.raises(MergeConflict):
        rebase(base, agent, live)


def test_insertions_at_one_point_are_both_kept_the_person_first() -> None:
    assert apply("ab", rebase("a", [Hunk(1, 1, "X")], "ab")) == "abX"


def test_an_insertion_at_the_edge_of_a_replaced_span_is_a_conflict() -> None:
    with pytest.raises(MergeConflict):
        rebase("keep DROP keep", [Hunk(5, 9, "")], "keep >DROP keep")
    with pytest.raises(MergeConflict):
        rebase("keep DROP keep", [Hunk(9, 9, "!")], "keep  keep")


def test_a_deletion_away_from_a_person_insertion_keeps_the_insertion() -> None:
    base = "keep DROP keep"
    live = ">keep DROP keep"
    assert apply(live, rebase(base, [Hunk(5, 10, "")], live)) == ">keep keep"


def test_a_change_both_sides_made_is_made_once() -> None:
    base = "a = 1\nb = 2\n"
    live = "a = 10\nb = 2\n"
    agent = diff(base, "a = 10\nb = 20\n")
    assert apply(live, rebase(base, agent, live)) == "a = 10\nb = 20\n"


def test_rebase_is_exact_when_nothing_changed() -> None:
    agent = [Hunk(0, 1, "Z"), Hunk(3, 3, "!")]
    assert rebase("abc", agent, "abc") == agent


def test_random_disjoint_edits_merge_like_applying_both() -> None:
    rng = random.Random(7)
    for _ in range(300):
        base = "".join(rng.choice("abc\n ") for _ in range(rng.randint(0, 40)))
        cut = rng.randint(0, len(base))
        left, right = base[:cut], base[cut:]
        # The person edits only the left part, the agent only the right part: never the same characters.
        person = _mutate(rng, left) + right
        agent_text = left + _mutate(rng, right)
        try:
            merged = apply(person, rebase(base, diff(base, agent_text), person))
        except MergeConflict:
            continue  # a diff may align across the cut: then refusing is allowed, losing text is not
        assert merged == _mutate_both(person, agent_text, left, right)


def _mutate(rng: random.Random, text: str) -> str:
    chars = list(text)
    for _ in range(rng.randint(0, 3)):
        at = rng.randint(0, len(chars))
        if chars and rng.random() < 0.4 and at < len(chars):
            del chars[at]
        else:
            chars.insert(at, rng.choice("XYZ"))
    return "".join(chars)


def _mutate_both(person: str, agent_text: str, left: str, right: str) -> str:
    return person[: len(person) - len(right)] + agent_text[len(left) :]


def test_diff_of_random_edits_turns_old_into_new() -> None:
    rng = random.Random(7)
    for _ in range(300):
        old = "".join(rng.choice("ab\nc") for _ in range(rng.randrange(0, 120)))
        new = list(old)
        for _ in range(rng.randrange(0, 6)):
            at = rng.randrange(0, len(new) + 1)
            if new and rng.random() < 0.5:
                del new[at : at + rng.randrange(1, 4)]
            else:
                new[at:at] = rng.choice(["x", "yy", "\nz"])
        hunks = diff(old, "".join(new))
        assert apply(old, hunks) == "".join(new)
        for first, second in itertools.pairwise(hunks):
            assert first.end < second.start


@pytest.mark.parametrize("size", [1_000_000, 4_000_000])
def test_a_huge_text_changed_at_both_ends_is_two_hunks(size: int) -> None:
    """The equal middle is compared in C, a block at a time: the diff finds both changes (a person typing in
    the middle then merges), where a character-by-character walk would give up and make one coarse hunk."""
    old = ("0123456789abcdef" * (size // 16 + 1))[:size]
    new = "START" + old[5:-5] + "!!END"
    assert diff(old, new) == [Hunk(0, 5, "START"), Hunk(size - 5, size, "!!END")]
    merged = rebase(old, diff(old, new), old[: size // 2] + "PERSON" + old[size // 2 :])
    assert merged == [Hunk(0, 5, "START"), Hunk(size + 1, size + 6, "!!END")]


class _CountingText:
    """A real Y text that counts the operations made on it (the cost guard: operations, not seconds)."""

    def __init__(self, text: Any) -> None:
        self.text, self.ops = text, 0

    def __delitem__(self, key: slice) -> None:
        self.ops += 1
        del self.text[key]

    def insert(self, index: int, value: str) -> None:
        self.ops += 1
        self.text.insert(index, value)


@pytest.mark.parametrize(("matches", "size"), [(20_000, 1), (2_000, 2_000)])
def test_many_hunks_are_applied_in_a_bounded_number_of_operations(matches: int, size: int) -> None:
    """20,000 replacements in one cell once cost 40,000 Y text operations, each walking the text: now at most
    ops_budget(text) replacements, the closest matches joined, with the same result (multi-byte text too)."""
    source = ("é" * size + "x\n") * matches
    doc = Doc()
    ytext = doc.get("source", type=Text)
    ytext += source
    planned = plan_text(source, re.compile("x"), "yy", literal=True)
    assert planned.count == matches
    assert len(planned.hunks) == ops_budget(source)
    counting = _CountingText(ytext)
    with doc.transaction():
        apply_hunks(counting, source, planned.hunks)
    assert str(ytext) == source.replace("x", "yy")
    assert counting.ops <= 2 * ops_budget(source)


def test_texts_edited_in_one_transaction_share_one_operations_budget() -> None:
    """500 matches in each of 200 cells, in one transaction: yrs moves every later block of the client at each
    split, so the cost grows with all the operations made before, in any text. The cells share one budget of
    MAX_TEXT_OPS operations (it once made 100 000), and the result is the same."""
    sources = ["x\n" * 500] * 200
    doc = Doc()
    cells = doc.get("cells", type=Array)
    with doc.transaction():
        for source in sources:
            cells.append(Map({"source": Text(source)}))
    plans = [plan_text(source, re.compile("x"), "yy", literal=True) for source in sources]
    budgets = shared_budgets(sources, [len(p.hunks) for p in plans])
    assert all(b >= 1 for b in budgets) and sum(budgets) <= merge_module.MAX_TEXT_OPS
    texts = [_CountingText(cells[i]["source"]) for i in range(len(sources))]
    with doc.transaction():
        for text, source, planned, most in zip(texts, sources, plans, budgets, strict=True):
            apply_hunks(text, source, planned.hunks, most)
    assert all(str(cells[i]["source"]) == "yy\n" * 500 for i in range(len(sources)))
    assert sum(t.ops for t in texts) <= 2 * merge_module.MAX_TEXT_OPS
    assert shared_budgets(["a", "b"], [3, 1]) == [3, 1], "under the budget: what each wants"
    assert shared_budgets(["a"] * 600, [5] * 600) == [1] * 600, "more texts than the budget: one each"


def test_bounded_keeps_the_widest_stretches_untouched() -> None:
    text = "a" * 100
    hunks = [Hunk(0, 1, "A"), Hunk(2, 3, "B"), Hunk(50, 51, "C"), Hunk(52, 53, "D")]
    assert bounded(text, hunks, 2) == [Hunk(0, 3, "AaB"), Hunk(50, 53, "CaD")]
    assert bounded(text, hunks, 1) == [Hunk(0, 53, apply(text, hunks)[:53])]


def test_a_replace_planned_from_a_snapshot_keeps_what_a_person_typed_meanwhile() -> None:
    """The plan is made off the loop from a snapshot; a person's typing between two matches before it is
    applied stays where it was typed (the plan is moved past it), and typing inside a match conflicts."""
    doc = Doc()
    ytext = doc.get("source", type=Text)
    ytext += "x = 1\nx = 2\n"
    view = TextView(SimpleNamespace(ydoc=doc), "t.txt")
    planned = plan_text(view.text, re.compile("x"), "value", literal=True)
    ytext.insert(5, "  # typed")
    view.apply_replacement(planned, "x")
    assert view.text == "value = 1  # typed\nvalue = 2\n"
    planned = plan_text(view.text, re.compile("value"), "v", literal=True)
    ytext.insert(2, "LU")
    with pytest.raises(MergeConflict):
        view.apply_replacement(planned, "value")


async def test_the_diffs_of_one_loop_turn_share_one_budget() -> None:
    """A batch of whole-source rewrites runs one diff per cell in one step of the loop: together they spend at
    most MAX_DIFF_WORK_PER_TURN steps, then settle for coarse hunks (still exact); the next turn refills."""
    rng = random.Random(3)
    pairs = []
    for _ in range(20):
        old = "".join(rng.choice("abcdefgh \n") for _ in range(2000))
        new = list(old)
        for at in rng.sample(range(2000), 40):
            new[at] = "X"
        pairs.append((old, "".join(new)))
    spent: list[int] = []
    real = merge_module._myers

    def counting(a: str, b: str, max_work: int) -> Any:
        hunks, work = real(a, b, max_work)
        spent.append(work)
        return hunks, work

    merge_module._myers = counting  # type: ignore[assignment]
    try:
        for old, new in pairs:
            assert apply(old, diff(old, new)) == new
        assert sum(spent) <= merge_module.MAX_DIFF_WORK_PER_TURN + merge_module.MAX_DIFF_WORK
        assert len(diff(*pairs[0])) == 1  # the budget is spent: coarse
        await asyncio.sleep(0)
        assert len(diff(*pairs[0])) > 1  # a new turn: a fine diff again
    finally:
        merge_module._myers = real  # type: ignore[assignment]
