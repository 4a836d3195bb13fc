"""A sender that awaits ``cx.drain()`` goes at its reader's pace: nothing piles up, nothing is lost."""

from __future__ import annotations

import asyncio
import logging
import socket
from typing import Any

import pytest

from acpio import Agent, Proxy
from acpio import schema as acp
from acpio.jsonrpc import Connection, UntypedRole
from acpio.testing import WirePeer
from acpio.traits import AgentSideConnection, AgentTrait
from acpio.transports import ByteStreams, Channel

TIMEOUT = 10
COUNT = 20_000


async def _stall_then_read(peer: WirePeer, end: Channel, sender: asyncio.Task[Any]) -> tuple[int, int]:
    """Read nothing for a while (recording the largest backlog), then everything; (backlog, frames)."""
    backlog = 0
    for _ in range(20):
        await asyncio.sleep(0.01)
        backlog = max(backlog, end._inbox_bytes)
    assert not sender.done()  # it is waiting for the reader, not finished by buffering everything
    frames = 0
    while frames < COUNT:
        await peer.recv()
        frames += 1
    return backlog, frames


async def test_builder_sender_waits_for_a_stalled_reader() -> None:
    ours, theirs = Channel.duplex()
    peer = WirePeer(theirs, timeout=TIMEOUT)

    async def stream(cx: Connection) -> None:
        for n in range(COUNT):
            cx.send_notification("_test/tick", {"n": n, "pad": "x" * 100})
            await cx.drain()

    async with asyncio.timeout(TIMEOUT):
        sender = asyncio.create_task(UntypedRole.builder().connect_with(ours, stream))
        backlog, frames = await _stall_then_read(peer, theirs, sender)
        await sender
    assert frames == COUNT
    assert backlog <= Connection.HIGH_WATER + 1024  # 20,000 frames would be 2.6 MB


async def test_trait_style_notifications_apply_backpressure() -> None:
    """``await conn.session_update(...)`` waits for the client when the client does not read."""
    ours, theirs = Channel.duplex()
    peer = WirePeer(theirs, timeout=TIMEOUT)
    conn = AgentSideConnection(AgentTrait(), ours)

    async def stream() -> None:
        async with conn:
            chunk = acp.AgentMessageChunk(content=acp.TextContent(text="x" * 100))
            for _ in range(COUNT):
                await conn.session_update(acp.SessionNotification(session_id="s", update=chunk))

    async with asyncio.timeout(TIMEOUT):
        sender = asyncio.create_task(stream())
        backlog, frames = await _stall_then_read(peer, theirs, sender)
        await peer.close()
        await sender
    assert frames == COUNT
    assert backlog <= Connection.HIGH_WATER + 1024


async def test_drain_returns_at_once_below_the_high_water_mark() -> None:
    app = Agent.builder()
    ours, theirs = Channel.duplex()

    async def one(cx: Connection) -> None:
        cx.send_notification("_test/one", {})
        await asyncio.wait_for(cx.drain(), 0.5)  # nobody reads, but one frame is far below the mark

    await asyncio.wait_for(app.connect_with(ours, one), TIMEOUT)
    await theirs.aclose()


async def test_a_proxy_stops_reading_while_its_client_does_not_read() -> None:
    """What a proxy forwards waits for the reader: its own backlog stays under the mark."""
    ours, theirs = Channel.duplex()
    conductor = WirePeer(theirs, timeout=TIMEOUT)
    served = asyncio.create_task(Proxy.builder().serve(ours))
    conductor.send(
        {"jsonrpc": "2.0", "id": 0, "method": "proxy/initialize", "params": {"protocolVersion": 1}}
    )
    wrapped_initialize = await conductor.recv()  # the proxy initializes its successor
    conductor.send({"jsonrpc": "2.0", "id": wrapped_initialize["id"], "result": {"protocolVersion": 1}})
    await conductor.recv()  # the answer to proxy/initialize
    update = {"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": "x" * 100}}
    for _ in range(COUNT):  # from the agent, through the conductor, wrapped
        params = {"method": "session/update", "params": {"sessionId": "s", "update": update}}
        conductor.send({"jsonrpc": "2.0", "method": "proxy/successor", "params": params})
    backlog = 0
    for _ in range(20):
        await asyncio.sleep(0.01)
        backlog = max(backlog, theirs._inbox_bytes)
    for _ in range(COUNT):
        assert (await conductor.recv())["method"] == "session/update"
    await conductor.close()
    await asyncio.wait_for(served, TIMEOUT)
    assert backlog <= Connection.HIGH_WATER + 1024


async def _starvation_case(end: Any, reader: Any, statistics_waiters: Any) -> None:
    """Another task keeps sending while the reader keeps pace: a drain still returns."""
    stop = asyncio.Event()

    async def keep_sending() -> None:
        while not stop.is_set():  # one frame per turn of the loop: the queue never quite empties
            end.send(b'{"jsonrpc":"2.0","method":"_tick"}')
            await asyncio.sleep(0)

    async def keep_reading() -> None:
        while not stop.is_set():
            await reader()
            await asyncio.sleep(0)

    for _ in range(5):
        end.send(b'{"jsonrpc":"2.0","method":"_tick"}')
    tasks = [asyncio.create_task(keep_sending()), asyncio.create_task(keep_reading())]
    try:
        await asyncio.sleep(0.05)
        await asyncio.wait_for(end.drain(), 2)  # waited for an empty queue before: never returned
        for _ in range(100):  # cancelled drains leave nothing behind
            waiter = asyncio.create_task(end.drain())
            await asyncio.sleep(0)
            waiter.cancel()
            await asyncio.gather(waiter, return_exceptions=True)
        assert statistics_waiters() < 5
    finally:
        stop.set()
        await asyncio.gather(*tasks, return_exceptions=True)


async def test_channel_drain_is_not_starved_by_a_sender_that_keeps_pace() -> None:
    ours, theirs = Channel.duplex()
    await _starvation_case(ours, theirs.receive, lambda: len(theirs._drainers))


async def test_stream_drain_is_not_starved_by_a_sender_that_keeps_pace() -> None:
    import socket

    from acpio.transports import ByteStreams

    left, right = socket.socketpair()
    reader_a, writer_a = await asyncio.open_connection(sock=left)
    reader_b, writer_b = await asyncio.open_connection(sock=right)
    ours, theirs = ByteStreams(reader_a, writer_a), ByteStreams(reader_b, writer_b)
    try:
        await _starvation_case(ours, theirs.receive, lambda: len(ours._writer._drain_waiters))
    finally:
        await ours.aclose()
        await theirs.aclose()


async def _send_megabytes(megabytes: int, *, read: bool, caplog: pytest.LogCaptureFixture) -> list[str]:
    ours, theirs = Channel.duplex()
    peer = WirePeer(theirs, timeout=TIMEOUT)
    pad = "x" * 1000
    count = megabytes * 1000

    async def stream(cx: Connection) -> None:
        for n in range(count):
            cx.send_notification("_test/tick", {"n": n, "pad": pad})
            if n % 100 == 0:
                await asyncio.sleep(0)  # lets the reader run, but never waits for it

    async def reader() -> None:
        for _ in range(count):
            await peer.recv()

    with caplog.at_level(logging.WARNING, logger="acpio.jsonrpc"):
        reading = asyncio.create_task(reader()) if read else None
        await asyncio.wait_for(UntypedRole.builder().connect_with(ours, stream), TIMEOUT)
        if reading is not None:
            await reading
    return [r.getMessage() for r in caplog.records if "cx.drain()" in r.getMessage()]


async def test_no_unread_warning_for_a_peer_that_keeps_up(caplog: pytest.LogCaptureFixture) -> None:
    """A healthy connection that sent 70 MB in all was warned about 67 MB 'not read yet'."""
    assert await _send_megabytes(70, read=True, caplog=caplog) == []


async def test_a_peer_that_reads_nothing_is_warned_about_once(caplog: pytest.LogCaptureFixture) -> None:
    warnings = await _send_megabytes(70, read=False, caplog=caplog)
    assert len(warnings) == 1
    assert "peer reads slower than this side sends" in warnings[0]


async def test_a_sender_that_never_drains_over_a_socket_is_told_once_what_to_write(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """The builder style over a byte stream (stdio is one), its reader stalled: the queue grows, so
    the author is told once, at 64 MB, the line to add; then the reader catches up and gets it all."""
    ours_socket, theirs_socket = socket.socketpair()
    reader, writer = await asyncio.open_unix_connection(sock=ours_socket)
    ours = ByteStreams(reader, writer, label="stalled client")
    theirs_reader, theirs_writer = await asyncio.open_unix_connection(sock=theirs_socket)
    theirs = ByteStreams(theirs_reader, theirs_writer, label="agent")
    pad = "x" * 1000
    count = 70_000
    sent = asyncio.Event()

    async def stream(cx: Connection) -> None:
        for n in range(count):
            cx.send_notification("_test/tick", {"n": n, "pad": pad})
            if n % 100 == 0:
                await asyncio.sleep(0)  # lets the writer run, but never waits for the reader
        sent.set()

    with caplog.at_level(logging.WARNING, logger="acpio.jsonrpc"):
        sender = asyncio.create_task(UntypedRole.builder().connect_with(ours, stream))
        async with asyncio.timeout(6 * TIMEOUT):  # a hang guard: 70 MB took over 10 s under load 13
            await sent.wait()  # the reader has read nothing meanwhile
            warnings = [r.getMessage() for r in caplog.records if "drain" in r.getMessage()]
            frames = 0
            while frames < count:
                assert await theirs.receive() is not None
                frames += 1
            await sender
    await theirs.aclose()
    assert len(warnings) == 1, warnings
    assert "has not read yet" in warnings[0]
    assert "`await cx.drain()` after each send" in warnings[0]
