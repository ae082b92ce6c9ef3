"""A big notebook read in a worker process comes back in parcels of cells (adapters/rooms/parcels.py): no single
unpickle of the whole notebook, which holds the GIL, and so the loop, for as long as it runs (~0.6 s at 100 000
cells). Pure logic: the worker's functions called in this process."""

from __future__ import annotations

import asyncio
import pickle

import pycrdt
from jupyter_ydoc import YNotebook

from jupyter_pair_mcp.adapters.rooms import linear_ydoc, replicas
from jupyter_pair_mcp.adapters.rooms.parcels import PARCEL_CELLS, Packed, pack, unpack


def notebook(cells: int) -> dict[str, object]:
    return {
        "metadata": {"kernelspec": {"name": "python3", "display_name": "Python 3"}},
        "nbformat": 4,
        "cells": [
            {
                "id": f"c{i}",
                "cell_type": "code",
                "source": f"x = {i}",
                "metadata": {},
                "outputs": [],
                "execution_count": None,
            }
            for i in range(cells)
        ],
        "nbformat_minor": 5,
    }


def test_a_notebook_travels_in_parcels_and_comes_back_the_same() -> None:
    value = notebook(2 * PARCEL_CELLS + 7)
    packed = pack(value)
    assert isinstance(packed, Packed)
    assert [len(pickle.loads(p)) for p in packed.parcels] == [PARCEL_CELLS, PARCEL_CELLS, 7]
    back = asyncio.run(unpack(packed))
    assert back == value and list(back) == list(value), "same content, keys in their order"
    assert pack(None) is None and asyncio.run(unpack(None)) is None


def test_the_worker_sends_a_save_read_and_an_update_read_in_parcels() -> None:
    doc = YNotebook(pycrdt.Doc())
    asyncio.run(linear_ydoc._aset(doc, notebook(3 * PARCEL_CELLS)))
    update = doc.ydoc.get_update()

    sent = linear_ydoc.read_packed(update, True)
    assert isinstance(sent, Packed) and len(sent.parcels) == 3

    assert replicas._feed("room", update, [])
    status, value, _ = replicas._read("room", [], doc.ydoc.get_state())
    assert status == "read" and isinstance(value, Packed) and len(value.parcels) == 3
    read = asyncio.run(unpack(value))
    assert read is not None and [c["source"] for c in read["cells"]][:2] == ["x = 0", "x = 1"]
    replicas._COPIES.clear()
