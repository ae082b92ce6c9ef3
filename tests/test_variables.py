"""A notebook kernel's variables and scratch execution: a real server, a real kernel, a real collaborator.

What must hold beyond the values: nothing reaches the notebook (the collaborator's replica is unchanged and
the next cell run gets the execution count it would have got anyway) and no name is left in the kernel.
"""

from __future__ import annotations

import asyncio
import queue
from typing import Any

import pytest
from jupyter_client.session import Session

from .conftest import call_tool, tool_error, until, within
from .test_execution import PNG, SHOW_PNG, code

pytestmark = pytest.mark.usefixtures("jp_serverapp")

SETUP = (
    "import os\nfrom math import sqrt\n"
    "n = 42\ns = 'x' * 10000\nitems = list(range(100000))\nmapping = {'a': 1}\n_private = 1\n"
    "def helper(a, b=2):\n    return a + b\n"
)
NAMES = "print(sorted(globals()))"


def without(cells: list[dict[str, Any]], cell_id: str) -> list[dict[str, Any]]:
    return [c for c in cells if c.get("id") != cell_id]


async def variable(client: Any, path: str, name: str) -> dict[str, Any]:
    result = await within(client.call_tool("get_variable", {"path": path, "name": name}))
    assert not result.is_error, result.content[0].text
    return dict(result.structured_content)


async def variable_error(client: Any, path: str, name: str) -> str:
    result = await within(client.call_tool("get_variable", {"path": path, "name": name}))
    assert result.is_error, result.structured_content
    return str(result.content[0].text)


async def names(client: Any, path: str) -> str:
    """The kernel's global names, read with a scratch run (which binds none: print returns None)."""
    result = await call_tool(client, "execute_code", path=path, code=NAMES)
    return str(result["outputs"][0]["text"])


async def test_variables_are_listed_bounded_and_leave_nothing_behind(
    mcp_client: Any, make_notebook: Any, collaborator: Any
) -> None:
    path = make_notebook("vars.ipynb", code(SETUP, "after = 1"))
    async with collaborator(path) as human, mcp_client() as client:
        assert (await call_tool(client, "execute_notebook_cell", path=path, cell_id="k0", timeout=60))[
            "execution_count"
        ] == 1
        await human.wait_until(lambda: human.cells()[0]["execution_count"] == 1)
        seen = human.cells()
        before = await names(client, path)

        listed = await call_tool(client, "list_variables", path=path)
        assert listed["via"] == "kernel"
        assert listed["truncated"] is False
        by_name = {v["name"]: v for v in listed["variables"]}
        assert list(by_name) == ["helper", "items", "mapping", "n", "s"]  # sorted; no os, sqrt, _private, In, Out
        assert listed["total"] == 5
        assert by_name["n"] == {"name": "n", "type": "int", "value": "42", "size": None, "shape": None, "dtype": None}
        assert by_name["s"]["size"] == 10000
        assert by_name["s"]["value"].startswith("'xxx")
        assert by_name["s"]["value"].endswith("[... 9800 more characters cut]")
        assert by_name["items"]["size"] == 100000
        assert len(by_name["items"]["value"]) < 300
        assert by_name["mapping"]["value"] == "{'a': 1}"
        assert by_name["helper"] == {**by_name["helper"], "type": "function", "value": "helper(a, b=2)"}

        detail = await variable(client, path, "s")
        assert detail["type"] == "str"
        assert detail["via"] == "kernel"
        assert detail["value"].endswith("[... 8000 more characters cut]")  # the server's max_output_length: 2000
        module = await variable(client, path, "os")  # asked for by name: shown
        assert module["type"] == "module"
        assert "no variable 'missing'" in await variable_error(client, path, "missing")
        assert "not a variable name" in await variable_error(client, path, "n + 1")

        assert await names(client, path) == before
        ran = await call_tool(client, "execute_notebook_cell", path=path, cell_id="k1")
        assert ran["execution_count"] == 2  # no silent request counted
        await human.wait_until(lambda: human.cells()[1]["execution_count"] == 2)
        assert without(human.cells(), "k1") == without(seen, "k1")


async def test_arrays_and_frames_show_shape_and_dtype(mcp_client: Any, make_notebook: Any) -> None:
    np = pytest.importorskip("numpy")
    assert np
    setup = "import numpy as np\narr = np.zeros((300, 40), dtype='float32')\n"
    try:
        import pandas  # noqa: F401

        setup += "import pandas as pd\nframe = pd.DataFrame({'a': range(1000), 'b': ['x'] * 1000})\n"
        has_pandas = True
    except ImportError:
        has_pandas = False
    path = make_notebook("arrays.ipynb", code(setup))
    async with mcp_client() as client:
        assert (await call_tool(client, "execute_notebook_cell", path=path, cell_id="k0", timeout=60))["status"] == "ok"
        listed = {v["name"]: v for v in (await call_tool(client, "list_variables", path=path))["variables"]}
        assert listed["arr"]["type"] == "numpy.ndarray"
        assert listed["arr"]["shape"] == [300, 40]
        assert listed["arr"]["dtype"] == "float32"
        assert len(listed["arr"]["value"]) <= 250
        if not has_pandas:
            pytest.skip("pandas is not installed: frames not checked")
        assert listed["frame"]["type"] == "pandas.DataFrame"
        assert listed["frame"]["shape"] == [1000, 2]
        frame = await variable(client, path, "frame")
        assert frame["columns"][0] == "a: int64"
        assert frame["columns"][1].startswith("b: ")
        assert len(frame["value"]) <= 2100


async def test_scratch_code_returns_outputs_and_leaves_the_notebook_alone(
    mcp_client: Any, make_notebook: Any, collaborator: Any, jp_serverapp: Any
) -> None:
    path = make_notebook("scratch.ipynb", code("x = 1", "x + 1"))
    scratch = f"import sys\nprint('out')\nprint('err', file=sys.stderr)\n{SHOW_PNG}\n2 * 21"
    async with collaborator(path) as human, mcp_client() as client:
        seen = human.cells()
        assert jp_serverapp.kernel_manager.list_kernel_ids() == []
        result = await within(client.call_tool("execute_code", {"path": path, "code": scratch, "timeout": 60}), 60)
        assert not result.is_error, result.content[0].text
        assert (
            jp_serverapp.kernel_manager.list_kernel_ids() != []
        )  # started the notebook's kernel, as running a cell does
        outputs = result.structured_content["outputs"]
        assert [(o["output_type"], o["text"]) for o in outputs if o["output_type"] != "display_data"] == [
            ("stream", "out\n"),
            ("stream", "err\n"),
            ("execute_result", "42"),
        ]
        assert [o["mime"] for o in outputs if o["output_type"] == "display_data"] == ["image/png"]
        images = [c for c in result.content if c.type == "image"]
        assert [(i.mime_type, i.data) for i in images] == [("image/png", PNG)]
        assert result.structured_content["status"] == "ok"

        failed = await call_tool(client, "execute_code", path=path, code="1 / 0")
        assert failed["status"] == "error"
        assert failed["outputs"][0]["output_type"] == "error"
        assert failed["outputs"][0]["text"].startswith("ZeroDivisionError: division by zero")

        activity = await call_tool(client, "get_user_activity", document_path=path)
        assert [a["description"] for a in activity["activities"][:2]] == [
            "ran scratch code (5 characters): error",
            f"ran scratch code ({len(scratch)} characters): ok",
        ]

        ran = await call_tool(client, "execute_notebook_cell", path=path, cell_id="k0")
        assert ran["execution_count"] == 1  # the scratch runs moved no count
        await human.wait_until(lambda: human.cells()[0]["execution_count"] == 1)
        assert without(human.cells(), "k0") == without(seen, "k0")
        assert human.cells()[0]["outputs"] == []


async def test_no_kernel_is_an_actionable_error_and_starts_none(
    mcp_client: Any, make_notebook: Any, jp_serverapp: Any
) -> None:
    path = make_notebook("idle.ipynb", code("x = 1"))
    async with mcp_client() as client:
        message = await tool_error(client, "list_variables", path=path)
        assert "no kernel is running for 'idle.ipynb'" in message
        assert "run a cell" in message
        assert "no kernel is running" in await variable_error(client, path, "x")
    assert jp_serverapp.kernel_manager.list_kernel_ids() == []


async def debug_request(client: Any, command: str, arguments: dict[str, Any], seq: int) -> dict[str, Any]:
    """What JupyterLab's debugger sends: a debug_request on the control channel."""
    content = {"type": "request", "seq": seq, "command": command, "arguments": arguments}
    message = client.session.msg("debug_request", content)
    client.control_channel.send(message)
    while True:
        try:
            reply = await client.get_control_msg(timeout=30)
        except queue.Empty:
            raise AssertionError(f"no reply to {command}") from None
        if reply["parent_header"].get("msg_id") == message["header"]["msg_id"]:
            return dict(reply["content"])


async def test_a_started_debugger_is_used_and_works_while_the_kernel_is_busy(
    mcp_client: Any, make_notebook: Any, jp_serverapp: Any
) -> None:
    path = make_notebook("debugged.ipynb", code("n = 42\nwords = ['a', 'b']", "import time\ntime.sleep(30)"))
    async with mcp_client() as client:
        await call_tool(client, "execute_notebook_cell", path=path, cell_id="k0", timeout=60)
        assert (await call_tool(client, "list_variables", path=path))["via"] == "kernel"
        # A person switches JupyterLab's debugger on: its own client, its own session.
        kernel_id = jp_serverapp.kernel_manager.list_kernel_ids()[0]
        km = jp_serverapp.kernel_manager.get_kernel(kernel_id)
        lab = km.client(session=Session(key=km.session.key, signature_scheme=km.session.signature_scheme))
        lab.start_channels()
        try:
            await lab.wait_for_ready(timeout=30)
            started = await debug_request(
                lab, "initialize", {"clientID": "lab", "adapterID": "python", "pathFormat": "path"}, 1
            )
            assert started["success"], started
            sleeping = asyncio.ensure_future(
                client.call_tool("execute_notebook_cell", {"path": path, "cell_id": "k1", "timeout": 60})
            )
            try:
                await until(lambda: km.execution_state == "busy", 20, "the kernel running the cell")
                listed = await within(call_tool(client, "list_variables", path=path), 8)  # the busy kernel answers
                assert listed["via"] == "debugger"
                by_name = {v["name"]: v for v in listed["variables"]}
                assert by_name["n"]["value"] == "42"
                assert by_name["words"]["type"] == "list"
                detail = await within(variable(client, path, "words"), 8)
                assert (detail["via"], detail["type"], detail["value"]) == ("debugger", "list", "['a', 'b']")
            finally:
                await call_tool(client, "interrupt_notebook_kernel", path=path)
                await within(sleeping, 30)
            await debug_request(lab, "disconnect", {"restart": False, "terminateDebuggee": False}, 2)
        finally:
            lab.stop_channels()
