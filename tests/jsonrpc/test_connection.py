"""The connection handle: forwarding, response interception, spawned connections, errors (A7, A10)."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from acpio.errors import AcpError, ConnectionClosed, InternalError, InvalidParams, RequestError
from acpio.jsonrpc import (
    Builder,
    Connection,
    Dispatch,
    NotificationDispatch,
    RequestDispatch,
    Responder,
    ResponseDispatch,
    SentRequest,
    Unhandled,
    UntypedRole,
)
from acpio.schema import InitializeRequest, InitializeResponse
from acpio.transports.channel import Channel

from ._support import (
    TIMEOUT,
    Echo,
    EchoResult,
    Hello,
    HelloResult,
    Note,
    Slow,
    WirePeer,
    echo_builder,
    serving,
)


async def test_response_intercepting_handler_error_reaches_the_awaiter() -> None:
    client = UntypedRole.builder(name="client")

    @client.on_dispatch
    async def intercept(message: Dispatch, cx: Connection) -> Unhandled | None:
        if isinstance(message, ResponseDispatch):
            raise RequestError(-32099, "Rejected by interceptor", {"method": message.method})
        return Unhandled(message)

    async def main(cx: Connection) -> None:
        with pytest.raises(RequestError) as info:
            await cx.send_request(Hello(name="x"))
        assert info.value.code == -32099
        assert info.value.data == {"method": "hello"}

    await client.connect_with(echo_builder(), main)


async def test_response_intercepting_handler_may_rewrite_the_result() -> None:
    client = UntypedRole.builder(name="client")

    @client.on_dispatch
    async def rewrite(message: Dispatch, cx: Connection) -> Unhandled | None:
        if isinstance(message, ResponseDispatch) and message.error is None:
            message.router.respond(HelloResult(greeting=message.result["greeting"].upper()))
            return None
        return Unhandled(message)

    async def main(cx: Connection) -> str:
        return (await cx.send_request(Hello(name="rewritten"))).greeting

    assert await client.connect_with(echo_builder(), main) == "HELLO, REWRITTEN"


async def test_handler_errors_answer_the_request_and_the_connection_survives() -> None:
    app = UntypedRole.builder()

    @app.on_request
    async def hello(req: Hello, responder: Responder[HelloResult]) -> None:
        responder.respond_with_error(InvalidParams({"field": "name"}))

    @app.on_request
    async def echo(req: Echo) -> EchoResult:
        raise RequestError(-32050, "Quota exceeded", {"retry_after": 3})

    async def main(cx: Connection) -> None:
        with pytest.raises(InvalidParams) as bad:
            await cx.send_request(Hello(name="x"))
        assert bad.value.data == {"field": "name"}
        with pytest.raises(RequestError) as quota:
            await cx.send_request(Echo(value=1))
        assert (quota.value.code, quota.value.message, quota.value.data) == (
            -32050,
            "Quota exceeded",
            {"retry_after": 3},
        )
        with pytest.raises(AcpError):
            await cx.send_request("unknown", {})

    await UntypedRole.builder().connect_with(app, main)


def _proxy_to(backend: Builder, ready: asyncio.Event) -> Builder:
    proxy = UntypedRole.builder(name="proxy")
    downstream: list[Connection] = []

    async def setup(cx: Connection) -> None:
        downstream.append(await cx.spawn_connection(UntypedRole.builder(name="to-backend"), backend))
        ready.set()

    proxy.with_spawned(setup)

    @proxy.on_dispatch
    async def forward(message: Dispatch, cx: Connection) -> Unhandled | None:
        if isinstance(message, RequestDispatch | NotificationDispatch):
            downstream[0].send_proxied_message(message)
            return None
        return Unhandled(message)

    return proxy


async def test_proxied_messages_are_forwarded_unvalidated_with_remapped_ids() -> None:
    backend = UntypedRole.builder(name="backend")
    seen: list[Any] = []
    noted = asyncio.Event()

    @backend.on_dispatch
    async def record(message: Dispatch, cx: Connection) -> Unhandled | None:
        if isinstance(message, RequestDispatch | NotificationDispatch):
            seen.append((message.method, message.id, message.params))
        if message.method == "note":
            noted.set()
        return Unhandled(message)

    backend.merge(echo_builder())

    ready = asyncio.Event()
    async with serving(_proxy_to(backend, ready)) as peer:
        async with asyncio.timeout(TIMEOUT):
            await ready.wait()
        reply = await peer.request("echo", {"value": 1, "unknownField": True}, request_id="client-id")
        assert reply == {"jsonrpc": "2.0", "id": "client-id", "result": {"value": 1}}
        peer.send({"jsonrpc": "2.0", "method": "note", "params": {"text": "x", "extra": [1]}})
        async with asyncio.timeout(TIMEOUT):
            await noted.wait()
        error = await peer.request("missing", {}, request_id=7)
        assert error["id"] == 7
        assert error["error"] == {"code": -32601, "message": "Method not found", "data": "missing"}
    method, backend_id, params = seen[0]
    assert (method, params) == ("echo", {"value": 1, "unknownField": True})  # unknown fields survive
    assert backend_id != "client-id"
    assert seen[1] == ("note", None, {"text": "x", "extra": [1]})


async def test_forwarded_request_is_answered_when_the_downstream_connection_ends() -> None:
    backend = UntypedRole.builder(name="backend")
    arrived = asyncio.Event()

    @backend.on_request
    async def slow(req: Slow, responder: Responder[EchoResult], cx: Connection) -> None:
        arrived.set()
        cx.close()  # the backend goes away without answering

    ready = asyncio.Event()
    async with serving(_proxy_to(backend, ready)) as peer:
        async with asyncio.timeout(TIMEOUT):
            await ready.wait()
        reply = await peer.request("slow", {}, request_id=1)
        assert reply["id"] == 1
        assert reply["error"]["code"] == InternalError.CODE


async def test_on_receiving_ok_result_forwards_errors_to_the_responder() -> None:
    backend = echo_builder(name="backend")
    front = UntypedRole.builder(name="front")
    downstream: list[Connection] = []
    ready = asyncio.Event()

    async def setup(cx: Connection) -> None:
        downstream.append(await cx.spawn_connection(UntypedRole.builder(), backend))
        ready.set()

    front.with_spawned(setup)

    @front.on_request
    async def hello(req: Hello, responder: Responder[HelloResult], cx: Connection) -> None:
        async def on_ok(result: HelloResult, responder: Responder[HelloResult]) -> None:
            responder.respond(HelloResult(greeting=result.greeting + "!"))

        target: SentRequest[Any] = (
            downstream[0].send_request(req) if req.name != "fail" else downstream[0].send_request("nope", {})
        )
        target.on_receiving_ok_result(responder, on_ok)

    async with serving(front) as peer:
        async with asyncio.timeout(TIMEOUT):
            await ready.wait()
        assert (await peer.request("hello", {"name": "ok"}))["result"] == {"greeting": "hello, ok!"}
        assert (await peer.request("hello", {"name": "fail"}))["error"]["code"] == -32601


async def test_error_notification_and_late_or_unknown_responses_do_not_close_anything() -> None:
    ours, theirs = Channel.duplex()
    peer = WirePeer(theirs)

    async def main(cx: Connection) -> Any:
        cx.send_error_notification(InternalError(message="something broke"))
        assert await peer.recv() == {
            "jsonrpc": "2.0",
            "id": None,
            "error": {"code": -32603, "message": "something broke"},
        }
        peer.send({"jsonrpc": "2.0", "id": 424242, "result": "nobody asked"})
        peer.send({"jsonrpc": "2.0", "id": None, "error": {"code": -32700, "message": "Parse error"}})
        sent = cx.send_request("still/working", {})
        request = await peer.recv()
        peer.send({"jsonrpc": "2.0", "id": request["id"], "result": "yes"})
        async with asyncio.timeout(TIMEOUT):
            return await sent

    assert await UntypedRole.builder().connect_with(ours, main) == "yes"


async def test_malformed_successor_envelope_reaches_catch_all_handlers_intact() -> None:
    app = UntypedRole.builder()
    seen: list[Any] = []

    @app.on_dispatch
    async def catch_all(message: Dispatch, cx: Connection) -> None:
        seen.append((message.method, message.params))
        if isinstance(message, RequestDispatch):
            message.responder.respond(None)

    async with serving(app) as peer:
        peer.send({"jsonrpc": "2.0", "method": "_proxy/successor", "params": {"notMethod": 1}})
        peer.send({"jsonrpc": "2.0", "method": "_x.ai/custom", "params": {}})
        assert (await peer.request("barrier"))["result"] is None
        seen_methods = [m for m, _ in seen]
    assert seen_methods == ["_proxy/successor", "_x.ai/custom", "barrier"]
    assert seen[0][1] == {"notMethod": 1}


async def test_sending_typed_notifications_and_requests_needs_a_method() -> None:
    async def main(cx: Connection) -> None:
        with pytest.raises(TypeError, match="METHOD"):
            cx.send_notification(EchoResult(value=1))
        with pytest.raises(TypeError, match="params="):
            cx.send_request(Hello(name="x"), {"extra": 1})
        with pytest.raises(TypeError, match="not JSON serializable"):
            cx.send_request("m", {"x": object()})
        cx.send_notification(Note(text="fine"))
        assert cx.statistics()["outgoing_pending"] == 0

    await UntypedRole.builder().connect_with(echo_builder(), main)


async def test_spawned_connection_failure_fails_the_parent() -> None:
    parent = UntypedRole.builder(name="parent")
    child = UntypedRole.builder(name="child")

    async def broken(cx: Connection) -> None:
        raise OSError("child broke")

    child.with_spawned(broken)

    async def main(cx: Connection) -> None:
        await cx.spawn_connection(child, echo_builder())
        await asyncio.Event().wait()

    with pytest.raises(OSError, match="child broke"):
        async with asyncio.timeout(TIMEOUT):
            await parent.connect_with(echo_builder(), main)


async def test_serve_rejects_what_is_neither_transport_nor_component() -> None:
    with pytest.raises(TypeError, match="Transport"):
        await UntypedRole.builder().serve(object())


async def test_main_exception_propagates_after_shutdown() -> None:
    async def main(cx: Connection) -> None:
        raise ValueError("main failed")

    with pytest.raises(ValueError, match="main failed"):
        await UntypedRole.builder().connect_with(echo_builder(), main)


async def test_escaped_handle_refuses_requests_after_the_connection_ended() -> None:
    escaped: list[Connection] = []

    async def main(cx: Connection) -> None:
        escaped.append(cx)

    await UntypedRole.builder().connect_with(echo_builder(), main)
    with pytest.raises(ConnectionClosed):
        escaped[0].send_request(Hello(name="late"))


async def test_response_claimed_and_dropped_by_a_handler_fails_the_awaiter_instead_of_hanging() -> None:
    client = UntypedRole.builder(name="client")

    @client.on_dispatch
    async def swallow(message: Dispatch, cx: Connection) -> Unhandled | None:
        if isinstance(message, ResponseDispatch):
            return None  # claimed, never routed
        return Unhandled(message)

    async def main(cx: Connection) -> None:
        with pytest.raises(InternalError, match="never delivered"):
            async with asyncio.timeout(TIMEOUT):
                await cx.send_request(Hello(name="x"))

    await client.connect_with(echo_builder(), main)


async def test_responder_dropped_without_answer_is_logged(caplog: pytest.LogCaptureFixture) -> None:
    app = echo_builder()

    @app.on_request
    async def slow(req: Slow) -> None:
        return None  # neither answers nor keeps the responder

    async with serving(app) as peer:
        peer.send({"jsonrpc": "2.0", "id": 1, "method": "slow"})
        assert (await peer.request("echo", {"value": 1}, request_id=2))["id"] == 2  # nothing was sent for 1
    assert any("dropped without an answer" in r.getMessage() for r in caplog.records)


async def test_sending_to_a_peer_the_role_does_not_have_names_the_valid_peers() -> None:
    async def main(cx: Connection) -> Any:
        with pytest.raises(ValueError, match="its peers are: UntypedRole"):
            cx.send_request_to("somebody", "m", {})
        return await cx.send_request_to(UntypedRole, Echo(value="to the counterpart"))

    result = await UntypedRole.builder().connect_with(echo_builder(), main)
    assert result == EchoResult(value="to the counterpart")


async def test_a_typed_result_that_cannot_be_serialized_is_answered_with_internal_error() -> None:
    """The peer gets -32603, never silence, when a handler returns a model pydantic cannot write."""
    app = UntypedRole.builder(name="agent")

    @app.on_request(InitializeRequest)
    async def initialize(req: Any, responder: Any, cx: Connection) -> InitializeResponse:
        return InitializeResponse(protocol_version=1, unserializable=object())  # type: ignore[call-arg]

    async with serving(app) as peer:
        reply = await peer.request("initialize", {"protocolVersion": 1}, request_id=1)
        assert reply["id"] == 1
        assert reply["error"]["code"] == InternalError.CODE


class _Watcher:
    """A dynamic handler that notes every message it is offered, and claims none."""

    def __init__(self, typed: bool) -> None:
        self.seen: list[str] = []
        if typed:
            self.accepts = lambda message: True

    async def handle(self, message: Dispatch, cx: Connection) -> Unhandled | None:
        self.seen.append(type(message).__name__)
        return Unhandled(message)


@pytest.mark.parametrize(("typed", "sees_responses"), [(True, False), (False, True)])
async def test_only_a_dynamic_handler_without_accepts_intercepts_responses(
    typed: bool, sees_responses: bool
) -> None:
    # a dynamic handler with ``accepts`` (answering forms outside a session, say) must not make
    # every response to this side's requests go through the chain, as a builder's does not
    watcher = _Watcher(typed)

    async def main(cx: Connection) -> None:
        cx.add_dynamic_handler(watcher).run_indefinitely()
        assert (await cx.send_request(Hello(name="x"))).greeting == "hello, x"

    await UntypedRole.builder(name="client").connect_with(echo_builder(), main)
    assert ("ResponseDispatch" in watcher.seen) is sees_responses
