"""Another program rewrites a notebook between and during an agent's edits while a person types: nothing is lost.

Each round, at the same moment: the agent edits its cell, a person types in another, and another program (a
client of Jupyter's contents API, as a non-collaborative editor is) rewrites the file with a third cell changed.
Before, the room reloaded the file over its unsaved changes: edits answered OK and keystrokes went. Now the file
is merged into the room, and none of them conflict, so every one of them is in the file at the end.
"""

from __future__ import annotations

import asyncio
import json
import os
from pathlib import Path
from typing import Any

import pytest

from jupyter_pair_mcp.adapters.rooms.saving import state_of

from .conftest import call_tool, document_room, notebook_json, received, until

ROUNDS = 10


def replace_file(target: Path, text: str) -> None:
    """Write a new file beside ``target`` and rename it over it: a reader sees the old file or the new one."""
    fresh = target.with_name(f".{target.name}.new")
    fresh.write_text(text)
    os.replace(fresh, target)


async def until_async(check: Any, what: str, tries: int = 200) -> None:
    """Until ``await check()`` is true, at most ``tries`` times (each a request: bounded, never a sleep)."""
    for _ in range(tries):
        if await check():
            return
        await asyncio.sleep(0)
    raise AssertionError(f"{what} did not happen in {tries} tries")


@pytest.fixture
def mcp_config() -> dict[str, Any]:
    return {"enable_test_fixtures": True, "max_save_interval": 0}  # only the merges write: a file the writer knows


@pytest.fixture
def jp_server_config(jp_server_config: Any) -> Any:
    jp_server_config.YDocExtension.document_save_delay = 60.0  # the edits are not saved when the file changes
    return jp_server_config


async def test_edits_and_typing_survive_a_file_rewritten_under_them(
    mcp_client: Any,
    jp_root_dir: Path,
    jp_serverapp: Any,
    collaborator: Any,
    http: Any,
    server_root: str,
    jp_base_url: str,
    auth: dict[str, str],
) -> None:
    path = "raced.ipynb"
    cells = [
        {"cell_type": "code", "source": "a = 0", "id": "a"},
        {"cell_type": "code", "source": "b = 0", "id": "b"},
        {"cell_type": "markdown", "source": "typed:", "id": "c"},
    ]
    (jp_root_dir / path).write_text(notebook_json(cells))
    url = f"{server_root}{jp_base_url}api/contents/{path}"

    async def rewrite(step: int) -> None:
        """Another program (as git or an editor does): reads the file through Jupyter, changes cell b, and replaces
        the file whole. It reads while the room is not writing: jupyter_server writes a file in place, and its
        read of a half-written notebook puts the previous file back (its atomic-writing recovery), dropping that
        write (upstream)."""
        read: list[Any] = []

        async def readable() -> bool:
            response = await http.get(url, headers=auth, params={"content": "1"})
            if response.status_code == 200:
                read.append(response.json()["content"])
            return bool(read)

        await until_async(readable, what="a whole read of the file")
        notebook = read[0]
        for cell in notebook["cells"]:
            if cell["id"] == "b":
                cell["source"] = f"b = {step}"
        await asyncio.to_thread(replace_file, jp_root_dir / path, json.dumps(notebook))

    answered: list[str] = []
    async with mcp_client() as client, collaborator(path) as human:
        await call_tool(client, "get_notebook_info", path=path)
        state = state_of(document_room(jp_serverapp, path))
        assert state is not None
        for step in range(1, ROUNDS + 1):
            human.type_into(2, len(human.source(2)), f" p{step}")

            async def edit(step: int = step) -> None:
                await call_tool(
                    client,
                    "batch_update_notebook_cells",
                    path=path,
                    exec=False,
                    updates=[{"cell_id": "a", "content": f"a = {step}"}],
                )
                answered.append(f"a = {step}")

            await asyncio.gather(edit(), rewrite(step))
            await human.wait_until(lambda step=step: human.source(1) == f"b = {step}", limit=20)  # merged
            await received(jp_serverapp, human)
            # The merge writes what the file lacked (the room's save delay is a minute): once it is done, or when
            # the agent's edit and the typing arrived after the merge's read, the next rewrite keeps them as well.
            await until(lambda: not state.merge_write_due and state.writing is None, what="the merge's write")
        assert len(answered) == ROUNDS
        await received(jp_serverapp, human)
        saved = await call_tool(client, "save_notebook", path=path)
        assert saved["saved"] is True
    on_disk = {c["id"]: "".join(c["source"]) for c in json.loads((jp_root_dir / path).read_text())["cells"]}
    assert on_disk["a"] == answered[-1]
    assert on_disk["b"] == f"b = {ROUNDS}"
    lost = [f"p{step}" for step in range(1, ROUNDS + 1) if f" p{step}" not in on_disk["c"]]
    assert lost == [], f"keystrokes lost: {lost} in {on_disk['c']!r}"
