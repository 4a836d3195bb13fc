"""The conductor relays at the reader's pace, and heavy traffic both ways still completes."""

from __future__ import annotations

import asyncio
from typing import Any

from acpio import Agent, Proxy
from acpio import schema as acp
from acpio.conductor import Chain
from acpio.jsonrpc import Connection, RequestDispatch, Responder
from acpio.testing import WirePeer
from acpio.transports import Channel

TIMEOUT = 60
PAD = "x" * 1000


def streaming_agent(count: int) -> Any:
    """Answers ``_test/stream`` after streaming ``count`` notifications; echoes ``_test/echo``."""
    app = Agent.builder(name="streamer")

    @app.on_request
    async def initialize(
        req: acp.InitializeRequest, responder: Any, cx: Connection
    ) -> acp.InitializeResponse:
        return acp.InitializeResponse(protocol_version=1)

    @app.on_dispatch
    async def custom(message: Any, cx: Connection) -> None:
        if type(message) is not RequestDispatch:
            return
        responder: Responder[Any] = message.responder
        if message.method == "_test/echo":
            responder.respond(message.params)
            return

        async def stream() -> None:
            for n in range(count):
                cx.send_notification("_test/tick", {"n": n, "pad": PAD})
                await cx.drain()
            responder.respond({"streamed": count})

        cx.spawn(stream)

    return app


async def start(chain: Chain) -> tuple[WirePeer, Channel, asyncio.Task[None]]:
    ours, theirs = Channel.duplex()
    served = asyncio.create_task(chain.serve(ours))
    client = WirePeer(theirs, timeout=TIMEOUT)
    client.send({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {"protocolVersion": 1}})
    assert (await client.recv())["id"] == 0
    return client, theirs, served


async def test_a_stalled_client_slows_the_agent_instead_of_filling_the_conductor() -> None:
    """Without draining, the conductor read the agent's whole stream into the client's queue."""
    count = 20_000  # about 20 MB of notifications
    client, end, served = await start(Chain.agent("c", [Proxy.builder(name="p"), streaming_agent(count)]))
    async with asyncio.timeout(TIMEOUT):
        client.send({"jsonrpc": "2.0", "id": 1, "method": "_test/stream", "params": {}})
        backlog = 0
        for _ in range(30):  # the client reads nothing for a while
            await asyncio.sleep(0.02)
            backlog = max(backlog, end._inbox_bytes)  # sent to the client, not yet read
        ticks = 0
        while True:
            message = await client.recv()
            if message.get("id") == 1:
                break
            ticks += 1
        assert ticks == count  # nothing lost
        assert message["result"] == {"streamed": count}
        await client.close()
        await served
    assert backlog < 4 * Connection.HIGH_WATER, f"{backlog} bytes queued for a client that did not read"


async def test_heavy_traffic_both_ways_through_proxies_completes() -> None:
    """Draining in the relays must not deadlock: a stream one way and many requests the other."""
    count, requests = 20_000, 2_000
    chain = Chain.agent("c", [Proxy.builder(name="p1"), Proxy.builder(name="p2"), streaming_agent(count)])
    client, _end, served = await start(chain)
    async with asyncio.timeout(TIMEOUT):
        client.send({"jsonrpc": "2.0", "id": 1, "method": "_test/stream", "params": {}})
        for n in range(requests):
            client.send({"jsonrpc": "2.0", "id": 10 + n, "method": "_test/echo", "params": {"n": n}})
        answers, ticks = 0, 0
        while answers < requests + 1:
            message = await client.recv()
            if "id" in message:
                answers += 1
            else:
                ticks += 1
        assert ticks == count
        await client.close()
        await served
