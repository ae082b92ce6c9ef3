"""Who subscribes, and to what: resource URIs, a subscriber, and the queue of a ``subscriptions/listen`` stream.

A subscription names a resource by URI (``notebook://``, ``document://``); a subscriber is a legacy session
or a listen stream, and a listen stream's notifications wait in a :class:`ListenStream` for the request that
holds it open. None of this watches a room: ``subscriptions.py``'s :class:`SubscriptionManager` does, and tells
the subscribers kept here. Apart because the resources (``resources.py``) parse the same URIs and the listen
endpoint (``listen.py``) reads the same streams without needing the watching.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qs, unquote, urlsplit


@dataclass(frozen=True)
class ResourceRef:
    """What a resource URI names: ``kind`` "list" (``notebook://list``), "notebook" or "file" (a text document)."""

    kind: str
    path: str = ""
    view: str = ""  # a notebook's view: "" (Markdown), "json" or "cells"
    cell_id: str | None = None
    prefix: str = ""  # notebook://list?prefix=


def parse_uri(uri: str) -> ResourceRef | None:
    """The resource a ``notebook://`` or ``document://`` URI names (paths percent-decoded), or None."""
    parts = urlsplit(uri)
    segments = parts.path.split("/")
    if parts.scheme == "notebook" and parts.netloc == "list" and parts.path in ("", "/"):
        prefix = parse_qs(parts.query, keep_blank_values=True).get("prefix", [""])[0]
        return ResourceRef("list", prefix=prefix)
    if parts.scheme == "document" and parts.netloc and parts.path in ("", "/"):
        return ResourceRef("file", unquote(parts.netloc))
    if parts.scheme == "notebook" and parts.netloc and parts.netloc != "list":
        path = unquote(parts.netloc)
        if parts.path in ("", "/", "/json", "/cells"):
            return ResourceRef("notebook", path, view=parts.path.strip("/"))
        if len(segments) == 3 and segments[1] == "cells" and segments[2]:
            return ResourceRef("notebook", path, view="cells", cell_id=unquote(segments[2]))
    return None


@dataclass
class Subscriber:
    """A legacy session or a listen stream, and what it subscribed to."""

    notifier: Any  # has send_resource_updated(uri) and send_resource_list_changed()
    uris: set[str] = field(default_factory=set)
    lists: bool = True  # gets list_changed (a session: while it holds any subscription)
    stream: bool = False  # a listen stream: registered until it ends, even with no URI
    principal: str = ""


class ListenStream:
    """The notifications due to one ``subscriptions/listen`` stream, deduplicated (each is a level trigger:
    "this changed, read it again"), so they are bounded by its subscriptions however slowly it is read."""

    def __init__(self, principal: str = "") -> None:
        self.principal = principal
        self._pending: dict[tuple[str, str], None] = {}
        self._wake = asyncio.Event()
        self.closed = False

    async def send_resource_updated(self, uri: str) -> None:
        self._put(("updated", uri))

    async def send_resource_list_changed(self) -> None:
        self._put(("list_changed", ""))

    def send_task(self, task_id: str) -> None:
        """A task the stream named ended (protocol/listen.py sends it whole)."""
        self._put(("task", task_id))

    def _put(self, event: tuple[str, str]) -> None:
        if not self.closed:
            self._pending[event] = None
            self._wake.set()

    def close(self) -> None:
        """End the stream gracefully: what is pending is still yielded, then :meth:`next` returns None."""
        self.closed = True
        self._wake.set()

    async def next(self) -> list[tuple[str, str]] | None:
        """The events pending, ("updated", uri), ("list_changed", "") or ("task", id), once there are some; None at
        the end."""
        while not self._pending and not self.closed:
            await self._wake.wait()
            self._wake.clear()
        events = list(self._pending)
        self._pending.clear()
        return events or None
