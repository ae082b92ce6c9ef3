"""A request through the MCP endpoint is freed when it ends, not left for the garbage collector.

Under 100 agent sessions a call took ~0.5 s, long enough for its objects to reach the collector's oldest
generation; whatever of it was in a reference cycle then waited for a full collection, which walks every
object of that generation while the event loop waits (0.1-0.4 s each, benchmarks/bench_load.py). The handler
and its ASGI bridge referred to each other: each request left ~50 objects (the request, its connection,
headers, cookies, user) to the collector. Shown with the collector held off while the calls run (their objects
stay in its youngest generation), then one collection of that generation only, keeping what it finds
(``gc.DEBUG_SAVEALL``). (A streamed answer still leaves a cycle behind, upstream: anyio's task group keeps each
cancelled child's ``CancelledError``, whose traceback holds the frame that holds it; sse-starlette cancels
three such children.)
"""

from __future__ import annotations

import gc
from typing import Any

import pytest

from .conftest import call_tool

pytestmark = pytest.mark.usefixtures("jp_serverapp")

NOTEBOOK = [{"cell_type": "code", "source": "x = 1", "id": "a"}]


async def test_quick_calls_leave_no_handler_to_the_garbage_collector(mcp_client: Any, make_notebook: Any) -> None:
    path = make_notebook("quick.ipynb", NOTEBOOK)
    async with mcp_client() as client:
        await call_tool(client, "get_notebook", path=path)
        gc.collect(0)
        gc.disable()  # what the calls make stays in the youngest generation: collecting it alone is cheap
        gc.set_debug(gc.DEBUG_SAVEALL)
        gc.garbage.clear()
        try:
            for _ in range(10):
                await client.list_tools()
                await call_tool(client, "get_notebook", path=path, cell_ids=["a"])
            gc.collect(0)
            cyclic = sum(1 for o in gc.garbage if type(o).__qualname__ == "MCPHandler")
        finally:
            gc.set_debug(0)
            gc.garbage.clear()
            gc.enable()
    assert cyclic == 0, f"{cyclic} handlers of 20 requests were in a reference cycle"
