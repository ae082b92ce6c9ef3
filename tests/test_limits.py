"""One caller cannot take everything: per-principal rate limits, session, fork and execution caps."""

from __future__ import annotations

import asyncio
import logging
import time
from pathlib import Path
from typing import Any

import httpx2
import pytest

from jupyter_pair_mcp.transport.ratelimit import RateLimiter

from .conftest import INIT_PARAMS, LEGACY_VERSION, MCP_HEADERS, call_tool, open_session, rpc, tool_error, until, within

pytestmark = pytest.mark.usefixtures("jp_serverapp")


class Clock:
    def __init__(self, now: float = 0.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


def test_the_token_bucket_admits_a_burst_then_the_rate() -> None:
    clock = Clock()
    limiter = RateLimiter(rate=10, burst=3, clock=clock)
    assert [limiter.acquire("a")[0] for _ in range(3)] == [0, 0, 0]
    assert limiter.acquire("a") == (1, True)  # refused: first of a burst (logged)
    assert limiter.acquire("a") == (1, False)  # refused again: not logged again
    assert limiter.acquire("b") == (0, False)  # another principal has its own bucket
    clock.now += 0.1  # one token back
    assert limiter.acquire("a") == (0, False)
    assert limiter.acquire("a")[1] is True  # a new burst of refusals is logged again


def test_buckets_are_bounded_in_number() -> None:
    limiter = RateLimiter(rate=1, burst=1, max_principals=2, clock=Clock())
    for principal in ("a", "b", "c"):
        limiter.acquire(principal)
    assert limiter.acquire("a")[0] == 0  # its bucket was dropped: it starts full again


class TestRateLimit:
    @pytest.fixture
    def mcp_config(self) -> dict[str, Any]:
        return {"rate_limit": 0.5, "rate_limit_burst": 4}

    async def test_a_flood_gets_429_with_retry_after_logged_once(
        self,
        http: httpx2.AsyncClient,
        mcp_url: str,
        auth: dict[str, str],
        caplog: pytest.LogCaptureFixture,
        extension: Any,
    ) -> None:
        # The bucket refills on a clock the test moves: no token comes back between two slow requests.
        clock = extension.rate_limiter.clock = Clock(time.monotonic())  # from now: earlier buckets stay right
        session = await open_session(http, mcp_url, auth)  # two requests (initialize, initialized)
        headers = {**MCP_HEADERS, **auth, "mcp-session-id": session, "mcp-protocol-version": LEGACY_VERSION}
        statuses = []
        with caplog.at_level(logging.WARNING):
            for n in range(6):
                response = await http.post(mcp_url, json=rpc("ping", id=n + 10), headers=headers)
                statuses.append(response.status_code)
        assert statuses[:2] == [200, 200]
        assert statuses[2:] == [429] * 4
        assert int(response.headers["Retry-After"]) >= 1
        assert response.json()["message"].startswith("rate limit: retry after")
        assert sum("rate limit reached" in r.getMessage() for r in caplog.records) == 1
        assert not [r for r in caplog.records if "retry after" in r.getMessage()]  # no line per refusal
        clock.now += 2.0  # one token back at 0.5 a second
        statuses = [(await http.post(mcp_url, json=rpc("ping", id=n), headers=headers)).status_code for n in (20, 21)]
        assert statuses == [200, 429]


async def test_the_default_limit_never_refuses_one_client_calling_one_call_after_another(
    http: httpx2.AsyncClient, mcp_url: str, auth: dict[str, str]
) -> None:
    session = await open_session(http, mcp_url, auth)
    headers = {**MCP_HEADERS, **auth, "mcp-session-id": session, "mcp-protocol-version": LEGACY_VERSION}
    for n in range(400):
        response = await http.post(mcp_url, json=rpc("ping", id=n), headers=headers)
        assert response.status_code == 200, (n, response.text)


class TestSessionsPerPrincipal:
    @pytest.fixture
    def mcp_config(self) -> dict[str, Any]:
        return {"max_sessions_per_principal": 2}

    async def test_a_credential_holds_at_most_its_share_of_sessions(
        self, http: httpx2.AsyncClient, mcp_url: str, auth: dict[str, str], mcp_client: Any
    ) -> None:
        first = await open_session(http, mcp_url, auth)
        await open_session(http, mcp_url, auth)
        refused = await http.post(mcp_url, json=rpc("initialize", INIT_PARAMS), headers={**MCP_HEADERS, **auth})
        assert refused.status_code == 503
        assert "max_sessions_per_principal" in refused.json()["error"]["message"]
        async with mcp_client(mode="2026-07-28") as client:  # the stateless era opens no session: unaffected
            assert (await call_tool(client, "document_exists", path="nothing"))["exists"] is False
        ended = await http.delete(mcp_url, headers={**auth, "mcp-session-id": first})
        assert ended.status_code == 200
        await open_session(http, mcp_url, auth)


class TestForksPerUser:
    @pytest.fixture
    def mcp_config(self) -> dict[str, Any]:
        return {"max_forks_per_user": 1, "max_forks": 5}

    async def test_a_user_holds_at_most_its_share_of_forks(self, mcp_client: Any, make_notebook: Any) -> None:
        path = make_notebook("forked.ipynb", count=1)
        async with mcp_client() as client:
            fork = await call_tool(client, "fork_document", path=path)
            message = await tool_error(client, "fork_document", path=path)
            assert "you already hold 1 forks" in message
            await call_tool(client, "discard_document_fork", path=path, fork_id=fork["fork_id"])
            await call_tool(client, "fork_document", path=path)


class TestExecutionsPerPrincipal:
    @pytest.fixture
    def mcp_config(self) -> dict[str, Any]:
        return {"max_executions_per_principal": 1}

    async def test_a_caller_runs_at_most_its_share_at_once(
        self, mcp_client: Any, make_notebook: Any, jp_root_dir: Path, extension: Any
    ) -> None:
        wait = (
            "import os, time\n_deadline = time.monotonic() + 60\n"
            "while not os.path.exists('release') and time.monotonic() < _deadline:\n    time.sleep(0.01)\n'done'"
        )
        path = make_notebook(
            "busy.ipynb",
            [{"id": "wait", "cell_type": "code", "source": wait}, {"id": "two", "cell_type": "code", "source": "2"}],
        )
        async with mcp_client() as client:
            first = asyncio.ensure_future(  # its kernel starts first: no 20 s bound of call_tool on it
                within(client.call_tool("execute_notebook_cell", {"path": path, "cell_id": "wait"}), 120)
            )
            try:
                await until(lambda: sum(extension.execution._running.values()) == 1, 60, "the first run starting")
                message = await tool_error(client, "execute_notebook_cell", path=path, cell_id="two")
                assert "1 executions in flight" in message
            finally:
                (jp_root_dir / "release").write_text("")
            assert (await first).structured_content["status"] == "ok"
            assert (await call_tool(client, "execute_notebook_cell", path=path, cell_id="two"))["status"] == "ok"
        assert extension.execution._running == {}
