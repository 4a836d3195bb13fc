"""Basic request/response and notification flow between two connections (A1, A2, A4.6, A6)."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from acpio.errors import MethodNotFound, ParseError
from acpio.jsonrpc import Builder, Connection, Responder, UntypedMessage, UntypedRole
from acpio.transports.channel import Channel

from ._support import TIMEOUT, Echo, EchoResult, Empty, Hello, HelloResult, Note, echo_builder


async def test_hello_world_typed_request_and_typed_response() -> None:
    async def main(cx: Connection) -> HelloResult:
        return await cx.send_request(Hello(name="world"))

    result = await UntypedRole.builder(name="client").connect_with(echo_builder(), main)
    assert result == HelloResult(greeting="hello, world")


async def test_notifications_arrive_in_send_order_without_reply() -> None:
    server = UntypedRole.builder(name="server")
    seen: list[str] = []
    all_seen = asyncio.Event()

    @server.on_notification
    async def note(n: Note, cx: Connection) -> None:
        seen.append(n.text)
        if len(seen) == 5:
            all_seen.set()

    async def main(cx: Connection) -> None:
        for i in range(5):
            cx.send_notification(Note(text=str(i)))
        async with asyncio.timeout(TIMEOUT):
            await all_seen.wait()

    await UntypedRole.builder().connect_with(server, main)
    assert seen == ["0", "1", "2", "3", "4"]


async def test_sequential_and_concurrent_requests_each_get_their_own_answer() -> None:
    async def main(cx: Connection) -> tuple[list[Any], list[Any]]:
        sequential = [(await cx.send_request(Echo(value=i))).value for i in range(5)]
        sent = [cx.send_request(Echo(value=i)) for i in range(5)]  # all issued before awaiting
        concurrent = [(await s).value for s in reversed(sent)]
        return sequential, concurrent

    sequential, concurrent = await UntypedRole.builder().connect_with(echo_builder(), main)
    assert sequential == [0, 1, 2, 3, 4]
    assert concurrent == [4, 3, 2, 1, 0]


async def test_out_of_order_answers_reach_the_right_awaiters() -> None:
    server = UntypedRole.builder(name="server")
    held: list[tuple[int, Responder[EchoResult]]] = []

    @server.on_request(Echo)
    async def park(req: Echo, responder: Responder[EchoResult], cx: Connection) -> None:
        held.append((req.value, responder))
        if len(held) == 3:
            for value, r in reversed(held):  # answer 3, then 2, then 1
                r.respond(EchoResult(value=value * 10))

    async def main(cx: Connection) -> list[Any]:
        sent = [cx.send_request(Echo(value=v)) for v in (1, 2, 3)]
        return [(await s).value for s in sent]

    assert await UntypedRole.builder().connect_with(server, main) == [10, 20, 30]


async def test_both_sides_serve_handlers_and_send_requests() -> None:
    left_ready, right_ready = asyncio.Event(), asyncio.Event()

    def side(name: str) -> Builder:
        app = UntypedRole.builder(name=name)

        @app.on_request
        async def hello(req: Hello) -> HelloResult:
            return HelloResult(greeting=f"{name} greets {req.name}")

        return app

    a, b = Channel.duplex()

    async def left(cx: Connection) -> str:
        left_ready.set()
        return (await cx.send_request(Hello(name="left"))).greeting

    async def right(cx: Connection) -> str:
        right_ready.set()
        result = (await cx.send_request(Hello(name="right"))).greeting
        await left_ready.wait()
        return result

    async with asyncio.timeout(TIMEOUT):
        results = await asyncio.gather(side("L").connect_with(a, left), side("R").connect_with(b, right))
    assert results == ["R greets left", "L greets right"]


async def test_map_converts_values_once_and_errors_bypass_it() -> None:
    calls: list[Any] = []

    def to_text(result: HelloResult) -> str:
        calls.append(result)
        return result.greeting.upper()

    async def main(cx: Connection) -> tuple[str, str]:
        mapped = cx.send_request(Hello(name="map")).map(to_text)
        first, second = await mapped, await mapped
        with pytest.raises(MethodNotFound):
            await cx.send_request("missing", {}).map(to_text)
        return first, second

    assert await UntypedRole.builder().connect_with(echo_builder(), main) == ("HELLO, MAP", "HELLO, MAP")
    assert len(calls) == 1


async def test_result_reads_an_arrived_answer_without_waiting_even_in_a_handler() -> None:
    results: list[Any] = []

    async def main(cx: Connection) -> None:
        sent = cx.send_request(Hello(name="now")).map(lambda r: r.greeting)
        with pytest.raises(asyncio.InvalidStateError, match="No answer to 'hello'"):
            sent.result()
        await sent
        results.append(sent.result())
        missing = cx.send_request("missing", {})
        with pytest.raises(MethodNotFound):
            await missing
        with pytest.raises(MethodNotFound):
            missing.result()

        called = asyncio.Event()

        async def in_the_dispatch_loop(value: Any) -> None:
            results.append(later.result())  # awaiting here would raise DeadlockError
            called.set()

        later = cx.send_request(Hello(name="callback"))
        later.on_receiving_result(in_the_dispatch_loop)
        await asyncio.wait_for(called.wait(), TIMEOUT)

    await UntypedRole.builder().connect_with(echo_builder(), main)
    assert results == ["hello, now", HelloResult(greeting="hello, callback")]


async def test_empty_request_type_and_null_params_are_handled() -> None:
    server = echo_builder()

    @server.on_request
    async def empty(req: Empty) -> EchoResult:
        return EchoResult(value="empty ok")

    async def main(cx: Connection) -> tuple[Any, Any]:
        typed = await cx.send_request(Empty())
        untyped = await cx.send_request("empty")  # no params member at all
        return typed.value, untyped

    assert await UntypedRole.builder().connect_with(server, main) == ("empty ok", {"value": "empty ok"})


async def test_a_builder_is_a_component_another_builder_connects_to() -> None:
    async def main(cx: Connection) -> str:
        return (await cx.send_request(Hello(name="component"))).greeting

    assert await UntypedRole.builder().connect_with(echo_builder(), main) == "hello, component"
    transport = await echo_builder().open()  # the Component protocol directly
    try:
        assert await UntypedRole.builder().connect_with(transport, main) == "hello, component"
    finally:
        await transport.aclose()


async def test_untyped_messages_are_sent_as_they_are() -> None:
    server = UntypedRole.builder()
    seen: list[Any] = []

    @server.on_dispatch
    async def record(message: Any, cx: Connection) -> None:
        seen.append((message.method, message.params))
        if message.id is not None:
            message.responder.respond({"echo": message.params})

    async def main(cx: Connection) -> Any:
        cx.send_notification(UntypedMessage("x/note", {"unknownField": 1}))
        return await cx.send_request(UntypedMessage("x/req", [1, 2]))

    assert await UntypedRole.builder().connect_with(server, main) == {"echo": [1, 2]}
    assert seen == [("x/note", {"unknownField": 1}), ("x/req", [1, 2])]


async def test_result_that_does_not_match_the_response_type_raises_a_clear_error() -> None:
    server = UntypedRole.builder()

    @server.on_request
    async def hello(req: Hello) -> dict[str, int]:
        return {"unexpected": 1}

    async def main(cx: Connection) -> None:
        with pytest.raises(ParseError, match="HelloResult"):
            await cx.send_request(Hello(name="x"))

    await UntypedRole.builder().connect_with(server, main)


def test_role_counterpart_and_peers() -> None:
    role = UntypedRole()
    assert role.counterpart() == UntypedRole()
    assert role.peers() == (UntypedRole(),)
    assert role.default_handler() is None
    with pytest.raises(ValueError, match="cannot send"):
        role.route_outgoing(object(), "m", None)
    assert role.route_outgoing(UntypedRole, "m", {"a": 1}) == ("m", {"a": 1})


async def test_hello_over_real_byte_streams() -> None:
    import socket

    from acpio.transports.streams import ByteStreams

    left, right = socket.socketpair()
    server_streams = await asyncio.open_connection(sock=left)
    client_streams = await asyncio.open_connection(sock=right)
    server = asyncio.create_task(echo_builder().serve(ByteStreams(*server_streams)))

    async def main(cx: Connection) -> list[Any]:
        results: list[Any] = [(await cx.send_request(Hello(name="bytes"))).greeting]
        sent = [cx.send_request(Echo(value=i)) for i in range(50)]
        results.append([(await s).value for s in sent])
        return results

    async with asyncio.timeout(TIMEOUT):
        results = await UntypedRole.builder().connect_with(ByteStreams(*client_streams), main)
        await server  # our side closed: the server saw end of input and returned cleanly
    assert results == ["hello, bytes", list(range(50))]
