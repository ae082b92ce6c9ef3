"""Authorization as MCP clients understand it: a viewer can read and nothing more; a refusal names the permission."""

from __future__ import annotations

from typing import Any

import httpx2
import pytest
from jupyter_server.auth.authorizer import Authorizer

from .conftest import INIT_PARAMS, MCP_HEADERS, ReadOnlyAuthorizer, call_tool, rpc, tool_error

pytestmark = pytest.mark.usefixtures("jp_serverapp")


class NobodyAuthorizer(Authorizer):  # type: ignore[misc]
    """An authenticated user who may do nothing at all."""

    def is_authorized(self, handler: Any, user: Any, action: str, resource: str) -> bool:
        return False


class TestViewer:
    @pytest.fixture
    def jp_server_config(self, jp_server_config: Any) -> Any:
        jp_server_config.ServerApp.authorizer_class = ReadOnlyAuthorizer
        return jp_server_config

    @pytest.mark.parametrize("mode", ["legacy", "2026-07-28"])
    async def test_a_viewer_can_open_a_session_and_read_but_not_write(
        self, mcp_client: Any, make_notebook: Any, mode: str
    ) -> None:
        path = make_notebook("viewed.ipynb", count=2)
        async with mcp_client(mode=mode) as client:
            read = await call_tool(client, "get_notebook", path=path)
            assert read["cell_count"] == 2
            message = await tool_error(
                client, "batch_insert_notebook_cells", path=path, cells=[{"content": "x"}], exec=False
            )
            assert "not authorized to write contents" in message
            assert (await call_tool(client, "get_notebook", path=path))["cell_count"] == 2


class TestNobody:
    @pytest.fixture
    def jp_server_config(self, jp_server_config: Any) -> Any:
        jp_server_config.ServerApp.authorizer_class = NobodyAuthorizer
        return jp_server_config

    async def test_an_authenticated_user_without_permission_gets_403_naming_it(
        self, http: httpx2.AsyncClient, mcp_url: str, auth: dict[str, str]
    ) -> None:
        response = await http.post(mcp_url, json=rpc("initialize", INIT_PARAMS), headers={**MCP_HEADERS, **auth})
        assert response.status_code == 403
        assert "not authorized to read on resource: contents" in response.json()["message"]
        assert "WWW-Authenticate" not in response.headers
