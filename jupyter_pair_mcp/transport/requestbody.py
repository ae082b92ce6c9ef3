"""One meaning per request: a POSTed JSON body is read once, and refused when readers could take it two ways.

RFC 8259 leaves the meaning of an object with a repeated key undefined. Python's ``json`` and pydantic keep
the last value, a proxy or a log may keep the first: ``"name":"delete_document","name":"get_document"``
ran ``get_document`` while a proxy checking the first ``name`` saw ``delete_document``. So a body with a key
repeated in any object, at any depth, is refused (JSON-RPC -32600, HTTP 400) naming the key, before the SDK
sees it. So is a JSON-RPC ``id`` that is neither a string nor an integer: the SDK's handshake-era transport
would take the request for a notification and answer 202.

Only this is checked; everything else about the message (malformed JSON, batches, the envelope) is the
SDK's. Cost: one parse with a pairs hook, a Python call per object (about 0.1 ms per KiB of tiny objects,
the worst case): bodies above :data:`INLINE_BYTES` are read in a worker thread, so checking a 4 MiB body
never holds the event loop. The SDK then parses the body again, on the loop (its transports take bytes), and
its cost grows with the number of values, not the bytes: 4 MiB of tiny objects held the loop ~100 ms there.
So a body of more than :data:`MAX_VALUES` JSON values is refused too: no tool needs that many, and what the
SDK parses on the loop stays bounded by count as well as by bytes. And one nesting deeper than
:data:`MAX_DEPTH`: Python's parser raises ``RecursionError`` near 1 000 levels (a 2 KB body), which a handler
that catches ``ValueError`` lets through as a 500 with a traceback in the log, per request.

:func:`load` is that bounded parse, for every JSON body the extension reads (``/mcp`` here, the panel's REST
API in rest.py): a body over a bound is refused with a message naming it.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

#: Bodies up to this many bytes are checked on the event loop (a few ms at worst); larger ones in a thread.
INLINE_BYTES = 64 * 1024

#: JSON-RPC's "Invalid Request" error code.
INVALID_REQUEST = -32600

#: JSON values (objects, arrays, strings, numbers, ...) one request may hold.
MAX_VALUES = 100_000

#: How deep objects and arrays may nest in a request body: where the SDK's own parser (jiter) stops too, so what it
#: would take is taken here; no tool's arguments come near.
MAX_DEPTH = 200

TOO_MANY = f"the request holds more than {MAX_VALUES} JSON values; send the work in smaller calls"
TOO_DEEP = (
    f"the request body nests objects and arrays more than {MAX_DEPTH} levels deep (the limit); send a flatter one"
)

_KEY_SHOWN = 64  # characters of a repeated key the message quotes (a key may be megabytes long)

_JSON_KINDS = {
    type(None): "null",
    bool: "a boolean",
    float: "a non-integer number",
    list: "an array",
    dict: "an object",
}


@dataclass(frozen=True)
class Refusal:
    """Why a body is refused, and the id to answer with (None when the request's own id is in doubt)."""

    message: str
    id: str | int | None = None

    def response(self) -> dict[str, Any]:
        """The JSON-RPC error response."""
        return {"jsonrpc": "2.0", "id": self.id, "error": {"code": INVALID_REQUEST, "message": self.message}}


class _Pairs:
    """``object_pairs_hook`` that builds each object as ``json`` does and remembers the first repeated key."""

    def __init__(self) -> None:
        self.repeated: str | None = None

    def __call__(self, pairs: list[tuple[str, Any]]) -> dict[str, Any]:
        built = dict(pairs)
        if len(built) != len(pairs) and self.repeated is None:
            seen: set[str] = set()
            for key, _ in pairs:
                if key in seen:
                    self.repeated = key
                    break
                seen.add(key)
        return built


class Oversized(ValueError):
    """A body nests deeper than :data:`MAX_DEPTH` or holds more than :data:`MAX_VALUES` values: ``str()`` names
    the limit; ``message`` is what was parsed (None when the parser gave up on the depth)."""

    def __init__(self, reason: str, message: Any = None) -> None:
        super().__init__(reason)
        self.message = message


def load(body: bytes, object_pairs_hook: Callable[[list[tuple[str, Any]]], Any] | None = None) -> Any:
    """``json.loads`` of a request body within the bounds: :class:`Oversized` past one, another ``ValueError`` for
    a body that is not JSON. Never a ``RecursionError``."""
    try:
        message = json.loads(body, object_pairs_hook=object_pairs_hook)
    except RecursionError:
        raise Oversized(TOO_DEEP) from None
    reason = _over(message)
    if reason is not None:
        raise Oversized(reason, message)
    return message


def refusal(body: bytes) -> Refusal | None:
    """Why ``body`` must not reach the SDK (a repeated key, an id MCP does not allow, a bound), or None."""
    pairs = _Pairs()
    oversized: Oversized | None = None
    try:
        message = load(body, object_pairs_hook=pairs)
    except Oversized as exc:
        oversized, message = exc, exc.message
    except ValueError:
        return None  # not JSON: the SDK answers its parse error
    if pairs.repeated is not None:
        key = pairs.repeated
        shown = repr(key if len(key) <= _KEY_SHOWN else key[:_KEY_SHOWN] + "...")
        request_id = _valid_id(message) if key != "id" else None
        return Refusal(
            f"Invalid Request: the key {shown} appears more than once in one object; a request must have one "
            "meaning: send each key once",
            request_id,
        )
    if oversized is not None:
        return Refusal(f"Invalid Request: {oversized}", _valid_id(message))
    problem = _invalid_id(message)
    return Refusal(problem) if problem is not None else None


def _over(message: Any) -> str | None:
    """Which bound ``message`` is past, if any: a walk level by level that stops at the first one crossed."""
    count, depth, level = 0, 0, [message]
    while level:
        depth += 1
        count += len(level)
        if count > MAX_VALUES:
            return TOO_MANY
        if depth > MAX_DEPTH and any(isinstance(value, dict | list) for value in level):
            return TOO_DEEP
        below: list[Any] = []
        for value in level:
            if isinstance(value, dict):
                below.extend(value.values())
            elif isinstance(value, list):
                below.extend(value)
        level = below
    return None


async def check(body: bytes) -> Refusal | None:
    """:func:`refusal`, in a worker thread for a body above :data:`INLINE_BYTES`."""
    if len(body) <= INLINE_BYTES:
        return refusal(body)
    return await asyncio.to_thread(refusal, body)


def _valid_id(message: Any) -> str | int | None:
    value = message.get("id") if isinstance(message, dict) else None
    if isinstance(value, str) or (isinstance(value, int) and not isinstance(value, bool)):
        return value
    return None


def _invalid_id(message: Any) -> str | None:
    """Why a message's ``id`` is not one MCP allows (a string or an integer), or None.

    A message without an ``id`` is a notification, and an error response may carry ``"id": null``
    (JSON-RPC's "the id of a request that could not be read").
    """
    if not isinstance(message, dict) or "id" not in message:
        return None
    value = message["id"]
    if isinstance(value, str) or (isinstance(value, int) and not isinstance(value, bool)):
        return None
    if value is None and "error" in message and "method" not in message:
        return None
    kind = _JSON_KINDS.get(type(value), type(value).__name__)
    return f"Invalid Request: a JSON-RPC id must be a string or an integer, not {kind}"
