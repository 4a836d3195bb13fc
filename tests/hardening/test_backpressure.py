"""A sender that awaits ``cx.drain()`` goes at its reader's pace: nothing piles up, nothing is lost."""

from __future__ import annotations

import asyncio
from typing import Any

from acpio import Agent, Proxy
from acpio import schema as acp
from acpio.compat import Agent as AgentTrait
from acpio.compat import AgentSideConnection
from acpio.jsonrpc import Connection, UntypedRole
from acpio.testing import WirePeer
from acpio.transports import Channel

TIMEOUT = 10
COUNT = 20_000


def _inbox_bytes(end: Channel) -> int:
    return sum(len(frame) for frame in end._inbox if frame is not None)


async def _stall_then_read(peer: WirePeer, end: Channel, sender: asyncio.Task[Any]) -> tuple[int, int]:
    """Read nothing for a while (recording the largest backlog), then everything; (backlog, frames)."""
    backlog = 0
    for _ in range(20):
        await asyncio.sleep(0.01)
        backlog = max(backlog, _inbox_bytes(end))
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
    served = asyncio.create_task(Proxy.builder().connect_to(ours))
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
        backlog = max(backlog, _inbox_bytes(theirs))
    for _ in range(COUNT):
        assert (await conductor.recv())["method"] == "session/update"
    await conductor.close()
    await asyncio.wait_for(served, TIMEOUT)
    assert backlog <= Connection.HIGH_WATER + 1024
