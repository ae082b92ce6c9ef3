"""The MCP ``logging`` capability (issue 36, item 2a): a session gets its own calls' log lines, nobody else's.

Against a real server, two SDK clients: the fixture tool ``test_log_lines`` logs warnings naming a file by
its absolute path (one from a worker thread) and an error; its caller gets them as ``notifications/message``
with the path relative to the root, the other session gets none. ``logging/setLevel`` is per session, and a
call sends a bounded number of lines.
"""

from __future__ import annotations

import warnings
from typing import Any

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
