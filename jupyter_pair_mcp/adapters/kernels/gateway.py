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
  server's event loop is never held by it.
"""

from __future__ import annotations

import asyncio
import functools
import inspect
import logging
import queue
from collections.abc import Awaitable, Callable, Coroutine
from typing import Any, ParamSpec, TypeVar
from urllib.parse import urlsplit

from jupyter_core.utils import ensure_async
from tornado import web

from jupyter_pair_mcp.errors import KernelGatewayError, PairMCPError

log = logging.getLogger(__name__)

P = ParamSpec("P")
T = TypeVar("T")

# What a gateway's failure looks like from jupyter_server: its HTTP errors (503 when it does not answer),
# socket errors, and websocket-client's errors (all of them subclass WebSocketException).
try:
    from websocket import WebSocketException
except ImportError:  # pragma: no cover - jupyter_server requires websocket-client
    WebSocketException = OSError  # type: ignore[misc,assignment]

FAILURES: tuple[type[BaseException], ...] = (web.HTTPError, OSError, WebSocketException, TimeoutError)


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


def failure(where: str, exc: BaseException) -> KernelGatewayError:
    """The tool error for a gateway failure: which gateway, how it failed (no server detail), what to check."""
    if isinstance(exc, web.HTTPError) and exc.status_code not in (503, 599):
        how = f"it answered HTTP {exc.status_code}"
    elif isinstance(exc, web.HTTPError | ConnectionError):
        how = "it did not answer: connection refused or unreachable"
    elif isinstance(exc, TimeoutError):
        how = "it did not answer in time"
    else:
        how = f"the connection to it failed ({type(exc).__name__})"
    return KernelGatewayError(
        f"the kernel gateway at {where} failed ({how}): check that the gateway is running and reachable from "
        "the Jupyter server, and the server's --gateway-url and GatewayClient settings (auth token, timeouts); "
        "nothing was run"
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


async def start_channels(client: Any) -> None:
    """Start a kernel client's channels: a gateway client's ``start_channels`` (a coroutine, whose websocket
    connect blocks) runs in a worker thread; a ZMQ client's on the loop, which its sockets belong to."""
    if inspect.iscoroutinefunction(client.start_channels):
        await asyncio.to_thread(asyncio.run, client.start_channels())
    else:
        await ensure_async(client.start_channels())


def closed(client: Any) -> bool:
    """Whether a gateway kernel client's websocket closed (its reader thread ended): it must be replaced."""
    channel = client.shell_channel
    return isinstance(channel, queue.Queue) and bool(getattr(channel, "response_router_finished", False))
