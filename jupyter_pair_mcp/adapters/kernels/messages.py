"""Kernel messages received off their ZMQ sockets and decoded without holding the event loop.

jupyter_client decodes every message on the loop, each step one C call: copying the frames, their HMAC, and
``json.loads`` of the content. For a 12 MB figure or a 50 MB PNG that is hundreds of milliseconds, and moving
the same calls to a worker thread does not help: ``json.loads`` holds the GIL from start to end, so the loop
waits for it all the same. Here a message up to :data:`BIG_MESSAGE` bytes is decoded on the loop as
jupyter_client does (microseconds); a bigger one in a worker thread, in steps that each let the GIL go soon:
the frames are read in place (no copy), the HMAC runs in hashlib (which releases the GIL), the content is
decoded from UTF-8 a megabyte at a time and parsed by :func:`loads`, which walks containers in Python (the
interpreter switches threads every few milliseconds) and leaves only scalars and escape-free string slices
to C.

A gateway kernel client's channels are no sockets but queues of messages its websocket reader thread has already
decoded (jupyter_server's ``ChannelQueue``): :func:`receive` and :func:`receive_ready` read those too, and hand
their messages out as dicts with the same :class:`MessageContent`.
"""

from __future__ import annotations

import asyncio
import codecs
import json
import queue
import re
import time
from hmac import compare_digest
from typing import Any

import zmq
from jupyter_client.adapter import adapt
from jupyter_client.jsonutil import extract_dates

from jupyter_pair_mcp.adapters.kernels.values import ChannelClosed, MessageContent

#: Messages whose frames total more than this many bytes are decoded in a worker thread.
BIG_MESSAGE = 1 << 16
#: UTF-8 decoded per step (one C call).
DECODE_STEP = 1 << 20
#: A gateway client's channel (a thread-safe queue, no socket to poll) is looked at this often while it is empty:
#: jupyter_server's own ``get_msg`` would spin the loop with ``sleep(0)`` until its timeout.
QUEUE_POLL = 0.005

# After each message awaited from iopub, up to this many more that the socket already holds are read without
# waiting (no loop turn each): the output writer then finds them all queued and writes them in one
# transaction. Bounded so that one drain holds the loop a few milliseconds at most.
DRAIN_MESSAGES = 256
DRAIN_BYTES = 1 << 20
DELIM = b"<IDS|MSG>"
_SCAN = json.JSONDecoder().scan_once  # type: ignore[attr-defined]  # the C scanner: one scalar at a position
_SPACE = re.compile(r"[ \t\n\r]*")
#: Up to 4096 numbers, each followed by a comma: a run of a numeric array parsed in one bounded C call.
_NUMBERS = re.compile(r"(?:-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][-+]?[0-9]+)?[ \t\n\r]*,[ \t\n\r]*){1,4096}")


def is_big(parts: list[Any]) -> bool:
    return sum(len(part) for part in parts) > BIG_MESSAGE


def decode_small(session: Any, parts: list[Any]) -> dict[str, Any]:
    """A message of at most :data:`BIG_MESSAGE` bytes, decoded on the loop as jupyter_client does."""
    _, frames = session.feed_identities([_bytes(part) for part in parts])
    message: dict[str, Any] = session.deserialize(frames)
    message["content"] = MessageContent.of(message.get("content"), len(frames[4]) if len(frames) > 4 else 0)
    return message


async def decode(session: Any, parts: list[Any]) -> dict[str, Any]:
    """The message in ``parts`` (frames as received with ``copy=False``, or bytes), decoded in a worker thread
    when it is big; its content a :class:`MessageContent`. Raises ``ValueError`` for a malformed or wrongly
    signed message, as jupyter_client does."""
    if not is_big(parts):
        return decode_small(session, parts)
    message, signature = await asyncio.to_thread(_decode_big, session, parts)
    if signature:
        session._add_digest(signature)  # on the loop: the session's replay history is not thread-safe
    return message


async def receive(channel: Any, timeout: float) -> dict[str, Any] | None:
    """The next message of ``channel`` within ``timeout`` seconds, or None (:class:`ChannelClosed` when a gateway
    client's websocket closed)."""
    if isinstance(channel, queue.Queue):
        return await _from_queue(channel, timeout)
    socket = channel.socket
    if socket is None or not await socket.poll(int(timeout * 1000)):
        return None
    return await decode(channel.session, await socket.recv_multipart(copy=False))


def receive_ready(channel: Any) -> list[Any] | dict[str, Any] | None:
    """The frames of a message the channel's socket already holds (not decoded), or None: never waits. A gateway
    client's channel holds decoded messages: one of those."""
    if isinstance(channel, queue.Queue):
        try:
            return adopt(channel.get_nowait())
        except queue.Empty:
            return None
    socket = getattr(channel, "socket", None)
    if socket is None:
        return None
    try:
        parts = socket.recv_multipart(zmq.DONTWAIT, copy=False)
        if not isinstance(parts, list):  # an asyncio socket hands back a future that is already done
            parts = parts.result()
    except zmq.Again:
        return None
    return list(parts)


def drain(channel: Any) -> list[list[Any] | dict[str, Any]]:
    """The frames of the messages the channel's socket already holds (bounded by ``DRAIN_MESSAGES`` and
    ``DRAIN_BYTES``), read without waiting and without copying: a non-blocking receive never yields to the
    loop. :func:`decode` decodes them. A gateway client's channel gives decoded messages."""
    messages: list[list[Any] | dict[str, Any]] = []
    size = 0
    while len(messages) < DRAIN_MESSAGES and size < DRAIN_BYTES:
        parts = receive_ready(channel)
        if parts is None:
            break
        if isinstance(parts, dict):
            size += getattr(parts["content"], "nbytes", 0)
        else:
            size += sum(len(part) for part in parts)
        messages.append(parts)
    return messages


def send(client: Any, channel: str, message: dict[str, Any]) -> None:
    """Send ``message`` on the client's ``channel`` ("shell", "control"). A gateway client's channels share one
    websocket and jupyter_server's ``ChannelQueue.send`` does not say which channel a message is for, so the
    gateway would take a control request for a shell one: the message names it."""
    target = getattr(client, f"{channel}_channel")
    if isinstance(target, queue.Queue):
        message = {**message, "channel": channel}
    target.send(message)


async def _from_queue(channel: queue.Queue[Any], timeout: float) -> dict[str, Any] | None:
    end = time.monotonic() + timeout
    while True:
        try:
            return adopt(channel.get_nowait())
        except queue.Empty:
            if getattr(channel, "response_router_finished", False):  # nothing more will come
                raise ChannelClosed from None
            if time.monotonic() >= end:
                return None
            await asyncio.sleep(QUEUE_POLL)


def adopt(message: dict[str, Any]) -> dict[str, Any]:
    """A message off a gateway's websocket (JSON decoded by its reader thread), its content a
    :class:`MessageContent` whose ``nbytes`` is estimated from its strings (their JSON is not at hand)."""
    content = message.get("content")
    message["content"] = MessageContent.of(content, estimated_size(content))
    return message


def estimated_size(content: Any) -> int:
    """Roughly the bytes of an output's JSON: its text, data and traceback strings (64 for anything else)."""
    if not isinstance(content, dict):
        return 64
    data = content.get("data")
    traceback = content.get("traceback")
    values = [
        *(data.values() if isinstance(data, dict) else ()),
        content.get("text"),
        *(traceback if isinstance(traceback, list) else ()),
    ]
    return 64 + sum(len(v) if isinstance(v, str) else 64 for v in values)


def _bytes(part: Any) -> bytes:
    return part if isinstance(part, bytes) else bytes(part.bytes)


def _view(part: Any) -> Any:
    return part if isinstance(part, bytes) else part.buffer


def _decode_big(session: Any, parts: list[Any]) -> tuple[dict[str, Any], bytes | None]:
    """jupyter_client's ``Session.deserialize`` in GIL-friendly steps (a worker thread runs it)."""
    at = next((n for n, part in enumerate(parts) if len(part) == len(DELIM) and _bytes(part) == DELIM), None)
    if at is None:
        raise ValueError("DELIM not in msg_list")
    frames = parts[at + 1 :]
    if len(frames) < 5:
        raise TypeError("malformed message, must have at least 5 elements")
    signature, header, parent, metadata = (_bytes(part) for part in frames[:4])
    content = _view(frames[4])
    checked = None
    if session.auth is not None:
        if not signature:
            raise ValueError("Unsigned Message")
        if signature in session.digest_history:
            raise ValueError(f"Duplicate Signature: {signature!r}")
        if not compare_digest(signature, session.sign([header, parent, metadata, content])):
            raise ValueError(f"Invalid Signature: {signature!r}")
        checked = signature
    head = session.unpack(header)
    message = {
        "header": extract_dates(head),
        "msg_id": head["msg_id"],
        "msg_type": head["msg_type"],
        "parent_header": extract_dates(session.unpack(parent)),
        "metadata": session.unpack(metadata),
        "content": MessageContent.of(loads(_text(content)), len(content)),
        "buffers": [memoryview(_bytes(part)) for part in frames[5:]],
    }
    return adapt(message), checked


def _text(data: Any) -> str:
    """UTF-8 ``data`` as text, a step at a time."""
    view = memoryview(data)
    decoder = codecs.getincrementaldecoder("utf-8")()
    pieces = [decoder.decode(view[i : i + DECODE_STEP]) for i in range(0, len(view), DECODE_STEP)]
    pieces.append(decoder.decode(b"", final=True))
    return "".join(pieces)


def loads(text: str) -> Any:
    """``json.loads(text)`` for a JSON object or array, with no single C call longer than a scalar or a copy.

    Containers are walked here, with an explicit stack (no recursion limit); numbers and literals go to
    ``json``'s C scanner one at a time (a numeric array's a few thousand at a time); a string without
    escapes is one slice (memchr finds its end), one with escapes goes to the C ``scanstring``.
    """
    stack: list[Any] = []
    keys: list[Any] = []
    i = _SPACE.match(text, 0).end()  # type: ignore[union-attr]
    try:
        while True:
            c = text[i]
            if c == "{" or c == "[":
                i = _SPACE.match(text, i + 1).end()  # type: ignore[union-attr]
                if text[i] == ("}" if c == "{" else "]"):
                    value: Any = {} if c == "{" else []
                    i += 1
                else:
                    stack.append({} if c == "{" else [])
                    keys.append(None)
                    if c == "{":
                        keys[-1], i = _key(text, i)
                    continue
            elif c == '"':
                value, i = _string(text, i)
            else:
                run = _NUMBERS.match(text, i) if stack and keys[-1] is None else None
                if run is not None:  # a numeric array: its numbers by the thousand
                    stack[-1].extend(json.loads(f"[{text[i : run.end()].rstrip()[:-1]}]"))
                    i = run.end()
                    continue
                value, i = _SCAN(text, i)
            while True:  # attach the value; close what ends after it
                if not stack:
                    if _SPACE.match(text, i).end() != len(text):  # type: ignore[union-attr]
                        raise ValueError("Extra data")
                    return value
                top = stack[-1]
                if keys[-1] is None:
                    top.append(value)
                else:
                    top[keys[-1]] = value
                i = _SPACE.match(text, i).end()  # type: ignore[union-attr]
                c = text[i]
                if c == ",":
                    i = _SPACE.match(text, i + 1).end()  # type: ignore[union-attr]
                    if keys[-1] is not None:
                        keys[-1], i = _key(text, i)
                    break
                if c != ("]" if keys[-1] is None else "}"):
                    raise ValueError(f"malformed JSON at character {i}")
                i += 1
                value = stack.pop()
                keys.pop()
    except (IndexError, StopIteration):
        raise ValueError(f"malformed JSON at character {i}") from None


def _string(text: str, i: int) -> tuple[str, int]:
    end = text.find('"', i + 1)
    if end < 0:
        raise ValueError(f"unterminated string at character {i}")
    if text.find("\\", i + 1, end) < 0:
        return text[i + 1 : end], end + 1
    value, after = json.decoder.scanstring(text, i + 1)  # type: ignore[attr-defined]
    return str(value), int(after)


def _key(text: str, i: int) -> tuple[str, int]:
    if text[i] != '"':
        raise ValueError(f"expected a key at character {i}")
    key, i = _string(text, i)
    i = _SPACE.match(text, i).end()  # type: ignore[union-attr]
    if text[i] != ":":
        raise ValueError(f"expected ':' at character {i}")
    return key, _SPACE.match(text, i + 1).end()  # type: ignore[union-attr]
