"""acpio.testing: the raw wire peer users test their agents with."""

from __future__ import annotations

from typing import Any

import pytest

from acpio import ConnectionClosed
from acpio.jsonrpc import Connection, UntypedRole
from acpio.testing import WirePeer, serving
from acpio.transports import Channel


def echo() -> Any:
    app = UntypedRole.builder(name="echo")

    @app.on_dispatch
    async def answer(message: Any, cx: Connection) -> None:
        message.responder.respond({"method": message.method})

    return app


async def test_serving_yields_a_peer_that_gets_answers() -> None:
    async with serving(echo()) as peer:
        peer.send({"jsonrpc": "2.0", "id": 7, "method": "ping"})
        assert await peer.recv() == {"jsonrpc": "2.0", "id": 7, "result": {"method": "ping"}}
        peer.send(b"not json")
        answer = await peer.recv()
        assert answer["error"]["code"] == -32700


async def test_serving_uses_the_given_peer_class() -> None:
    class Mine(WirePeer):
        pass

    async with serving(echo(), Mine) as peer:
        assert isinstance(peer, Mine)


async def test_recv_raises_connection_closed_when_the_output_ends() -> None:
    ours, theirs = Channel.duplex()
    peer = WirePeer(theirs, timeout=1)
    await ours.aclose()
    assert await peer.recv_raw() is None
    with pytest.raises(ConnectionClosed, match="closed its output"):
        await peer.recv()


async def test_recv_is_bounded_by_the_timeout() -> None:
    _ours, theirs = Channel.duplex()
    with pytest.raises(TimeoutError):
        await WirePeer(theirs, timeout=0.05).recv()


async def test_request_helpers_number_requests_and_skip_to_the_frame_wanted() -> None:
    async with serving(echo()) as peer:
        first = peer.request("ping")
        second = peer.request("pong", {"x": 1})
        assert (first, second) == (1, 2)
        seen: list[Any] = []
        assert await peer.response_to(second, seen) == {
            "jsonrpc": "2.0",
            "id": 2,
            "result": {"method": "pong"},
        }
        assert seen == [{"jsonrpc": "2.0", "id": 1, "result": {"method": "ping"}}]


async def test_expect_names_what_arrived_instead() -> None:
    ours, theirs = Channel.duplex()
    peer = WirePeer(theirs, timeout=1)
    ours.send(b'{"jsonrpc":"2.0","method":"session/update","params":{}}')
    with pytest.raises(AssertionError, match="expected 'initialize', received"):
        await peer.expect("initialize")
    ours.send(b'{"jsonrpc":"2.0","id":5,"method":"initialize"}')
    request = await peer.expect("initialize")
    peer.respond(request, {"protocolVersion": 1})
    assert await ours.receive() == b'{"jsonrpc":"2.0","id":5,"result":{"protocolVersion":1}}'
