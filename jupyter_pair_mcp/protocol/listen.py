"""Resource subscriptions of both eras, and the 2026-07-28 ``subscriptions/listen`` stream with task pushes.

``resources/subscribe`` and ``resources/unsubscribe`` (2025-11-25 and before) and ``subscriptions/listen``
(2026-07-28) are served here over the :class:`~jupyter_pair_mcp.protocol.subscriptions.SubscriptionManager`.
A listen stream may also name tasks (``taskIds``, as the Tasks extension io.modelcontextprotocol/tasks adds
to the filter): when one ends, ``notifications/tasks`` carries the whole task as ``tasks/get`` gives it, so a
client that listens need not poll. The SDK's filter model drops fields it does not know, hence the subclass.
"""

from __future__ import annotations

from typing import Any

from mcp.server.lowlevel.server import NotificationOptions
from mcp.server.mcpserver import MCPServer
from mcp.shared.exceptions import MCPError
from mcp.shared.subscriptions import (
    SUBSCRIPTION_ID_META_KEY,
    ResourcesListChanged,
    ResourceUpdated,
    event_to_notification,
)
from mcp_types import (
    INVALID_PARAMS,
    INVALID_REQUEST,
    EmptyResult,
    SubscribeRequestParams,
    SubscriptionFilter,
    SubscriptionsListenRequestParams,
    SubscriptionsListenResult,
    UnsubscribeRequestParams,
)
from pydantic import BaseModel, Field

from jupyter_pair_mcp.adapters.contents.listing import matcher
from jupyter_pair_mcp.errors import InvalidArgument, PairMCPError
from jupyter_pair_mcp.protocol.subscribers import ListenStream, parse_uri
from jupyter_pair_mcp.protocol.subscriptions import SubscriptionManager
from jupyter_pair_mcp.protocol.tasks import principal_of, task_view
from jupyter_pair_mcp.services.tasks import TaskStore
from jupyter_pair_mcp.tools.registry import READ, authorize_request, check_folder


class TaskFilter(SubscriptionFilter):
    """The listen filter with the Tasks extension's ``taskIds``."""

    task_ids: list[str] | None = Field(default=None, alias="taskIds")


class TaskListenParams(SubscriptionsListenRequestParams):
    notifications: TaskFilter


class Notification(BaseModel):
    """A notification the SDK has no model for (it sends any model with ``method`` and ``params``)."""

    method: str
    params: dict[str, Any]


ACKNOWLEDGED = "notifications/subscriptions/acknowledged"


def register_subscriptions(server: MCPServer, manager: SubscriptionManager, tasks: TaskStore | None = None) -> None:
    """Serve ``resources/subscribe`` and ``resources/unsubscribe`` (2025-11-25 and before) and
    ``subscriptions/listen`` (2026-07-28); the SDK then advertises the capability in each era."""
    lowlevel = server._lowlevel_server

    async def subscribe(ctx: Any, params: SubscribeRequestParams) -> EmptyResult:
        try:
            await authorize_request(ctx.request, *READ)
            within_folders(ctx.request, str(params.uri))
            # The session's connection: where later notifications go, and whose end releases them.
            await manager.subscribe(ctx.session, ctx.session._connection, str(params.uri))
        except PairMCPError as exc:
            raise MCPError(code=INVALID_PARAMS, message=str(exc)) from None
        return EmptyResult()

    async def unsubscribe(ctx: Any, params: UnsubscribeRequestParams) -> EmptyResult:
        manager.unsubscribe(ctx.session._connection, str(params.uri))
        return EmptyResult()

    lowlevel.add_request_handler("resources/subscribe", SubscribeRequestParams, subscribe)
    lowlevel.add_request_handler("resources/unsubscribe", UnsubscribeRequestParams, unsubscribe)
    # Replaces MCPServer's own listen handler, which would honor any URI and deliver only what the SDK's
    # bus is told (nothing here): ours watches the documents, with the same authorization and bounds.
    lowlevel.add_request_handler("subscriptions/listen", TaskListenParams, listen_handler(manager, tasks))

    # Advertise resources.listChanged in the handshake: the SDK's runner builds the initialize result
    # from create_initialization_options() with default notification options (all off).
    original = lowlevel.create_initialization_options

    def initialization_options(notification_options: Any = None, *args: Any, **kwargs: Any) -> Any:
        return original(notification_options or NotificationOptions(resources_changed=True), *args, **kwargs)

    lowlevel.create_initialization_options = initialization_options  # type: ignore[method-assign]


def listen_handler(manager: SubscriptionManager, tasks: TaskStore | None = None) -> Any:
    """Serve the 2026-07-28 ``subscriptions/listen``: one request is one stream of change notifications.

    The acknowledgement comes first and names what is honored (URIs of resources that exist, tasks this
    credential made); then every notification due to the stream, stamped with the listen request's id, goes
    out on that request's own response stream (the stateless era has no other channel) until the client
    closes it, which cancels this handler and releases the stream's subscriptions, or the server ends it with
    the final result.
    """

    async def listen(ctx: Any, params: TaskListenParams) -> SubscriptionsListenResult:
        request_id = ctx.request_id
        if request_id is None:
            raise MCPError(INVALID_REQUEST, "subscriptions/listen requires a request id")
        meta: dict[str, Any] = {SUBSCRIPTION_ID_META_KEY: request_id}
        wanted = params.notifications
        stream = ListenStream(principal=principal_of(ctx))
        unwatch: list[Any] = []
        try:
            await authorize_request(ctx.request, *READ)
            watched = _watch_tasks(tasks, stream, wanted.task_ids or [], manager.per_session, unwatch)
            uris = await manager.listen(
                stream,
                [u for u in wanted.resource_subscriptions or [] if _within(ctx.request, u)],
                list_changed=bool(wanted.resources_list_changed),
            )
        except PairMCPError as exc:
            for stop in unwatch:
                stop()
            raise MCPError(code=INVALID_PARAMS, message=str(exc)) from None
        try:
            honored = TaskFilter(
                tools_list_changed=True if wanted.tools_list_changed else None,  # fixed lists: they never fire
                prompts_list_changed=True if wanted.prompts_list_changed else None,
                resources_list_changed=True if wanted.resources_list_changed else None,
                resource_subscriptions=uris or None,
                taskIds=watched or None,
            )
            # Sent as plain JSON: the SDK's model would serialize the filter as its own type, without taskIds.
            filtered = honored.model_dump(mode="json", by_alias=True, exclude_none=True)
            ack = Notification(method=ACKNOWLEDGED, params={"notifications": filtered, "_meta": meta})
            await ctx.session.send_notification(ack, related_request_id=request_id)
            while (events := await stream.next()) is not None:
                for kind, key in events:
                    notification = _notification(tasks, stream, kind, key, meta)
                    if notification is not None:
                        await ctx.session.send_notification(notification, related_request_id=request_id)
        finally:
            for stop in unwatch:
                stop()
            stream.close()
            manager.release(id(stream))
        return SubscriptionsListenResult(_meta=meta)

    return listen


def within_folders(request: Any, uri: str) -> None:
    """Refuse a subscription to a resource outside the folders of the caller's grant (as its reads are): a
    listing by the folder its walk starts in; a URI that names no resource is left to the manager to refuse."""
    ref = parse_uri(uri)
    if ref is not None:
        check_folder(request, matcher(ref.prefix)[0] if ref.kind == "list" else ref.path)


def _within(request: Any, uri: str) -> bool:
    """Whether a listen stream may watch ``uri`` (one outside the grant's folders is not honored, as unknown
    ones are not: the acknowledgement leaves it out)."""
    try:
        within_folders(request, uri)
    except PairMCPError:
        return False
    return True


def _watch_tasks(
    tasks: TaskStore | None, stream: ListenStream, task_ids: list[str], most: int, unwatch: list[Any]
) -> list[str]:
    """Watch the named tasks this credential made (others are not honored, as unknown ones); their ids."""
    wanted = list(dict.fromkeys(task_ids))
    if len(wanted) > most:
        raise InvalidArgument(f"{len(wanted)} tasks on one listen stream: at most {most}")
    honored = []
    for task_id in wanted if tasks is not None else []:
        try:
            task = tasks.get(stream.principal, task_id)  # type: ignore[union-attr]
        except PairMCPError:
            continue
        honored.append(task_id)
        unwatch.append(tasks.watch(task, lambda t: stream.send_task(t.id)))  # type: ignore[union-attr]
    return honored


def _notification(tasks: TaskStore | None, stream: ListenStream, kind: str, key: str, meta: dict[str, Any]) -> Any:
    """What goes out for one event of the stream (None: a task dropped since it ended, which a poll finds)."""
    if kind == "task":
        if tasks is None:
            return None
        try:
            task = tasks.get(stream.principal, key)
        except PairMCPError:
            return None
        return Notification(method="notifications/tasks", params={**task_view(tasks, task), "_meta": meta})
    event = ResourceUpdated(uri=key) if kind == "updated" else ResourcesListChanged()
    return event_to_notification(event, meta)
