"""Kernels behind a kernel gateway: a real Jupyter Kernel Gateway on loopback, and the test server pointed at it
(``GatewayClient.url``, as ``jupyter lab --gateway-url`` does), so that jupyter_server's gateway managers and
clients carry every kernel request of ours."""

from __future__ import annotations

import asyncio
import json
import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from jupyter_client.session import Session
from jupyter_server.gateway.gateway_client import GatewayClient
from jupyter_server.gateway.managers import GatewayMappingKernelManager
from mcp_types import Implementation
from pycrdt import Map
from tornado.httpclient import HTTPRequest
from tornado.websocket import websocket_connect
from traitlets.config import Config

from .conftest import call_tool, tool_error, until, within
from .kernel_gateway import Gateway

pytestmark = pytest.mark.usefixtures("jp_serverapp")

ALT = "python3-alt"
FLAVOR = "import os\nos.environ.get('KERNEL_FLAVOR', 'default')"


@pytest.fixture
def gateway(tmp_path: Path, jp_root_dir: Path, jp_environ: None, jp_kernel_dir: Path) -> Iterator[Gateway]:
    """The gateway runs its kernels in the server's root directory, as a gateway sharing its file system would,
    with the test's Jupyter paths: a second Python kernelspec (its kernels say so) besides python3."""
    spec_dir = jp_kernel_dir / ALT
    spec_dir.mkdir(parents=True, exist_ok=True)
    spec = {
        "argv": [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"],
        "display_name": "Python 3 (alt)",
        "language": "python",
        "env": {"KERNEL_FLAVOR": "alt"},
    }
    (spec_dir / "kernel.json").write_text(json.dumps(spec))
    running = Gateway(jp_root_dir, tmp_path / "gateway.log", token=True)
    try:
        running.start()
        yield running
    finally:
        # After the server's cleanup (jp_server_cleanup below), which reaches the gateway through these
        GatewayClient.clear_instance()  # a singleton: each test's server makes its own from its config
        GatewayMappingKernelManager._kernels.clear()  # a class attribute: it would outlive the test's server
        running.stop()


@pytest.fixture(autouse=True)
def jp_server_cleanup(gateway: Gateway, jp_server_cleanup: None) -> None:
    """The server's cleanup (it shuts its kernels down through the gateway) runs before the gateway stops."""


@pytest.fixture
def launch_timeout() -> int:
    """The gateway's kernel launch timeout (``KERNEL_LAUNCH_TIMEOUT``); requests get 2 s more."""
    return 28


@pytest.fixture
def jp_server_config(
    jp_server_config: Config, gateway: Gateway, launch_timeout: int, monkeypatch: pytest.MonkeyPatch
) -> Config:
    GatewayClient.clear_instance()
    # Process-wide in jupyter_server (a class attribute and the environment): restored after the test
    monkeypatch.setattr(GatewayClient, "KERNEL_LAUNCH_TIMEOUT", launch_timeout)
    monkeypatch.setenv("KERNEL_LAUNCH_TIMEOUT", str(launch_timeout))
    jp_server_config.GatewayClient.url = gateway.url
    jp_server_config.GatewayClient.auth_token = gateway.token
    jp_server_config.GatewayClient.launch_timeout_pad = 2.0
    jp_server_config.GatewayClient.request_timeout = launch_timeout + 2.0
    jp_server_config.GatewayClient.connect_timeout = 10.0
    return jp_server_config


def code(*sources: str) -> list[dict[str, Any]]:
    return [{"cell_type": "code", "source": s, "id": f"k{i}"} for i, s in enumerate(sources)]


class Api:
    """Jupyter's REST API as JupyterLab calls it, and the gateway's own."""

    def __init__(self, http: Any, root: str, auth: dict[str, str], gateway: Gateway) -> None:
        self.http, self.root, self.auth, self.gateway = http, root, auth, gateway

    async def get(self, what: str) -> Any:
        response = await self.http.get(f"{self.root}/{what}", headers=self.auth)
        assert response.status_code == 200, response.text
        return response.json()

    async def post(self, what: str, body: dict[str, Any]) -> Any:
        response = await self.http.post(f"{self.root}/{what}", json=body, headers=self.auth)
        assert response.status_code in (200, 201), response.text
        return response.json()

    async def gateway_kernels(self) -> list[dict[str, Any]]:
        response = await self.http.get(f"{self.gateway.url}/api/kernels", headers=self.gateway.headers)
        assert response.status_code == 200, response.text
        return list(response.json())


@pytest.fixture
def api(http: Any, server_root: str, jp_base_url: str, auth: dict[str, str], gateway: Gateway) -> Api:
    return Api(http, f"{server_root}{jp_base_url}api", auth, gateway)


async def test_cells_run_in_a_gateway_kernel_shared_with_jupyterlab(
    mcp_client: Any, make_notebook: Any, collaborator: Any, jp_serverapp: Any, api: Api
) -> None:
    assert type(jp_serverapp.kernel_manager).__name__ == "GatewayMappingKernelManager"
    path = make_notebook("gw.ipynb", code("import os\nos.getpid()", "print('hello')\n40 + 2", "1 / 0"))
    # JupyterLab opened the notebook first: its session's kernel runs on the gateway
    opened = await api.post("sessions", {"path": path, "type": "notebook", "name": path, "kernel": {"name": "python3"}})
    async with collaborator(path) as human, mcp_client() as client:
        first = await call_tool(client, "execute_notebook_cell", path=path, cell_id="k0", timeout=60)
        assert first["status"] == "ok"
        assert int(first["outputs"][0]["text"]) != os.getpid()
        second = await call_tool(client, "execute_notebook_cell", path=path, cell_id="k1")
        assert [o["text"] for o in second["outputs"]] == ["hello\n", "42"]
        assert second["execution_count"] == 2
        await human.wait_until(lambda: human.cells()[1].get("execution_count") == 2)
        assert [o.get("text") or o["data"]["text/plain"] for o in human.cells()[1]["outputs"]] == ["hello\n", "42"]
        error = await call_tool(client, "execute_notebook_cell", path=path, cell_id="k2")
        assert error["status"] == "error"
        assert error["outputs"][0]["text"].startswith("ZeroDivisionError")
        info = await call_tool(client, "get_notebook_info", path=path)
    sessions = [s for s in await api.get("sessions") if s["path"] == path]
    assert len(sessions) == 1
    assert sessions[0]["kernel"]["id"] == opened["kernel"]["id"] == info["kernel"]["id"]
    assert [k["id"] for k in await api.get("kernels")] == [opened["kernel"]["id"]]
    assert [k["id"] for k in await api.gateway_kernels()] == [opened["kernel"]["id"]], "one kernel on the gateway"


@pytest.mark.parametrize("launch_timeout", [5])
async def test_a_cell_silent_for_longer_than_the_gateway_launch_timeout_runs_to_its_end(
    mcp_client: Any, make_notebook: Any
) -> None:
    """jupyter_server gives its gateway client's websocket the kernel launch timeout (here 5 s) as a socket
    timeout: its reader would give up on a cell that prints nothing for longer (the gateway's pings, every
    30 s, only save it when that timeout is longer)."""
    path = make_notebook("quiet.ipynb", code("import time\ntime.sleep(7)\n'woke'"))
    async with mcp_client() as client:
        result = await call_tool(client, "execute_notebook_cell", path=path, cell_id="k0", timeout=60)
    assert (result["status"], result["outputs"][0]["text"]) == ("ok", "'woke'")


async def test_the_agent_joins_a_gateway_kernel_busy_with_a_persons_cell(
    mcp_client: Any, make_notebook: Any, api: Api, server_root: str, jp_base_url: str, auth: dict[str, str]
) -> None:
    """A person runs a long cell from JupyterLab (its kernel websocket, which the server relays to the gateway);
    the agent's first call then connects while the kernel is busy, and waits for it rather than failing."""
    path = make_notebook("busy.ipynb", code("1 + 1"))
    opened = await api.post("sessions", {"path": path, "type": "notebook", "name": path, "kernel": {"name": "python3"}})
    url = f"{server_root.replace('http', 'ws')}{jp_base_url}api/kernels/{opened['kernel']['id']}/channels"
    person = await within(websocket_connect(HTTPRequest(url, headers=auth)))
    try:
        session = Session()
        request = session.msg("execute_request", {"code": "import time\ntime.sleep(3)\n'done'", "silent": False})
        person.write_message(json.dumps({**request, "channel": "shell"}, default=str))
        while True:  # until the kernel is running the person's cell
            message = json.loads(await within(person.read_message()))
            if message["msg_type"] == "execute_input" and message["parent_header"]["msg_id"] == request["msg_id"]:
                break
        async with mcp_client() as client:
            scratch = await call_tool(client, "execute_code", path=path, code="6 * 7")
            assert (scratch["status"], scratch["outputs"][0]["text"]) == ("ok", "42")
            ran = await call_tool(client, "execute_notebook_cell", path=path, cell_id="k0")
            assert (ran["execution_count"], ran["outputs"][0]["text"]) == (2, "2"), "after the person's cell"
    finally:
        person.close()
    assert [k["id"] for k in await api.gateway_kernels()] == [opened["kernel"]["id"]]


async def test_outputs_stream_from_a_gateway_kernel_while_the_call_runs(
    mcp_client: Any, make_notebook: Any, collaborator: Any, jp_root_dir: Path
) -> None:
    # Each line is printed once the test saw the one before in the room: the kernel runs in the root directory.
    slow = (
        "import os, time\nfor i in range(4):\n    while not os.path.exists(f'go{i}'):\n        time.sleep(0.01)\n"
        "    print(i, flush=True)"
    )
    path = make_notebook("slow.ipynb", code(slow))
    async with collaborator(path) as human, mcp_client() as client:
        call = asyncio.ensure_future(
            within(client.call_tool("execute_notebook_cell", {"path": path, "cell_id": "k0", "timeout": 90}), 90)
        )
        try:
            for i in range(4):
                (jp_root_dir / f"go{i}").write_text("")
                expected = "".join(f"{n}\n" for n in range(i + 1))
                await human.wait_until(lambda text=expected: _stream_text(human) == text, limit=60)  # type: ignore[misc]
                if i < 3:
                    assert not call.done(), "outputs must arrive while the call is still running"
                    assert human.execution_state(0) == "running"
        finally:
            for i in range(4):
                (jp_root_dir / f"go{i}").write_text("")
        result = await call
        assert not result.is_error, result.content[0].text
        assert result.structured_content["outputs"][0]["text"] == "0\n1\n2\n3\n"
        await human.wait_until(lambda: human.execution_state(0) == "idle")


def _stream_text(human: Any) -> str:
    outputs = human.cells()[0].get("outputs") or []
    return str(outputs[0].get("text", "")) if outputs else ""


async def test_interrupt_timeout_and_restart_through_the_gateway(
    mcp_client: Any, make_notebook: Any, collaborator: Any, api: Api
) -> None:
    sleep = "import time\nprint('asleep', flush=True)\ntime.sleep(60)"
    path = make_notebook("restart.ipynb", code("x = 41", "x + 1", sleep))
    async with mcp_client() as client, collaborator(path) as human:
        await call_tool(client, "batch_execute_notebook_cells", path=path, cell_ids=["k0", "k1"], timeout=60)
        sleeper = asyncio.ensure_future(
            within(client.call_tool("execute_notebook_cell", {"path": path, "cell_id": "k2", "timeout": 60}), 60)
        )
        await human.wait_until(lambda: bool(human.cells()[2]["outputs"]), limit=30)  # inside the cell's code
        interrupted = await call_tool(client, "interrupt_notebook_kernel", path=path)
        assert interrupted["kernel"]["name"] == "python3"
        result = await sleeper
        assert not result.is_error, result.content[0].text
        assert result.structured_content["status"] == "error"
        assert "KeyboardInterrupt" in "".join(o["text"] for o in result.structured_content["outputs"])

        timed_out = await call_tool(client, "execute_notebook_cell", path=path, cell_id="k2", timeout=2)
        assert timed_out["status"] == "timeout"
        assert "KeyboardInterrupt" in "".join(o["text"] for o in timed_out["outputs"])

        kernel_id = (await api.gateway_kernels())[0]["id"]
        restarted = await call_tool(
            client, "restart_notebook_kernel", path=path, clear_outputs=True, exec=True, timeout=2
        )
        assert restarted["kernel"] == {"name": "python3", "id": kernel_id, "state": restarted["kernel"]["state"]}
        assert [(r["id"], r["status"]) for r in restarted["executions"]] == [
            ("k0", "ok"),
            ("k1", "ok"),
            ("k2", "timeout"),
        ]
        assert restarted["executions"][1]["outputs"][0]["text"] == "42"
        assert restarted["executions"][1]["execution_count"] == 2, "a fresh kernel counts from 1"

        after = await call_tool(client, "execute_notebook_cell", path=path, cell_id="k1")
        assert (after["status"], after["outputs"][0]["text"]) == ("ok", "42")
        await human.wait_until(lambda: human.cells()[1].get("execution_count") == after["execution_count"])
    assert [k["id"] for k in await api.gateway_kernels()] == [kernel_id], "restarted in place: the same kernel"


async def test_kernelspecs_and_kernel_switch_come_from_the_gateway(
    mcp_client: Any, make_notebook: Any, collaborator: Any, api: Api
) -> None:
    path = make_notebook("switch.ipynb", code("x = 41", FLAVOR))
    async with mcp_client() as client, collaborator(path) as human:
        listed = await call_tool(client, "list_kernelspecs")
        assert {s["name"] for s in listed["kernelspecs"]} >= {"python3", ALT}
        assert listed["default"] == "python3"
        first = await call_tool(client, "batch_execute_notebook_cells", path=path, timeout=60)
        assert first["executions"][1]["outputs"][0]["text"] == "'default'"
        old = (await api.gateway_kernels())[0]["id"]

        switched = await call_tool(client, "set_notebook_kernel", path=path, kernel_name=ALT)
        assert switched["started"] is True
        assert switched["kernel"]["id"] != old
        await human.wait_until(lambda: human.doc.get("meta", type=Map).get("metadata")["kernelspec"]["name"] == ALT)
        run = await call_tool(client, "execute_notebook_cell", path=path, cell_id="k1", timeout=60)
        assert run["outputs"][0]["text"] == "'alt'"
        sessions = [s for s in await api.get("sessions") if s["path"] == path]
        assert [s["kernel"]["id"] for s in sessions] == [switched["kernel"]["id"]]
        assert [k["id"] for k in await api.gateway_kernels()] == [switched["kernel"]["id"]], "the old one shut down"
        running = await call_tool(client, "list_kernels")
        assert [(k["id"], k["paths"]) for k in running["kernels"]] == [(switched["kernel"]["id"], [path])]
        assert "not installed" in await tool_error(client, "set_notebook_kernel", path=path, kernel_name="nope")


async def test_variables_and_scratch_code_in_a_gateway_kernel(
    mcp_client: Any, make_notebook: Any, collaborator: Any
) -> None:
    path = make_notebook("vars.ipynb", code("n = 42\nwords = ['a', 'b']", "n + 1"))
    async with mcp_client() as client, collaborator(path) as human:
        await call_tool(client, "execute_notebook_cell", path=path, cell_id="k0", timeout=60)
        listed = await call_tool(client, "list_variables", path=path)
        assert {v["name"]: v["value"] for v in listed["variables"]} == {"n": "42", "words": "['a', 'b']"}
        one = await within(client.call_tool("get_variable", {"path": path, "name": "words"}))
        assert not one.is_error, one.content[0].text
        assert (one.structured_content["name"], one.structured_content["type"]) == ("words", "list")
        scratch = await call_tool(client, "execute_code", path=path, code="print('out')\nn * 2")
        assert [(o["output_type"], o["text"]) for o in scratch["outputs"]] == [
            ("stream", "out\n"),
            ("execute_result", "84"),
        ]
        ran = await call_tool(client, "execute_notebook_cell", path=path, cell_id="k1")
        assert (ran["execution_count"], ran["outputs"][0]["text"]) == (2, "43"), "scratch runs moved no count"
        await human.wait_until(lambda: human.cells()[1].get("execution_count") == 2)


async def test_a_kernel_dying_behind_the_gateway_is_reported(mcp_client: Any, make_notebook: Any) -> None:
    path = make_notebook("die.ipynb", code("import os\nos._exit(1)", "1 + 2"))
    async with mcp_client() as client:
        message = await tool_error(client, "execute_notebook_cell", path=path, cell_id="k0", timeout=60)
        assert "kernel died" in message

        async def runs() -> bool:  # the gateway's restarter brings the kernel back (a run may meet it restarting)
            # one sent while the gateway reconnects to the new kernel can get no answer: a short timeout, again
            arguments = {"path": path, "cell_id": "k1", "timeout": 10}
            result = await within(client.call_tool("execute_notebook_cell", arguments), 30)
            outputs = [] if result.is_error else result.structured_content["outputs"]
            return bool(outputs) and outputs[0]["text"] == "3"

        await until(runs, limit=75, what="a run after the gateway restarted the kernel")


async def test_a_stopped_gateway_is_a_tool_error_naming_it_and_the_server_keeps_serving(
    mcp_client: Any, make_notebook: Any, collaborator: Any, gateway: Gateway, api: Api
) -> None:
    waits = "import os, time\nprint('waiting', flush=True)\nwhile not os.path.exists('never'):\n    time.sleep(0.01)"
    path = make_notebook("down.ipynb", code("1 + 1", waits))
    where = f"127.0.0.1:{gateway.port}"
    async with mcp_client() as client, collaborator(path) as human:
        await call_tool(client, "execute_notebook_cell", path=path, cell_id="k0", timeout=60)
        running = asyncio.ensure_future(
            within(client.call_tool("execute_notebook_cell", {"path": path, "cell_id": "k1", "timeout": 60}), 60)
        )
        await human.wait_until(lambda: bool(human.cells()[1]["outputs"]), limit=30)  # inside the cell's code
        await asyncio.to_thread(gateway.kill)  # the gateway crashes during the run
        crashed = await running
        assert crashed.is_error
        assert f"the kernel gateway at {where} failed" in crashed.content[0].text
        await human.wait_until(lambda: human.execution_state(1) != "running", limit=10)

        for tool, arguments in [
            ("execute_notebook_cell", {"path": path, "cell_id": "k0"}),
            ("execute_code", {"path": path, "code": "1"}),
            ("list_kernelspecs", {}),
            ("list_kernels", {}),
            ("interrupt_notebook_kernel", {"path": path}),
            ("restart_notebook_kernel", {"path": path}),
            ("list_variables", {"path": path}),
        ]:
            message = await tool_error(client, tool, **arguments)
            assert f"the kernel gateway at {where} failed" in message, (tool, message)
            assert "check that the gateway is running" in message
        read = await call_tool(client, "get_notebook", path=path)  # the server goes on serving
        assert read["cells"][0]["source"] == "1 + 1"
        assert (await api.get("contents"))["type"] == "directory"

        await asyncio.to_thread(gateway.start)  # back, empty: the kernel went with the old one
        listed = await call_tool(client, "list_kernelspecs")
        assert "python3" in {s["name"] for s in listed["kernelspecs"]}

        gone = await tool_error(client, "execute_notebook_cell", path=path, cell_id="k0")
        assert f"the kernel gateway at {where} no longer has the notebook's kernel" in gone
        assert "run it again to start a new kernel" in gone
        again = await call_tool(client, "execute_notebook_cell", path=path, cell_id="k0", timeout=60)
        assert (again["execution_count"], again["outputs"][0]["text"]) == (1, "2"), "a new kernel"
        sessions = [s for s in await api.get("sessions") if s["path"] == path]
        assert [s["kernel"]["id"] for s in sessions] == [k["id"] for k in await api.gateway_kernels()]


async def test_a_run_cut_off_by_the_gateway_says_it_began_and_what_stayed(
    mcp_client: Any, make_notebook: Any, collaborator: Any, gateway: Gateway
) -> None:
    # Thirty iterations, printing and sleeping; the sixth waits for a file that never comes: the gateway goes away
    # once the test saw six lines in the room.
    loop = (
        "import os, time\nfor i in range(30):\n    print(i, flush=True)\n    time.sleep(0.01)\n"
        "    while i == 5 and not os.path.exists('never'):\n        time.sleep(0.01)"
    )
    path = make_notebook("cut.ipynb", code(loop))
    printed = "".join(f"{i}\n" for i in range(6))
    async with mcp_client() as client, collaborator(path) as human:
        run = asyncio.ensure_future(
            within(client.call_tool("execute_notebook_cell", {"path": path, "cell_id": "k0", "timeout": 60}), 90)
        )
        await human.wait_until(lambda: _stream_text(human) == printed, limit=60)
        await asyncio.to_thread(gateway.kill)  # the gateway crashes during the run
        try:
            result = await run
            assert result.is_error
            message = result.content[0].text
            assert f"the kernel gateway at 127.0.0.1:{gateway.port} failed" in message, message
            assert "the run was cut off after it began" in message, message
            assert "nothing was run" not in message, message
            assert "The 6 outputs it sent until then stayed in the cell (the last line: '5')" in message, message
            await human.wait_until(lambda: human.execution_state(0) != "running", limit=10)
            assert _stream_text(human) == printed
        finally:
            await asyncio.to_thread(gateway.start)  # back for the server's cleanup (it shuts kernels down there)


@pytest.mark.parametrize("by", ["agent", "jupyterlab"])
async def test_a_restart_ends_a_run_on_a_gateway_kernel_with_an_error_that_says_so(
    by: str, mcp_client: Any, make_notebook: Any, collaborator: Any, api: Api
) -> None:
    long = "import time\nfor i in range(6000):\n    print(i, flush=True)\n    time.sleep(0.05)"
    path = make_notebook("restarted.ipynb", code(long, "1 + 1"))
    restarter = Implementation(name="restarter", title="Restarter", version="1")
    async with (
        mcp_client() as client,
        mcp_client(client_info=restarter) as other,
        collaborator(path) as human,
    ):
        await call_tool(client, "execute_notebook_cell", path=path, cell_id="k1", timeout=60)
        run = asyncio.ensure_future(
            within(client.call_tool("execute_notebook_cell", {"path": path, "cell_id": "k0", "timeout": 60}), 90)
        )
        await human.wait_until(lambda: bool(human.cells()[0]["outputs"]), limit=60)
        if by == "agent":
            await call_tool(other, "restart_notebook_kernel", path=path)
        else:
            kernel_id = (await api.gateway_kernels())[0]["id"]
            await api.post(f"kernels/{kernel_id}/restart", {})
        result = await run
        assert result.is_error, result.structured_content
        message = result.content[0].text
        expected = "restarted by Restarter" if by == "agent" else "restarted from JupyterLab"
        assert expected in message and "cut off after it began" in message, message
        again = await call_tool(client, "execute_notebook_cell", path=path, cell_id="k1", timeout=60)
        assert again["outputs"][0]["text"] == "2"
