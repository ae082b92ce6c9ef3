"""A request through the MCP endpoint is freed when it ends, not left for the garbage collector.

Under 100 agent sessions a call took ~0.5 s, long enough for its objects to reach the collector's oldest
generation; whatever of it was in a reference cycle then waited for a full collection, which walks every
object of that generation while the event loop waits (0.1-0.4 s each, benchmarks/bench_load.py). The handler
and its ASGI bridge referred to each other: each request left ~50 objects (the request, its connection,
headers, cookies, user) to the collector. Shown with ``gc.DEBUG_SAVEALL``, which keeps what the collector finds.
(A streamed answer still leaves a cycle behind, upstream: anyio's task group keeps each cancelled child's
``CancelledError``, whose traceback holds the frame that holds it; sse-starlette cancels three such children.)
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from typing import Any

import pytest

from .conftest import call_tool

pytestmark = pytest.mark.usefixtures("jp_serverapp")

NOTEBOOK = [{"cell_type": "code", "source": "x = 1", "id": "a"}]


@pytest.fixture
def cyclic_garbage() -> Iterator[list[Any]]:
    """What the garbage collector finds in cycles from now on (kept for the test, then released)."""
    gc.collect()
    gc.set_debug(gc.DEBUG_SAVEALL)
    gc.garbage.clear()
    try:
        yield gc.garbage
    finally:
        gc.set_debug(0)
        gc.garbage.clear()


def named(objects: list[Any], qualname: str) -> int:
    return sum(1 for o in objects if type(o).__qualname__ == qualname)


async def test_quick_calls_leave_no_handler_to_the_garbage_collector(
    mcp_client: Any, make_notebook: Any, cyclic_garbage: list[Any]
) -> None:
    path = make_notebook("quick.ipynb", NOTEBOOK)
    async with mcp_client() as client:
        await call_tool(client, "get_notebook", path=path)
        gc.collect()
        cyclic_garbage.clear()
        for _ in range(10):
            await client.list_tools()
            await call_tool(client, "get_notebook", path=path, cell_ids=["a"])
        gc.collect()
        handlers = named(cyclic_garbage, "MCPHandler")
    assert handlers == 0, f"{handlers} handlers of 20 requests were cyclic garbage"
