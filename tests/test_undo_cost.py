"""An agent's edits cost the same however many it made: the undo tracker names each step without asking
pycrdt for its whole undo stack (which it builds as a list on every ask), and still names them right."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pycrdt

from jupyter_pair_mcp.adapters.rooms.edits import Edit, EditJournal
from jupyter_pair_mcp.adapters.rooms.undo import UndoTracker

from .conftest import WholeReads, call_tool


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


async def test_an_undo_reads_cell_ids_from_the_index_not_the_cells(
    mcp_client: Any, make_notebook: Any, whole_reads: WholeReads
) -> None:
    """Which cells an undo removed comes from the room's cell index: no cell is read (reading every cell id
    took 144 ms of the loop at 10,000 cells with outputs)."""
    path = make_notebook("undo.ipynb", [{"cell_type": "code", "source": "x = 0", "id": "c0"}])
    async with mcp_client() as client:
        inserted = await call_tool(
            client,
            "batch_insert_notebook_cells",
            path=path,
            after_cell_id="c0",
            cells=[{"content": "y = 1"}],
            exec=False,
        )
        new_id = inserted["inserted"][0]["id"]
        before = whole_reads.n
        result = await call_tool(client, "undo_agent_edits", path=path)
        assert whole_reads.n == before, "the undo read every cell"
        assert result["removed_cells"] == [new_id]
