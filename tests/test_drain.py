"""Queued kernel messages are read in one go: the iopub drain, on real zmq sockets and jupyter_client sessions.

The output writer writes whatever is queued when it wakes; it wakes when the kernel reader yields. So the
number of transactions a flood costs depends on the reader taking every message the socket already holds
before it yields — and on that drain being bounded, so that it never holds the loop long.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest
import zmq
import zmq.asyncio
from jupyter_client.session import Session

from jupyter_pair_mcp.adapters.kernels.adapter import DRAIN_BYTES, DRAIN_MESSAGES, drain
from jupyter_pair_mcp.adapters.kernels.messages import decode, decode_small, loads


@dataclass
class Channel:
    socket: Any
    session: Session


@pytest.fixture
def pair() -> Iterator[tuple[Any, Channel]]:
    context = zmq.asyncio.Context()
    receiver = context.socket(zmq.PULL)
    port = receiver.bind_to_random_port("tcp://127.0.0.1")
    sender = zmq.Context.instance().socket(zmq.PUSH)
    sender.connect(f"tcp://127.0.0.1:{port}")
    session = Session(key=b"k")
    try:
        yield sender, Channel(receiver, session)
    finally:
        sender.close(linger=0)
        receiver.close(linger=0)
        context.term()


def send(sender: Any, session: Session, count: int, text: str = "x") -> None:
    for i in range(count):
        session.send(sender, "stream", {"name": "stdout", "text": f"{text}{i}\n"})


async def until_ready(channel: Channel) -> None:
    """Wait for the first message to reach the receiving socket (a condition, not a time)."""
    await asyncio.wait_for(channel.socket.poll(), 10)


async def test_a_drain_takes_every_queued_message_without_yielding(pair: tuple[Any, Channel]) -> None:
    sender, channel = pair
    send(sender, channel.session, 100)
    await until_ready(channel)
    taken: list[dict[str, Any]] = []
    while len(taken) < 100:  # zmq hands over what the I/O thread received; the rest follows
        taken.extend(decode_small(channel.session, parts) for parts in drain(channel))  # frames, not decoded
        if len(taken) < 100:
            await until_ready(channel)
    assert [m["content"]["text"] for m in taken] == [f"x{i}\n" for i in range(100)]
    assert drain(channel) == []  # nothing left, and an empty socket is not an error


async def test_a_drain_is_bounded_by_count_and_bytes(pair: tuple[Any, Channel]) -> None:
    sender, channel = pair
    send(sender, channel.session, DRAIN_MESSAGES + 50)
    taken: list[dict[str, Any]] = []
    while len(taken) < DRAIN_MESSAGES + 50:
        await until_ready(channel)
        batch = drain(channel)
        assert len(batch) <= DRAIN_MESSAGES
        taken.extend(batch)
    big = "y" * (DRAIN_BYTES // 4)
    send(sender, channel.session, 8, big)
    sizes: list[int] = []
    while sum(sizes) < 8:
        await until_ready(channel)
        sizes.append(len(drain(channel)))
    assert max(sizes) <= 5, sizes  # about DRAIN_BYTES per drain: at most one message past the bound


async def test_a_big_message_is_decoded_as_jupyter_client_decodes_it(pair: tuple[Any, Channel]) -> None:
    """Past BIG_MESSAGE a message is decoded in a worker thread by our own steps: the same message as
    jupyter_client's, its content's size known, and a forged signature refused."""
    sender, channel = pair
    figure = {"data": [{"x": [i / 7 for i in range(50_000)], "name": 'é"\\n'}], "layout": {}, "n": [None, True, -1]}
    channel.session.send(sender, "display_data", {"data": {"application/json": figure}, "metadata": {}})
    await until_ready(channel)
    [parts] = drain(channel)
    message = await decode(channel.session, parts)
    _, frames = channel.session.feed_identities([bytes(part.bytes) for part in parts])
    expected = Session(key=b"k").deserialize(frames)
    assert message["content"] == expected["content"] and message["header"] == expected["header"]
    assert message["content"].nbytes == len(frames[4]) > 500_000
    with pytest.raises(ValueError, match="Duplicate Signature"):  # the replay history holds it
        await decode(channel.session, parts)
    forged = [*parts[:-1], b'{"data": {}}' + b" " * 100_000]
    with pytest.raises(ValueError, match="Invalid Signature"):
        await decode(Session(key=b"k"), forged)


@pytest.mark.parametrize(
    "text",
    ["{}", "[]", ' [ 1 , { "k" : "v" } ] ', '"s"', "1", "[0.5,-1e-3,1E+2,[1,2],3]", '{"a":[1,2.5,true,null,"x\\"y"]}'],
)
def test_the_stepwise_json_parser_agrees_with_json(text: str) -> None:
    import json

    assert loads(text) == json.loads(text)


@pytest.mark.parametrize("text", ["{", "[1,", '{"a" 1}', "[1 2]", '{"a":1,}', "[1]x", "[1,]", "[01,2]"])
def test_the_stepwise_json_parser_refuses_what_json_refuses(text: str) -> None:
    with pytest.raises(ValueError, match=r"malformed JSON|Extra data|expected"):
        loads(text)
