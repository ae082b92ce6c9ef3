"""A notebook read in a worker process comes back in parcels of cells, so taking it in never stops the loop.

A worker's result is unpickled in one call (concurrent.futures' result thread, ``pickle.loads``), and a call into C
holds the GIL throughout: a 100,000-cell notebook's dict took ~0.6 s, which the loop waits out however idle it is
(the loop monitor, which counts the loop thread's CPU, does not see it). So the worker pickles the cells itself,
:data:`PARCEL_CELLS` at a time (:func:`pack`); the result is then a list of bytes (unpickled as copies of bytes,
~10 ms for 30 MB), and :func:`unpack` rebuilds the cells in a thread one parcel per ``pickle.loads`` (~3 ms each),
between which the loop takes the GIL back.
"""

from __future__ import annotations

import asyncio
import pickle
from dataclasses import dataclass
from typing import Any

#: Cells per parcel: ~3 ms to unpickle 500 cells of a worked notebook (a stream output each), a few KB each.
PARCEL_CELLS = 500


@dataclass(frozen=True)
class Packed:
    """A notebook with ``None`` for its cells (``value``) and its cells pickled in order, :data:`PARCEL_CELLS` a
    parcel."""

    value: dict[str, Any]
    parcels: list[bytes]


def pack(notebook: dict[str, Any] | None) -> Packed | dict[str, Any] | None:
    """In the worker: ``notebook`` with its cells in parcels (a notebook without a cells list is sent as it is)."""
    if notebook is None or not isinstance(notebook.get("cells"), list):
        return notebook
    cells = notebook["cells"]
    parcels = [
        pickle.dumps(cells[start : start + PARCEL_CELLS], protocol=pickle.HIGHEST_PROTOCOL)
        for start in range(0, len(cells), PARCEL_CELLS)
    ]
    return Packed({**notebook, "cells": None}, parcels)  # its keys in their order


def _rebuild(packed: Packed) -> dict[str, Any]:
    cells: list[Any] = []
    for parcel in packed.parcels:  # one C call per parcel: the loop's thread gets the GIL in between
        cells.extend(pickle.loads(parcel))
    notebook = dict(packed.value)
    notebook["cells"] = cells
    return notebook


async def unpack(received: Packed | dict[str, Any] | None) -> dict[str, Any] | None:
    """The notebook :func:`pack` sent, rebuilt in a thread a parcel at a time."""
    if not isinstance(received, Packed):
        return received
    return await asyncio.to_thread(_rebuild, received)
