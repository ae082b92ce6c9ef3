"""No call blocks the server: big or chatty outputs are written while other clients keep being served.

The test server shares this test's event loop, so a stall would freeze the poller too. The cells wait for
a release file that the test writes only after another client completed polls of ``/api/status`` *after*
the output reached the room: the run can only finish if the server kept answering meanwhile (on a
blocked loop the output arrives late and the bounded call fails).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from pycrdt import Array

from .conftest import call_tool, within

pytestmark = pytest.mark.usefixtures("jp_serverapp")

LINE = 1_000_000
POLLS_AFTER_OUTPUT = 5
WAIT_FOR_RELEASE = (
    "import os, time\n"
    "_deadline = time.monotonic() + 120\n"
    "while not os.path.exists({name!r}) and time.monotonic() < _deadline:\n"
    "    time.sleep(0.01)\n"
)
LONG_LINE = f"print('x' * {LINE}, end='', flush=True)\n" + WAIT_FOR_RELEASE.format(name="release-0")
PROGRESS = (
    "for i in range(2000):\n"
    "    print(f'\\r{i}', end='', flush=i % 7 == 0)\n"
    "print('\\rdone', end='', flush=True)\n" + WAIT_FOR_RELEASE.format(name="release-1")
)


def _output_is(extension: Any, path: str, index: int, expected: str) -> bool:
    """Whether the cell's first output in the server's room is ``expected`` (lengths first: no big copies)."""
    ydoc = extension.rooms.live_ydoc(path, "notebook")
    if ydoc is None:
        return False
    outputs = ydoc.get("cells", type=Array)[index].get("outputs")
    text = outputs[0].get("text") if outputs else None
    return text is not None and len(text) == len(expected.encode()) and str(text) == expected


async def _run_while_polling(
    client: Any, http: Any, status_url: str, auth: dict[str, str], ready: Callable[[], bool], release: Path, **call: Any
) -> tuple[Any, dict[str, int]]:
    """Call ``execute_notebook_cell`` while another client polls; release the cell after enough polls."""
    polls = {"in_flight": 0, "after_output": 0}

    async def poll() -> None:
        while True:
            response = await within(http.get(status_url, headers=auth), 30)
            assert response.status_code == 200
            polls["in_flight"] += 1
            if ready():
                polls["after_output"] += 1
                if polls["after_output"] >= POLLS_AFTER_OUTPUT:
                    release.touch()

    poller = asyncio.ensure_future(poll())
    try:
        result = await within(client.call_tool("execute_notebook_cell", call), 60)
    finally:
        poller.cancel()
    return result, polls


async def test_big_and_chatty_outputs_leave_the_server_responsive(
    mcp_client: Any,
    make_notebook: Any,
    collaborator: Any,
    extension: Any,
    http: Any,
    server_root: str,
    jp_base_url: str,
    auth: dict[str, str],
    jp_root_dir: Path,
) -> None:
    cells = [
        {"cell_type": "code", "source": "1", "id": "warm"},
        {"cell_type": "code", "source": LONG_LINE, "id": "long"},
        {"cell_type": "code", "source": PROGRESS, "id": "bar"},
    ]
    path = make_notebook("stall.ipynb", cells)
    status_url = f"{server_root}{jp_base_url}api/status"
    async with mcp_client() as client, collaborator(path) as human:
        await call_tool(client, "execute_notebook_cell", path=path, cell_id="warm")
        for index, expected in ((1, "x" * LINE), (2, "done")):
            result, polls = await _run_while_polling(
                client,
                http,
                status_url,
                auth,
                lambda index=index, expected=expected: _output_is(extension, path, index, expected),
                jp_root_dir / f"release-{index - 1}",
                path=path,
                index=index,
                timeout=120,
            )
            assert not result.is_error, result.content
            assert result.structured_content["status"] == "ok"
            assert polls["after_output"] >= POLLS_AFTER_OUTPUT, polls
            await human.wait_until(lambda index=index: human.execution_state(index) == "idle", limit=20)
            outputs = human.cells()[index]["outputs"]
            assert len(outputs) == 1
            assert outputs[0]["text"] == expected
