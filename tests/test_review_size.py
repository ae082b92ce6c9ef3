"""Review mode at size (issue 34): a suggestion holds what it changes, never a copy of the document; pending ones
are bounded in bytes and each credential has a share of a document's bound.

Against a real server (in this process: its memory is this process's RSS), a real MCP client over HTTP and the
suggestions REST API. 20 proposals and a reject-all on a 10,000-cell notebook, twice: the server's RSS stays within
a bound (a fork of the document per suggestion took ~60 MB each and rejecting gave nothing back), every step on the
loop stays under the product's 50 ms (the loop monitor's record), and the bytes each suggestion holds are the same
as on a 10-cell notebook.
"""

from __future__ import annotations

from typing import Any

import pytest

from jupyter_pair_mcp.services.actors import Actor

from .conftest import call_tool, notebook_json, tool_error, within
from .test_review import People

pytestmark = pytest.mark.usefixtures("jp_serverapp")

BIG = 10_000
#: ~500 characters a cell: a 5 MB notebook.
LINE = "value = " + "1234567890" * 49
#: RSS the 40 proposals (and 40 rejects) may add, in MiB: answers, the activity log, allocator slack. A fork of the
#: document per suggestion added tens of MiB each.
RSS_BOUND_MB = 60
#: The product's bound on one step on the loop (CPU seconds).
STEP = 0.05


@pytest.fixture
def people(http: Any, server_root: str, jp_base_url: str, auth: dict[str, str]) -> People:
    return People(http, f"{server_root}{jp_base_url}api/mcp", auth)


def rss_mb() -> float:
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    raise AssertionError("no VmRSS in /proc/self/status")


def write(root: Any, name: str, count: int) -> str:
    cells = [{"cell_type": "code", "source": f"{LINE}  # {i}", "id": f"c{i}"} for i in range(count)]
    (root / name).write_text(notebook_json(cells))
    return name


@pytest.fixture
def notebooks(jp_root_dir: Any, mcp_client: Any, jp_asyncio_loop: Any) -> dict[int, str]:
    """A 10- and a 10,000-cell notebook whose rooms are open (opening them is not the test's subject)."""
    paths = {count: write(jp_root_dir, f"size-{count}.ipynb", count) for count in (10, BIG)}

    async def open_rooms() -> None:
        async with mcp_client() as client:
            for path in paths.values():
                result = await within(client.call_tool("get_notebook_info", {"path": path}), 300)
                assert not result.is_error, result

    jp_asyncio_loop.run_until_complete(open_rooms())
    return paths


async def propose(client: Any, path: str, cell: str, text: str) -> dict[str, Any]:
    update = {"cell_id": cell, "content": text}
    result = await call_tool(
        client, "batch_update_notebook_cells", path=path, propose=True, exec=False, updates=[update]
    )
    return dict(result["suggestion"])


@pytest.mark.loop_bound(
    10.0,
    reason="opening and saving a big room is jupyter_server's and jupyter-collaboration's work on the loop",
    phases=("setup", "teardown"),
)
async def test_twenty_proposals_and_a_reject_all_on_a_big_notebook_hold_what_they_change(
    mcp_client: Any,
    people: People,
    notebooks: dict[int, str],
    extension: Any,
    loop_monitor: Any,
    jp_serverapp: Any,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    path = notebooks[BIG]
    service = extension.suggestions
    manager = jp_serverapp.contents_manager
    read_back: list[str] = []
    get = manager.get

    def counted(path: str, content: bool = True, **kwargs: Any) -> Any:  # a read of the file's content
        if content:
            read_back.append(path)
        return get(path, content=content, **kwargs)

    monkeypatch.setattr(manager, "get", counted)
    async with mcp_client() as client:
        small = await propose(client, notebooks[10], "c9", f"{LINE}  # checked")
        held_small = service.get(small["id"]).size
        assert held_small < 3 * len(LINE)  # the cell before and after
        loop_monitor.record_over, loop_monitor.steps[:] = STEP, []
        try:
            start = rss_mb()
            peaks = []
            for _round in range(2):
                made = [await propose(client, path, f"c{BIG - 1 - i}", f"{LINE}  # checked {i}") for i in range(20)]
                assert not read_back, f"proposals read the file back: {read_back}"
                held = [service.get(s["id"]).size for s in made]
                assert max(held) <= held_small + 64, (held, held_small)  # what it changes (a longer id), at any size
                peaks.append(rss_mb() - start)
                for suggestion in made:
                    response = await people.decide(suggestion["id"], "reject")
                    assert response.status_code == 200 and response.json()["state"] == "rejected", response.text
                assert service.get(made[0]["id"]).size == 0  # a finished one holds nothing counted
            grown = rss_mb() - start
            steps = sorted(loop_monitor.steps, reverse=True)[:5]
        finally:
            loop_monitor.record_over = loop_monitor.default_bound
    assert max(peaks) < RSS_BOUND_MB and grown < RSS_BOUND_MB, f"RSS grew {peaks} MiB pending, {grown:.0f} MiB after"
    assert not steps, f"steps on the loop over {STEP * 1000:.0f} ms of CPU: {steps}"


async def test_each_credential_has_a_share_of_a_documents_bound(
    mcp_client: Any, make_notebook: Any, extension: Any
) -> None:
    cells = [{"cell_type": "code", "source": f"x = {i}", "id": f"c{i}"} for i in range(30)]
    path = make_notebook("share.ipynb", cells)
    service = extension.suggestions
    assert (service.bounds.per_document, service.bounds.share) == (20, 8)
    async with mcp_client() as client:
        for i in range(20):  # one agent takes the document's whole bound
            await propose(client, path, f"c{i}", f"x = {i}  # mine")
        message = await tool_error(
            client, "batch_update_notebook_cells", path=path, propose=True, updates=[{"cell_id": "c0", "content": "y"}]
        )
        assert "20 pending suggestions (the limit per document) (20 of them yours)" in message
    # another credential still gets its share of 8, and no more past the document's bound
    other = Actor("o" * 12, "Other", "other-agent", None, "someone", "another-credential")
    for i in range(8):
        draft = await service.draft(path, "notebook", other)
        (await service.view(draft)).delete([20 + i])
        await service.submit(draft)
    with pytest.raises(Exception, match="28 pending suggestions"):
        await service.draft(path, "notebook", other)


class TestBytes:
    @pytest.fixture
    def mcp_config(self) -> dict[str, Any]:
        return {"max_suggestion_bytes_per_principal": 30_000}

    async def test_pending_suggestions_are_bounded_in_bytes_and_give_them_back_when_they_end(
        self, mcp_client: Any, make_notebook: Any, people: People
    ) -> None:
        path = make_notebook("bytes.ipynb", [{"cell_type": "code", "source": "", "id": "c0"}])
        big = "x" * 20_000
        async with mcp_client() as client:
            first = await propose(client, path, "c0", big)
            message = await tool_error(
                client,
                "batch_update_notebook_cells",
                path=path,
                propose=True,
                updates=[{"cell_id": "c0", "content": big}],
            )
            assert "your pending suggestions would hold" in message and "the limit is" in message
            assert (await people.decide(first["id"], "reject")).status_code == 200
            await propose(client, path, "c0", big)  # the rejected one's bytes were given back
