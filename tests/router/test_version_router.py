"""VersionRouter in-process: what it answers before initialize, how it selects, converts and hands over."""

from __future__ import annotations

import asyncio
import os
import socket
import struct
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import pytest

from acpio import ChannelListener, VersionRouter
from acpio.errors import TransportError
from acpio.testing import WirePeer
from acpio.transports.streams import ByteStreams

from ._support import Recorder

V2_INITIALIZE = {
    "protocolVersion": 2,
    "info": {"name": "zed", "version": "1.2.3"},
    "capabilities": {"auth": {"terminal": {}}, "elicitation": {"form": {}}, "_meta": {"x": 1}},
    "_meta": {"trace": "t1"},
}


@asynccontextmanager
async def routed(*versions: int) -> AsyncIterator[tuple[WirePeer, dict[int, Recorder]]]:
    recorders = {v: Recorder(v) for v in versions}
    router = VersionRouter(recorders)
    peer = WirePeer(await router.open())
    try:
        yield peer, recorders
    finally:
        await peer.close()


async def test_before_initialize_notifications_and_responses_are_ignored_other_requests_refused() -> None:
    async with routed(1, 2) as (peer, recorders):
        peer.notify("session/cancel", {"sessionId": "s"})
        peer.send({"jsonrpc": "2.0", "id": 99, "result": {}})
        peer.request("session/new", {"cwd": "/"}, request_id=1)
        refused = await peer.recv()
        assert refused["id"] == 1
        assert refused["error"]["code"] == -32600
        assert refused["error"]["message"] == "The first ACP request must be initialize"
        assert refused["error"]["data"] == {"method": "session/new"}
        # the connection stays open: initialize still works
        peer.request("initialize", {"protocolVersion": 1}, request_id=2)
        assert (await peer.recv())["result"]["servedBy"] == 1
        assert [m for m, _ in recorders[1].seen] == ["initialize"]
        assert recorders[2].seen == []


@pytest.mark.parametrize(
    "frame",
    [
        b'[{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":1}}]',
        b"[]",
    ],
)
async def test_a_json_array_gets_one_32600_with_a_null_id(frame: bytes) -> None:
    async with routed(1, 2) as (peer, recorders):
        peer.send(frame)
        answer = await peer.recv()
        assert answer["id"] is None
        assert answer["error"]["code"] == -32600
        peer.request(
            "initialize", {"protocolVersion": 2, "info": {"name": "c", "version": "1"}}, request_id=1
        )
        assert (await peer.recv())["result"]["servedBy"] == 2
        assert recorders[1].connections == 0


async def test_text_that_is_not_json_gets_a_parse_error_and_the_connection_stays_open() -> None:
    async with routed(1) as (peer, _):
        peer.send(b"{nope")
        answer = await peer.recv()
        assert (answer["id"], answer["error"]["code"]) == (None, -32700)
        peer.request("initialize", {"protocolVersion": 1}, request_id=7)
        assert (await peer.recv())["id"] == 7


@pytest.mark.parametrize(
    "params", [None, {}, {"protocolVersion": "2"}, {"protocolVersion": -1}, {"protocolVersion": 70000}]
)
async def test_a_bad_or_missing_protocol_version_is_32602(params: Any) -> None:
    async with routed(1, 2) as (peer, _):
        peer.request("initialize", params, request_id="a")
        answer = await peer.recv()
        assert answer["id"] == "a"
        assert answer["error"]["code"] == -32602
        assert "protocolVersion" in answer["error"]["message"]
        peer.request("initialize", {"protocolVersion": 1}, request_id="b")
        assert (await peer.recv())["result"]["servedBy"] == 1


async def test_no_fitting_version_is_32022_and_the_client_may_try_again() -> None:
    async with routed(2) as (peer, recorders):
        peer.request("initialize", {"protocolVersion": 1}, request_id=1)
        answer = await peer.recv()
        assert answer["error"]["code"] == -32022
        assert answer["error"]["data"] == {"requested": 1, "supported": [2]}
        peer.request(
            "initialize", {"protocolVersion": 2, "info": {"name": "c", "version": "1"}}, request_id=2
        )
        assert (await peer.recv())["result"] == {"servedBy": 2, "method": "initialize", "protocolVersion": 2}
        assert recorders[2].connections == 1


@pytest.mark.parametrize(("requested", "served"), [(1, 1), (2, 2), (3, 2)])
async def test_each_client_reaches_the_component_of_its_version(requested: int, served: int) -> None:
    async with routed(1, 2) as (peer, recorders):
        params = {"protocolVersion": requested, "info": {"name": "c", "version": "1"}, "capabilities": {}}
        if requested == 1:
            params = {"protocolVersion": 1, "clientCapabilities": {"terminal": True}}
        peer.request("initialize", params, request_id=1)
        assert (await peer.recv())["result"]["servedBy"] == served
        method, seen = recorders[served].seen[0]
        assert method == "initialize"
        assert seen == {**params, "protocolVersion": served}  # the component reads its own version
        other = recorders[3 - served]
        assert other.connections == 0


async def test_a_newer_v2_initialize_without_info_gets_an_unknown_one() -> None:
    async with routed(1, 2) as (peer, recorders):
        peer.request("initialize", {"protocolVersion": 9}, request_id=1)
        await peer.recv()
        assert recorders[2].seen[0][1] == {
            "protocolVersion": 2,
            "info": {"name": "unknown", "version": "unknown"},
        }


async def test_a_v1_only_router_converts_a_v2_initialize_to_v1() -> None:
    async with routed(1) as (peer, recorders):
        peer.request("initialize", V2_INITIALIZE, request_id=1)
        assert (await peer.recv())["result"]["protocolVersion"] == 1
        assert recorders[1].seen == [
            (
                "initialize",
                {
                    "protocolVersion": 1,
                    "clientInfo": {"name": "zed", "version": "1.2.3"},
                    "clientCapabilities": {
                        "fs": {"readTextFile": False, "writeTextFile": False},
                        "terminal": False,
                        "session": {"configOptions": {"boolean": {}}},
                        "auth": {"terminal": True},
                        "elicitation": {"form": {}},
                        "_meta": {"x": 1},
                    },
                    "_meta": {"trace": "t1"},
                },
            )
        ]


async def test_a_v1_only_router_answers_v1_to_version_zero() -> None:
    async with routed(1) as (peer, recorders):
        peer.request("initialize", {"protocolVersion": 0}, request_id=1)
        assert (await peer.recv())["result"]["servedBy"] == 1
        assert recorders[1].seen == [("initialize", {"protocolVersion": 1})]


async def test_a_v2_route_refuses_a_null_request_id() -> None:
    async with routed(2) as (peer, recorders):
        peer.send({"jsonrpc": "2.0", "id": None, "method": "initialize", "params": {"protocolVersion": 2}})
        answer = await peer.recv()
        assert (answer["id"], answer["error"]["code"]) == (None, -32600)
        assert recorders[2].connections == 0


async def test_pipelined_frames_reach_the_component_in_order_none_lost() -> None:
    """A client that sends initialize and the next requests at once, without waiting for answers."""
    async with routed(1, 2) as (peer, recorders):
        peer.request(
            "initialize", {"protocolVersion": 2, "info": {"name": "c", "version": "1"}}, request_id=1
        )
        peer.request("session/new", {"cwd": "/tmp"}, request_id=2)
        peer.notify("session/cancel", {"sessionId": "s"})
        for n in range(3, 40):
            peer.request("session/prompt", {"sessionId": "s", "n": n}, request_id=n)
        answers = [await peer.recv() for _ in range(39)]
        assert [a["id"] for a in answers] == list(range(1, 40))
        seen = recorders[2].seen
        assert [m for m, _ in seen[:3]] == ["initialize", "session/new", "session/cancel"]
        assert [p["n"] for _, p in seen[3:]] == list(range(3, 40))


async def test_a_repeated_initialize_is_the_chosen_components_to_answer() -> None:
    async with routed(1, 2) as (peer, recorders):
        peer.request(
            "initialize", {"protocolVersion": 2, "info": {"name": "c", "version": "1"}}, request_id=1
        )
        peer.request("initialize", {"protocolVersion": 1}, request_id=2)
        first, second = await peer.recv(), await peer.recv()
        assert (first["result"]["servedBy"], second["result"]["servedBy"]) == (2, 2)
        assert recorders[1].connections == 0
        assert [p["protocolVersion"] for _, p in recorders[2].seen] == [2, 1]  # the second as it was sent


async def test_the_input_ending_before_initialize_ends_the_routing() -> None:
    router = VersionRouter({1: Recorder(1)})
    end = await router.open()
    end.send(b'{"jsonrpc":"2.0","method":"x"}')
    await end.aclose()
    assert await end.receive() is None


def test_a_router_refuses_what_it_cannot_route() -> None:
    with pytest.raises(ValueError, match="at least one component"):
        VersionRouter({})
    with pytest.raises(ValueError, match="not an ACP protocol version"):
        VersionRouter({-1: Recorder(1)})
    with pytest.raises(TypeError, match="has no serve"):
        VersionRouter({1: object()})  # type: ignore[dict-item]


async def test_a_listener_s_connections_are_routed_each_on_its_own() -> None:
    recorders = {1: Recorder(1), 2: Recorder(2)}
    router = VersionRouter(recorders)
    listener = ChannelListener()
    serving = asyncio.create_task(router.serve(listener))
    first, second = WirePeer(listener.connect()), WirePeer(listener.connect())
    second.request("initialize", {"protocolVersion": 2, "info": {"name": "c", "version": "1"}}, request_id=1)
    first.request("initialize", {"protocolVersion": 1}, request_id=1)
    assert (await first.recv())["result"]["servedBy"] == 1
    assert (await second.recv())["result"]["servedBy"] == 2
    await listener.aclose()
    await asyncio.wait_for(serving, 5)
    assert (recorders[1].connections, recorders[2].connections) == (1, 1)
    with pytest.raises(TypeError, match="on_error= is for serving a listener"):
        await router.serve(Recorder(1).builder, on_error=print)


async def test_a_v1_shaped_initialize_asking_for_a_newer_version_keeps_its_v1_capabilities() -> None:
    async with routed(1) as (peer, recorders):
        params = {
            "protocolVersion": 7,
            "clientCapabilities": {"fs": {"readTextFile": True}, "terminal": True},
        }
        peer.request("initialize", params, request_id=1)
        await peer.recv()
        assert recorders[1].seen == [("initialize", {**params, "protocolVersion": 1})]


async def test_an_initialize_the_chosen_version_cannot_read_is_32602_and_leaves_it_unrouted() -> None:
    async with routed(1, 2) as (peer, recorders):
        peer.request("initialize", {"protocolVersion": 2, "capabilities": {}}, request_id=1)  # no info
        answer = await peer.recv()
        assert (answer["id"], answer["error"]["code"]) == (1, -32602)
        assert answer["error"]["data"]["method"] == "initialize"
        peer.request("initialize", {"protocolVersion": 1}, request_id=2)
        assert (await peer.recv())["result"]["servedBy"] == 1
        assert recorders[2].connections == 0


@asynccontextmanager
async def tcp_transport() -> AsyncIterator[tuple[ByteStreams, asyncio.StreamWriter, socket.socket]]:
    """A real TCP connection: the transport of one end, its writer, and the other end's socket."""
    accepted: asyncio.Queue[socket.socket] = asyncio.Queue()

    async def on_connect(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await accepted.put(socket.socket(fileno=os.dup(writer.get_extra_info("socket").fileno())))
        writer.transport.abort()

    server = await asyncio.start_server(on_connect, "127.0.0.1", 0)
    reader, writer = await asyncio.open_connection("127.0.0.1", server.sockets[0].getsockname()[1])
    peer = await asyncio.wait_for(accepted.get(), 5)
    try:
        yield ByteStreams(reader, writer, label="tcp client"), writer, peer
    finally:
        peer.close()
        server.close()
        await server.wait_closed()


async def test_a_connection_failing_before_initialize_is_closed_by_the_router() -> None:
    async with tcp_transport() as (transport, writer, peer):
        peer.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        peer.close()  # a reset: reading fails
        with pytest.raises(TransportError, match="Reading from tcp client failed"):
            await asyncio.wait_for(VersionRouter({1: Recorder(1)}).route(transport), 5)
        assert writer.is_closing()


async def test_routing_cancelled_before_initialize_closes_the_connection() -> None:
    async with tcp_transport() as (transport, writer, _peer):
        routing = asyncio.ensure_future(VersionRouter({1: Recorder(1)}).route(transport))
        await asyncio.sleep(0.05)
        routing.cancel()
        with pytest.raises(asyncio.CancelledError):
            await routing
        assert writer.is_closing()
