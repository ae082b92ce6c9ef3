"""An agent's edits cost the same however many it made: the undo tracker names each step without asking
pycrdt for its whole undo stack (which it builds as a list on every ask), and still names them right."""

from __future__ import annotations

from dataclasses import dataclass

import pycrdt

from jupyter_pair_mcp.adapters.rooms.edits import Edit, EditJournal
from jupyter_pair_mcp.adapters.rooms.undo import UndoTracker


@dataclass(frozen=True)
class Agent:
    origin: str = "mcp-agent:test"


def edit(journal: EditJournal, doc: pycrdt.Doc, agent: Agent, summary: str, text: str | None) -> None:
    record = Edit("nb.ipynb", "notebook", agent, summary)
    with journal.recording(doc, record), doc.transaction(origin=agent.origin):
        if text is not None:
            doc.get("cells", type=pycrdt.Array).append(pycrdt.Map({"id": summary, "source": pycrdt.Text(text)}))


def test_edits_never_read_the_undo_stack_and_undo_names_the_steps() -> None:
    journal, doc, agent = EditJournal(), pycrdt.Doc(), Agent()
    tracker = UndoTracker(journal)
    doc.get("cells", type=pycrdt.Array)
    reads = 0
    original = pycrdt.UndoManager.undo_stack

    def counted(self: pycrdt.UndoManager) -> object:
        nonlocal reads
        reads += 1
        return original.fget(self)  # type: ignore[attr-defined]

    pycrdt.UndoManager.undo_stack = property(counted)  # type: ignore[assignment, method-assign]
    try:
        for i in range(300):
            edit(journal, doc, agent, f"e{i}", f"x = {i}")
        edit(journal, doc, agent, "changed nothing", None)  # no step, so no name
        assert reads == 0, "an edit must not build the undo stack"
        result = tracker.undo(doc, agent, 3, path="nb.ipynb", kind="notebook")
        assert reads >= 1, "the counter sees the stack being read"
    finally:
        pycrdt.UndoManager.undo_stack = original  # type: ignore[method-assign]
    assert result.undone == ["e299", "e298", "e297"]
    assert result.remaining == 297
    assert [c["id"] for c in doc.get("cells", type=pycrdt.Array).to_py()][-1] == "e296"
