"""Seeded, bounded random interleaving of agent batches and a person's edits on one notebook.

At the end both replicas hold identical cells and, after the room saves, so does the file. The seed
is printed in the failure message so any failure can be replayed exactly.
"""

from __future__ import annotations

import asyncio
import random
from pathlib import Path
from typing import Any

import pytest

from .conftest import call_tool, document_room, until, within
from .test_notebook_live import autosaved_file

pytestmark = pytest.mark.usefixtures("jp_serverapp")

STEPS = 60


async def agent_step(rng: random.Random, client: Any, path: str) -> None:
    data = await call_tool(client, "get_notebook", path=path, include_outputs=False, include_collaboration_state=False)
    cells = data["cells"]
    choice = rng.random()
    if choice < 0.3 or len(cells) < 3:
        anchor = rng.choice(cells)["id"] if cells else None
        new = [{"content": f"agent {rng.randrange(1000)}", "cell_type": rng.choice(["code", "markdown"])}]
        args: dict[str, Any] = {"cells": new, "exec": False}
        if anchor:
            args["after_cell_id"] = anchor
        await call_tool(client, "batch_insert_notebook_cells", path=path, **args)
    elif choice < 0.65:
        picked = rng.sample(cells, k=min(len(cells), rng.randint(1, 3)))
        updates = [{"cell_id": c["id"], "content": c["source"] + f" +a{rng.randrange(100)}"} for c in picked]
        result = await within(
            client.call_tool("batch_update_notebook_cells", {"path": path, "updates": updates, "exec": False})
        )
        # a cell the person deleted meanwhile is a clean tool error, never a wrong-cell edit
        assert not result.is_error or "no cell with id" in result.content[0].text
    elif choice < 0.8:
        victim = rng.choice(cells)["id"]
        result = await within(client.call_tool("batch_delete_notebook_cells", {"path": path, "cell_ids": [victim]}))
        assert not result.is_error or "no cell with id" in result.content[0].text
    else:
        mover = rng.choice(cells)
        result = await within(
            client.call_tool(
                "move_notebook_cell",
                {"path": path, "cell_id": mover["id"], "to_index": rng.randrange(len(cells))},
            )
        )
        assert not result.is_error or "no cell" in result.content[0].text or "out of range" in result.content[0].text


def human_step(rng: random.Random, human: Any) -> None:
    count = human.document.cell_number
    choice = rng.random()
    if choice < 0.6 and count:
        index = rng.randrange(count)
        source = human.sources()[index]
        human.type_into(index, rng.randint(0, len(source)), rng.choice(["x", "é", "🙂", " ", "\n", "ab"]))
    elif choice < 0.85 or count < 2:
        human.insert_cell(rng.randint(0, count), f"human {rng.randrange(1000)}")
    else:
        human.delete_cell(rng.randrange(count))


@pytest.mark.parametrize("seed", [1, 7, 2026])
async def test_random_interleaving_converges(
    seed: int,
    mcp_client: Any,
    make_notebook: Any,
    collaborator: Any,
    jp_root_dir: Path,
    collaboration_events: list[dict[str, Any]],
    jp_serverapp: Any,
) -> None:
    rng = random.Random(seed)
    path = make_notebook(f"random-{seed}.ipynb", count=5)
    async with collaborator(path) as human, mcp_client() as client:
        for _ in range(STEPS):
            if rng.random() < 0.5:
                await agent_step(rng, client, path)
            else:
                human_step(rng, human)
            if rng.random() < 0.3:
                await asyncio.sleep(rng.choice([0, 0.001, 0.01]))
        room = document_room(jp_serverapp, path)

        def converged() -> bool:
            live = [(c["id"], c["cell_type"], str(c["source"])) for c in room._document.get()["cells"]]
            return live == [(c["id"], c["cell_type"], str(c["source"])) for c in human.cells()]

        await until(converged, what=f"seed {seed}: the replicas converging")
        data = await call_tool(client, "get_notebook", path=path, include_outputs=False)
        server_cells = [(c["id"], c["cell_type"], c["source"]) for c in data["cells"]]
        human_cells = [(c["id"], c["cell_type"], str(c["source"])) for c in human.cells()]
        assert server_cells == human_cells, f"seed {seed}: replicas diverged"
        ids = [c[0] for c in server_cells]
        assert len(ids) == len(set(ids)), f"seed {seed}: duplicated cell ids"
    saved = await autosaved_file(jp_serverapp, jp_root_dir, path)
    assert [c["id"] for c in saved["cells"]] == ids, f"seed {seed}: file differs"
    assert saved["nbformat"] == 4
    assert ["".join(c["source"]) for c in saved["cells"]] == [c[2] for c in server_cells]
    assert "overwrite" not in [e.get("action") for e in collaboration_events], f"seed {seed}: out-of-band change"
