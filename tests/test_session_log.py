"""The MCP ``logging`` capability (issue 36, item 2a): a session gets its own calls' log lines, nobody else's.

Against a real server, two SDK clients: the fixture tool ``test_log_lines`` logs warnings naming a file by
its absolute path (one from a worker thread) and an error; its caller gets them as ``notifications/message``
with the path relative to the root, the other session gets none. ``logging/setLevel`` is per session, and a
call sends a bounded number of lines. A call that fails after logging gets its lines and its tool error, in
both eras, whether its answer was to stream or not (a quick tool's answer is one JSON body: protocol/wholebody.py).
"""

from __future__ import annotations

import asyncio
import warnings
from typing import Any

import pytest
from mcp_types import LoggingMessageNotificationParams

from .conftest import call_tool, within


def collector() -> tuple[list[LoggingMessageNotificationParams], Any]:
    lines: list[LoggingMessageNotificationParams] = []

    async def on_log(params: LoggingMessageNotificationParams) -> None:
        lines.append(params)

    return lines, on_log


async def test_a_session_gets_its_own_calls_log_lines(mcp_client: Any, jp_root_dir: Any) -> None:
    mine, on_mine = collector()
    theirs, on_theirs = collector()
    async with mcp_client(logging_callback=on_mine) as client, mcp_client(logging_callback=on_theirs) as other:
        assert client.server_capabilities is not None and client.server_capabilities.logging is not None
        await call_tool(client, "test_log_lines", path="work/nb.ipynb", count=2)
        assert [(line.level, line.data) for line in mine] == [
            ("warning", "fixture warning 0 about work/nb.ipynb"),
            ("warning", "fixture warning 1 about work/nb.ipynb"),
            ("error", "fixture error in <path>"),
        ]
        assert all(str(jp_root_dir) not in str(line.data) for line in mine)
        await call_tool(other, "document_exists", path="nothing.txt")
        assert theirs == []  # the other session's calls logged nothing of its own, and it got none of these

        mine.clear()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # the SDK marks logging deprecated as of 2026-07-28 (SEP-2577)
            await within(client.set_logging_level("error"))
        await call_tool(client, "test_log_lines", path="a.txt", count=3)
        assert [line.level for line in mine] == ["error"]
        await call_tool(other, "test_log_lines", path="b.txt", count=1)
        assert [line.level for line in theirs] == ["warning", "error"]  # its level is its own

        theirs.clear()
        await call_tool(other, "test_log_lines", path="c.txt", count=50)
        assert len(theirs) == 21 and "left out" in str(theirs[-1].data)


@pytest.mark.parametrize("mode", ["legacy", "2026-07-28"])
async def test_a_failing_call_gets_its_log_lines_and_its_error(
    mode: str, mcp_client: Any, extension: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Its lines, then its answer: once, a quick call's first line was taken for its whole answer, and a
    handshake-era client waited for the answer forever."""
    mine, on_mine = collector()
    async with mcp_client(mode=mode, logging_callback=on_mine, log_level="warning") as client:
        result = await within(client.call_tool("test_log_lines", {"path": "x.txt", "fail": True}))
        assert result.is_error and "fixture failure, as asked" in result.content[0].text, result
        assert [(line.level, line.data) for line in mine] == [
            ("warning", "fixture warning 0 about x.txt"),
            ("error", "fixture error in <path>"),
        ]

        async def cancelled_inside() -> Any:  # a quick tool failing inside: the error boundary logs it
            future = asyncio.get_running_loop().create_future()
            future.cancel()
            return await future

        mine.clear()
        assert "list_kernels" in extension._endpoint.runner.manager.quick_tools
        monkeypatch.setattr(extension.kernels, "running", cancelled_inside)
        result = await within(client.call_tool("list_kernels", {}))
        assert result.is_error and "internal error in list_kernels" in result.content[0].text, result
        assert [line.level for line in mine] == ["error"] and "list_kernels failed" in str(mine[0].data)
        monkeypatch.undo()
        assert (await call_tool(client, "list_kernels"))["kernels"] == []  # the session goes on
