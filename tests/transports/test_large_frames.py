"""Large frames: the bytes on the wire are exactly the frames sent, and sending one does not copy it.

A 50 MB update used to be held four times by its sender (the frame, a copy with its newline, the
batch joined for the write, the stream's buffer of what the peer had not read yet): issue 19 asks
for at most about twice the message.
"""

from __future__ import annotations

import asyncio
import hashlib
import socket
import tracemalloc

from acpio.transports import ByteStreams, Lines

TIMEOUT = 20


def _frames() -> list[bytes]:
    """Small and large frames mixed, with non-ASCII text (the wire is bytes, never re-encoded)."""
    big = b'{"jsonrpc":"2.0","method":"big","params":{"text":"' + "é".encode() * 1_500_000 + b'"}}'
    medium = b'{"jsonrpc":"2.0","method":"medium","params":{"text":"' + b"m" * 200_000 + b'"}}'
    small = [b'{"jsonrpc":"2.0","method":"small","params":{"i":%d}}' % i for i in range(5)]
    return [small[0], big, small[1], small[2], medium, small[3], big, small[4]]


async def _read_all(sock: socket.socket, size: int) -> bytes:
    reader, writer = await asyncio.open_unix_connection(sock=sock)
    data = await reader.readexactly(size)
    writer.close()
    return data


async def _digest(sock: socket.socket, size: int) -> tuple[int, str]:
    """Read ``size`` bytes keeping none of them: their count and SHA-256."""
    reader, writer = await asyncio.open_unix_connection(sock=sock)
    digest = hashlib.sha256()
    count = 0
    while count < size:
        chunk = await reader.read(65536)
        if not chunk:
            break
        count += len(chunk)
        digest.update(chunk)
    writer.close()
    return count, digest.hexdigest()


async def test_mixed_large_and_small_frames_arrive_byte_identical_over_a_socket() -> None:
    a, b = socket.socketpair()
    reader, writer = await asyncio.open_unix_connection(sock=a)
    sender = ByteStreams(reader, writer)
    frames = _frames()
    expected = b"".join(frame + b"\n" for frame in frames)
    async with asyncio.timeout(TIMEOUT):
        receiving = asyncio.create_task(_read_all(b, len(expected)))
        for frame in frames:
            sender.send(frame)
        await sender.drain()
        received = await receiving
    assert hashlib.sha256(received).hexdigest() == hashlib.sha256(expected).hexdigest()
    assert received == expected
    await sender.aclose()


async def test_a_large_frame_is_handed_to_the_writer_as_it_is_and_small_ones_are_batched() -> None:
    writes: list[bytes] = []

    async def read() -> bytes:
        await asyncio.Event().wait()
        return b""

    async def write(data: bytes) -> None:
        writes.append(data)

    transport = Lines(read, write)
    frames = _frames()
    for frame in frames:
        transport.send(frame)
    async with asyncio.timeout(TIMEOUT):
        await transport.drain()
    assert b"".join(writes) == b"".join(frame + b"\n" for frame in frames)
    # the two large frames went through without a copy; the small ones around them were joined
    large = [data for data in writes if len(data) >= 200_000]
    assert [data is frames[1] for data in large] == [True, False, True]
    assert large[1] is frames[4]
    assert len(writes) < len(frames) * 2
    await transport.aclose()


async def test_sending_a_large_frame_holds_no_second_copy_of_it() -> None:
    a, b = socket.socketpair()
    reader, writer = await asyncio.open_unix_connection(sock=a)
    sender = ByteStreams(reader, writer)
    frame = b'{"jsonrpc":"2.0","method":"big","params":{"text":"' + b"x" * 16_000_000 + b'"}}'
    tracemalloc.start()
    try:
        async with asyncio.timeout(TIMEOUT):
            receiving = asyncio.create_task(_digest(b, len(frame) + 1))
            before, _ = tracemalloc.get_traced_memory()
            tracemalloc.reset_peak()
            sender.send(frame)
            await sender.drain()
            _, peak = tracemalloc.get_traced_memory()
            expected = (len(frame) + 1, hashlib.sha256(frame + b"\n").hexdigest())
            assert await receiving == expected
    finally:
        tracemalloc.stop()
    # what the send allocated beside the frame itself: a few slices and read chunks, not 16 MB copies
    assert peak - before < len(frame) // 4, f"sending a {len(frame):,} byte frame allocated {peak - before:,}"
    await sender.aclose()
