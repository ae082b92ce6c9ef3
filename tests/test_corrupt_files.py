"""Files collaboration cannot load are refused with a clear error, never served as an empty document.

A notebook that is not JSON, JSON that is not a notebook, a binary ``.ipynb`` and a binary text
file used to open as an *empty* room: edits were accepted, ``save_notebook`` said ``saved: true``
and nothing reached the file. Every tool and resource read must refuse them instead, name the file
(never the server's absolute path) and leave the file untouched.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from mcp.shared.exceptions import MCPError
from tornado.httpclient import AsyncHTTPClient, HTTPRequest
from tornado.web import HTTPError
from tornado.websocket import websocket_connect

from .conftest import call_tool, notebook_json, tool_error, within

pytestmark = pytest.mark.usefixtures("jp_serverapp")

BINARY = b"\x00\xff\xfe\x01\x02binary\x80\x81\x00" * 8

CORRUPT_NOTEBOOKS = [
    pytest.param(b'{"cells": [ {"cell_type": "code", "sour', "not JSON", id="not-json"),
    pytest.param(json.dumps({"hello": "world"}).encode(), "not nbformat", id="not-nbformat"),
    pytest.param(BINARY, "not UTF-8", id="binary"),
]


def assert_clean(message: str, root: Path, name: str, reason: str) -> None:
    assert f"{name!r}" in message, message
    assert reason in message, message
    assert str(root) not in message and "Traceback" not in message, message


@pytest.mark.parametrize(("content", "reason"), CORRUPT_NOTEBOOKS)
async def test_a_corrupt_notebook_is_refused_by_every_tool_and_resource(
    mcp_client: Any, jp_root_dir: Path, jp_serverapp: Any, content: bytes, reason: str
) -> None:
    (jp_root_dir / "bad.ipynb").write_bytes(content)
    async with mcp_client() as client:
        for _ in range(2):  # the second call must not find a room the first one left behind, serving nothing
            message = await tool_error(client, "get_notebook", path="bad.ipynb")
            assert_clean(message, jp_root_dir, "bad.ipynb", reason)
            assert "not a valid notebook" in message and "fix or delete" in message, message
        for name, arguments in [
            ("batch_insert_notebook_cells", {"exec": False, "cells": [{"content": "work = 1"}]}),
            ("get_notebook_info", {}),
            ("save_notebook", {}),
        ]:
            assert_clean(
                await tool_error(client, name, path="bad.ipynb", **arguments), jp_root_dir, "bad.ipynb", reason
            )
        for uri in ["notebook://bad.ipynb", "notebook://bad.ipynb/cells"]:
            with pytest.raises(MCPError) as failure:
                await within(client.read_resource(uri))
            assert_clean(str(failure.value), jp_root_dir, "bad.ipynb", reason)
    ydoc = jp_serverapp.extension_manager.extension_points["jupyter_server_ydoc"].app
    assert not [r for r in ydoc.ywebsocket_server.rooms if r.startswith("json:notebook:")], "a failed room stayed"
    assert (jp_root_dir / "bad.ipynb").read_bytes() == content


async def test_a_binary_text_file_is_refused_by_every_tool_and_resource(
    mcp_client: Any, jp_root_dir: Path, jp_serverapp: Any
) -> None:
    (jp_root_dir / "bad.txt").write_bytes(BINARY)
    async with mcp_client() as client:
        for _ in range(2):
            message = await tool_error(client, "get_document", path="bad.txt")
            assert_clean(message, jp_root_dir, "bad.txt", "not UTF-8")
        message = await tool_error(
            client, "batch_update_document", path="bad.txt", operations=[{"content": "work", "position": 0}]
        )
        assert_clean(message, jp_root_dir, "bad.txt", "not UTF-8")
        with pytest.raises(MCPError) as failure:
            await within(client.read_resource("document://bad.txt"))
        assert_clean(str(failure.value), jp_root_dir, "bad.txt", "not UTF-8")
    ydoc = jp_serverapp.extension_manager.extension_points["jupyter_server_ydoc"].app
    assert not [r for r in ydoc.ywebsocket_server.rooms if r.startswith("text:file:")], "a failed room stayed"
    assert (jp_root_dir / "bad.txt").read_bytes() == BINARY


async def test_a_fixed_file_opens_normally_after_a_refusal(mcp_client: Any, jp_root_dir: Path) -> None:
    target = jp_root_dir / "later.ipynb"
    target.write_bytes(b"{broken")
    async with mcp_client() as client:
        await tool_error(client, "get_notebook", path="later.ipynb")
        target.write_text(notebook_json([{"cell_type": "code", "source": "fixed = True", "id": "f"}]))
        read = await call_tool(client, "get_notebook", path="later.ipynb")
        assert [c["source"] for c in read["cells"]] == ["fixed = True"]
        await call_tool(client, "batch_insert_notebook_cells", path="later.ipynb", exec=False, cells=[{"content": "x"}])
        saved = await call_tool(client, "save_notebook", path="later.ipynb")
    assert saved["saved"] is True
    on_disk = json.loads(target.read_text())
    assert ["".join(c["source"]) for c in on_disk["cells"]] == ["fixed = True", "x"]


async def test_a_valid_empty_notebook_and_empty_text_file_still_open(mcp_client: Any, jp_root_dir: Path) -> None:
    (jp_root_dir / "empty.ipynb").write_text(notebook_json([]))
    (jp_root_dir / "empty.txt").write_text("")
    async with mcp_client() as client:
        # (collaboration gives a notebook without cells one empty cell, as JupyterLab shows it)
        assert [c["source"] for c in (await call_tool(client, "get_notebook", path="empty.ipynb"))["cells"]] in (
            [],
            [""],
        )
        assert (await call_tool(client, "get_document", path="empty.txt"))["content"] == ""


async def test_a_room_a_browser_failed_to_open_is_replaced(
    mcp_client: Any, jp_root_dir: Path, jp_serverapp: Any, server_root: str, jp_base_url: str, token: str
) -> None:
    """JupyterLab opening a broken notebook leaves a room that never loaded; it must not serve agents."""
    target = jp_root_dir / "opened.ipynb"
    target.write_bytes(b"{broken")
    headers = {"Authorization": f"token {token}"}
    response = await within(
        AsyncHTTPClient().fetch(
            f"{server_root}{jp_base_url}api/collaboration/session/opened.ipynb",
            method="PUT",
            body=json.dumps({"format": "json", "type": "notebook"}),
            headers=headers,
        )
    )
    session = json.loads(response.body)
    room_id = f"json:notebook:{session['fileId']}"
    url = f"{server_root.replace('http://', 'ws://')}{jp_base_url}api/collaboration/room/{room_id}"
    ws = await within(websocket_connect(HTTPRequest(f"{url}?sessionId={session['sessionId']}", headers=headers)))
    while await within(ws.read_message()) is not None:  # the server closes it: the file cannot be loaded
        pass
    ws.close()  # the client side too: tornado warns about a connection garbage-collected unclosed
    rooms = jp_serverapp.extension_manager.extension_points["jupyter_server_ydoc"].app.ywebsocket_server.rooms
    assert room_id not in rooms or not rooms[room_id].ready  # nothing, or a room that never loaded
    async with mcp_client() as client:
        message = await tool_error(client, "get_notebook", path="opened.ipynb")
        assert "not a valid notebook (not JSON" in message, message
        assert room_id not in rooms
        target.write_text(notebook_json([{"cell_type": "markdown", "source": "# fixed", "id": "m"}]))
        read = await call_tool(client, "get_notebook", path="opened.ipynb")
        assert [c["source"] for c in read["cells"]] == ["# fixed"]


async def test_a_room_another_extension_failed_to_open_is_replaced(
    mcp_client: Any, jp_root_dir: Path, jp_serverapp: Any
) -> None:
    """``get_document`` on a broken file raises but leaves its room registered, serving an empty document."""
    (jp_root_dir / "ghost.ipynb").write_bytes(b"{broken")
    ydoc = jp_serverapp.extension_manager.extension_points["jupyter_server_ydoc"].app
    with pytest.raises(HTTPError):
        await within(
            ydoc.get_document(path="ghost.ipynb", content_type="notebook", file_format="json", copy=False, create=True)
        )
    ghosts = [room for room in ydoc.ywebsocket_server.rooms.values() if not room.ready]
    assert len(ghosts) == 1  # what jupyter-collaboration leaves behind
    async with mcp_client() as client:
        message = await tool_error(client, "get_notebook", path="ghost.ipynb")
        assert "not a valid notebook (not JSON" in message, message
    assert not ydoc.ywebsocket_server.rooms
