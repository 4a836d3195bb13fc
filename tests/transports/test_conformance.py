"""Every transport against acpio.testing.check_transport, one test per transport and property.

Each factory makes a fresh connected pair: ``end`` is the transport under test, ``peer`` talks to
it. The ends get a small ``max_line`` so that frames exactly that long, and longer lines, are
cheap to send.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import socket
import sys
import tempfile
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any

import pytest

from acpio.testing import TRANSPORT_PROPERTIES, PairFactory, TransportPair, check_transport
from acpio.transports import AcpAgent, ByteStreams, Channel, Lines, OversizedFrame, Stdio

MAX_LINE = 64 * 1024
TIMEOUT = 10.0

# Copies its stdin to a Unix socket and the socket to its stdout, so the test holds the far side of
# the agent's pipes as a socket. Ends when either input ends; it is killed for ``peer_death``.
RELAY = r"""
import os, socket, sys, threading

sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
sock.connect(sys.argv[1])

def stdin_to_socket():
    while data := os.read(0, 65536):
        sock.sendall(data)
    sock.shutdown(socket.SHUT_WR)
    os._exit(0)

threading.Thread(target=stdin_to_socket, daemon=True).start()
while data := sock.recv(65536):
    view = memoryview(data)
    while view:
        view = view[os.write(1, view):]
os.close(1)
os._exit(0)
"""


# -- pairs ---------------------------------------------------------------------------------------


async def byte_streams_socketpair() -> TransportPair:
    left, right = socket.socketpair()
    end = ByteStreams(*await asyncio.open_unix_connection(sock=left), max_line=MAX_LINE, label="socket end")
    reader, writer = await asyncio.open_unix_connection(sock=right)
    peer = ByteStreams(reader, writer, max_line=MAX_LINE, label="socket peer")
    return TransportPair(end, peer, kill_peer=writer.transport.abort)


@dataclass
class PipeEnd:
    """ByteStreams over a read pipe and a write pipe, with both asyncio pipe transports at hand."""

    streams: ByteStreams
    read_transport: asyncio.ReadTransport
    write_transport: asyncio.WriteTransport

    def abort(self) -> None:
        self.write_transport.abort()
        self.read_transport.close()


async def pipe_streams(read_fd: int, write_fd: int, label: str) -> PipeEnd:
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader()
    read_transport, _ = await loop.connect_read_pipe(
        lambda: asyncio.StreamReaderProtocol(reader), os.fdopen(read_fd, "rb", buffering=0)
    )
    write_transport, write_protocol = await loop.connect_write_pipe(
        lambda: asyncio.StreamReaderProtocol(asyncio.StreamReader()), os.fdopen(write_fd, "wb", buffering=0)
    )
    writer = asyncio.StreamWriter(write_transport, write_protocol, None, loop)
    streams = ByteStreams(reader, writer, max_line=MAX_LINE, label=label)
    return PipeEnd(streams, read_transport, write_transport)


@asynccontextmanager
async def byte_streams_pipes() -> AsyncIterator[TransportPair]:
    to_peer_r, to_peer_w = os.pipe()
    to_end_r, to_end_w = os.pipe()
    end = await pipe_streams(to_end_r, to_peer_w, "pipe end")
    peer = await pipe_streams(to_peer_r, to_end_w, "pipe peer")
    try:
        yield TransportPair(end.streams, peer.streams, kill_peer=peer.abort)
    finally:
        end.read_transport.close()  # ByteStreams.aclose closes the write side only
        peer.read_transport.close()


@asynccontextmanager
async def lines_socket_calls() -> AsyncIterator[TransportPair]:
    """Plain Lines over loop.sock_recv / loop.sock_sendall: no asyncio streams involved."""
    loop = asyncio.get_running_loop()
    socks = socket.socketpair()

    def lines(sock: socket.socket, label: str) -> Lines:
        sock.setblocking(False)

        async def read() -> bytes:
            return await loop.sock_recv(sock, 256 * 1024)

        async def write(data: bytes) -> None:
            await loop.sock_sendall(sock, data)

        async def close() -> None:
            sock.close()

        return Lines(read, write, close=close, max_line=MAX_LINE, label=label)

    end, peer = lines(socks[0], "lines end"), lines(socks[1], "lines peer")
    try:
        yield TransportPair(end, peer, kill_peer=socks[1].close)
    finally:
        for sock in socks:
            sock.close()


async def channel() -> tuple[Channel, Channel]:
    return Channel.duplex()


@asynccontextmanager
async def stdio_over_pipes() -> AsyncIterator[TransportPair]:
    """This process's descriptors 0 and 1 pointed at pipes for the time of one pair, then restored."""
    to_stdin_r, to_stdin_w = os.pipe()
    from_stdout_r, from_stdout_w = os.pipe()
    saved_stdin, saved_stdout = os.dup(0), os.dup(1)
    peer: PipeEnd | None = None
    try:
        os.dup2(to_stdin_r, 0)
        os.dup2(from_stdout_w, 1)
        os.close(to_stdin_r)
        os.close(from_stdout_w)
        end = Stdio(max_line=MAX_LINE)
        peer = await pipe_streams(from_stdout_r, to_stdin_w, "stdio peer")
        yield TransportPair(end, peer.streams, kill_peer=peer.abort)
    finally:
        if peer is not None:
            peer.read_transport.close()
        os.dup2(saved_stdin, 0)
        os.dup2(saved_stdout, 1)
        os.close(saved_stdin)
        os.close(saved_stdout)


@asynccontextmanager
async def acp_agent_relay() -> AsyncIterator[TransportPair]:
    """An AcpAgent running RELAY; the peer is the socket the relay connects to."""
    accepted: asyncio.Future[tuple[asyncio.StreamReader, asyncio.StreamWriter]] = (
        asyncio.get_running_loop().create_future()
    )

    def on_connect(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        if not accepted.done():
            accepted.set_result((reader, writer))

    with tempfile.TemporaryDirectory() as directory:
        path = os.path.join(directory, "relay.sock")
        server = await asyncio.start_unix_server(on_connect, path)
        end = await AcpAgent([sys.executable, "-c", RELAY, path], max_line=MAX_LINE).open()
        try:
            async with asyncio.timeout(TIMEOUT):
                reader, writer = await accepted
            peer = ByteStreams(reader, writer, max_line=MAX_LINE, label="relay socket")

            def kill() -> None:
                os.killpg(end.pid, signal.SIGKILL)

            yield TransportPair(end, peer, kill_peer=kill)
        finally:
            await end.aclose()
            server.close()
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(TIMEOUT):
                    await server.wait_closed()


@dataclass(frozen=True)
class Case:
    make_pair: PairFactory
    options: dict[str, Any]
    #: Properties that do not apply, each with a word on why (checked against the report).
    skips: frozenset[str] = frozenset()


CASES: dict[str, Case] = {
    "ByteStreams (socketpair)": Case(byte_streams_socketpair, {}),
    "ByteStreams (pipes)": Case(byte_streams_pipes, {}),
    "Lines (sock_recv/sock_sendall)": Case(lines_socket_calls, {}),
    # Stdio hands stdin and stdout back to the process on close: the peer sees the end when the
    # process exits.
    "Stdio (pipes)": Case(stdio_over_pipes, {"close_reaches_peer": False}, frozenset({"close_both_ways"})),
    # In-process: no statistics, no line limit, no way to die abruptly.
    "Channel": Case(channel, {}, frozenset({"batching", "oversized", "peer_death"})),
    "AcpAgent (relay child)": Case(acp_agent_relay, {}),
}


@pytest.mark.parametrize("prop", TRANSPORT_PROPERTIES)
@pytest.mark.parametrize("name", list(CASES))
async def test_transport_conformance(name: str, prop: str) -> None:
    case = CASES[name]
    report = await check_transport(
        case.make_pair, name=name, properties=[prop], wait_timeout=TIMEOUT, **case.options
    )
    if prop in case.skips:
        assert prop in report.skipped, f"{name}: {prop} was expected not to apply"
        pytest.skip(f"{name}: {report.skipped[prop]}")
    assert report.passed == (prop,), report


# -- the check itself: it notices broken transports ----------------------------------------------


class Faulty:
    """A Channel end with one fault: the check must name the property it breaks."""

    def __init__(self, inner: Channel, fault: str) -> None:
        self.inner = inner
        self.fault = fault
        self.closed = False

    async def receive(self) -> bytes | OversizedFrame | None:
        frame = await self.inner.receive()
        if frame is None and self.fault == "eof_hangs":
            await asyncio.Event().wait()
        if self.fault == "mangles" and isinstance(frame, bytes) and b'"i":4321' in frame:
            return frame.replace(b"4321", b"-4321")
        return frame

    def send(self, frame: bytes) -> None:
        if self.closed and self.fault == "send_after_close":
            return
        self.inner.send(frame)

    async def drain(self) -> None:
        if self.fault == "drain_hangs":
            await asyncio.Event().wait()
        if self.fault != "no_backpressure":
            await self.inner.drain()

    async def aclose(self) -> None:
        self.closed = True
        await self.inner.aclose()


def faulty(fault: str) -> Callable[[], Any]:
    async def make_pair() -> tuple[Faulty, Channel]:
        end, peer = Channel.duplex()
        return Faulty(end, fault), peer

    return make_pair


@pytest.mark.parametrize(
    ("fault", "prop", "message"),
    [
        ("mangles", "order", "peer -> end: frame 4321 of 10000 changed"),
        ("eof_hangs", "eof", "end.receive() after the peer closed did not finish within 0.3 s"),
        ("send_after_close", "after_close", "send() after aclose() did not raise acpio.ConnectionClosed"),
        ("drain_hangs", "drain", "end.drain() with nothing queued did not finish within 0.3 s"),
        ("no_backpressure", "backpressure", "drain() kept returning while the peer read nothing"),
    ],
)
async def test_the_check_names_the_transport_and_the_broken_property(
    fault: str, prop: str, message: str
) -> None:
    with pytest.raises(AssertionError) as info:
        await check_transport(faulty(fault), name=f"Faulty({fault})", wait_timeout=0.3)
    text = str(info.value)
    assert text.startswith(f"Faulty({fault}) fails ")
    assert f"\n  {prop}: {message}" in text


class SinkFaulty(Faulty):
    """A Channel end that sends through a frame sink with one fault the check must name."""

    @property
    def frame_sink(self) -> SinkFaulty:
        return self

    def send(self, frame: bytes) -> None:
        if self.fault == "sink_skips_close_check":
            if not self.closed:  # the sink's send bypasses the closed check that send() makes
                self.inner.send(frame)
            return
        self.inner.send(frame + b" " if self.fault == "sink_pads" else frame)


class SinkFaultyEnd(Faulty):
    """Its own send() is right; its frame_sink is the faulty one."""

    def __init__(self, inner: Channel, fault: str) -> None:
        super().__init__(inner, fault)
        self._sink = SinkFaulty(inner, fault)

    @property
    def frame_sink(self) -> SinkFaulty:
        return self._sink

    async def aclose(self) -> None:
        self._sink.closed = True
        await super().aclose()


@pytest.mark.parametrize(
    ("fault", "prop", "message"),
    [
        ("sink_pads", "order", "end -> peer: frame 1 of 10000 changed"),
        ("sink_skips_close_check", "after_close", "frame_sink.send() after aclose() did not raise"),
    ],
)
async def test_the_check_sends_through_the_frame_sink_as_a_connection_does(
    fault: str, prop: str, message: str
) -> None:
    async def make_pair() -> tuple[SinkFaultyEnd, Channel]:
        end, peer = Channel.duplex()
        return SinkFaultyEnd(end, fault), peer

    with pytest.raises(AssertionError) as info:
        await check_transport(make_pair, name="SinkFaulty", properties=[prop], wait_timeout=0.3)
    assert f"\n  {prop}: {message}" in str(info.value)


async def test_the_report_lists_what_passed_and_what_was_skipped_and_why() -> None:
    report = await check_transport(channel, properties=["order", "oversized", "peer_death"])
    assert report.name == "Channel"
    assert report.passed == ("order",)
    assert report.skipped == {
        "oversized": "the end has no max_line: it has no line length limit",
        "peer_death": "the pair has no kill_peer to make the peer disappear abruptly",
    }


async def test_unknown_properties_and_bad_factories_are_refused() -> None:
    with pytest.raises(ValueError, match="Unknown transport properties \\['speed'\\]"):
        await check_transport(channel, properties=["speed"])

    def not_a_factory() -> Any:
        return Channel.duplex()

    with pytest.raises(TypeError, match="expected an awaitable or an async context manager"):
        await check_transport(not_a_factory, properties=["order"])
