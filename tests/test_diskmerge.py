"""The three-way merge of a file changed on disk with a room's unsaved changes (adapters/rooms/diskmerge.py)."""

from __future__ import annotations

from typing import Any

from jupyter_pair_mcp.adapters.rooms.diskmerge import merge_notebook, merge_text


def nb(*cells: dict[str, Any], **metadata: Any) -> dict[str, Any]:
    return {"cells": list(cells), "metadata": metadata, "nbformat": 4, "nbformat_minor": 5}


def cell(cell_id: str, source: str, **fields: Any) -> dict[str, Any]:
    return {"id": cell_id, "cell_type": "code", "source": source, "metadata": {}, "outputs": [], **fields}


def sources(notebook: dict[str, Any]) -> list[tuple[str, str]]:
    return [(c["id"], c["source"]) for c in notebook["cells"]]


def test_changes_to_different_cells_are_both_kept() -> None:
    base = nb(cell("a", "a = 1"), cell("b", "b = 1"))
    ours = nb(cell("a", "a = 2"), cell("b", "b = 1"))
    theirs = nb(cell("a", "a = 1"), cell("b", "b = 'disk'"))
    merged = merge_notebook(base, ours, theirs)
    assert sources(merged.content) == [("a", "a = 2"), ("b", "b = 'disk'")]
    assert merged.conflicts == [] and merged.kept_ours


def test_different_fields_of_one_cell_are_both_kept() -> None:
    base = nb(cell("a", "a = 1"))
    ours = nb(cell("a", "a = 2"))
    theirs = nb(cell("a", "a = 1", metadata={"tags": ["t"]}, outputs=[{"output_type": "stream"}]))
    merged = merge_notebook(base, ours, theirs)
    assert merged.content["cells"] == [
        cell("a", "a = 2", metadata={"tags": ["t"]}, outputs=[{"output_type": "stream"}])
    ]
    assert merged.conflicts == []


def test_the_same_field_changed_on_both_sides_is_a_conflict_the_file_wins() -> None:
    base = nb(cell("a", "a = 1"), cell("b", "b = 1"))
    ours = nb(cell("a", "a = 'room'"), cell("b", "b = 2"))
    theirs = nb(cell("a", "a = 'disk'"), cell("b", "b = 1"))
    merged = merge_notebook(base, ours, theirs)
    assert sources(merged.content) == [("a", "a = 'disk'"), ("b", "b = 2")]
    assert merged.conflicts == ["a"]


def test_the_same_change_on_both_sides_is_no_conflict() -> None:
    base = nb(cell("a", "a = 1"))
    both = nb(cell("a", "a = 2"))
    merged = merge_notebook(base, both, both)
    assert merged.conflicts == [] and not merged.kept_ours


def test_deletions_against_edits() -> None:
    base = nb(cell("a", "a"), cell("b", "b"), cell("c", "c"), cell("d", "d"))
    ours = nb(cell("a", "a"), cell("c", "c room"), cell("d", "d"))  # deleted b, changed c
    theirs = nb(cell("a", "a"), cell("b", "b"), cell("d", "d disk"))  # deleted c, changed d
    merged = merge_notebook(base, ours, theirs)
    # b: deleted in the room only, so it goes; c: changed in the room, deleted on disk: a conflict, it goes.
    assert sources(merged.content) == [("a", "a"), ("d", "d disk")]
    assert merged.conflicts == ["c"]
    # Deleted in the room while changed on disk: the file's cell comes back (a conflict).
    merged = merge_notebook(
        base,
        nb(cell("a", "a"), cell("c", "c"), cell("d", "d")),
        nb(*base["cells"][:1], cell("b", "b disk"), *base["cells"][2:]),
    )
    assert ("b", "b disk") in sources(merged.content) and merged.conflicts == ["b"]


def test_cells_added_on_either_side_follow_the_cell_they_followed() -> None:
    base = nb(cell("a", "a"), cell("b", "b"))
    ours = nb(cell("a", "a"), cell("r", "room"), cell("b", "b"))
    theirs = nb(cell("d", "disk first"), cell("a", "a"), cell("b", "b"), cell("e", "disk last"))
    merged = merge_notebook(base, ours, theirs)
    assert [c["id"] for c in merged.content["cells"]] == ["d", "a", "r", "b", "e"]


def test_a_reorder_in_the_room_only_is_kept() -> None:
    base = nb(cell("a", "a"), cell("b", "b"), cell("c", "c"))
    ours = nb(cell("c", "c"), cell("a", "a"), cell("b", "b"))
    theirs = nb(cell("a", "a"), cell("b", "b 2"), cell("c", "c"))
    merged = merge_notebook(base, ours, theirs)
    assert sources(merged.content) == [("c", "c"), ("a", "a"), ("b", "b 2")]


def test_notebook_metadata_is_merged_key_by_key() -> None:
    base = nb(cell("a", "a"), kernelspec={"name": "python3"})
    ours = nb(cell("a", "a"), kernelspec={"name": "julia"})
    theirs = nb(cell("a", "a"), kernelspec={"name": "python3"}, tags=["x"])
    merged = merge_notebook(base, ours, theirs)
    assert merged.content["metadata"] == {"kernelspec": {"name": "julia"}, "tags": ["x"]}


def test_cells_without_ids_merge_as_whole_documents() -> None:
    base = nb({"cell_type": "code", "source": "a"})
    ours = nb({"cell_type": "code", "source": "room"})
    theirs = nb({"cell_type": "code", "source": "disk"})
    merged = merge_notebook(base, ours, theirs)
    assert merged.content == theirs and merged.conflicts
    assert merge_notebook(None, ours, theirs).content == theirs  # no base: the file, as upstream


def test_text_is_merged_line_wise_and_a_clash_takes_the_file() -> None:
    merged = merge_text("one\ntwo\n", "one\ntwo\nroom\n", "disk\none\ntwo\n")
    assert merged.content == "disk\none\ntwo\nroom\n" and merged.conflicts == [] and merged.kept_ours
    clash = merge_text("one\n", "room\n", "disk\n")
    assert clash.content == "disk\n" and clash.conflicts == ["text"]
    assert merge_text("one\n", "one\n", "disk\n").content == "disk\n"
