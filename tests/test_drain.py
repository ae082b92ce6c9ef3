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

from jupyter_notebook_mcp.kernels import DRAIN_BYTES, DRAIN_MESSAGES, drain


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
        taken.extend(drain(channel))
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
