"""A grant limited to folders sees and touches only what is in them (issue 32, known gaps), with real SDK clients.

Listings show no name from outside the folders (resources/list, notebook://list, list_kernels); reads and
subscriptions of a resource outside are refused (a listen stream does not honor it). A file inside the folders
that is a symbolic link to one outside is outside; a file with other hard links is refused too: they cannot be
found without a walk of the whole disk, and through the name inside the grant would edit the file outside.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any

import pytest
from mcp.shared.exceptions import MCPError

from .conftest import call_tool, notebook_json, tool_error, within
from .test_grants import mcp_config, oauth_client  # noqa: F401  (fixtures)

pytestmark = [
    pytest.mark.usefixtures("jp_serverapp"),
    pytest.mark.filterwarnings(
        r"ignore:resources/(un)?subscribe is removed as of 2026-07-28:mcp.shared.exceptions.MCPDeprecationWarning"
    ),
]

OUTSIDE = "reaches only the folders 'mine'"
CELLS = [{"cell_type": "code", "source": "x = 1", "id": "c0"}]


def tree(root: Path) -> None:
    for name in ("mine/a.ipynb", "mine/sub/b.ipynb", "other/c.ipynb", "top.ipynb", "zzz/d.ipynb"):
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(notebook_json(CELLS))
    (root / "mine" / "notes.md").write_text("mine")
    (root / "other" / "notes.md").write_text("other")


async def listed(client: Any) -> list[str]:
    uris: list[str] = []
    cursor = None
    while True:
        page = await within(client.list_resources(cursor=cursor, cache_mode="bypass"))
        uris += [str(r.uri) for r in page.resources]
        if not (cursor := page.next_cursor):
            return uris


async def test_listings_reads_and_subscriptions_stay_in_the_folders(
    oauth_client: Any,  # noqa: F811
    mcp_client: Any,
    jp_root_dir: Path,
) -> None:
    tree(jp_root_dir)
    async with mcp_client() as person:
        everything = await listed(person)
        assert "notebook://other%2Fc.ipynb" in everything and "notebook://top.ipynb" in everything
        await call_tool(person, "execute_code", path="other/c.ipynb", code="1")  # a kernel for a notebook outside
        assert any("other/c.ipynb" in k["paths"] for k in (await call_tool(person, "list_kernels"))["kernels"])
    async with oauth_client(level="write", folders="mine\n") as (agent, storage):
        assert sorted(await listed(agent)) == [
            "document://mine%2Fnotes.md",
            "notebook://mine%2Fa.ipynb",
            "notebook://mine%2Fsub%2Fb.ipynb",
        ]
        assert (await call_tool(agent, "list_kernels"))["kernels"] == []
        inside = (await within(agent.read_resource("notebook://list?prefix=mine/"))).contents[0].text
        assert "mine/a.ipynb" in inside and "other" not in inside
        for uri in ("notebook://list", "notebook://list?prefix=other/", "notebook://other%2Fc.ipynb"):
            with pytest.raises(MCPError, match=OUTSIDE):
                await within(agent.read_resource(uri))
        await within(agent.subscribe_resource("notebook://mine%2Fa.ipynb"))
        for uri in ("notebook://other%2Fc.ipynb", "document://other%2Fnotes.md", "notebook://list"):
            with pytest.raises(MCPError, match=OUTSIDE):
                await within(agent.subscribe_resource(uri))
    bearer = {"Authorization": f"Bearer {storage.tokens.access_token}"}
    async with mcp_client(mode="2026-07-28", headers=bearer) as agent:
        wanted = ["notebook://mine%2Fa.ipynb", "notebook://other%2Fc.ipynb", "notebook://list"]
        async with agent.listen(resource_subscriptions=wanted) as stream:
            assert stream.honored.resource_subscriptions == ["notebook://mine%2Fa.ipynb"]


async def test_a_link_inside_the_folders_to_a_file_outside_is_outside(
    oauth_client: Any,  # noqa: F811
    jp_root_dir: Path,
) -> None:
    (jp_root_dir / "mine").mkdir()
    (jp_root_dir / "mine" / "own.txt").write_text("own")
    (jp_root_dir / "outside.txt").write_text("secret")
    os.link(jp_root_dir / "outside.txt", jp_root_dir / "mine" / "hard.txt")
    (jp_root_dir / "mine" / "soft.txt").symlink_to(jp_root_dir / "outside.txt")
    async with oauth_client(level="write", folders="mine\n") as (agent, _):
        edit = {"old_text": "secret", "new_text": "changed by the agent"}
        for name, reason in (("hard.txt", "other names (hard links)"), ("soft.txt", "is outside them")):
            path = f"mine/{name}"
            assert reason in await tool_error(agent, "replace_document_text", path=path, **edit)
            assert reason in await tool_error(agent, "get_document", path=path)
            with pytest.raises(MCPError, match=re.escape(reason)):
                await within(agent.read_resource(f"document://mine%2F{name}"))
        # a file of its own, with one name, it edits
        await call_tool(agent, "replace_document_text", path="mine/own.txt", old_text="own", new_text="edited")
    assert (jp_root_dir / "outside.txt").read_text() == "secret"
