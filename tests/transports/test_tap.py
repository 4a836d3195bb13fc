"""Tap: every frame shown to the observer in order, both ways; a failing observer breaks nothing."""

from __future__ import annotations

import asyncio
import logging
import socket
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import pytest

from acpio.errors import ConnectionClosed, TransportError
from acpio.jsonrpc import Builder, Connection, UntypedRole
from acpio.testing import TRANSPORT_PROPERTIES, TransportPair, WirePeer, check_transport
from acpio.transports import ByteStreams, Channel, Direction, OversizedFrame, Tap

IN, OUT = Direction.INCOMING, Direction.OUTGOING
TIMEOUT = 10.0


class Seen:
    """An observer that keeps what it is shown."""

    def __init__(self) -> None:
        self.frames: list[tuple[Direction, bytes | OversizedFrame]] = []

    def __call__(self, direction: Direction, frame: bytes | OversizedFrame) -> None:
        self.frames.append((direction, frame))


class Scripted:
    """A transport whose input is a fixed list (a frame, or an exception to raise); output is kept."""

    def __init__(self, *incoming: bytes | OversizedFrame | Exception) -> None:
        self.incoming = list(incoming)
        self.sent: list[bytes] = []
        self.closed = False

    async def receive(self) -> bytes | OversizedFrame | None:
        if not self.incoming:
            return None
        item = self.incoming.pop(0)
        if isinstance(item, Exception):
            raise item
        return item

    def send(self, frame: bytes) -> None:
        if self.closed:
            raise ConnectionClosed("closed")
        self.sent.append(frame)

    async def drain(self) -> None:
        pass

    async def aclose(self) -> None:
        self.closed = True


async def test_frames_are_shown_in_the_order_they_cross_both_ways() -> None:
    ours, theirs = Channel.duplex()
    seen = Seen()
    tap = Tap(ours, seen)
    tap.send(b'{"n":1}')
    theirs.send(b'{"n":2}')
    assert await tap.receive() == b'{"n":2}'
    tap.send(b'{"n":3}')
    tap.send(b'{"n":4}')
    theirs.send(b'{"n":5}')
    assert await tap.receive() == b'{"n":5}'
    assert [await theirs.receive() for _ in range(3)] == [b'{"n":1}', b'{"n":3}', b'{"n":4}']
    await tap.aclose()
    assert await theirs.receive() is None
    assert seen.frames == [
        (OUT, b'{"n":1}'),
        (IN, b'{"n":2}'),
        (OUT, b'{"n":3}'),
        (OUT, b'{"n":4}'),
        (IN, b'{"n":5}'),
    ]


async def test_an_oversized_line_is_shown_and_a_refused_send_is_not() -> None:
    oversized = OversizedFrame(size=10_000_000, head=b'{"huge":')
    inner = Scripted(oversized)
    seen = Seen()
    tap = Tap(inner, seen)
    assert await tap.receive() is oversized
    await tap.aclose()
    assert inner.closed
    with pytest.raises(ConnectionClosed):
        tap.send(b"{}")
    assert seen.frames == [(IN, oversized)]


async def test_the_end_of_input_is_reported_before_the_caller_sees_it() -> None:
    ends: list[BaseException | None] = []
    clean = Tap(Scripted(b"{}"), Seen(), on_input_end=ends.append)
    assert await clean.receive() == b"{}"
    assert ends == []
    assert await clean.receive() is None
    assert ends == [None]

    failure = TransportError("the pipe broke")
    failing = Tap(Scripted(failure), Seen(), on_input_end=ends.append)
    with pytest.raises(TransportError) as info:
        await failing.receive()
    assert info.value is failure
    assert ends == [None, failure]


async def test_a_failing_observer_is_logged_and_the_frames_go_on(caplog: pytest.LogCaptureFixture) -> None:
    calls: list[Direction] = []

    def broken(direction: Direction, frame: bytes | OversizedFrame) -> None:
        calls.append(direction)
        raise ValueError("observer bug")

    ours, theirs = Channel.duplex()
    tap = Tap(ours, broken)
    with caplog.at_level(logging.ERROR, logger="acpio.transports"):
        tap.send(b"1")
        theirs.send(b"2")
        assert await tap.receive() == b"2"
        tap.send(b"3")
    assert [await theirs.receive() for _ in range(2)] == [b"1", b"3"]
    assert calls == [OUT, IN, OUT]  # called again after each failure
    failures = [r for r in caplog.records if r.name == "acpio.transports"]
    assert [r.getMessage() for r in failures] == [
        f"The observer of {tap!r} failed on an outgoing frame",
        f"The observer of {tap!r} failed on an incoming frame",
        f"The observer of {tap!r} failed on an outgoing frame",
    ]
    assert all(r.exc_info is not None and r.exc_info[0] is ValueError for r in failures)
    await tap.aclose()


async def test_a_connection_over_a_tap_with_a_failing_observer_works() -> None:
    def broken(direction: Direction, frame: bytes | OversizedFrame) -> None:
        raise RuntimeError("observer bug")

    ours, theirs = Channel.duplex()
    peer = WirePeer(theirs, timeout=TIMEOUT)

    async def main(cx: Connection) -> Any:
        return await cx.send_request("x/echo", {"v": 1})

    async def answer() -> None:
        request = await peer.recv()
        peer.send({"jsonrpc": "2.0", "id": request["id"], "result": request["params"]})

    async with asyncio.timeout(TIMEOUT):
        answering = asyncio.create_task(answer())
        result = await Builder(UntypedRole(), name="tapped").connect_with(Tap(ours, broken), main)
        await answering
    assert result == {"v": 1}


async def test_statistics_and_max_line_are_the_inner_transports() -> None:
    left, right = socket.socketpair()
    streams = ByteStreams(*await asyncio.open_unix_connection(sock=left), max_line=1234)
    tap = Tap(streams, Seen())
    try:
        assert tap.inner is streams
        assert tap.max_line == 1234
        assert tap.statistics() == streams.statistics()
        assert Tap(Scripted(), Seen()).statistics() == {}
        assert Tap(Scripted(), Seen()).max_line is None
    finally:
        await tap.aclose()
        right.close()


@asynccontextmanager
async def tapped_socketpair() -> AsyncIterator[TransportPair]:
    """A tapped ByteStreams end (statistics, max_line and a peer that can die: every property applies)."""
    left, right = socket.socketpair()
    end = ByteStreams(*await asyncio.open_unix_connection(sock=left), max_line=64 * 1024, label="end")
    reader, writer = await asyncio.open_unix_connection(sock=right)
    peer = ByteStreams(reader, writer, max_line=64 * 1024, label="peer")
    try:
        yield TransportPair(Tap(end, Seen()), peer, kill_peer=writer.transport.abort)
    finally:
        right.close()


@pytest.mark.parametrize("prop", TRANSPORT_PROPERTIES)
async def test_a_tap_is_a_conforming_transport(prop: str) -> None:
    report = await check_transport(tapped_socketpair, name="Tap", properties=[prop], wait_timeout=TIMEOUT)
    assert report.passed == (prop,), report
