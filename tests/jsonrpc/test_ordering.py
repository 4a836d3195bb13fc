"""Ordering guarantees of the dispatch loop, and deadlock detection (A2.2-A2.4, B1.9)."""

from __future__ import annotations

import asyncio
from typing import Any

from acpio import testing
from acpio.errors import AcpError, DeadlockError
from acpio.jsonrpc import (
    Connection,
    Dispatch,
    NotificationDispatch,
    Responder,
    Unhandled,
    UntypedRole,
)
from acpio.transports.channel import Channel

from ._support import TIMEOUT, Echo, EchoResult, Hello, HelloResult, Note, WirePeer, echo_builder


def _server_answering_then_notifying() -> Any:
    server = UntypedRole.builder(name="server")

    @server.on_request
    async def echo(req: Echo, responder: Responder[EchoResult], cx: Connection) -> None:
        responder.respond(EchoResult(value=req.value))
        cx.send_notification(Note(text="after the response"))

    return server


async def test_result_callback_finishes_before_the_next_message_is_dispatched() -> None:
    events: list[str] = []
    noted = asyncio.Event()
    client = UntypedRole.builder(name="client")

    @client.on_notification
    async def note(n: Note) -> None:
        events.append("notification")
        noted.set()

    async def callback(result: EchoResult | AcpError) -> None:
        events.append(f"callback start {result}")
        for _ in range(20):  # give the loop every chance to dispatch the notification early
            await asyncio.sleep(0)
        events.append("callback end")

    async def main(cx: Connection) -> None:
        cx.send_request(Echo(value=1)).on_receiving_result(callback)
        async with asyncio.timeout(TIMEOUT):
            await noted.wait()

    await client.connect_with(_server_answering_then_notifying(), main)
    assert events == ["callback start value=1", "callback end", "notification"]


async def test_unconsumed_response_does_not_block_later_messages_and_is_kept() -> None:
    noted = asyncio.Event()
    client = UntypedRole.builder(name="client")

    @client.on_notification
    async def note(n: Note) -> None:
        noted.set()

    async def main(cx: Connection) -> Any:
        sent = cx.send_request(Echo(value="kept"))
        async with asyncio.timeout(TIMEOUT):
            await noted.wait()  # the notification after the response was dispatched
        assert sent.done
        return (await sent).value

    assert await client.connect_with(_server_answering_then_notifying(), main) == "kept"


async def test_callback_installing_a_handler_sees_the_next_entry_of_the_same_batch() -> None:
    ours, theirs = Channel.duplex()
    peer = WirePeer(theirs)
    seen: list[str] = []

    async def main(cx: Connection) -> None:
        async def install(result: Any) -> None:
            async def dynamic(message: Dispatch, cx: Connection) -> Unhandled | None:
                if not isinstance(message, NotificationDispatch):
                    return Unhandled(message)
                seen.append(message.method)
                return None

            cx.add_dynamic_handler(dynamic).run_indefinitely()

        sent = cx.send_request("start", {})
        sent.on_receiving_result(install)
        request = await peer.recv()
        peer.send(
            [
                {"jsonrpc": "2.0", "id": request["id"], "result": {}},
                {"jsonrpc": "2.0", "method": "session/update", "params": {}},
            ]
        )
        barrier = cx.send_request("barrier", {})
        barrier_request = await peer.recv()
        peer.send({"jsonrpc": "2.0", "id": barrier_request["id"], "result": None})
        async with asyncio.timeout(TIMEOUT):
            await barrier

    await UntypedRole.builder().connect_with(ours, main)
    assert seen == ["session/update"]


async def test_callback_registered_in_the_same_step_as_the_send_is_ordered() -> None:
    # The response can only be read after the sending code yields, so registering the callback
    # right after send_request is never too late (B1.9).
    order: list[str] = []
    client = UntypedRole.builder()
    noted = asyncio.Event()

    @client.on_notification
    async def note(n: Note) -> None:
        order.append("note")
        noted.set()

    async def main(cx: Connection) -> None:
        sent = cx.send_request(Echo(value=0))
        await asyncio.sleep(0)  # even after a yield, the frame is not read yet by this loop

        async def callback(result: Any) -> None:
            order.append("callback")

        sent.on_receiving_result(callback)
        async with asyncio.timeout(TIMEOUT):
            await noted.wait()

    await client.connect_with(_server_answering_then_notifying(), main)
    assert order == ["callback", "note"]


async def test_awaiting_a_response_inside_a_handler_raises_deadlock_error_at_once() -> None:
    server = UntypedRole.builder(name="server")

    @server.on_request
    async def echo(req: Echo, responder: Responder[EchoResult], cx: Connection) -> EchoResult:
        try:
            await cx.send_request(Hello(name="inner"))
        except DeadlockError as exc:
            return EchoResult(value=str(exc))
        return EchoResult(value="no error")

    async def main(cx: Connection) -> str:
        return str((await cx.send_request(Echo(value=1))).value)

    message = await echo_builder().merge(UntypedRole.builder()).connect_with(server, main)
    assert "would deadlock" in message
    assert "cx.spawn" in message


async def test_a_handler_can_wait_for_the_peer_from_a_spawned_task() -> None:
    # The agent pattern: a request handler needs an answer from the peer before it can respond.
    server = UntypedRole.builder(name="agent")

    @server.on_request
    async def echo(req: Echo, responder: Responder[EchoResult], cx: Connection) -> None:
        async def work() -> None:
            asked = await cx.send_request(Hello(name="agent"))
            responder.respond(EchoResult(value=asked.greeting))

        cx.spawn(work)

    client = echo_builder(name="client")

    async def main(cx: Connection) -> Any:
        return (await cx.send_request(Echo(value=None))).value

    assert await client.connect_with(server, main) == "hello, agent"


async def test_a_plain_task_created_in_a_handler_may_await_responses() -> None:
    server = UntypedRole.builder(name="agent")
    tasks: list[asyncio.Task[Any]] = []

    @server.on_request
    async def echo(req: Echo, responder: Responder[EchoResult], cx: Connection) -> None:
        async def work() -> None:
            asked: HelloResult = await cx.send_request(Hello(name="task"))
            responder.respond(EchoResult(value=asked.greeting))

        tasks.append(asyncio.create_task(work()))

    async def main(cx: Connection) -> Any:
        return (await cx.send_request(Echo())).value

    assert await echo_builder().connect_with(server, main) == "hello, task"


async def test_a_request_awaited_inside_a_handler_is_cancelled_at_the_peer() -> None:
    """It went out before the DeadlockError: the peer acted on it (acpio prompt asked the user)."""
    server = UntypedRole.builder(name="server")

    @server.on_request
    async def echo(req: Echo, responder: Responder[EchoResult], cx: Connection) -> EchoResult:
        try:
            await cx.send_request(Hello(name="inner"))
        except DeadlockError:
            return EchoResult(value="refused")
        return EchoResult(value="no error")

    async with testing.serving(server, timeout=TIMEOUT) as peer:
        peer.send({"jsonrpc": "2.0", "id": 1, "method": "echo", "params": {"value": 1}})
        inner = await peer.recv()
        assert inner["method"] == "hello"
        cancel = await peer.recv()
        assert cancel == {
            "jsonrpc": "2.0",
            "method": "$/cancel_request",
            "params": {"requestId": inner["id"]},
        }
        assert (await peer.recv())["result"] == {"value": "refused"}
