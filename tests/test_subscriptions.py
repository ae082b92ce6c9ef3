"""resources/subscribe: updates from human and agent edits, coalesced, per cell, released with the session."""

from __future__ import annotations

import asyncio
import itertools
import time
from typing import Any

import pytest
from mcp.shared.exceptions import MCPError

from .conftest import call_tool, received, until, within
from .patience import patient

pytestmark = [
    pytest.mark.usefixtures("jp_serverapp"),
    # The SDK's client deprecates subscribe_resource/unsubscribe_resource (the 2026-07-28 protocol replaces
    # them with listen()); the server keeps serving them to clients of the protocol versions that have them.
    pytest.mark.filterwarnings(
        r"ignore:resources/(un)?subscribe is removed as of 2026-07-28:mcp.shared.exceptions.MCPDeprecationWarning"
    ),
]

FIVE = [{"cell_type": "code", "source": f"x = {i}", "id": f"c{i}"} for i in range(5)]
INTERVAL = 0.5


class Inbox:
    """Collects resources/updated notifications with their arrival times."""

    def __init__(self) -> None:
        self.updates: list[tuple[float, str]] = []

    async def __call__(self, message: Any) -> None:
        root = getattr(message, "root", message)
        if getattr(root, "method", None) == "notifications/resources/updated":
            self.updates.append((time.perf_counter(), str(root.params.uri)))

    def uris(self) -> list[str]:
        return [uri for _, uri in self.updates]

    async def wait_for(self, uri: str, limit: float = 30.0) -> None:
        """Until an update for ``uri`` arrived (whatever else arrives too)."""
        deadline = time.perf_counter() + patient(limit)
        while uri not in self.uris():
            assert time.perf_counter() < deadline, f"expected an update of {uri}, got {self.updates}"
            await asyncio.sleep(0.01)

    async def wait(self, count: int, limit: float = 30.0) -> None:
        deadline = time.perf_counter() + patient(limit)
        while len(self.updates) < count:
            assert time.perf_counter() < deadline, f"expected {count} updates, got {self.updates}"
            await asyncio.sleep(0.01)


async def test_human_and_agent_edits_notify_within_the_interval(
    mcp_client: Any, make_notebook: Any, collaborator: Any
) -> None:
    path = make_notebook("sub.ipynb", FIVE)
    uri = f"notebook://{path}"
    inbox = Inbox()
    async with collaborator(path) as human, mcp_client(message_handler=inbox) as client:
        await within(client.subscribe_resource(uri))
        await asyncio.sleep(INTERVAL * 1.5)
        assert inbox.updates == []
        # How soon an update comes is the sends' spacing (test_a_burst_is_coalesced), not a wall-clock bound
        # a busy machine could miss.
        human.type_into(0, 0, "# by a person\n")
        await inbox.wait(1)
        assert inbox.uris() == [uri]
        await call_tool(
            client, "batch_update_notebook_cells", path=path, exec=False, updates=[{"cell_id": "c1", "content": "y"}]
        )
        await inbox.wait(2)
        assert inbox.uris() == [uri, uri]


async def test_a_burst_is_coalesced(
    mcp_client: Any,
    make_notebook: Any,
    collaborator: Any,
    jp_serverapp: Any,
    extension: Any,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    path = make_notebook("burst.ipynb", FIVE)
    inbox = Inbox()
    sends: list[float] = []  # when the server decided each send, on its own clock (not when it arrived here)
    tick = extension.subscriptions._tick

    async def ticking(watched: Any) -> None:
        sends.append(watched.last_sent)
        await tick(watched)

    monkeypatch.setattr(extension.subscriptions, "_tick", ticking)
    async with collaborator(path) as human, mcp_client(message_handler=inbox) as client:
        await within(client.subscribe_resource(f"notebook://{path}"))
        started = time.monotonic()
        for _ in range(100):
            human.type_into(0, 0, "x")
            await asyncio.sleep(0.01)
        await received(jp_serverapp, human)
        duration = time.monotonic() - started  # covers the server's receiving all of the burst
        await until(lambda: not any(w.dirty for w in extension.subscriptions._watched.values()), 30, "the last send")
        await inbox.wait(len(sends))
        assert 1 <= len(inbox.updates) == len(sends) <= int(duration / INTERVAL) + 2, (duration, len(sends))
        gaps = [b - a for a, b in itertools.pairwise(sends)]
        assert all(gap >= INTERVAL for gap in gaps), gaps


async def test_cell_subscription_fires_only_for_its_cell(
    mcp_client: Any, make_notebook: Any, collaborator: Any
) -> None:
    path = make_notebook("cells.ipynb", FIVE)
    cell_uri = f"notebook://{path}/cells/c3"
    inbox = Inbox()
    async with collaborator(path) as human, mcp_client(message_handler=inbox) as client:
        await within(client.subscribe_resource(cell_uri))
        human.type_into(0, 0, "other cell ")
        human.insert_cell(0, "a new cell")
        await asyncio.sleep(INTERVAL * 2.5)
        assert inbox.updates == [], "changes elsewhere do not touch the cell"
        human.type_into(4, 0, "this cell ")  # c3 is at index 4 after the insert
        await inbox.wait(1)
        assert inbox.uris() == [cell_uri]


async def test_unsubscribe_and_session_end_stop_notifications(
    mcp_client: Any, make_notebook: Any, collaborator: Any, extension: Any
) -> None:
    path = make_notebook("stop.ipynb", FIVE)
    uri = f"notebook://{path}"
    inbox = Inbox()
    async with collaborator(path) as human:
        async with mcp_client(message_handler=inbox) as client:
            await within(client.subscribe_resource(uri))
            await within(client.subscribe_resource(f"notebook://{path}/json"))
            assert extension.subscriptions.subscription_count == 2
            await within(client.unsubscribe_resource(uri))
            human.type_into(0, 0, "a")
            await inbox.wait(1)
            assert inbox.uris() == [f"notebook://{path}/json"]
        # the session is closed: its subscriptions are gone, nothing more arrives
        await until(lambda: extension.subscriptions.subscription_count == 0, what="the session's subscriptions ending")
        before = len(inbox.updates)
        human.type_into(0, 0, "b")
        await asyncio.sleep(INTERVAL * 2.5)
        assert len(inbox.updates) == before


async def test_document_subscription(mcp_client: Any, jp_root_dir: Any, collaborator: Any) -> None:
    (jp_root_dir / "notes.md").write_text("hello")
    inbox = Inbox()
    async with collaborator("notes.md", kind="file") as human, mcp_client(message_handler=inbox) as client:
        await within(client.subscribe_resource("document://notes.md"))
        human.type_text(5, " world")
        await inbox.wait(1)
        assert inbox.uris() == ["document://notes.md"]


async def test_bad_subscriptions_are_errors(mcp_client: Any, make_notebook: Any) -> None:
    path = make_notebook("bad.ipynb", FIVE)
    async with mcp_client() as client:
        for uri, words in [
            ("notebook://missing.ipynb", "no notebook at"),
            (f"notebook://{path}/cells/zz", "no cell with id"),
            ("https://example.com/x", "cannot subscribe"),
        ]:
            with pytest.raises(MCPError) as failure:
                await within(client.subscribe_resource(uri))
            assert words in str(failure.value)


class ListInbox(Inbox):
    def __init__(self) -> None:
        super().__init__()
        self.list_changes: list[float] = []

    async def __call__(self, message: Any) -> None:
        await super().__call__(message)
        root = getattr(message, "root", message)
        if getattr(root, "method", None) == "notifications/resources/list_changed":
            self.list_changes.append(time.perf_counter())

    async def wait_list(self, count: int, limit: float = 30.0) -> None:
        deadline = time.perf_counter() + patient(limit)
        while len(self.list_changes) < count:
            assert time.perf_counter() < deadline, f"expected {count} list changes, got {len(self.list_changes)}"
            await asyncio.sleep(0.01)


async def test_list_changed_on_create_rename_delete(mcp_client: Any, jp_root_dir: Any) -> None:
    inbox = ListInbox()
    async with mcp_client(message_handler=inbox) as client:
        assert client.server_capabilities.resources.list_changed is True
        assert client.server_capabilities.resources.subscribe is True
        await within(client.subscribe_resource("notebook://list"))
        await asyncio.sleep(INTERVAL * 1.5)
        assert inbox.list_changes == []
        await call_tool(client, "create_document", path="fresh.ipynb", type="notebook")
        await inbox.wait_list(1)
        await asyncio.sleep(INTERVAL * 1.5)
        await call_tool(client, "rename_document", path="fresh.ipynb", new_path="renamed.ipynb")
        await inbox.wait_list(2)
        await asyncio.sleep(INTERVAL * 1.5)
        await call_tool(client, "delete_document", path="renamed.ipynb")
        await inbox.wait_list(3)
        await within(client.unsubscribe_resource("notebook://list"))
        await asyncio.sleep(INTERVAL * 1.5)
        count = len(inbox.list_changes)
        await call_tool(client, "create_document", path="after.md", content="x")
        await asyncio.sleep(INTERVAL * 2.5)
        assert len(inbox.list_changes) == count, "no list changes once nothing is subscribed"


async def test_the_first_edit_of_a_notebook_nobody_has_open_is_announced(
    mcp_client: Any, make_notebook: Any, extension: Any
) -> None:
    inbox = Inbox()
    async with mcp_client(message_handler=inbox) as client:
        for n in range(3):
            path = make_notebook(f"closed{n}.ipynb", FIVE)
            uri = f"notebook://{path}"
            await within(client.subscribe_resource(uri))
            assert extension.rooms.info(path, "notebook") is None, "subscribing opens no room"
            await call_tool(
                client,
                "batch_update_notebook_cells",
                path=path,
                exec=False,
                updates=[{"cell_id": "c0", "content": "y"}],
            )
            await inbox.wait(n + 1)
            assert inbox.uris()[n] == uri


async def test_the_first_keystroke_in_a_notebook_a_person_opens_is_announced(
    mcp_client: Any, make_notebook: Any, collaborator: Any, extension: Any
) -> None:
    inbox = Inbox()
    async with mcp_client(message_handler=inbox) as client:
        for n in range(3):
            path = make_notebook(f"opened{n}.ipynb", FIVE)
            uri = f"notebook://{path}"
            await within(client.subscribe_resource(uri))
            assert extension.rooms.info(path, "notebook") is None
            async with collaborator(path) as human:  # opens the room
                human.type_into(0, 0, "# typed at once\n")
                await inbox.wait(n + 1)
            assert inbox.uris()[n] == uri


async def test_the_first_edit_of_a_text_document_nobody_has_open_is_announced(
    mcp_client: Any, jp_root_dir: Any, collaborator: Any, extension: Any
) -> None:
    inbox = Inbox()
    async with mcp_client(message_handler=inbox) as client:
        for n in range(3):
            (jp_root_dir / f"closed{n}.md").write_text("hello")
            uri = f"document://closed{n}.md"
            await within(client.subscribe_resource(uri))
            assert extension.rooms.info(f"closed{n}.md", "file") is None
            await call_tool(
                client, "batch_insert_text", path=f"closed{n}.md", operations=[{"text": " world", "position": 5}]
            )
            await inbox.wait_for(uri)
            (jp_root_dir / f"typed{n}.md").write_text("hello")
            typed = f"document://typed{n}.md"
            await within(client.subscribe_resource(typed))
            async with collaborator(f"typed{n}.md", kind="file") as human:
                human.type_text(5, " there")
                await inbox.wait_for(typed)


class TestRoomsComeAndGo:
    @pytest.fixture
    def mcp_config(self) -> dict[str, Any]:
        return {"enable_test_fixtures": True, "room_idle_timeout": 0.3}

    async def test_the_first_edit_after_the_room_closed_is_announced(
        self, mcp_client: Any, make_notebook: Any, extension: Any
    ) -> None:
        path = make_notebook("evicted.ipynb", FIVE)
        inbox = Inbox()
        async with mcp_client(message_handler=inbox) as client:
            await within(client.subscribe_resource(f"notebook://{path}"))
            for n in range(3):
                await call_tool(
                    client,
                    "batch_update_notebook_cells",
                    path=path,
                    exec=False,
                    updates=[{"cell_id": "c0", "content": f"y = {n}"}],
                )
                await inbox.wait(n + 1)
                await until(lambda: extension.rooms.info(path, "notebook") is None, 60, "the idle room closing")


# -- 2026-07-28: subscriptions/listen ------------------------------------------------------------------------


async def next_event(subscription: Any, limit: float = 5.0) -> Any:
    return await within(subscription.__anext__(), limit)


async def updates_of(subscription: Any, *uris: str) -> None:
    """Until the stream brought an update of each of ``uris`` (whatever else it brings)."""
    seen: set[str] = set()
    while not set(uris) <= seen:
        seen.add(getattr(await next_event(subscription), "uri", ""))


async def test_a_listen_stream_gets_a_persons_edit(
    mcp_client: Any, make_notebook: Any, collaborator: Any, extension: Any, jp_root_dir: Any
) -> None:
    path = make_notebook("listen.ipynb", FIVE)
    (jp_root_dir / "notes.md").write_text("hello")
    uris = [f"notebook://{path}", f"notebook://{path}/cells/c2", "document://notes.md"]
    async with collaborator(path) as human, mcp_client(mode="2026-07-28") as client:
        async with client.listen(resource_subscriptions=[*uris, "notebook://missing.ipynb"]) as subscription:
            assert subscription.honored.resource_subscriptions == uris, "a missing notebook is not honored"
            assert extension.subscriptions.subscription_count == 3
            human.type_into(2, 0, "# by a person\n")
            await updates_of(subscription, *uris[:2])
            async with collaborator("notes.md", kind="file") as writer:
                writer.type_text(5, " world")
                await updates_of(subscription, "document://notes.md")
        # the client ended the stream: its subscriptions are released
        await until(lambda: extension.subscriptions.subscription_count == 0, what="the stream's release")
        assert extension.subscriptions.stream_count == 0


async def test_a_listen_stream_gets_list_changes_only_when_asked(mcp_client: Any, extension: Any) -> None:
    async with (
        mcp_client(mode="2026-07-28") as client,
        client.listen(resources_list_changed=True) as lists,
        client.listen(resource_subscriptions=["notebook://list"]) as listing,
    ):
        assert extension.subscriptions.stream_count == 2
        await call_tool(client, "create_document", path="fresh.ipynb", type="notebook")
        assert type(await next_event(lists)).__name__ == "ResourcesListChanged"
        assert (await next_event(listing)).uri == "notebook://list"  # not the list_changed it did not ask for
    await until(lambda: extension.subscriptions.stream_count == 0, what="the streams' release")


async def test_a_listen_stream_is_bounded(mcp_client: Any, make_notebook: Any, extension: Any) -> None:
    path = make_notebook("bounded.ipynb", FIVE)
    extension.subscriptions.per_session = 2
    async with mcp_client(mode="2026-07-28") as client:
        with pytest.raises(MCPError) as failure:
            async with client.listen(resource_subscriptions=[f"notebook://{path}", f"notebook://{path}/json", "x:y"]):
                pass
        assert "at most 2" in failure.value.message
        assert extension.subscriptions.subscription_count == 0


async def test_the_server_ends_listen_streams_gracefully(mcp_client: Any, make_notebook: Any, extension: Any) -> None:
    path = make_notebook("ending.ipynb", FIVE)
    async with (
        mcp_client(mode="2026-07-28") as client,
        client.listen(resource_subscriptions=[f"notebook://{path}"]) as subscription,
    ):
        await extension.subscriptions.close()
        with pytest.raises(StopAsyncIteration):
            await next_event(subscription)
