"""Kernels behind a kernel gateway (``jupyter lab --gateway-url``): what differs, and its failures as tool errors.

With a gateway, jupyter_server hands out its gateway kernel, kernelspec and session managers, which answer over
HTTP, and kernel clients whose channels are queues a websocket reader thread fills (no ZMQ sockets). The adapter
uses both through ``ensure_async`` and :mod:`.messages` reads either kind of channel; what is left is here:

- a gateway that is down, unreachable or refusing surfaces as tornado ``HTTPError``\\ s, socket errors or
  websocket errors from deep in jupyter_server: :func:`through_gateway` turns them into a
  :class:`~jupyter_pair_mcp.errors.KernelGatewayError` naming the gateway (host and port, never a credential)
  and what to check, so the tool fails cleanly and the server goes on serving;
- the gateway client's ``start_channels`` opens its websocket with a blocking connect (up to the gateway's
  launch timeout for a host that does not answer): :func:`start_channels` runs it in a worker thread, so the
  server's event loop is never held by it;
- jupyter_server's ``GatewayKernelClient`` (2.x) opens that websocket without the gateway's request headers, so
  a gateway with an auth token refuses it (401), and leaves the launch timeout on it as a socket timeout, so its
  reader thread gives up on a cell that prints nothing for that long (40 s by default):
  :class:`AuthorizedGatewayKernelClient` is that client with only its connect changed, as JupyterLab's own
  websocket to the gateway is made.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import inspect
import logging
import queue
from collections.abc import Awaitable, Callable, Coroutine
from threading import Thread
from typing import Any, ParamSpec, TypeVar
from urllib.parse import urlsplit

import websocket
from jupyter_client.asynchronous.client import AsyncKernelClient
from jupyter_core.utils import ensure_async
from jupyter_server.gateway.gateway_client import GatewayClient
from jupyter_server.gateway.managers import GatewayKernelClient, GatewayKernelManager
from jupyter_server.utils import url_path_join
from tornado import web
from tornado.escape import url_escape

from jupyter_pair_mcp.adapters.kernels.values import cut_off
from jupyter_pair_mcp.errors import KernelGatewayError, PairMCPError

log = logging.getLogger(__name__)

P = ParamSpec("P")
T = TypeVar("T")

# What a gateway's failure looks like from jupyter_server: its HTTP errors (503 when it does not answer),
# socket errors, and websocket-client's errors (all of them subclass WebSocketException).
FAILURES: tuple[type[BaseException], ...] = (web.HTTPError, OSError, websocket.WebSocketException, TimeoutError)


def gateway_of(serverapp: Any) -> str | None:
    """``host:port`` of the server's kernel gateway (nothing else of its URL: it may hold credentials), or None
    when kernels run locally."""
    config = getattr(serverapp, "gateway_config", None)
    if config is None or not getattr(config, "gateway_enabled", False):
        return None
    parts = urlsplit(str(config.url or ""))
    try:
        port = parts.port
    except ValueError:
        port = None
    host = parts.hostname or "the configured host"
    return f"{host}:{port}" if port else host


def failure(where: str, exc: BaseException, began: bool | None = None) -> KernelGatewayError:
    """The tool error for a gateway failure: which gateway, how it failed (no server detail), what to check, and
    what became of the run (``began`` as for :func:`~.values.cut_off`: None when none was sent)."""
    status = getattr(exc, "status_code", None)  # tornado's HTTPError, websocket-client's bad handshake
    if isinstance(status, int) and status not in (503, 599):
        how = f"it answered HTTP {status}"
    elif isinstance(exc, web.HTTPError | ConnectionError):
        how = "it did not answer: connection refused or unreachable"
    elif isinstance(exc, TimeoutError):
        how = "it did not answer in time"
    else:
        how = f"the connection to it failed ({type(exc).__name__})"
    return KernelGatewayError(
        f"the kernel gateway at {where} failed ({how}): {cut_off(began)}; check that the gateway is running and "
        "reachable from the Jupyter server, and the server's --gateway-url and GatewayClient settings (auth token, "
        "timeouts)"
    )


def through_gateway(method: Callable[P, Awaitable[T]]) -> Callable[P, Coroutine[Any, Any, T]]:
    """A method of the kernels adapter whose gateway failures become a :class:`KernelGatewayError` (its
    ``self.serverapp`` names the gateway). Local kernels' errors pass through unchanged."""

    @functools.wraps(method)
    async def wrapper(*args: P.args, **kwargs: P.kwargs) -> T:
        try:
            return await method(*args, **kwargs)
        except PairMCPError:
            raise
        except FAILURES as exc:
            where = gateway_of(getattr(args[0], "serverapp", None))
            if where is None:
                raise
            log.warning("The kernel gateway at %s failed: %s: %s", where, type(exc).__name__, exc)
            raise failure(where, exc) from None

    return wrapper


async def start_channels(client: Any, pending: set[asyncio.Future[None]]) -> None:
    """Start a kernel client's channels: a gateway client's ``start_channels`` (a coroutine, whose websocket
    connect blocks) runs in a worker thread; a ZMQ client's on the loop, which its sockets belong to. A caller
    that gives up leaves the connect to finish in its thread: the client is stopped then (``pending``)."""
    if not inspect.iscoroutinefunction(client.start_channels):
        await ensure_async(client.start_channels())
        return
    started = asyncio.ensure_future(asyncio.to_thread(asyncio.run, client.start_channels()))
    try:
        await asyncio.shield(started)
    except asyncio.CancelledError:
        started.add_done_callback(lambda done: _dropped(done, client, pending))
        raise


def _dropped(done: asyncio.Future[Any], client: Any, pending: set[asyncio.Future[None]]) -> None:
    if not done.cancelled():
        done.exception()  # retrieved: nobody waits for it any more
    stop_channels(client, pending)


def closed(client: Any) -> bool:
    """Whether a gateway kernel client's websocket closed (its reader thread ended): it must be replaced."""
    channel = client.shell_channel
    return isinstance(channel, queue.Queue) and bool(getattr(channel, "response_router_finished", False))


class AuthorizedGatewayKernelClient(GatewayKernelClient):
    """jupyter_server's gateway kernel client, its websocket opened as JupyterLab's to the gateway is: with the
    gateway's request headers (auth token, cookies; renewed as for its REST requests) and no socket timeout once
    connected (the launch timeout bounds the connect only). Its channels, queues and reader are jupyter_server's."""

    async def start_channels(  # type: ignore[override]  # a coroutine, as jupyter_server's
        self, shell: bool = True, iopub: bool = True, stdin: bool = True, hb: bool = True, control: bool = True
    ) -> None:
        gateway = GatewayClient.instance()
        url = url_path_join(gateway.ws_url or "", gateway.kernels_endpoint, url_escape(self.kernel_id), "channels")
        headers = gateway.load_connection_args().get("headers") or {}  # type: ignore[no-untyped-call]
        ssl = {"ca_certs": gateway.ca_certs, "certfile": gateway.client_cert, "keyfile": gateway.client_key}
        self.channel_socket = websocket.create_connection(
            url, timeout=gateway.KERNEL_LAUNCH_TIMEOUT, enable_multithread=True, sslopt=ssl, header=headers
        )
        self.channel_socket.settimeout(None)
        AsyncKernelClient.start_channels(self, shell=shell, iopub=iopub, stdin=stdin, hb=hb, control=control)
        self.response_router = Thread(target=self._route_responses, daemon=True)
        self.response_router.start()


def client_for(km: Any, session: Any) -> Any:
    """A kernel client of our own session identity for ``km``: for a gateway's kernel an
    :class:`AuthorizedGatewayKernelClient`, built as its manager's ``client()`` builds one; else the manager's."""
    if not isinstance(km, GatewayKernelManager):
        return km.client(session=session)
    connection = {**km.get_connection_info(session=True), "connection_file": km.connection_file, "parent": km}
    return AuthorizedGatewayKernelClient(kernel_id=km.kernel_id, **{**connection, "session": session})  # type: ignore[no-untyped-call]


def stop_channels(client: Any, pending: set[asyncio.Future[None]]) -> None:
    """Stop a client's channels (errors ignored: it is being dropped). A gateway client's websocket close waits for
    the gateway's answer (up to 3 s from one that does not answer) and joins its reader thread: that runs in a
    worker thread, its future kept in ``pending`` until it ends."""
    if isinstance(client, GatewayKernelClient):
        with contextlib.suppress(RuntimeError):  # no running loop (interpreter exit): stopped here
            asyncio.get_running_loop()
            future = asyncio.ensure_future(asyncio.to_thread(_stop, client))
            pending.add(future)
            future.add_done_callback(pending.discard)
            return
    _stop(client)


def _stop(client: Any) -> None:
    with contextlib.suppress(Exception):
        client.stop_channels()
