"""A notebook room's content as jupyter_ydoc's ``YNotebook.get()`` returns it, in linear time, mostly off the loop.

``YNotebook.get()`` reads cell ``i`` by index (pycrdt walks the array up to it: O(N²) over a notebook
once edits have fragmented it) and converts each cell map through pycrdt's ``to_py``, all on the event
loop: 2.3 s for a 10,000-cell notebook with short outputs, which every save of that room — the autosave,
``save_notebook``, the save at the server's stop — holds the loop for. Here the whole ``cells`` array
and the ``meta`` map are serialized to JSON by one Rust pass each (~0.15 s for the same notebook, the
only step on the loop), and the parse and the per-cell normalisation ``YNotebook._cell_to_py`` applies
run in a worker thread. The result is equal to ``get()``'s (tests/test_stop_snapshot.py compares them);
a notebook with a repeated cell id, which ``get()`` repairs in the live document, is left to ``get()``.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

from jupyter_ydoc import YNotebook
from jupyter_ydoc.utils import cast_all


def is_notebook(document: Any) -> bool:
    return isinstance(document, YNotebook)


def notebook_json(document: Any) -> tuple[str, str]:
    """The live ``cells`` and ``meta`` as JSON text: one read transaction, linear. Call it on the loop."""
    with document.ydoc.transaction() as txn:
        cells = document._ycells.integrated.to_json(txn._txn)
        meta = document._ymeta.integrated.to_json(txn._txn)
    return str(cells), str(meta)


def notebook_content(cells_text: str, meta_text: str) -> dict[str, Any] | None:
    """What ``YNotebook.get()`` returns for that JSON, or None when cell ids repeat (``get()`` must repair
    them in the live document). Pure: safe in a worker thread."""
    meta = json.loads(meta_text)
    cast_all(meta, float, int)  # as get(): numbers come out of Yjs as floats (nbformat 4.0)
    strip_ids = int(meta.get("nbformat", 0)) == 4 and int(meta.get("nbformat_minor", 0)) <= 4
    cells = []
    seen: set[str] = set()
    for cell in json.loads(cells_text):
        if not isinstance(cell, dict):
            continue
        cell.pop("execution_state", None)
        cast_all(cell, float, int)
        cell_id = cell.get("id")
        if cell_id:
            if cell_id in seen:
                return None
            seen.add(cell_id)
        if strip_ids and "id" in cell:
            del cell["id"]
        if "attachments" in cell and cell.get("cell_type") in ("raw", "markdown") and not cell["attachments"]:
            del cell["attachments"]
        cells.append(cell)
    return {
        "cells": cells,
        "metadata": meta.get("metadata", {}),
        "nbformat": int(meta.get("nbformat", 0)),
        "nbformat_minor": int(meta.get("nbformat_minor", 0)),
    }


async def document_content(document: Any, lock: asyncio.Lock, wait: float) -> Any:
    """The document's content for its file, as ``document.get()`` gives it: read under ``lock`` (the room's
    update lock, held for the JSON pass only; TimeoutError when it is not free within ``wait`` seconds: a
    load of the file is under way) and converted in a worker thread."""
    await asyncio.wait_for(lock.acquire(), wait)
    try:
        if not is_notebook(document):
            return document.get()  # a text document: one string, linear already
        cells_text, meta_text = notebook_json(document)
    finally:
        lock.release()
    content = await asyncio.to_thread(notebook_content, cells_text, meta_text)
    if content is None:
        async with lock:
            return document.get()
    return content
