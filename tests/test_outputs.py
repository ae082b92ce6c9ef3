"""Stream outputs written chunk by chunk match JupyterLab's own handling, at a cost linear in the output.

Pure logic on a fresh pycrdt document (no server): the writer under test is the one execution uses
(``begin``/``write_batch``), and a second document fed the updates stands for a collaborator.
"""

from __future__ import annotations

import contextlib
import random
from collections.abc import Iterator
from typing import Any

import pytest
from pycrdt import Array, Doc, Map, Text

from jupyter_pair_mcp.adapters.rooms import outputs as outputs_module
from jupyter_pair_mcp.adapters.rooms.outputs import SEAL_BYTES, RunState, StreamCursor, begin, end, write_batch


def jupyterlab_process_text(index: int, new_text: str, text: str) -> tuple[str, int]:
    """JupyterLab 4.6's ``Private.processText`` (packages/outputarea/src/model.ts), transcribed as is."""
    if not any(c in new_text for c in "\b\r\n"):
        return text[:index] + new_text + text[index + len(new_text) :], index + len(new_text)
    idx0, last_end = index, 0
    while True:
        found = [i for i in (new_text.find(c, last_end) for c in "\n\b\r") if i >= 0]
        idx1 = min(found) if found else -1
        prefix = new_text[last_end : len(new_text) if idx1 == -1 else idx1]
        text = text[:idx0] + prefix + text[idx0 + len(prefix) :]
        last_end = idx1 + 1
        idx0 += len(prefix)
        if idx1 == -1:
            return text, idx0
        char = new_text[idx1]
        if char == "\b":
            if idx0 > 0 and text[idx0 - 1] != "\n":
                text = text[: idx0 - 1] + text[idx0 + 1 :]
                idx0 -= 1
        elif char == "\r":
            while idx0 > 0 and text[idx0 - 1] != "\n":
                idx0 -= 1
        else:
            text = text + "\n"
            idx0 = len(text)


def jupyterlab_outputs(chunks: list[tuple[str, str]]) -> list[dict[str, str]]:
    """What JupyterLab's ``OutputAreaModel._add`` makes of stream messages: merged per same-name run."""
    outputs: list[dict[str, str]] = []
    index = 0
    for name, chunk in chunks:
        if outputs and outputs[-1]["name"] == name:
            outputs[-1]["text"], index = jupyterlab_process_text(index, chunk, outputs[-1]["text"])
        else:
            text, index = jupyterlab_process_text(0, chunk, "")
            outputs.append({"output_type": "stream", "name": name, "text": text})
    return outputs


class FakeView:
    """The two things the output writer needs from a notebook view, on a fresh document."""

    def __init__(self) -> None:
        self.doc: Doc = Doc()
        self.cells = self.doc.get("cells", type=Array)
        with self.doc.transaction():
            self.cells.append(Map({"id": "c", "cell_type": "code", "outputs": Array()}))

    def ycell(self, cell_id: str) -> Any:
        return self.cells[0]

    def transaction(self, summary: str = "") -> Any:
        return self.doc.transaction()

    def outputs(self) -> list[dict[str, Any]]:
        return [_plain(o) for o in self.cells[0]["outputs"]]


def _plain(output: Any) -> dict[str, Any]:
    return {key: str(value) if isinstance(value, Text) else value for key, value in output.items()}


class Replica:
    """A collaborator's copy of the document, fed every update the writer's document emits."""

    def __init__(self, source: Doc) -> None:
        self.doc: Doc = Doc()
        self.doc.apply_update(source.get_update())
        self.cells = self.doc.get("cells", type=Array)
        source.observe(lambda event: self.doc.apply_update(event.update))

    def outputs(self) -> list[dict[str, Any]]:
        return [_plain(o) for o in self.cells[0]["outputs"]]


def run_stream(chunks: list[tuple[str, str]], per_transaction: int = 1) -> tuple[FakeView, Replica]:
    view = FakeView()
    replica = Replica(view.doc)
    state = RunState("c")
    begin(view, state)  # type: ignore[arg-type]
    messages = [("stream", {"name": name, "text": text}) for name, text in chunks]
    for i in range(0, len(messages), per_transaction):
        write_batch(view, state, messages[i : i + per_transaction])  # type: ignore[arg-type]
    end(view, state, 1)  # type: ignore[arg-type]
    return view, replica


MEANING = "The meaning of life is....\nSome people... More text."
ANSI = ["\x1b[31m", "\x1b[0m", "\x1b[2K", "\x1b[1;32m", "\x1b[A"]
WORDS = ["a", "bc", "xyz", "é", "日本", "progress", "  ", "\t", "%"]


def random_stream(rng: random.Random) -> str:
    parts: list[str] = []
    for _ in range(rng.randint(1, 80)):
        roll = rng.random()
        if roll < 0.15:
            parts.append(rng.choice(["\r", "\r", "\n", "\b", "\r\n", "\b\b", "\n\r", "\r\r"]))
        elif roll < 0.2:
            parts.append(rng.choice(ANSI))
        elif roll < 0.23:
            parts.append(rng.choice("xyz") * rng.randint(500, 5000))  # long runs
        elif roll < 0.27:
            parts.append("".join(f"\r{i}%" for i in range(rng.randint(1, 300))))  # a progress bar
        else:
            parts.append(rng.choice(WORDS))
    return "".join(parts)


def random_chunks(rng: random.Random, stream: str) -> list[str]:
    """Cut ``stream`` at random places: mostly small chunks, some single characters, some big ones."""
    chunks, at = [], 0
    while at < len(stream):
        size = rng.choice([1, 1, 2, 3, 5, 8, 20, 100, 2000])
        chunks.append(stream[at : at + size])
        at += size
    return chunks


@pytest.mark.parametrize("seed", range(40))
def test_fuzz_matches_jupyterlab_on_the_concatenated_stream(seed: int) -> None:
    """Random streams cut in random chunks, written chunk by chunk, give what JupyterLab makes of the
    whole stream at once (a stream name change starts a new output, as in JupyterLab)."""
    rng = random.Random(seed)
    runs = [(rng.choice(["stdout", "stderr"]), random_stream(rng)) for _ in range(rng.randint(1, 3))]
    chunks = [(name, chunk) for name, stream in runs for chunk in random_chunks(rng, stream)]
    expected = jupyterlab_outputs(runs)
    view, replica = run_stream(chunks, per_transaction=rng.choice([1, 1, 7]))
    assert view.outputs() == expected
    assert replica.outputs() == expected


@pytest.mark.parametrize(
    ("chunks", "text"),
    [
        # JupyterLab 4.6 packages/outputarea/test/model.spec.ts
        (["Jupyter\rj"], "jupyter"),
        (["Jupyter\rj", "\njj\bupyter"], "jupyter\njupyter"),
        (["Jupyter\rj", "\njj\bupyter", "\r\r\njupyter"], "jupyter\njupyter\njupyter"),
        (["abc\r", "\n-"], "abc\n-"),  # a \r ending a chunk waits for the next one
        (["The meaning of life is....\nSome people... ", "More text."], MEANING),
        # character-by-character overwrite, and the rest
        (["downloading 10%", "\rdone"], "doneloading 10%"),
        (["12345\r", "ab"], "ab345"),
        (["a\r\nb"], "a\nb"),
        (["abc\rX\n"], "Xbc\n"),
        (["abc\b\b", "Z"], "aZ"),
        (["abcd\r", "x\b"], "cd"),  # JupyterLab's \b inside a line also deletes the character under the cursor
        (["\b\b\ra"], "a"),
        (["line\n\b"], "line\n"),  # never deletes a newline
        (["\x1b[31mred\x1b[0m\r\x1b[32m"], "\x1b[32mred\x1b[0m"),  # ANSI codes are plain characters
    ],
)
def test_jupyterlab_examples(chunks: list[str], text: str) -> None:
    view, replica = run_stream([("stdout", c) for c in chunks])
    assert view.outputs() == replica.outputs() == [{"output_type": "stream", "name": "stdout", "text": text}]
    assert jupyterlab_outputs([("stdout", c) for c in chunks])[0]["text"] == text


@contextlib.contextmanager
def counting_text_operations() -> Iterator[dict[str, int]]:
    """Count what the writer does to Y texts: characters inserted, bytes deleted, whole-text reads."""
    counts = {"inserted": 0, "deleted": 0, "reads": 0, "operations": 0}
    insert, delete, read = Text.insert, Text.__delitem__, Text.__str__

    def counted_insert(self: Text, index: int, value: str, *args: Any, **kwargs: Any) -> None:
        counts["inserted"] += len(value)
        counts["operations"] += 1
        insert(self, index, value, *args, **kwargs)

    def counted_delete(self: Text, key: Any) -> None:
        counts["deleted"] += (key.stop - key.start) if isinstance(key, slice) else 1
        counts["operations"] += 1
        delete(self, key)

    def counted_read(self: Text) -> str:
        counts["reads"] += 1
        return read(self)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(Text, "insert", counted_insert)
        patch.setattr(Text, "__delitem__", counted_delete)
        patch.setattr(Text, "__str__", counted_read)
        yield counts


@pytest.mark.parametrize("pattern", ["long line", "many lines", "progress bar"])
def test_work_per_chunk_does_not_grow_with_the_stream(pattern: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Per chunk, the writer touches O(chunk + last line) of text, whatever was written before it."""
    touched: list[int] = []
    feed = StreamCursor.feed

    def counted_feed(self: StreamCursor, chunk: str) -> Any:
        change = feed(self, chunk)
        touched.append(len(change.old) + len(change.new))
        return change

    monkeypatch.setattr(StreamCursor, "feed", counted_feed)
    view = FakeView()
    state = RunState("c")
    begin(view, state)  # type: ignore[arg-type]
    chunk = {"long line": "x" * 100, "many lines": "x" * 99 + "\n", "progress bar": "\r" + "y" * 99}[pattern]
    per_chunk = []
    with counting_text_operations() as counts:
        for _ in range(3000):  # 300 k characters
            before = dict(counts)
            write_batch(view, state, [("stream", {"name": "stdout", "text": chunk})])  # type: ignore[arg-type]
            per_chunk.append({key: counts[key] - before[key] for key in counts})
    assert counts["reads"] == 0, "the stream's Y text is never read back"
    assert max(touched) <= 2 * len(chunk)
    for work in per_chunk:
        assert work["inserted"] <= len(chunk) + 1  # + 1: the character of a seal
        assert work["deleted"] <= len(chunk) + 1
        assert work["operations"] <= 4
    seals = (sum(w["operations"] for w in per_chunk) - sum(1 for w in per_chunk if w["inserted"])) // 2
    assert seals <= 3000 * len(chunk) // SEAL_BYTES + 1
    text = str(view.cells[0]["outputs"][0]["text"])
    assert text == {"long line": chunk * 3000, "many lines": chunk * 3000, "progress bar": "y" * 99}[pattern]


def test_seal_is_invisible_to_collaborators() -> None:
    view, replica = run_stream([("stdout", "a" * 40_000)] * 5)
    assert replica.outputs()[0]["text"] == view.outputs()[0]["text"] == "a" * 200_000
    assert outputs_module.SEAL_BYTES < 200_000
