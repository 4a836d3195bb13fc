"""What a failing handler costs: its request, not the connection; and handlers refused at registration."""

from __future__ import annotations

import asyncio

import pytest

from acpio import testing
from acpio.errors import RequestError
from acpio.jsonrpc import Builder, Connection, Dispatch, Responder, UntypedRole
from acpio.transports import Channel

from ._support import TIMEOUT, Echo, EchoResult, Hello, HelloResult, Note, serving


def _builder(*, error_details: bool = True) -> Builder:
    app = UntypedRole.builder(name="spawner", error_details=error_details)

    @app.on_request
    async def echo(req: Echo, responder: Responder[EchoResult], cx: Connection) -> None:
        async def work() -> None:
            if req.value == "boom":
                raise ValueError("the turn broke")
            if req.value == "refuse":
                raise RequestError(-32042, "Refused", {"why": "policy"})
            if req.value == "nested":

                async def deeper() -> None:
                    raise KeyError("deep")

                cx.spawn(deeper)
                return  # the nested task answers (with its failure)
            responder.respond(EchoResult(value=req.value))

        cx.spawn(work)

    @app.on_request
    async def hello(req: Hello) -> HelloResult:
        return HelloResult(greeting=f"hello, {req.name}")

    return app


async def test_a_spawned_task_that_fails_answers_its_request_and_the_connection_goes_on(
    caplog: pytest.LogCaptureFixture,
) -> None:
    async with serving(_builder()) as peer:
        failed = await peer.request("echo", {"value": "boom"})
        assert failed["error"] == {
            "code": -32603,
            "message": "Internal error",
            "data": {"details": "the turn broke", "type": "ValueError"},
        }
        refused = await peer.request("echo", {"value": "refuse"})
        assert refused["error"] == {"code": -32042, "message": "Refused", "data": {"why": "policy"}}
        nested = await peer.request("echo", {"value": "nested"})
        assert nested["error"]["data"] == {"details": "'deep'", "type": "KeyError"}
        again = await peer.request("echo", {"value": "fine"})
        assert again["result"] == {"value": "fine"}
        assert (await peer.request("hello", {"name": "Ada"}))["result"] == {"greeting": "hello, Ada"}
    logged = [r for r in caplog.records if r.name == "acpio.jsonrpc" and r.exc_info]
    assert any("the turn broke" in str(r.exc_info[1]) for r in logged if r.exc_info)  # with its traceback


async def test_error_details_false_leaves_the_message_out() -> None:
    async with serving(_builder(error_details=False)) as peer:
        failed = await peer.request("echo", {"value": "boom"})
        assert failed["error"] == {"code": -32603, "message": "Internal error"}
        refused = await peer.request("echo", {"value": "refuse"})  # a RequestError is meant for the peer
        assert refused["error"]["data"] == {"why": "policy"}


async def test_a_task_that_fails_after_its_request_was_answered_is_logged_only(
    caplog: pytest.LogCaptureFixture,
) -> None:
    app = UntypedRole.builder()
    done = asyncio.Event()

    @app.on_request
    async def echo(req: Echo, cx: Connection) -> EchoResult:
        async def later() -> None:
            await asyncio.sleep(0)
            done.set()
            raise ValueError("after the answer")

        cx.spawn(later)
        return EchoResult(value=req.value)

    async with serving(app) as peer:
        assert (await peer.request("echo", {"value": 1}))["result"] == {"value": 1}
        await asyncio.wait_for(done.wait(), TIMEOUT)
        assert (await peer.request("echo", {"value": 2}))["result"] == {"value": 2}
    assert any("after the answer" in str(r.exc_info[1]) for r in caplog.records if r.exc_info)


async def test_a_with_spawned_task_that_fails_still_fails_the_connection() -> None:
    app = UntypedRole.builder()

    async def background(cx: Connection) -> None:
        raise ValueError("background broke")

    app.with_spawned(background)
    ours, theirs = Channel.duplex()
    with pytest.raises(ValueError, match="background broke"):
        async with asyncio.timeout(TIMEOUT):
            await app.serve(ours)
    await theirs.aclose()


async def test_a_task_spawned_by_a_notification_handler_fails_the_connection() -> None:
    app = UntypedRole.builder()

    @app.on_notification
    async def note(notification: Note, cx: Connection) -> None:
        async def work() -> None:
            raise ValueError("no request to answer")

        cx.spawn(work)

    ours, theirs = Channel.duplex()
    peer = testing.WirePeer(theirs)
    serving_task = asyncio.create_task(app.serve(ours))
    peer.notify("note", {"text": "hi"})
    with pytest.raises(ValueError, match="no request to answer"):
        async with asyncio.timeout(TIMEOUT):
            await serving_task
    await theirs.aclose()


# --- refused at registration ------------------------------------------------------------------------


def test_a_sync_request_handler_is_refused_at_once_with_the_accepted_shapes() -> None:
    app = UntypedRole.builder()
    with pytest.raises(TypeError) as caught:

        @app.on_request
        def echo(req: Echo) -> EchoResult:  # pyright: ignore[reportUnusedFunction]
            return EchoResult()

    message = str(caught.value)
    assert "echo is not an async function" in message
    assert "handler(req: MyRequest, responder: Responder[MyResponse], cx: Connection)" in message


def test_sync_notification_and_dispatch_handlers_are_refused_at_once() -> None:
    app = UntypedRole.builder()
    with pytest.raises(TypeError, match=r"(?s)async def.*notification: MyNotification, cx: Connection"):
        app.on_notification(Note, lambda notification: None)
    with pytest.raises(TypeError, match=r"(?s)async def.*message: Dispatch, cx: Connection"):

        @app.on_dispatch
        def anything(message: Dispatch) -> None:  # pyright: ignore[reportUnusedFunction]
            return None

    with pytest.raises(TypeError, match="async def"):
        app.with_handler(lambda message, cx: None)
    assert app.statistics()["handlers"] == 0


def test_a_request_handler_whose_second_parameter_is_not_annotated_is_refused() -> None:
    app = UntypedRole.builder()
    with pytest.raises(TypeError) as caught:

        @app.on_request
        async def echo(req: Echo, second) -> EchoResult:  # type: ignore[no-untyped-def]  # pyright: ignore
            return EchoResult()

    message = str(caught.value)
    assert "the responder or the connection" in message
    for shape in ("handler(req: MyRequest)", "responder: Responder[MyResponse])", "cx: Connection)"):
        assert shape in message


async def test_async_callables_and_annotated_two_parameter_handlers_are_accepted() -> None:
    app = UntypedRole.builder()

    class Greeter:
        async def __call__(self, req: Hello) -> HelloResult:
            return HelloResult(greeting=f"hi, {req.name}")

    app.on_request(Hello, Greeter())

    @app.on_request
    async def echo(req: Echo, cx: Connection) -> EchoResult:
        return EchoResult(value=cx.name)

    async with serving(app) as peer:
        assert (await peer.request("hello", {"name": "Ada"}))["result"] == {"greeting": "hi, Ada"}
        assert (await peer.request("echo", {}))["result"] == {"value": "untyped"}


async def test_a_failing_response_callback_registered_by_a_request_handler_fails_the_connection() -> None:
    app = UntypedRole.builder()

    @app.on_request
    async def echo(req: Echo, cx: Connection) -> EchoResult:
        async def broken(result: object) -> None:
            raise ValueError("callback broke")

        cx.send_request(Hello(name="peer")).on_receiving_result(broken)
        return EchoResult(value=1)

    ours, theirs = Channel.duplex()
    peer = testing.WirePeer(theirs)
    serving_task = asyncio.create_task(app.serve(ours))
    peer.request("echo", {}, request_id="e1")
    frames = [await peer.recv(), await peer.recv()]
    hello = next(f for f in frames if f.get("method") == "hello")
    assert any(f.get("id") == "e1" and f.get("result") == {"value": 1} for f in frames)
    peer.send({"jsonrpc": "2.0", "id": hello["id"], "result": {"greeting": "hi"}})
    with pytest.raises(ValueError, match="callback broke"):
        async with asyncio.timeout(TIMEOUT):
            await serving_task
    await theirs.aclose()
