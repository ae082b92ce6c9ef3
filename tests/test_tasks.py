"""Long runs as MCP tasks, on the real wire in both eras: a run started as a task outlives its client, a new
client polls it to the end with every output, a cancel interrupts it, what is kept is bounded and expires, and
only its creator sees it. Without the opt-in a call is answered as ever."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, ClassVar, Literal

import anyio
import httpx2
import pycrdt
import pytest
from mcp.client.extension import ClaimContext, ClientExtension, ResultClaim
from mcp_types import (
    CallToolResult,
    CreateTaskResult,
    GetTaskPayloadRequest,
    GetTaskPayloadRequestParams,
    GetTaskRequest,
    GetTaskRequestParams,
    GetTaskResult,
    Request,
    RequestParams,
    Result,
)

from jupyter_pair_mcp.services.tasks import TAIL_OUTPUTS, TaskStore

from .conftest import LEGACY_VERSION, MCP_HEADERS, call_tool, open_session, rpc, sse_messages, until, within

pytestmark = pytest.mark.usefixtures("jp_serverapp")

MODERN = "2026-07-28"
TASKS = "io.modelcontextprotocol/tasks"
PROGRESS = "jupyter-pair-mcp/progress"
#: A 20-second cell printing its progress, which ends at once when the test creates ``go``.
LONG = (
    "import os, time\n"
    "for i in range(20):\n"
    "    print(f'step {i}', flush=True)\n"
    "    deadline = time.time() + 1\n"
    "    while time.time() < deadline and not os.path.exists('go'):\n"
    "        time.sleep(0.01)\n"
    "print('finished')"
)
FOREVER = "import time\nwhile True:\n    time.sleep(0.01)"  # ends only when interrupted
WAIT = "import os, time\nwhile not os.path.exists('go'):\n    time.sleep(0.01)\n'released'"


def code(*sources: str) -> list[dict[str, Any]]:
    return [{"cell_type": "code", "source": s, "id": f"k{i}"} for i, s in enumerate(sources)]


async def post(http: httpx2.AsyncClient, url: str, headers: dict[str, str], body: dict[str, Any]) -> dict[str, Any]:
    """One JSON-RPC request over HTTP; its response message (from a JSON body or an SSE stream)."""
    response = await within(http.post(url, json=body, headers=headers), 60)
    assert response.status_code in (200, 400), response.text  # 400: a JSON-RPC error (2026-07-28)
    if response.headers["content-type"].startswith("text/event-stream"):
        messages = [m for _, m in sse_messages(response.text) if m and m.get("id") == body["id"]]
        assert messages, response.text
        return messages[-1]
    return dict(response.json())


class Legacy:
    """A 2025-11-25 client over raw HTTP: its own HTTP connection and session."""

    def __init__(self, url: str, auth: dict[str, str]) -> None:
        self.url, self.auth, self.http = url, auth, httpx2.AsyncClient(timeout=60)
        self.headers: dict[str, str] = {}
        self.ids = 1

    async def open(self) -> Legacy:
        session = await open_session(self.http, self.url, self.auth)
        self.headers = {**MCP_HEADERS, **self.auth, "mcp-session-id": session, "mcp-protocol-version": LEGACY_VERSION}
        return self

    async def request(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        self.ids += 1
        return await post(self.http, self.url, self.headers, rpc(method, params, id=self.ids))

    async def close(self) -> None:
        await self.http.delete(self.url, headers=self.headers)
        await self.http.aclose()


class Modern:
    """A 2026-07-28 client over raw HTTP (stateless: every request names its version and capabilities)."""

    def __init__(
        self, url: str, headers: dict[str, str], *, tasks: bool = True, http: httpx2.AsyncClient | None = None
    ) -> None:
        self.url, self.headers, self.http = url, headers, http or httpx2.AsyncClient(timeout=60)
        self.extensions: dict[str, Any] = {TASKS: {}} if tasks else {}
        self.ids = 1

    async def request(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        self.ids += 1
        capabilities = {"extensions": self.extensions} if self.extensions else {}
        meta = {
            "io.modelcontextprotocol/protocolVersion": MODERN,
            "io.modelcontextprotocol/clientCapabilities": capabilities,
        }
        headers = {**MCP_HEADERS, **self.headers, "MCP-Protocol-Version": MODERN, "Mcp-Method": method}
        name = params.get("name") or params.get("taskId")
        if name:
            headers["Mcp-Name"] = str(name)
        return await post(self.http, self.url, headers, rpc(method, {**params, "_meta": meta}, id=self.ids))

    async def close(self) -> None:
        await self.http.aclose()


async def test_a_task_outlives_its_client_and_a_new_client_polls_it_to_the_end(
    mcp_url: str, auth: dict[str, str], make_notebook: Any, jp_root_dir: Path
) -> None:
    """2025-11-25: the task id comes back at once; the first client goes away mid-run; a second one polls the
    outputs so far, then gets the whole result."""
    path = make_notebook("long.ipynb", code(LONG))
    first = await Legacy(mcp_url, auth).open()
    listed = await first.request("tools/list", {})
    support = {t["name"]: t.get("execution", {}).get("taskSupport") for t in listed["result"]["tools"]}
    assert support["execute_notebook_cell"] == support["execute_code"] == "optional"
    assert support["get_notebook"] is None
    as_task = {"name": "get_notebook", "arguments": {"path": path}, "task": {}}
    assert (await first.request("tools/call", as_task))["error"]["code"] == -32601  # listed without task support
    started = await first.request(
        "tools/call",
        {
            "name": "execute_notebook_cell",
            "arguments": {"path": path, "cell_id": "k0", "timeout": 120},
            "task": {"ttl": 60_000},
        },
    )
    task = started["result"]["task"]
    assert task["status"] == "working" and task["ttl"] == 60_000 and task["pollInterval"] > 0
    task_id = task["taskId"]

    async def step_shown() -> bool:
        polled = (await first.request("tasks/get", {"taskId": task_id}))["result"]
        outputs = polled.get("_meta", {}).get("jupyter-pair-mcp/progress", {}).get("outputs", [])
        return any("step 1" in o["text"] for o in outputs)

    await until(step_shown, limit=60, what="the run's outputs so far in a poll")
    await first.close()  # the client goes away: the run goes on

    second = await Legacy(mcp_url, auth).open()
    try:
        polled = (await second.request("tasks/get", {"taskId": task_id}))["result"]
        assert polled["status"] == "working", polled
        listed_tasks = (await second.request("tasks/list", {}))["result"]["tasks"]
        assert [t["taskId"] for t in listed_tasks] == [task_id]
        (jp_root_dir / "go").touch()  # let the cell finish now rather than in 20 s
        result = (await second.request("tasks/result", {"taskId": task_id}))["result"]
        assert result["_meta"]["io.modelcontextprotocol/related-task"] == {"taskId": task_id}
        structured = result["structuredContent"]
        assert structured["status"] == "ok"
        printed = "".join(o["text"] for o in structured["outputs"])
        assert all(f"step {i}\n" in printed for i in range(20)) and "finished" in printed  # every output
        done = (await second.request("tasks/get", {"taskId": task_id}))["result"]
        assert done["status"] == "completed" and "_meta" not in done
    finally:
        await second.close()


async def test_cancel_interrupts_the_run_in_the_2026_era(
    mcp_url: str, auth: dict[str, str], make_notebook: Any, mcp_client: Any, audited: list[dict[str, Any]]
) -> None:
    path = make_notebook("forever.ipynb", code(FOREVER, "'free'"))
    client = Modern(mcp_url, auth)
    try:
        started = (
            await client.request(
                "tools/call",
                {"name": "execute_notebook_cell", "arguments": {"path": path, "cell_id": "k0", "timeout": 600}},
            )
        )["result"]
        assert started["resultType"] == "task" and started["status"] == "working", started
        assert started["ttlSeconds"] > 0 and started["pollIntervalMilliseconds"] > 0
        task_id = started["taskId"]
        async with mcp_client() as other:
            cancel = (await client.request("tasks/cancel", {"taskId": task_id}))["result"]
            assert cancel["resultType"] == "complete"

            async def cancelled() -> bool:
                return (await client.request("tasks/get", {"taskId": task_id}))["result"]["status"] == "cancelled"

            await until(cancelled, limit=60, what="the task cancelled")
            # The endless run was interrupted: the next run is served.
            free = await call_tool(other, "execute_notebook_cell", path=path, cell_id="k1", timeout=60)
            assert free["outputs"][0]["text"] == "'free'"
        await until(lambda: any(e["tool"] == "execute_notebook_cell" and e["outcome"] == "error" for e in audited))
        gone = await client.request("tasks/cancel", {"taskId": "no-such-task"})
        assert gone["result"]["resultType"] == "complete"  # acknowledged, as the extension says
    finally:
        await client.close()


async def test_the_2026_task_carries_its_result_and_without_the_opt_in_a_call_is_answered_as_ever(
    mcp_url: str, auth: dict[str, str], make_notebook: Any, mcp_client: Any
) -> None:
    path = make_notebook("plain.ipynb", code("40 + 2"))
    plain = Modern(mcp_url, auth, tasks=False)
    client = Modern(mcp_url, auth)
    try:
        discovered = (await client.request("server/discover", {}))["result"]
        assert TASKS in discovered["capabilities"]["extensions"]
        call = {"name": "execute_notebook_cell", "arguments": {"path": path, "cell_id": "k0", "timeout": 60}}
        answered = (await plain.request("tools/call", call))["result"]
        assert answered["resultType"] == "complete" and answered["structuredContent"]["outputs"][0]["text"] == "42"
        task_id = (await client.request("tools/call", call))["result"]["taskId"]

        async def completed() -> dict[str, Any] | None:
            polled = (await client.request("tasks/get", {"taskId": task_id}))["result"]
            return polled if polled["status"] == "completed" else None

        await until(completed, limit=60, what="the task completed")
        polled = await completed()
        assert polled is not None and polled["result"]["structuredContent"]["outputs"][0]["text"] == "42"
        # Reads never become tasks, and a tool's refusal of bad arguments comes at once.
        read = (await client.request("tools/call", {"name": "get_notebook", "arguments": {"path": path}}))["result"]
        assert read["resultType"] == "complete"
        bad = await client.request(
            "tools/call", {"name": "execute_notebook_cell", "arguments": {"path": path, "nope": 1}}
        )
        assert bad["result"]["isError"] is True
    finally:
        await plain.close()
        await client.close()
    async with mcp_client() as sdk:  # the SDK client, no opt-in: today's behaviour
        tasks = sdk.server_capabilities.tasks  # advertised in the 2025-11-25 handshake
        assert tasks is not None and tasks.requests is not None and tasks.requests.tools is not None
        assert (await call_tool(sdk, "execute_notebook_cell", path=path, cell_id="k0"))["outputs"][0]["text"] == "42"


async def test_another_principal_cannot_see_or_cancel_a_task(
    mcp_url: str,
    auth: dict[str, str],
    make_notebook: Any,
    server_root: str,
    jp_base_url: str,
    token: str,
    jp_root_dir: Path,
) -> None:
    path = make_notebook("mine.ipynb", code(WAIT))
    owner = Modern(mcp_url, auth)
    async with httpx2.AsyncClient(timeout=30) as browser:
        await browser.get(f"{server_root}{jp_base_url}login")
        xsrf = browser.cookies["_xsrf"]
        await browser.post(f"{server_root}{jp_base_url}login", data={"password": token, "_xsrf": xsrf})
        stranger = Modern(mcp_url, {"X-XSRFToken": xsrf}, http=browser)
        try:
            call = {"name": "execute_notebook_cell", "arguments": {"path": path, "cell_id": "k0", "timeout": 120}}
            task_id = (await owner.request("tools/call", call))["result"]["taskId"]
            seen = await stranger.request("tasks/get", {"taskId": task_id})
            assert "error" in seen and "did not create it" in seen["error"]["message"]
            assert "result" in await stranger.request("tasks/cancel", {"taskId": task_id})  # acknowledged, not done
            assert (await owner.request("tasks/get", {"taskId": task_id}))["result"]["status"] == "working"
            (jp_root_dir / "go").touch()

            async def completed() -> bool:
                return (await owner.request("tasks/get", {"taskId": task_id}))["result"]["status"] == "completed"

            await until(completed, limit=60, what="the owner's task completed")
        finally:
            await owner.close()


class TestBounds:
    @pytest.fixture
    def mcp_config(self) -> dict[str, Any]:
        return {"enable_test_fixtures": True, "max_tasks_per_principal": 2, "task_max_principal_bytes": 1500}

    async def test_tasks_are_bounded_by_count_and_bytes_and_expire(
        self, mcp_url: str, auth: dict[str, str], make_notebook: Any, jp_root_dir: Path, extension: Any
    ) -> None:
        path = make_notebook("bounds.ipynb", code(WAIT, "print('x' * 3000)", "1"))
        client = await Legacy(mcp_url, auth).open()
        try:

            async def start(cell: str, ttl: int = 60_000) -> dict[str, Any]:
                arguments = {"path": path, "cell_id": cell, "timeout": 120}
                body = {"name": "execute_notebook_cell", "arguments": arguments, "task": {"ttl": ttl}}
                return (await client.request("tools/call", body))["result"]

            first = (await start("k0"))["task"]["taskId"]
            second = (await start("k2"))["task"]["taskId"]  # queues behind the first in the kernel
            refused = await start("k2")
            assert refused["isError"] is True and "still running" in refused["content"][0]["text"]
            (jp_root_dir / "go").touch()
            for task_id in (first, second):
                assert "structuredContent" in (await client.request("tasks/result", {"taskId": task_id}))["result"]
            # Room for a third: the oldest finished task is dropped. Its result is over the bytes bound.
            big = (await start("k1"))["task"]["taskId"]
            gone = await client.request("tasks/get", {"taskId": first})
            assert "did not create it" in gone["error"]["message"]
            result = (await client.request("tasks/result", {"taskId": big}))["result"]
            assert result["isError"] is True and "larger than a task may keep" in result["content"][0]["text"]
            # A task whose time to live passed is forgotten.
            short = (await start("k2", ttl=1))["task"]["taskId"]
            await client.request("tasks/result", {"taskId": short})

            async def expired() -> bool:
                return "error" in await client.request("tasks/get", {"taskId": short})

            await until(expired, what="the short-lived task expired")
            assert extension._built().tasks.count <= 2
        finally:
            await client.close()


class TaskHandle(Result):
    """The 2026 ``CreateTaskResult``, as a client extension claims it."""

    result_type: Literal["task"] = "task"
    task_id: str
    status: str


class TaskIdParams(RequestParams):
    task_id: str


class TaskState(Result):
    task_id: str
    status: str
    result: dict[str, Any] | None = None
    error: dict[str, Any] | None = None


class GetTask(Request[TaskIdParams, Literal["tasks/get"]]):
    method: Literal["tasks/get"] = "tasks/get"
    params: TaskIdParams
    name_param: ClassVar[str | None] = "taskId"


async def poll(session: Any, task_id: str) -> TaskState:
    return await session.send_request(GetTask(params=TaskIdParams(task_id=task_id)), TaskState)


async def finish(handle: TaskHandle, ctx: ClaimContext) -> CallToolResult:
    """The tasks extension's client side: poll until the task ends; its result is the call's."""
    while (state := await poll(ctx.session, handle.task_id)).status == "working":
        await anyio.sleep(0.05)  # the client's poll loop (the server suggests 1 s; a test need not wait that long)
    assert state.status == "completed", state
    return CallToolResult.model_validate(state.result)


class Tasks(ClientExtension):
    """The SDK client with the Tasks extension (SEP-2663): the SDK has the claim hook, not the extension."""

    identifier = TASKS

    def claims(self) -> list[ResultClaim[Any]]:
        return [ResultClaim(result_type="task", model=TaskHandle, resolve=finish)]


async def test_the_sdk_client_of_2026_runs_a_call_as_a_task_and_a_new_client_finishes_it(
    mcp_client: Any, make_notebook: Any, jp_root_dir: Path
) -> None:
    """With the extension, the SDK client's call_tool is answered by polling the task; a client that takes the
    task handle and goes away leaves the run going, and a new client polls it to the end."""
    path = make_notebook("sdk.ipynb", code("40 + 2", LONG))
    async with mcp_client(mode=MODERN, extensions=[Tasks()]) as client:
        assert (await call_tool(client, "execute_notebook_cell", path=path, cell_id="k0"))["outputs"][0]["text"] == "42"
        arguments = {"path": path, "cell_id": "k1", "timeout": 120}
        handle = await within(client.session.call_tool("execute_notebook_cell", arguments, allow_claimed=True))
        assert isinstance(handle, TaskHandle) and handle.status == "working"
    async with mcp_client(mode=MODERN, extensions=[Tasks()]) as again:
        assert (await poll(again.session, handle.task_id)).status == "working"
        (jp_root_dir / "go").touch()
        context = ClaimContext(session=again.session, tool_name="", read_timeout_seconds=None)
        result = await within(finish(handle, context))
        printed = "".join(o["text"] for o in result.structured_content["outputs"])
        assert "step 0" in printed and "finished" in printed


# Pure logic of the store (no server): what no wire test can time.


async def test_a_task_cancelled_before_its_run_began_ends_cancelled() -> None:
    store = TaskStore()
    task = store.create("p", "execute_code", None)

    async def never() -> dict[str, Any]:
        raise AssertionError("not reached")

    store.start(task, never)
    await store.cancel("p", task.id)
    assert task.status == "cancelled" and task.done.is_set()


async def test_results_are_bounded_per_principal_and_others_are_untouched() -> None:
    store = TaskStore(max_principal_bytes=1000, max_bytes=10_000)
    made = []
    for principal in ("a", "a", "a", "b"):
        task = store.create(principal, "execute_code", None)
        store.start(task, lambda: _result(400))
        await task.done.wait()
        made.append(task)
    kept = {t.id for t in store.owned("a")}
    assert made[0].id not in kept and {made[1].id, made[2].id} <= kept  # the oldest went first
    assert [t.id for t in store.owned("b")] == [made[3].id]


@pytest.mark.loop_bound(
    0.5,
    reason="the test's own panic: Rust's panic hook prints a backtrace when RUST_BACKTRACE is set (resolving its "
    "symbols costs the first panic of a process ~140 ms), which no server path does on purpose",
    phases=("the test",),
)
async def test_a_run_that_panics_fails_its_task_with_a_reference(caplog: pytest.LogCaptureFixture) -> None:
    """A pycrdt panic (pyo3's PanicException, a BaseException) in a task's run: the task fails as any internal
    error does, named by a reference in the log, and the store goes on."""
    store = TaskStore()
    task = store.create("p", "execute_code", None)

    async def panics() -> dict[str, Any]:
        del pycrdt.Doc().get("t", type=pycrdt.Text)[5:7]  # yrs panics: "Couldn't remove 2 elements"
        raise AssertionError("pycrdt did not panic")

    store.start(task, panics)
    await task.done.wait()
    assert task.status == "failed" and task.error is not None, task
    ref = task.error["message"].split("(ref ")[1][:8]
    assert f"background task of execute_code failed (ref {ref})" in caplog.text
    other = store.create("p", "execute_code", None)
    store.start(other, lambda: _result(10))
    await other.done.wait()
    assert other.status == "completed"


async def _result(chars: int) -> dict[str, Any]:
    return {"content": [{"type": "text", "text": "x" * chars}]}


async def test_the_sdk_client_of_2025_polls_a_task_with_the_sdk_task_types(
    mcp_client: Any, mcp_url: str, auth: dict[str, str], make_notebook: Any
) -> None:
    """The SDK client validates a 2025-11-25 ``tools/call`` answer as a CallToolResult only, so the task is made
    over raw JSON-RPC; the SDK client (another session, same credential) polls it with the SDK's task types."""
    path = make_notebook("sdk25.ipynb", code("40 + 2"))
    raw = await Legacy(mcp_url, auth).open()
    arguments = {"path": path, "cell_id": "k0", "timeout": 60}
    body = {"name": "execute_notebook_cell", "arguments": arguments, "task": {"ttl": 5000}}
    created = CreateTaskResult.model_validate((await raw.request("tools/call", body))["result"])
    await raw.close()
    async with mcp_client() as client:
        payload = GetTaskPayloadRequest(params=GetTaskPayloadRequestParams(task_id=created.task.task_id))
        result = await within(client.session.send_request(payload, CallToolResult), 60)
        assert result.structured_content["outputs"][0]["text"] == "42"
        get = GetTaskRequest(params=GetTaskRequestParams(task_id=created.task.task_id))
        state = await within(client.session.send_request(get, GetTaskResult))
        assert state.status == "completed" and state.ttl == 5000


async def test_cancel_in_the_2025_era_answers_the_cancelled_task(
    mcp_url: str, auth: dict[str, str], make_notebook: Any, mcp_client: Any
) -> None:
    path = make_notebook(
        "up.ipynb", code("import time\nprint('up', flush=True)\nwhile True:\n    time.sleep(0.01)", "'free'")
    )
    client = await Legacy(mcp_url, auth).open()
    try:
        arguments = {"path": path, "cell_id": "k0", "timeout": 600}
        body = {"name": "execute_notebook_cell", "arguments": arguments, "task": {}}
        task_id = (await client.request("tools/call", body))["result"]["task"]["taskId"]

        async def up() -> bool:
            polled = (await client.request("tasks/get", {"taskId": task_id}))["result"]
            return any("up" in o["text"] for o in polled.get("_meta", {}).get(PROGRESS, {}).get("outputs", []))

        await until(up, limit=60, what="the cell running")
        cancelled = (await client.request("tasks/cancel", {"taskId": task_id}))["result"]
        assert cancelled["status"] == "cancelled", cancelled
        no_result = await client.request("tasks/result", {"taskId": task_id})
        assert "was cancelled" in no_result["error"]["message"]
        again = await client.request("tasks/cancel", {"taskId": task_id})
        assert "already cancelled" in again["error"]["message"]
        async with mcp_client() as other:  # the endless run was interrupted: the next one is served
            free = await call_tool(other, "execute_notebook_cell", path=path, cell_id="k1", timeout=60)
            assert free["outputs"][0]["text"] == "'free'"
    finally:
        await client.close()


class TestViewer:
    @pytest.fixture
    def jp_server_config(self, jp_server_config: Any) -> Any:
        from .conftest import ReadOnlyAuthorizer

        jp_server_config.ServerApp.authorizer_class = ReadOnlyAuthorizer
        return jp_server_config

    async def test_a_caller_who_may_not_run_code_gets_no_task_but_the_usual_refusal(
        self, mcp_url: str, auth: dict[str, str], make_notebook: Any, audited: list[dict[str, Any]], extension: Any
    ) -> None:
        path = make_notebook("viewed.ipynb", code("1"))
        legacy = await Legacy(mcp_url, auth).open()
        modern = Modern(mcp_url, auth)
        try:
            arguments = {"path": path, "cell_id": "k0"}
            for client, body in (
                (legacy, {"name": "execute_notebook_cell", "arguments": arguments, "task": {}}),
                (modern, {"name": "execute_notebook_cell", "arguments": arguments}),
            ):
                refused = (await client.request("tools/call", body))["result"]
                assert refused["isError"] is True and "not authorized" in refused["content"][0]["text"], refused
            await until(lambda: len(audited) == 2, what="the refusals' events")
            assert [(e["outcome"], e["error"]) for e in audited] == [("refused", "permission_denied")] * 2
            assert extension._built().tasks.count == 0
        finally:
            await legacy.close()
            await modern.close()


class _Outputs(list[dict[str, Any]]):
    """A cell's outputs that count how many are read."""

    reads = 0

    def __getitem__(self, index: Any) -> Any:
        type(self).reads += 1
        return super().__getitem__(index)


class _Rooms:
    """Just enough of a room for :meth:`TaskStore.outputs` (pure logic: no server)."""

    def __init__(self, outputs: _Outputs) -> None:
        self.outputs = outputs
        self.opened = 0

    async def notebook(self, path: str) -> Any:
        self.opened += 1
        return self

    def ycell(self, cell_id: str) -> dict[str, Any]:
        return {"outputs": self.outputs}


async def test_a_poll_reads_a_few_outputs_however_many_the_run_wrote() -> None:
    outputs = _Outputs({"output_type": "stream", "name": "stdout", "text": f"line {i}\n"} for i in range(10_000))
    rooms = _Rooms(outputs)
    store = TaskStore(rooms=rooms, poll_interval=3600)
    task = store.create("p", "execute_notebook_cell", "n.ipynb")
    await task.progress(10_000, "stream from cell k0")
    shown = await store.outputs(task)
    assert [o["text"] for o in shown][-1] == "line 9999\n" and len(shown) == TAIL_OUTPUTS
    assert _Outputs.reads == TAIL_OUTPUTS  # not the 10,000 outputs
    await store.outputs(task)  # within the poll interval: what was shown, no read
    await task.progress(10_001, "stream from cell k0")
    await store.outputs(task)
    assert rooms.opened == 1 and _Outputs.reads == TAIL_OUTPUTS


async def listen_lines(client: Modern, notifications: dict[str, Any]) -> Any:
    """A raw 2026 ``subscriptions/listen`` stream: yields each JSON-RPC message it carries, as it comes."""
    meta = {"io.modelcontextprotocol/protocolVersion": MODERN, "io.modelcontextprotocol/clientCapabilities": {}}
    headers = {**MCP_HEADERS, **client.headers, "MCP-Protocol-Version": MODERN, "Mcp-Method": "subscriptions/listen"}
    body = rpc("subscriptions/listen", {"notifications": notifications, "_meta": meta}, id=99)
    async with client.http.stream("POST", client.url, json=body, headers=headers) as response:
        assert response.status_code == 200
        async for line in response.aiter_lines():
            if line.startswith("data:") and line[5:].strip():
                yield json.loads(line[5:])


async def test_a_listen_stream_naming_a_task_is_told_when_it_ends(
    mcp_url: str, auth: dict[str, str], make_notebook: Any, jp_root_dir: Path
) -> None:
    """2026-07-28: a client that listens with ``taskIds`` gets ``notifications/tasks`` with the whole task (its
    result included) when the run ends, and need not poll; ids it did not make are not honored."""
    path = make_notebook("pushed.ipynb", code(WAIT))
    client = Modern(mcp_url, auth)
    try:
        call = {"name": "execute_notebook_cell", "arguments": {"path": path, "cell_id": "k0", "timeout": 120}}
        task_id = (await client.request("tools/call", call))["result"]["taskId"]
        stream = listen_lines(client, {"taskIds": [task_id, "not-mine"]})
        ack = await within(anext(stream), 30)
        assert ack["method"] == "notifications/subscriptions/acknowledged", ack
        assert ack["params"]["notifications"]["taskIds"] == [task_id]
        (jp_root_dir / "go").touch()  # the cell ends
        pushed = await within(anext(stream), 60)
        assert pushed["method"] == "notifications/tasks", pushed
        assert pushed["params"]["taskId"] == task_id and pushed["params"]["status"] == "completed"
        assert pushed["params"]["result"]["structuredContent"]["outputs"][0]["text"] == "'released'"
        assert pushed["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"] == 99
        await stream.aclose()
    finally:
        await client.close()
