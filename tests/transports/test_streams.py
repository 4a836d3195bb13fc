"""Lines over plain callables, and ByteStreams over real sockets and pipes."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import socket
import struct
from collections.abc import AsyncIterator, Awaitable, Callable

import pytest

from acpio.errors import ConnectionClosed, TransportError
from acpio.transports import ByteStreams, Lines, OversizedFrame, Transport

TIMEOUT = 5


class FakePeer:
    """Chunks to read (then EOF) and a record of every write call."""

    def __init__(self, *chunks: bytes) -> None:
        self.chunks = list(chunks)
        self.writes: list[bytes] = []
        self.closed = False

    async def read(self) -> bytes:
        return self.chunks.pop(0) if self.chunks else b""

    async def write(self, data: bytes) -> None:
        self.writes.append(data)

    async def close(self) -> None:
        self.closed = True


def test_lines_is_a_transport() -> None:
    peer = FakePeer()
    assert isinstance(Lines(peer.read, peer.write), Transport)


async def test_lines_receives_frames_then_none() -> None:
    peer = FakePeer(b'{"a":1}\n{"b"', b":2}\r\n\n", b"")
    transport = Lines(peer.read, peer.write)
    assert await transport.receive() == b'{"a":1}'
    assert await transport.receive() == b'{"b":2}'
    assert await transport.receive() is None
    assert await transport.receive() is None


async def test_lines_reports_an_oversized_line_and_goes_on() -> None:
    peer = FakePeer(b"x" * 50 + b"\n" + b'{"ok":1}\n')
    transport = Lines(peer.read, peer.write, max_line=20)
    frame = await transport.receive()
    assert isinstance(frame, OversizedFrame)
    assert frame.size == 50
    assert await transport.receive() == b'{"ok":1}'


async def test_many_sends_are_joined_into_one_write() -> None:
    peer = FakePeer()
    transport = Lines(peer.read, peer.write)
    for i in range(1000):
        transport.send(b'{"n":%d}' % i)
    await transport.drain()
    assert len(peer.writes) == 1
    assert peer.writes[0] == b"".join(b'{"n":%d}\n' % i for i in range(1000))
    assert transport.statistics() == {"writes": 1, "queued": 0}


async def test_sends_during_a_slow_write_go_out_together() -> None:
    release = asyncio.Event()
    writes: list[bytes] = []

    async def slow_write(data: bytes) -> None:
        writes.append(data)
        await release.wait()

    transport = Lines(FakePeer().read, slow_write)
    transport.send(b"1")
    await asyncio.sleep(0)  # the writer picks up frame 1 and blocks in write
    for frame in (b"2", b"3", b"4"):
        transport.send(frame)
    release.set()
    async with asyncio.timeout(TIMEOUT):
        await transport.drain()
    assert writes == [b"1\n", b"2\n3\n4\n"]


async def test_drain_with_nothing_queued_returns() -> None:
    transport = Lines(FakePeer().read, FakePeer().write)
    async with asyncio.timeout(TIMEOUT):
        await transport.drain()


async def test_send_rejects_a_frame_with_a_newline() -> None:
    transport = Lines(FakePeer().read, FakePeer().write)
    with pytest.raises(ValueError, match="newline"):
        transport.send(b'{"a":\n1}')


async def test_aclose_flushes_then_closes_and_later_sends_fail() -> None:
    peer = FakePeer(b'{"a":1}\n')
    transport = Lines(peer.read, peer.write, close=peer.close)
    transport.send(b'{"last":true}')
    await transport.aclose()
    assert peer.writes == [b'{"last":true}\n']
    assert peer.closed
    with pytest.raises(ConnectionClosed):
        transport.send(b"{}")
    assert await transport.receive() is None
    await transport.aclose()  # twice is harmless


async def test_read_error_becomes_transport_error() -> None:
    async def broken_read() -> bytes:
        raise ConnectionResetError(104, "Connection reset by peer")

    transport = Lines(broken_read, FakePeer().write, label="the test peer")
    with pytest.raises(TransportError, match="Reading from the test peer failed") as info:
        await transport.receive()
    assert isinstance(info.value.__cause__, ConnectionResetError)


async def test_write_error_fails_drain_and_later_sends() -> None:
    async def broken_write(data: bytes) -> None:
        raise BrokenPipeError(32, "Broken pipe")

    transport = Lines(FakePeer().read, broken_write)
    transport.send(b"{}")
    with pytest.raises(TransportError, match="Broken pipe") as info:
        async with asyncio.timeout(TIMEOUT):
            await transport.drain()
    assert isinstance(info.value.__cause__, BrokenPipeError)
    with pytest.raises(ConnectionClosed, match="can no longer send"):
        transport.send(b"{}")
    await transport.aclose()


# -- ByteStreams over real sockets and pipes ------------------------------------------------------


@pytest.fixture
async def socket_pair() -> AsyncIterator[tuple[ByteStreams, ByteStreams]]:
    a, b = socket.socketpair()
    ends: list[ByteStreams] = []
    for sock in (a, b):
        reader, writer = await asyncio.open_unix_connection(sock=sock)
        ends.append(ByteStreams(reader, writer, label=f"socket {len(ends)}"))
    yield ends[0], ends[1]
    for end in ends:
        await end.aclose()


async def test_byte_streams_round_trip(socket_pair: tuple[ByteStreams, ByteStreams]) -> None:
    left, right = socket_pair
    left.send(b'{"ping":1}')
    async with asyncio.timeout(TIMEOUT):
        assert await right.receive() == b'{"ping":1}'
        right.send(b'{"pong":1}')
        assert await left.receive() == b'{"pong":1}'


async def test_byte_streams_batch_many_sends_into_few_writes() -> None:
    a, b = socket.socketpair()
    reader, writer = await asyncio.open_unix_connection(sock=a)
    calls: list[int] = []
    real_write = writer.write

    def counting_write(data: bytes | bytearray | memoryview) -> None:
        calls.append(len(data))
        real_write(data)

    writer.write = counting_write  # type: ignore[method-assign]
    sender = ByteStreams(reader, writer)
    peer_reader, peer_writer = await asyncio.open_unix_connection(sock=b)
    receiver = ByteStreams(peer_reader, peer_writer)
    try:
        frames = [b'{"jsonrpc":"2.0","method":"n","params":{"i":%d}}' % i for i in range(2000)]
        for frame in frames:
            sender.send(frame)
        async with asyncio.timeout(TIMEOUT):
            await sender.drain()
            received = [await receiver.receive() for _ in frames]
        assert received == frames
        assert len(calls) == 1
        assert sum(calls) == sum(len(f) + 1 for f in frames)
    finally:
        await sender.aclose()
        await receiver.aclose()


async def test_byte_streams_aclose_flushes_queued_frames(
    socket_pair: tuple[ByteStreams, ByteStreams],
) -> None:
    left, right = socket_pair
    for i in range(100):
        left.send(b"%d" % i)
    await left.aclose()
    async with asyncio.timeout(TIMEOUT):
        got = [await right.receive() for _ in range(100)]
        assert await right.receive() is None  # closing the socket's writer ends the peer's input
    assert got == [b"%d" % i for i in range(100)]


async def test_peer_closing_mid_line_drops_the_partial_line(caplog: pytest.LogCaptureFixture) -> None:
    a, b = socket.socketpair()
    reader, writer = await asyncio.open_unix_connection(sock=a)
    transport = ByteStreams(reader, writer, label="half-line peer")
    b.sendall(b'{"whole":1}\n{"half":')
    b.close()
    caplog.set_level(logging.DEBUG, logger="acpio.transports")
    async with asyncio.timeout(TIMEOUT):
        assert await transport.receive() == b'{"whole":1}'
        assert await transport.receive() is None
    assert "half-line peer closed its output in the middle of a line; dropped 8 bytes" in caplog.text
    await transport.aclose()


async def test_connection_reset_on_read_is_a_transport_error() -> None:
    accepted: asyncio.Queue[socket.socket] = asyncio.Queue()

    async def on_connect(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        sock = writer.get_extra_info("socket")
        await accepted.put(socket.socket(fileno=os.dup(sock.fileno())))
        writer.transport.abort()

    server = await asyncio.start_server(on_connect, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    transport = ByteStreams(reader, writer, label="tcp peer")
    async with asyncio.timeout(TIMEOUT):
        peer = await accepted.get()
        # SO_LINGER 0 makes close() send a reset instead of an orderly end of stream.
        peer.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        peer.close()
        with pytest.raises(TransportError, match="Reading from tcp peer failed") as info:
            await transport.receive()
    assert isinstance(info.value.__cause__, ConnectionResetError)
    await transport.aclose()
    server.close()
    await server.wait_closed()


async def test_broken_pipe_on_write_is_a_transport_error() -> None:
    loop = asyncio.get_running_loop()
    read_fd, write_fd = os.pipe()
    os.close(read_fd)
    with os.fdopen(write_fd, "wb", buffering=0) as pipe:
        w_transport, w_protocol = await loop.connect_write_pipe(
            lambda: asyncio.StreamReaderProtocol(asyncio.StreamReader()), pipe
        )
        writer = asyncio.StreamWriter(w_transport, w_protocol, None, loop)
        transport = ByteStreams(asyncio.StreamReader(), writer, label="closed pipe")
        transport.send(b'{"into":"the void"}')
        with pytest.raises(TransportError, match="Writing to closed pipe failed"):
            async with asyncio.timeout(TIMEOUT):
                await transport.drain()
        with pytest.raises(ConnectionClosed):
            transport.send(b"{}")
        await transport.aclose()


async def test_aclose_over_two_pipes_closes_the_read_pipe_too() -> None:
    """Closing both directions: the peer's writes fail (EPIPE) instead of filling a pipe nobody reads."""
    loop = asyncio.get_running_loop()
    in_r, in_w = os.pipe()
    out_r, out_w = os.pipe()
    reader = asyncio.StreamReader()
    read_transport, _ = await loop.connect_read_pipe(
        lambda: asyncio.StreamReaderProtocol(reader), os.fdopen(in_r, "rb", buffering=0)
    )
    w_transport, w_protocol = await loop.connect_write_pipe(
        lambda: asyncio.StreamReaderProtocol(asyncio.StreamReader()), os.fdopen(out_w, "wb", buffering=0)
    )
    transport = ByteStreams(reader, asyncio.StreamWriter(w_transport, w_protocol, None, loop))
    try:
        os.write(in_w, b'{"before":"close"}\n')
        async with asyncio.timeout(TIMEOUT):
            assert await transport.receive() == b'{"before":"close"}'
            await transport.aclose()
            await asyncio.sleep(0)  # the pipe transport closes its descriptor on the next pass
        assert read_transport.is_closing()
        with pytest.raises(BrokenPipeError):
            os.write(in_w, b'{"after":"close"}\n')
        assert os.read(out_r, 100) == b""  # and the output side ended, as before
    finally:
        os.close(in_w)
        os.close(out_r)


async def test_aclose_gives_up_on_a_peer_that_never_reads(caplog: pytest.LogCaptureFixture) -> None:
    a, b = socket.socketpair()
    reader, writer = await asyncio.open_unix_connection(sock=a)
    transport = ByteStreams(reader, writer, close_timeout=0.2, label="sleepy peer")
    block = b"z" * (1024 * 1024)
    for _ in range(16):
        transport.send(block)
    async with asyncio.timeout(TIMEOUT):
        await transport.aclose()
    assert "sleepy peer did not read its input" in caplog.text
    with pytest.raises(TransportError, match="queued bytes unwritten"):
        await transport.drain()
    b.close()


async def test_byte_streams_oversized_line(socket_pair: tuple[ByteStreams, ByteStreams]) -> None:
    a, b = socket.socketpair()
    reader, writer = await asyncio.open_unix_connection(sock=a)
    transport = ByteStreams(reader, writer, max_line=1024)
    b.sendall(b"[" + b"1," * 100_000 + b"1]\n" + b'{"after":1}\n')
    async with asyncio.timeout(TIMEOUT):
        big = await transport.receive()
        assert isinstance(big, OversizedFrame)
        assert big.size == 200_003
        assert big.head.startswith(b"[1,1,")
        assert await transport.receive() == b'{"after":1}'
    b.close()
    await transport.aclose()


async def test_a_sender_that_never_yields_still_hands_its_output_to_the_peer() -> None:
    """A tight loop of sends must not pile everything up until it awaits: the peer can start reading."""
    read_fd, write_fd = os.pipe()
    os.set_blocking(read_fd, False)
    os.set_blocking(write_fd, False)
    loop = asyncio.get_running_loop()

    async def read() -> bytes:
        return await loop.run_in_executor(None, os.read, read_fd, 1 << 16)

    async def write(data: bytes) -> None:
        view = memoryview(data)
        while view:
            try:
                view = view[os.write(write_fd, view) :]
            except BlockingIOError:
                await asyncio.sleep(0.001)

    def write_nowait(data: bytes) -> int:
        try:
            return os.write(write_fd, data)
        except BlockingIOError:
            return 0

    sender = Lines(read, write, write_nowait=write_nowait)
    try:
        frames = [b'{"jsonrpc":"2.0","method":"n","params":{"i":%d}}' % i for i in range(5000)]
        for frame in frames:
            sender.send(frame)
        early = os.read(read_fd, 1 << 20)  # no await since the first send: written by send() itself
        assert early.startswith(frames[0] + b"\n")
        assert early.count(b"\n") >= 256
        received = early
        async with asyncio.timeout(TIMEOUT):
            while received.count(b"\n") < len(frames):
                await asyncio.sleep(0)
                with contextlib.suppress(BlockingIOError):
                    received += os.read(read_fd, 1 << 20)
            await sender.drain()
        assert received.split(b"\n")[:-1] == frames
        await sender.aclose()
    finally:
        os.close(write_fd)
        os.close(read_fd)


def recording(read: Callable[[], Awaitable[bytes]]) -> tuple[Lines, list[bytes]]:
    """Lines over ``read`` whose every write, by the writer task or in send(), is recorded whole."""
    written: list[bytes] = []

    async def write(data: bytes) -> None:
        written.append(bytes(data))

    def write_nowait(data: bytes) -> int:
        written.append(bytes(data))
        return len(data)

    return Lines(read, write, write_nowait=write_nowait), written


async def test_a_lone_frame_goes_out_at_once_and_the_rest_of_the_turn_in_one_write() -> None:
    """An answer sent while the writer sleeps is written in send(), not a loop turn later (latency)."""
    never = asyncio.Event()

    async def read() -> bytes:
        await never.wait()
        return b""

    transport, written = recording(read)
    transport.send(b'{"id":1}')
    assert written == [b'{"id":1}\n']  # before the event loop turned
    transport.send(b'{"id":2}')
    transport.send(b'{"id":3}')
    assert written == [b'{"id":1}\n']  # the same turn's later frames wait for the writer...
    async with asyncio.timeout(TIMEOUT):
        await transport.drain()
    assert written == [b'{"id":1}\n', b'{"id":2}\n{"id":3}\n']  # ...and go out together
    never.set()
    await transport.aclose()


async def test_after_the_writer_ran_a_lone_frame_goes_out_at_once_again() -> None:
    """Frames sent in later turns, with no input between: the writer's pass ends the batching."""
    never = asyncio.Event()

    async def read() -> bytes:
        await never.wait()
        return b""

    transport, written = recording(read)
    transport.send(b'{"id":1}')  # written in send()
    await asyncio.sleep(0)
    transport.send(b'{"id":2}')  # no input since: left to the writer, which runs next
    assert written == [b'{"id":1}\n']
    async with asyncio.timeout(TIMEOUT):
        await transport.drain()
    assert written == [b'{"id":1}\n', b'{"id":2}\n']
    transport.send(b'{"id":3}')  # the writer ran and sleeps: written in send() again
    assert written == [b'{"id":1}\n', b'{"id":2}\n', b'{"id":3}\n']
    assert transport.statistics()["writes"] == 3
    never.set()
    await transport.aclose()


async def test_the_answer_to_new_input_goes_out_at_once_even_in_the_same_turn() -> None:
    """A request read without waiting (it had arrived) is answered in send() too, not by the writer."""
    chunks = [b'{"id":1}\n', b'{"id":2}\n']

    async def read() -> bytes:
        return chunks.pop(0) if chunks else b""

    transport, written = recording(read)
    assert await transport.receive() == b'{"id":1}'
    transport.send(b'{"id":1,"result":1}')
    assert await transport.receive() == b'{"id":2}'  # read in the same turn: it was there already
    transport.send(b'{"id":2,"result":2}')
    assert written == [b'{"id":1,"result":1}\n', b'{"id":2,"result":2}\n']
    await transport.aclose()


async def test_byte_streams_over_a_pipe_write_a_lone_frame_in_send() -> None:
    """Over a pipe (an agent's stdin), a lone frame is in the pipe when send() returns."""
    read_fd, write_fd = os.pipe()
    os.set_blocking(read_fd, False)
    loop = asyncio.get_running_loop()
    pipe = os.fdopen(write_fd, "wb", buffering=0)
    reader = asyncio.StreamReader()
    transport, protocol = await loop.connect_write_pipe(lambda: asyncio.StreamReaderProtocol(reader), pipe)
    sender = ByteStreams(reader, asyncio.StreamWriter(transport, protocol, reader, loop), label="pipe")
    try:
        sender.send(b'{"id":1}')
        assert os.read(read_fd, 100) == b'{"id":1}\n'  # before the event loop turned
        sender.send(b'{"id":2}')
        sender.send(b'{"id":3}')
        async with asyncio.timeout(TIMEOUT):
            await sender.drain()
        assert os.read(read_fd, 100) == b'{"id":2}\n{"id":3}\n'
        assert sender.statistics()["writes"] == 2
    finally:
        await sender.aclose()
        os.close(read_fd)


async def test_a_subclass_that_overrides_send_sees_every_frame_a_connection_sends() -> None:
    """A connection hands frames to the writer of a Lines directly, but never past a subclass's own send()."""
    from acpio.jsonrpc import Connection, UntypedRole

    peer = FakePeer()

    class Counting(Lines):
        def __init__(self) -> None:
            super().__init__(peer.read, peer.write)
            self.seen: list[bytes] = []

        def send(self, frame: bytes) -> None:
            self.seen.append(frame)
            super().send(frame)

    transport = Counting()

    async def main(cx: Connection) -> None:
        cx.send_notification("note", {"text": "one"})
        cx.send_notification("note", {"text": "two"})
        await cx.drain()

    async with asyncio.timeout(TIMEOUT):
        await UntypedRole.builder().connect_with(transport, main)
    sent = [b'{"jsonrpc":"2.0","method":"note","params":{"text":"%s"}}' % text for text in (b"one", b"two")]
    assert transport.seen == sent
    assert b"".join(peer.writes) == b"".join(frame + b"\n" for frame in sent)
