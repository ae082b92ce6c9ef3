"""The audit trail: write and execute tool calls as Jupyter events, heard by a listener on a real server.

An admin routes them with ``c.EventLogger.handlers`` (docs/audit.md); here a listener on the server's own
event logger stands for one. Every event names who, what and how it ended, and never carries content.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx2
import pytest
from mcp_types import Implementation
from traitlets.config import Config

from jupyter_pair_mcp.services.audit import MAX_CELLS, SCHEMA_ID, SCHEMA_PATH, named_cells

from .conftest import call_tool, tool_error, until

pytestmark = pytest.mark.usefixtures("jp_serverapp")

SECRET = "SECRET_SOURCE_TEXT_42"
CELLS = [
    {"cell_type": "code", "source": "a = 1", "id": "c0"},
    {"cell_type": "code", "source": f"print('{SECRET}')", "id": "c1"},
]
CLAUDE = Implementation(name="claude-code", title="Claude Code", version="1")


async def test_an_edit_a_run_an_error_and_a_refusal_are_events_without_content(
    mcp_client: Any,
    make_notebook: Any,
    audited: list[dict[str, Any]],
    http: httpx2.AsyncClient,
    server_root: str,
    jp_base_url: str,
    auth: dict[str, str],
) -> None:
    path = make_notebook("audited.ipynb", CELLS)
    async with mcp_client(client_info=CLAUDE) as client:
        await call_tool(client, "get_notebook", path=path)  # a read: not audited
        update = {"cell_id": "c0", "content": f"b = '{SECRET}'"}
        await call_tool(client, "batch_update_notebook_cells", path=path, exec=False, updates=[update])
        await call_tool(client, "execute_notebook_cell", path=path, cell_id="c1")
        missing = await tool_error(
            client, "batch_update_notebook_cells", path=path, exec=False, updates=[{"cell_id": "nope", "content": "x"}]
        )
        assert "nope" in missing
        await until(lambda: len(audited) == 3, what="three audit events")
        edit, run, failed = audited
        key = edit["agent_key"]
        stop = await http.post(
            f"{server_root}{jp_base_url}api/mcp/agents/{key}/stop", json={"path": path}, headers=auth
        )
        assert stop.status_code == 200, stop.text
    async with mcp_client(client_info=CLAUDE) as again:  # the same agent in a new session: refused there
        await tool_error(again, "batch_update_notebook_cells", path=path, exec=False, updates=[update])
        await until(lambda: len(audited) == 4, what="the refusal's event")
    refused = audited[3]

    assert edit["tool"] == "batch_update_notebook_cells" and edit["outcome"] == "ok" and "error" not in edit
    assert (edit["path"], edit["cells"], edit["cells_truncated"]) == (path, ["c0"], False)
    assert (edit["client"], edit["agent"]) == ("Claude Code", "Claude Code")
    assert edit["principal"] and edit["duration_ms"] >= 0
    assert (run["tool"], run["outcome"], run["cells"], run["agent_key"]) == ("execute_notebook_cell", "ok", ["c1"], key)
    assert (failed["outcome"], failed["error"], failed["cells"]) == ("error", "not_found", ["nope"])
    assert (refused["outcome"], refused["error"], refused["path"]) == ("refused", "agent_stopped", path)
    assert refused["tool"] == "batch_update_notebook_cells"
    text = json.dumps(audited)
    assert SECRET not in text and "print(" not in text


class TestViewer:
    @pytest.fixture
    def jp_server_config(self, jp_server_config: Any) -> Any:
        from .conftest import ReadOnlyAuthorizer

        jp_server_config.ServerApp.authorizer_class = ReadOnlyAuthorizer
        return jp_server_config

    async def test_a_call_the_user_may_not_make_is_a_refusal(
        self, mcp_client: Any, make_notebook: Any, audited: list[dict[str, Any]]
    ) -> None:
        path = make_notebook("viewed.ipynb", CELLS)
        async with mcp_client() as client:
            await tool_error(client, "execute_code", path=path, code=f"print('{SECRET}')")
            await until(lambda: len(audited) == 1, what="the refusal's event")
        [event] = audited
        assert (event["tool"], event["outcome"], event["error"]) == ("execute_code", "refused", "permission_denied")
        assert SECRET not in json.dumps(event)


def test_a_call_naming_many_cells_lists_a_bounded_number() -> None:
    ids = [f"c{i}" for i in range(10_000)]
    cells, more = named_cells({"cell_ids": ids, "updates": [{"cell_id": "u", "content": SECRET}] * 10_000})
    assert cells == ids[:MAX_CELLS] and more is True
    assert named_cells({"cell_id": "x", "cell_ids": ["y"]}) == (["x", "y"], False)


def test_the_schema_ships_in_the_package() -> None:
    import jupyter_pair_mcp

    assert SCHEMA_PATH.is_file()
    assert Path(jupyter_pair_mcp.__file__).parent in SCHEMA_PATH.parents


def docs_config(log_file: Path) -> Any:
    """The docs' worked ``c.EventLogger.handlers`` example (docs/audit.md), run as Jupyter would run it."""
    text = (Path(__file__).resolve().parents[1] / "docs" / "audit.md").read_text()
    code = text.split("```python\n", 1)[1].split("```", 1)[0]
    code = code.replace("/var/log/jupyter/mcp-audit.jsonl", str(log_file))
    c = Config()
    exec(code, {"c": c})  # a config file is Python run with `c` in scope
    return c


class TestTheDocsFileHandler:
    @pytest.fixture
    def jp_server_config(self, jp_server_config: Any, tmp_path: Path) -> Any:
        jp_server_config.merge(docs_config(tmp_path / "audit.jsonl"))
        return jp_server_config

    async def test_the_agents_calls_and_only_them_reach_the_file(
        self, mcp_client: Any, make_notebook: Any, tmp_path: Path, jp_serverapp: Any
    ) -> None:
        path = make_notebook("filed.ipynb", CELLS)
        async with mcp_client(client_info=CLAUDE) as client:
            update = {"cell_id": "c0", "content": f"b = '{SECRET}'"}
            await call_tool(client, "batch_update_notebook_cells", path=path, exec=False, updates=[update])
            await call_tool(client, "create_document", path="new.txt", type="file", content=SECRET)
        for handler in jp_serverapp.event_logger.handlers:
            handler.flush()
        lines = (tmp_path / "audit.jsonl").read_text().splitlines()
        events = [json.loads(line) for line in lines]
        # creating the file also made a contents_service event: the filter kept it out
        assert [(e["__schema__"], e["tool"], e["outcome"]) for e in events] == [
            (SCHEMA_ID, "batch_update_notebook_cells", "ok"),
            (SCHEMA_ID, "create_document", "ok"),
        ]
        assert events[1]["path"] == "new.txt"
        assert SECRET not in "\n".join(lines)
