"""A cell update merged from the text its agent read: the hunks that carry it out on the live text.

Kept apart from :mod:`.notebook` (which applies them in the room's transaction) because it is pure: text in,
hunks out, or a :class:`~jupyter_pair_mcp.errors.Conflict` that shows the agent the cell as it is now.
"""

from __future__ import annotations

from jupyter_pair_mcp.adapters.rooms.cells import CellChange
from jupyter_pair_mcp.adapters.rooms.merge import Hunk, MergeConflict, apply, diff, hunks_of, rebase
from jupyter_pair_mcp.errors import Conflict, InvalidArgument
from jupyter_pair_mcp.render import CUT_MARKER, cut
from jupyter_pair_mcp.revisions import Base, revision_of


def merged_change(cell_id: str, live: str, change: CellChange, base: Base | None) -> tuple[list[Hunk], str]:
    """The hunks of ``live`` that carry out ``change``, and the source as the agent's edit defines it.

    Without a base the change is relative to the live text. With one, the agent's change from its base
    is moved onto the live text past what others changed since (adapters/rooms/merge.py); where both changed
    the same characters, nothing is applied and the agent is shown the cell as it is now.
    """
    reference = base.text if base is not None else live
    if change.operations is not None:
        agent = hunks_of(change.operations, reference)
        text = apply(reference, agent)
    elif change.source is not None:
        if base is not None and base.cut:
            raise Conflict(
                f"your read of cell {cell_id!r} (revision {base.revision}) was cut at max_content_length, so "
                "writing a whole source from it would delete the rest: re-read the cell whole (get_notebook with "
                "cell_ids and a larger max_content_length), or edit with operations; nothing was applied"
            )
        if CUT_MARKER.search(change.source):
            raise InvalidArgument(
                f"the content for cell {cell_id!r} contains the marker of a cut read ('[... N more characters "
                "cut]'): writing it would delete the part that was cut; re-read the cell whole, or edit with "
                "operations; nothing was applied"
            )
        text = change.source
        agent = diff(reference, text)
    else:
        return [], live
    if base is None or base.text == live:
        return agent, text
    try:
        return rebase(base.text, agent, live), text
    except MergeConflict as conflict:
        now = revision_of(live)
        raise Conflict(
            f"cell {cell_id!r} changed where your edit applies: since your read (revision {base.revision}) "
            f"characters {conflict.other.start}-{conflict.other.end} of what you read were changed, and your "
            f"edit changes characters {conflict.agent.start}-{conflict.agent.end}; nothing was applied. "
            f"The cell now reads (revision {now}):\n{cut(live, 2000)}\n"
            f"Redo your change on this text and send it with base_revision {now!r}."
        ) from None


def end_of_change(hunks: list[Hunk]) -> int | None:
    """Character offset, in the new text, just after the last hunk (where the agent's cursor goes)."""
    if not hunks:
        return None
    shift = sum(len(h.insert) - (h.end - h.start) for h in hunks[:-1])
    return hunks[-1].start + shift + len(hunks[-1].insert)
