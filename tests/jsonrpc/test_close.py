"""End of input, close callbacks, read errors, spawned-task failures (A6.5, A6.6, A7.3, A9)."""

from __future__ import annotations

import asyncio
import socket
from typing import Any

import orjson
import pytest

from acpio.errors import AcpError, ConnectionClosed, TransportError
from acpio.jsonrpc import Connection, UntypedRole
from acpio.transports.channel import Channel
from acpio.transports.streams import ByteStreams, Lines

from ._support import TIMEOUT, Echo, Hello, WirePeer, echo_builder


async def test_serve_returns_on_eof_even_with_unfinished_spawned_work() -> None:
    app = echo_builder()
    started = asyncio.Event()
    cancelled = asyncio.Event()

    async def forever(cx: Connection) -> None:
        started.set()
        try:
            await asyncio.Event().wait()
        finally:
            cancelled.set()

    app.with_spawned(forever)
    ours, theirs = Channel.duplex()
    task = asyncio.create_task(app.serve(ours))
    async with asyncio.timeout(TIMEOUT):
        await started.wait()
        await theirs.aclose()
        await task
    assert cancelled.is_set()


async def test_response_queued_before_the_peer_half_closes_is_written_over_a_socket() -> None:
    left, right = socket.socketpair()
    reader, writer = await asyncio.open_connection(sock=left)
    server = asyncio.create_task(echo_builder().serve(ByteStreams(reader, writer)))
    peer_reader, peer_writer = await asyncio.open_connection(sock=right, limit=1 << 20)
    big = "x" * 200_000  # more than one socket buffer
    peer_writer.write(
        orjson.dumps({"jsonrpc": "2.0", "id": 1, "method": "echo", "params": {"value": big}}) + b"\n"
    )
    await peer_writer.drain()
    peer_writer.write_eof()  # half-close: the server sees end of input right after the request
    async with asyncio.timeout(TIMEOUT):
        line = await peer_reader.readline()
        await server  # returned cleanly after draining
    assert orjson.loads(line) == {"jsonrpc": "2.0", "id": 1, "result": {"value": big}}
    peer_writer.close()


async def test_eof_fails_every_pending_request_with_a_distinct_error_naming_its_method() -> None:
    ours, theirs = Channel.duplex()
    peer = WirePeer(theirs)

    async def main(cx: Connection) -> list[BaseException]:
        first, second = cx.send_request("first/method", {}), cx.send_request(Hello(name="x"))
        await peer.recv()
        await peer.recv()
        await peer.close()
        errors: list[BaseException] = []
        for sent in (first, second):
            with pytest.raises(ConnectionClosed) as info:
                async with asyncio.timeout(TIMEOUT):
                    await sent
            errors.append(info.value)
        return errors

    first_error, second_error = await UntypedRole.builder().connect_with(ours, main)
    assert isinstance(first_error, ConnectionClosed)
    assert isinstance(second_error, ConnectionClosed)
    assert first_error.method == "first/method"
    assert second_error.method == "hello"
    assert "'hello'" in str(second_error)


async def test_callback_consumers_get_the_eof_error_and_buffered_responses_survive_eof() -> None:
    ours, theirs = Channel.duplex()
    peer = WirePeer(theirs)
    results: list[Any] = []

    async def main(cx: Connection) -> Any:
        answered = cx.send_request("answered", {})
        pending = cx.send_request("pending", {})
        got = asyncio.Event()

        async def callback(result: Any) -> None:
            results.append(result)
            got.set()

        pending.on_receiving_result(callback)
        request = await peer.recv()
        await peer.recv()
        peer.send({"jsonrpc": "2.0", "id": request["id"], "result": "arrived before EOF"})
        await peer.close()
        async with asyncio.timeout(TIMEOUT):
            await got.wait()
            return await answered

    assert await UntypedRole.builder().connect_with(ours, main) == "arrived before EOF"
    assert len(results) == 1
    assert isinstance(results[0], ConnectionClosed)
    assert results[0].method == "pending"


async def test_request_made_after_eof_fails_at_once() -> None:
    ours, theirs = Channel.duplex()

    async def main(cx: Connection) -> None:
        await theirs.aclose()
        async with asyncio.timeout(TIMEOUT):
            await cx.wait_closed()
        assert cx.closed
        with pytest.raises(ConnectionClosed) as info:
            cx.send_request("late", {})
        assert info.value.method == "late"

    await UntypedRole.builder().connect_with(ours, main)


async def test_close_callbacks_run_in_order_after_pending_requests_failed() -> None:
    ours, theirs = Channel.duplex()
    peer = WirePeer(theirs)
    order: list[str] = []
    outer = UntypedRole.builder(name="outer")
    inner = UntypedRole.builder(name="inner")
    sent_holder: list[Any] = []

    @outer.on_close
    async def first(cx: Connection) -> None:
        sent = sent_holder[0]
        assert sent.done  # already failed before the callbacks run
        with pytest.raises(ConnectionClosed):
            await sent
        order.append("outer")

    @inner.on_close
    async def second() -> None:
        order.append("inner")

    async def main(cx: Connection) -> None:
        sent_holder.append(cx.send_request("pending", {}))
        await peer.recv()
        await peer.close()
        async with asyncio.timeout(TIMEOUT):
            await cx.wait_closed()
        assert order == ["outer", "inner"]
        order.append("main continues after EOF")

    await outer.merge(inner).connect_with(ours, main)
    assert order == ["outer", "inner", "main continues after EOF"]


async def test_all_close_callbacks_run_and_the_first_error_stops_connect_with() -> None:
    app = UntypedRole.builder()
    order: list[str] = []

    @app.on_close
    async def failing(cx: Connection) -> None:
        order.append("first")
        raise RuntimeError("first close callback failed")

    @app.on_close
    async def also_failing(cx: Connection) -> None:
        order.append("second")
        raise ValueError("second close callback failed")

    ours, theirs = Channel.duplex()

    async def main(cx: Connection) -> None:
        await theirs.aclose()
        await asyncio.Event().wait()  # only the close error can end this

    with pytest.raises(RuntimeError, match="first close callback failed"):
        async with asyncio.timeout(TIMEOUT):
            await app.connect_with(ours, main)
    assert order == ["first", "second"]


async def test_close_callbacks_run_when_main_returns_without_eof() -> None:
    app = UntypedRole.builder()
    closed: list[str] = []

    @app.on_close
    async def record(cx: Connection) -> None:
        closed.append("closed")

    async def main(cx: Connection) -> str:
        return "done"

    assert await app.connect_with(echo_builder(), main) == "done"
    assert closed == ["closed"]


async def test_read_error_fails_the_connection_and_is_not_a_clean_close() -> None:
    chunks: asyncio.Queue[bytes | Exception] = asyncio.Queue()

    async def read() -> bytes:
        item = await chunks.get()
        if isinstance(item, Exception):
            raise item
        return item

    written: list[bytes] = []

    async def write(data: bytes) -> None:
        written.append(data)

    transport = Lines(read, write, label="flaky peer")
    closed: list[str] = []
    app = UntypedRole.builder()

    @app.on_close
    async def record(cx: Connection) -> None:
        closed.append("closed")

    async def main(cx: Connection) -> None:
        sent = cx.send_request("pending", {})
        chunks.put_nowait(ConnectionResetError("boom"))
        with pytest.raises(ConnectionClosed) as info:
            await sent
        assert isinstance(info.value.__cause__, TransportError)
        await asyncio.Event().wait()

    with pytest.raises(TransportError):
        async with asyncio.timeout(TIMEOUT):
            await app.connect_with(transport, main)
    assert closed == []  # not a clean close


async def test_peer_that_ends_mid_line_lets_serve_finish_cleanly() -> None:
    chunks: asyncio.Queue[bytes] = asyncio.Queue()

    async def write(data: bytes) -> None:
        pass

    chunks.put_nowait(b'{"jsonrpc":"2.0","id":1,"method":"echo","par')
    chunks.put_nowait(b"")
    async with asyncio.timeout(TIMEOUT):
        await echo_builder().serve(Lines(chunks.get, write))


async def test_server_going_away_does_not_hang_a_client_request() -> None:
    arrived = asyncio.Event()
    ours, theirs = Channel.duplex()
    server = UntypedRole.builder(name="server")

    @server.on_request
    async def hold(req: Echo, cx: Connection) -> None:
        arrived.set()

    server_task = asyncio.create_task(server.serve(theirs))

    async def main(cx: Connection) -> None:
        sent = cx.send_request(Echo(value=1))
        await arrived.wait()
        server_task.cancel()  # the server is aborted mid-request
        with pytest.raises(ConnectionClosed):
            await sent

    async with asyncio.timeout(TIMEOUT):
        await UntypedRole.builder().connect_with(ours, main)


async def test_failing_spawned_task_fails_the_connection_with_its_error() -> None:
    app = echo_builder()

    async def broken(cx: Connection) -> None:
        raise LookupError("the background job broke")

    app.with_spawned(broken)
    ours, _theirs = Channel.duplex()
    with pytest.raises(LookupError, match="background job broke") as info:
        async with asyncio.timeout(TIMEOUT):
            await app.serve(ours)
    assert any("spawned on connection 'echo'" in note for note in info.value.__notes__)


async def test_close_stops_serving_fails_pending_and_refuses_new_requests() -> None:
    ours, theirs = Channel.duplex()
    peer = WirePeer(theirs)
    connections: list[Connection] = []
    started = asyncio.Event()
    app = UntypedRole.builder()

    async def keep(cx: Connection) -> None:
        connections.append(cx)
        started.set()

    app.with_spawned(keep)
    task = asyncio.create_task(app.serve(ours))
    async with asyncio.timeout(TIMEOUT):
        await started.wait()
    cx = connections[0]
    sent = cx.send_request("pending", {})
    await peer.recv()
    cx.close()
    cx.close()  # twice is harmless
    with pytest.raises(ConnectionClosed):
        await sent
    with pytest.raises(ConnectionClosed):
        cx.send_request("after", {})
    async with asyncio.timeout(TIMEOUT):
        await task
    assert await theirs.receive() is None  # our end was closed
    with pytest.raises(ConnectionClosed):
        cx.spawn(asyncio.sleep, 0)


async def test_errors_are_acp_errors() -> None:
    assert issubclass(ConnectionClosed, AcpError)
    assert issubclass(TransportError, AcpError)


async def test_closing_does_not_hang_on_a_peer_that_stopped_reading() -> None:
    """A peer that never reads its input cannot hold the connection open past the close timeout."""
    never = asyncio.Event()

    async def read() -> bytes:
        await never.wait()
        return b""

    async def write(data: bytes) -> None:
        await never.wait()  # the peer's pipe is full and stays full

    transport = Lines(read, write, close_timeout=0.2)

    async def main(cx: Connection) -> str:
        cx.send_notification("log", {"line": "queued but never read"})
        return "done"

    async with asyncio.timeout(TIMEOUT):
        assert await UntypedRole.builder(name="stuck").connect_with(transport, main) == "done"
