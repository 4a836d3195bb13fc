"""``Builder.serve(listener)``: one builder, many connections, each on its own."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from acpio import Client, SessionConnection
from acpio import schema as acp
from acpio.agents.testy import testy_agent
from acpio.jsonrpc import UntypedRole
from acpio.transports import Channel, ChannelListener
from acpio.transports.channel import ServedChannel

TIMEOUT = 60
CLIENTS = 200


async def one_turn(listener: ChannelListener, prompt: str) -> str:
    async def main(cx: SessionConnection) -> str:
        await cx.send_request(acp.InitializeRequest(protocol_version=1))
        async with cx.build_session(Path.cwd()).start_session() as session:
            session.send_prompt(prompt)
            return await session.read_to_string()

    return await Client.builder().connect_with(listener.connect(), main)


async def turn_stuck_midway(listener: ChannelListener, midway: asyncio.Event) -> None:
    """A turn that streams one chunk, sets ``midway``, and would then sleep for a minute."""

    async def main(cx: SessionConnection) -> None:
        await cx.send_request(acp.InitializeRequest(protocol_version=1))
        async with cx.build_session(Path.cwd()).start_session() as session:
            session.send_prompt("echo started\nsleep 60\necho never")
            await session.read_update()
            midway.set()
            await session.read_to_string()

    await Client.builder().connect_with(listener.connect(), main)


async def test_two_hundred_connections_and_one_killed_mid_turn() -> None:
    listener = ChannelListener()
    server = asyncio.create_task(testy_agent().serve(listener))
    async with asyncio.timeout(TIMEOUT):
        midway = asyncio.Event()
        turns: list[asyncio.Task[Any]] = [
            asyncio.create_task(
                turn_stuck_midway(listener, midway)
                if n == 17
                else one_turn(listener, f"sleep 0.2\necho client {n}")
            )
            for n in range(CLIENTS)
        ]
        victim = turns[17]
        await midway.wait()  # its turn is under way: the agent streamed and is sleeping
        victim.cancel()  # its connection goes away mid-turn
        results = await asyncio.gather(*turns, return_exceptions=True)
        assert isinstance(results[17], asyncio.CancelledError)
        finished = [r for n, r in enumerate(results) if n != 17]
        assert finished == [f"client {n}\n" for n in range(CLIENTS) if n != 17]
        await listener.aclose()
        await server  # closing the listener ends the server


async def test_a_failing_connection_is_reported_and_the_others_go_on() -> None:
    app = UntypedRole.builder(name="fragile")
    connections: list[object] = []

    @app.with_spawned
    async def first_one_breaks(cx: object) -> None:
        connections.append(cx)
        if len(connections) == 1:
            raise RuntimeError("this connection breaks")
        await asyncio.Event().wait()  # the others just stay up

    failures: list[BaseException] = []
    listener = ChannelListener()
    server = asyncio.create_task(app.serve(listener, on_error=failures.append))
    async with asyncio.timeout(TIMEOUT):
        broken = listener.connect()
        assert await broken.receive() is None  # its connection ended
        healthy = listener.connect()
        while len(connections) < 2:  # noqa: ASYNC110 - polled: the spawned task signals nothing
            await asyncio.sleep(0.01)
        assert not server.done()
        await listener.aclose()
        await server
        assert await healthy.receive() is None  # ended by closing the listener
    assert [str(f) for f in failures] == ["this connection breaks"]


async def test_closing_the_listener_ends_open_connections() -> None:
    listener = ChannelListener()
    server = asyncio.create_task(testy_agent().serve(listener))
    end = listener.connect()
    async with asyncio.timeout(TIMEOUT):
        end.send(b'{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":1}}')
        assert b'"id":1' in (await end.receive() or b"")  # the connection is being served
        await listener.aclose()
        await server
        assert await end.receive() is None  # the served connection closed its end
    with pytest.raises(Exception, match="listener is closed"):
        listener.connect()


class ScriptedListener:
    """Returns the given transports (or raises the given errors) without waiting, then None."""

    def __init__(self, *items: object) -> None:
        self.items = list(items)
        self.closed = False

    async def accept(self) -> Any:
        if not self.items:
            return None
        item = self.items.pop(0)
        if isinstance(item, BaseException):
            raise item
        return item

    async def aclose(self) -> None:
        self.closed = True


async def test_transports_accepted_right_before_the_end_are_closed() -> None:
    """Tasks cancelled before they started never closed their transports: clients waited forever."""
    pairs = [Channel.duplex() for _ in range(3)]
    listener = ScriptedListener(*(server for _, server in pairs))
    async with asyncio.timeout(TIMEOUT):
        await testy_agent().serve(listener)
        for client, _ in pairs:
            assert await client.receive() is None
    assert listener.closed


async def test_an_accept_error_is_reported_and_accepting_goes_on() -> None:
    client, server = Channel.duplex()
    failures: list[BaseException] = []
    listener = ScriptedListener(OSError(24, "Too many open files"), server)
    async with asyncio.timeout(TIMEOUT):
        await testy_agent().serve(listener, on_error=failures.append)
        assert await client.receive() is None  # it was served (then ended with the listener)
    assert [str(f) for f in failures] == ["[Errno 24] Too many open files"]


async def test_a_served_channel_stops_its_task_when_it_does_not_end() -> None:
    async def never_ends() -> None:
        await asyncio.Event().wait()

    ours, _theirs = Channel.duplex()
    task = asyncio.create_task(never_ends())
    served = ServedChannel(ours, task, close_timeout=0.1)
    await asyncio.wait_for(served.aclose(), TIMEOUT)
    assert task.cancelled()


async def test_on_error_is_only_for_a_listener() -> None:
    ours, _theirs = Channel.duplex()
    with pytest.raises(TypeError, match="on_error= is for serving a listener"):
        await testy_agent().serve(ours, on_error=print)
