"""BatchedWriter on its own: the writing side of Lines, driven without a reader."""

from __future__ import annotations

import asyncio
import logging

import pytest

from acpio.errors import ConnectionClosed, TransportError
from acpio.transports.batched_writer import BatchedWriter

TIMEOUT = 5


def failed(exc: BaseException) -> TransportError:
    return TransportError(f"the test peer is gone ({exc})")


class Recorder:
    """Every write, by the writer task (``write``) or in send() (``write_nowait``), recorded whole."""

    def __init__(self) -> None:
        self.waited: list[bytes] = []
        self.at_once: list[bytes] = []

    async def write(self, data: bytes) -> None:
        self.waited.append(bytes(data))

    def write_nowait(self, data: bytes) -> int:
        self.at_once.append(bytes(data))
        return len(data)


async def test_a_burst_goes_out_in_one_write_with_newlines() -> None:
    peer = Recorder()
    writer = BatchedWriter(peer.write, write_failed=failed)
    for i in range(500):
        writer.send(b'{"n":%d}' % i)
    assert writer.statistics() == {"writes": 0, "queued": sum(len(b'{"n":%d}\n' % i) for i in range(500))}
    async with asyncio.timeout(TIMEOUT):
        await writer.drain()
    assert peer.waited == [b"".join(b'{"n":%d}\n' % i for i in range(500))]
    assert writer.statistics() == {"writes": 1, "queued": 0}
    await writer.finish(TIMEOUT, lambda: writer.queued)


async def test_new_input_lets_the_next_lone_frame_go_out_at_once_in_the_same_turn() -> None:
    peer = Recorder()
    writer = BatchedWriter(peer.write, write_nowait=peer.write_nowait, write_failed=failed)
    writer.send(b'{"id":1,"result":1}')  # a lone frame while the writer sleeps: written in send()
    writer.send(b'{"id":2,"result":2}')  # the same turn, no input since: left to the writer task
    assert peer.at_once == [b'{"id":1,"result":1}\n']
    async with asyncio.timeout(TIMEOUT):
        await writer.drain()
    assert peer.waited == [b'{"id":2,"result":2}\n']
    writer.send(b'{"id":3,"result":3}')
    writer.wrote_lone_frame = False  # a request read without waiting: its answer goes out in send() too
    writer.send(b'{"id":4,"result":4}')
    assert peer.at_once == [b'{"id":1,"result":1}\n', b'{"id":3,"result":3}\n', b'{"id":4,"result":4}\n']
    await writer.finish(TIMEOUT, lambda: writer.queued)


async def test_a_failed_write_is_reported_with_the_transports_own_error() -> None:
    async def broken(data: bytes) -> None:
        raise BrokenPipeError(32, "Broken pipe")

    writer = BatchedWriter(broken, write_failed=failed, label="the test peer")
    writer.send(b"{}")
    with pytest.raises(TransportError, match=r"the test peer is gone \(\[Errno 32\] Broken pipe\)") as info:
        async with asyncio.timeout(TIMEOUT):
            await writer.drain()
    assert isinstance(info.value.__cause__, BrokenPipeError)
    with pytest.raises(
        ConnectionClosed, match="The transport to the test peer can no longer send: the test peer"
    ):
        writer.send(b"{}")


async def test_finish_writes_what_is_queued_then_refuses_sends() -> None:
    peer = Recorder()
    writer = BatchedWriter(peer.write, write_failed=failed, label="the test peer")
    writer.send(b'{"last":true}')
    async with asyncio.timeout(TIMEOUT):
        await writer.finish(TIMEOUT, lambda: writer.queued)
    assert peer.waited == [b'{"last":true}\n']
    assert not writer.timed_out
    with pytest.raises(ConnectionClosed, match="The transport to the test peer is closed"):
        writer.send(b"{}")
    await writer.finish(TIMEOUT, lambda: writer.queued)  # twice is harmless


async def test_finish_gives_up_on_a_peer_that_never_reads(caplog: pytest.LogCaptureFixture) -> None:
    stuck = asyncio.Event()

    async def never_done(data: bytes) -> None:
        await stuck.wait()

    writer = BatchedWriter(never_done, write_failed=failed, label="sleepy peer")
    writer.send(b"1" * 10)
    await asyncio.sleep(0)  # the writer task takes frame 1 and waits in write
    writer.send(b"2" * 20)
    with caplog.at_level(logging.WARNING, logger="acpio.transports"):
        async with asyncio.timeout(TIMEOUT):
            await writer.finish(0.05, lambda: writer.queued + 1000)  # 1000: what `write` itself holds
    assert (
        "sleepy peer did not read its input for 0.1 s; closing with 1021 queued bytes unwritten"
        in caplog.text
    )
    assert writer.timed_out
    assert writer.queued == 0
    with pytest.raises(TransportError, match="1021 queued bytes unwritten"):
        await writer.drain()


async def test_a_finish_called_while_another_waits_waits_for_it_and_warns_once(
    caplog: pytest.LogCaptureFixture,
) -> None:
    async def never_done(data: bytes) -> None:
        await asyncio.Event().wait()

    writer = BatchedWriter(never_done, write_failed=failed, label="sleepy peer")
    writer.send(b"1" * 10)
    await asyncio.sleep(0)  # the writer task takes the frame and waits in write
    with caplog.at_level(logging.WARNING, logger="acpio.transports"):
        async with asyncio.timeout(TIMEOUT):
            first = asyncio.create_task(writer.finish(0.05, lambda: writer.queued))
            await asyncio.sleep(0)  # the first call waits for the writer
            second = asyncio.create_task(writer.finish(0.05, lambda: writer.queued))
            await second
            assert first.done()  # the second returned once the first had given up, not before
            await first
    warnings = [r.getMessage() for r in caplog.records if "did not read its input" in r.getMessage()]
    assert len(warnings) == 1, warnings
    assert writer.timed_out
