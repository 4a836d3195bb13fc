"""``$/cancel_request`` both ways, cooperative cancellation, hop-by-hop forwarding (A8)."""

from __future__ import annotations

import asyncio
from typing import Any, ClassVar

import pytest
from pydantic import BaseModel, Field

from acpio.errors import RequestCancelled
from acpio.jsonrpc import (
    CANCEL_METHOD,
    Builder,
    Connection,
    Dispatch,
    NotificationDispatch,
    RequestDispatch,
    Responder,
    Unhandled,
    UntypedRole,
)
from acpio.transports.channel import Channel

from ._support import TIMEOUT, EchoResult, Slow, WirePeer, echo_builder, serving


class CancelRequest(BaseModel):
    METHOD: ClassVar[str] = CANCEL_METHOD
    request_id: int | str | None = Field(alias="requestId")


async def test_send_cancel_request_reaches_a_typed_notification_handler() -> None:
    server = echo_builder()
    got: list[Any] = []
    arrived = asyncio.Event()

    @server.on_notification
    async def cancel(n: CancelRequest) -> None:
        got.append(n.request_id)
        arrived.set()

    async def main(cx: Connection) -> None:
        cx.send_cancel_request("some-id")
        async with asyncio.timeout(TIMEOUT):
            await arrived.wait()

    await UntypedRole.builder().connect_with(server, main)
    assert got == ["some-id"]


async def test_sent_request_cancel_sends_exactly_one_cancel_for_its_id() -> None:
    ours, theirs = Channel.duplex()
    peer = WirePeer(theirs)

    async def main(cx: Connection) -> Any:
        sent = cx.send_request("work", {})
        request = await peer.recv()
        sent.cancel()
        sent.cancel()
        cx.send_notification("barrier", {})
        assert await peer.recv() == {
            "jsonrpc": "2.0",
            "method": CANCEL_METHOD,
            "params": {"requestId": request["id"]},
        }
        assert (await peer.recv())["method"] == "barrier"
        peer.send(
            {"jsonrpc": "2.0", "id": request["id"], "error": {"code": -32800, "message": "Request cancelled"}}
        )
        with pytest.raises(RequestCancelled):
            async with asyncio.timeout(TIMEOUT):
                await sent
        sent.cancel()  # answered: no further cancel
        cx.send_notification("barrier", {})
        return (await peer.recv())["method"]

    assert await UntypedRole.builder().connect_with(ours, main) == "barrier"


async def test_cancelling_the_awaiting_task_sends_cancel_and_a_late_answer_is_discarded() -> None:
    ours, theirs = Channel.duplex()
    peer = WirePeer(theirs)

    async def wait_for_work(cx: Connection) -> Any:
        return await cx.send_request("work", {})

    async def main(cx: Connection) -> Any:
        waiter = asyncio.create_task(wait_for_work(cx))
        request = await peer.recv()
        waiter.cancel()
        cancel = await peer.recv()
        assert cancel["method"] == CANCEL_METHOD
        assert cancel["params"] == {"requestId": request["id"]}
        peer.send({"jsonrpc": "2.0", "id": request["id"], "result": "late"})  # discarded, not fatal
        follow_up = cx.send_request("again", {})
        again = await peer.recv()
        peer.send({"jsonrpc": "2.0", "id": again["id"], "result": "fine"})
        async with asyncio.timeout(TIMEOUT):
            return await follow_up

    assert await UntypedRole.builder().connect_with(ours, main) == "fine"


def _cancellable_server(observed: list[str]) -> Builder:
    app = echo_builder(name="server")

    @app.on_request
    async def slow(req: Slow, responder: Responder[EchoResult], cx: Connection) -> None:
        async def work() -> None:
            observed.append(f"cancelled={responder.cancelled}")
            await responder.wait_cancelled()
            observed.append(f"cancelled={responder.cancelled}")
            responder.respond_with_error(RequestCancelled())

        cx.spawn(work)

    return app


async def test_handler_observes_the_cancellation_and_answers_minus_32800() -> None:
    observed: list[str] = []
    async with serving(_cancellable_server(observed)) as peer:
        peer.send({"jsonrpc": "2.0", "id": "r1", "method": "slow"})
        await peer.request("echo", {"value": "barrier"})  # the work task started
        peer.send({"jsonrpc": "2.0", "method": CANCEL_METHOD, "params": {"requestId": "r1"}})
        assert await peer.recv() == {
            "jsonrpc": "2.0",
            "id": "r1",
            "error": {"code": -32800, "message": "Request cancelled"},
        }
    assert observed == ["cancelled=False", "cancelled=True"]


async def test_cancellation_seen_late_is_already_set_and_reply_is_exactly_one() -> None:
    app = echo_builder()
    parked: list[Responder[EchoResult]] = []

    @app.on_request
    async def slow(req: Slow, responder: Responder[EchoResult]) -> None:
        parked.append(responder)

    async with serving(app) as peer:
        peer.send({"jsonrpc": "2.0", "id": 1, "method": "slow"})
        peer.send({"jsonrpc": "2.0", "method": CANCEL_METHOD, "params": {"requestId": 1}})
        peer.send({"jsonrpc": "2.0", "method": CANCEL_METHOD, "params": {"requestId": 1}})  # twice: harmless
        await peer.request("echo", {"value": "barrier"})
        responder = parked[0]
        assert responder.cancelled
        await responder.wait_cancelled()  # returns at once
        responder.respond(EchoResult(value="finished anyway"))  # cooperative: a result is fine too
        responder.respond_with_error(RequestCancelled())  # second answer ignored
        assert await peer.recv() == {"jsonrpc": "2.0", "id": 1, "result": {"value": "finished anyway"}}
        assert (await peer.request("echo", {"value": "next"}, request_id=2))["id"] == 2


async def test_run_until_cancelled_stops_the_work_and_answers_minus_32800() -> None:
    app = echo_builder()
    stopped = asyncio.Event()
    started = asyncio.Event()

    @app.on_request
    async def slow(req: Slow, responder: Responder[EchoResult], cx: Connection) -> None:
        async def forever() -> EchoResult:
            started.set()
            try:
                await asyncio.Event().wait()
            finally:
                stopped.set()
            raise AssertionError("unreachable")

        async def work() -> None:
            try:
                responder.respond(await responder.run_until_cancelled(forever()))
            except RequestCancelled as exc:
                responder.respond_with_error(exc)

        cx.spawn(work)

    async with serving(app) as peer:
        peer.send({"jsonrpc": "2.0", "id": 7, "method": "slow"})
        async with asyncio.timeout(TIMEOUT):
            await started.wait()
        peer.send({"jsonrpc": "2.0", "method": CANCEL_METHOD, "params": {"requestId": 7}})
        reply = await peer.recv()
        assert reply["id"] == 7
        assert reply["error"]["code"] == -32800
        assert stopped.is_set()


async def test_run_until_cancelled_returns_the_result_when_not_cancelled() -> None:
    app = echo_builder()

    @app.on_request
    async def slow(req: Slow, responder: Responder[EchoResult]) -> EchoResult:
        async def quick() -> EchoResult:
            return EchoResult(value="done")

        return await responder.run_until_cancelled(quick())

    async with serving(app) as peer:
        assert (await peer.request("slow"))["result"] == {"value": "done"}


def _recording_backend(cancels: list[Any], observed: list[str]) -> Builder:
    backend = _cancellable_server(observed)

    @backend.on_notification
    async def record(n: CancelRequest) -> Unhandled:
        cancels.append(n.request_id)
        return Unhandled(n)  # let the engine's own bookkeeping stand; nobody else claims it

    return backend


def _forwarding_proxy(backend: Builder, ready: asyncio.Event, *, custom: bool = False) -> Builder:
    proxy = UntypedRole.builder(name="proxy")
    downstream: list[Connection] = []

    async def setup(cx: Connection) -> None:
        downstream.append(await cx.spawn_connection(UntypedRole.builder(name="to-backend"), backend))
        ready.set()

    proxy.with_spawned(setup)

    @proxy.on_dispatch
    async def forward(message: Dispatch, cx: Connection) -> Unhandled | None:
        if custom and isinstance(message, RequestDispatch):
            responder = message.responder

            async def relay(result: Any) -> None:
                responder.respond_with_result(result)

            downstream[0].send_request(message.method, message.params).on_receiving_result(relay)
            return None
        if isinstance(message, RequestDispatch | NotificationDispatch):
            downstream[0].send_proxied_message(message)
            return None
        return Unhandled(message)

    return proxy


async def test_forwarded_request_cancellation_is_reissued_downstream_with_the_downstream_id() -> None:
    cancels: list[Any] = []
    observed: list[str] = []
    ready = asyncio.Event()
    proxy = _forwarding_proxy(_recording_backend(cancels, observed), ready)
    ours, theirs = Channel.duplex()
    peer = WirePeer(theirs)
    task = asyncio.create_task(proxy.serve(ours))
    async with asyncio.timeout(TIMEOUT):
        await ready.wait()
    peer.send({"jsonrpc": "2.0", "id": "upstream-1", "method": "slow"})
    assert (await peer.request("echo", {"value": "barrier"}))["result"] == {"value": "barrier"}
    peer.send({"jsonrpc": "2.0", "method": CANCEL_METHOD, "params": {"requestId": "upstream-1"}})
    reply = await peer.recv()
    assert reply == {
        "jsonrpc": "2.0",
        "id": "upstream-1",
        "error": {"code": -32800, "message": "Request cancelled"},
    }
    await peer.close()
    async with asyncio.timeout(TIMEOUT):
        await task
    assert len(cancels) == 1  # the raw upstream cancel was not tunnelled, only re-issued
    assert cancels[0] != "upstream-1"
    assert isinstance(cancels[0], int)
    assert observed == ["cancelled=False", "cancelled=True"]


async def test_custom_forwarding_absorbs_cancellation_by_default() -> None:
    cancels: list[Any] = []
    backend = echo_builder(name="backend")
    parked: list[Responder[EchoResult]] = []

    @backend.on_request
    async def slow(req: Slow, responder: Responder[EchoResult]) -> None:
        parked.append(responder)

    @backend.on_notification
    async def record(n: CancelRequest) -> None:
        cancels.append(n.request_id)

    ready = asyncio.Event()
    proxy = _forwarding_proxy(backend, ready, custom=True)
    async with serving(proxy) as peer:
        async with asyncio.timeout(TIMEOUT):
            await ready.wait()
        peer.send({"jsonrpc": "2.0", "id": 1, "method": "slow"})
        await peer.request("echo", {"value": "barrier"})  # forwarded; the backend saw "slow" first
        peer.send({"jsonrpc": "2.0", "method": CANCEL_METHOD, "params": {"requestId": 1}})
        await peer.request("echo", {"value": "barrier 2"})
        parked[0].respond(EchoResult(value="normal data"))
        assert await peer.recv() == {"jsonrpc": "2.0", "id": 1, "result": {"value": "normal data"}}
    assert cancels == []


async def test_unknown_and_malformed_cancels_are_ignored_without_reply() -> None:
    async with serving(echo_builder()) as peer:
        peer.send({"jsonrpc": "2.0", "method": CANCEL_METHOD, "params": {"requestId": 12345}})
        peer.send({"jsonrpc": "2.0", "method": CANCEL_METHOD, "params": {"requestId": True}})
        peer.send({"jsonrpc": "2.0", "method": CANCEL_METHOD})
        assert (await peer.request("echo", {"value": 1}, request_id=1)) == {
            "jsonrpc": "2.0",
            "id": 1,
            "result": {"value": 1},
        }
