"""The handler chain: order, fall-through, declining with a changed message, handler forms (A4, A5, A11)."""

from __future__ import annotations

from typing import Any, ClassVar

import pytest
from pydantic import BaseModel

from acpio.errors import MethodNotFound
from acpio.jsonrpc import (
    Connection,
    Dispatch,
    RequestDispatch,
    Responder,
    Unhandled,
    UntypedMessage,
    UntypedRole,
)

from ._support import Echo, EchoResult, Hello, HelloResult, Note, echo_builder, serving


class Tags(BaseModel):
    METHOD: ClassVar[str] = "tags"
    RESPONSE: ClassVar[type[BaseModel]] = EchoResult
    tags: list[str] = []


async def test_each_typed_handler_receives_only_its_method() -> None:
    app = UntypedRole.builder()
    calls: list[str] = []

    @app.on_request
    async def hello(req: Hello) -> HelloResult:
        calls.append("hello")
        return HelloResult(greeting="h")

    @app.on_request
    async def echo(req: Echo) -> EchoResult:
        calls.append("echo")
        return EchoResult(value=req.value)

    async with serving(app) as peer:
        assert (await peer.request("echo", {"value": 1}))["result"] == {"value": 1}
        assert (await peer.request("hello", {"name": "x"}))["result"] == {"greeting": "h"}
    assert calls == ["echo", "hello"]


async def test_first_registered_handler_wins() -> None:
    app = UntypedRole.builder()

    @app.on_request(Echo)
    async def first(req: Echo, responder: Responder[EchoResult], cx: Connection) -> None:
        responder.respond(EchoResult(value="first"))

    @app.on_request(Echo)
    async def second(req: Echo, responder: Responder[EchoResult], cx: Connection) -> None:
        raise AssertionError("never reached")

    async with serving(app) as peer:
        assert (await peer.request("echo", {}))["result"] == {"value": "first"}


async def test_declined_request_falls_through_to_a_later_handler() -> None:
    app = UntypedRole.builder()

    @app.on_request
    async def picky(req: Echo) -> EchoResult | Unhandled:
        if req.value == "mine":
            return EchoResult(value="picky")
        return Unhandled(req)

    @app.on_dispatch
    async def catch_all(message: Dispatch, cx: Connection) -> None:
        assert isinstance(message, RequestDispatch)
        message.responder.respond({"caught": message.method})

    async with serving(app) as peer:
        assert (await peer.request("echo", {"value": "mine"}))["result"] == {"value": "picky"}
        assert (await peer.request("echo", {"value": "other"}))["result"] == {"caught": "echo"}
        assert (await peer.request("anything"))["result"] == {"caught": "anything"}


async def test_unclaimed_request_is_method_not_found_with_the_method_in_data() -> None:
    async with serving(UntypedRole.builder()) as peer:
        reply = await peer.request("unknown/request", {}, request_id=3)
    assert reply == {
        "jsonrpc": "2.0",
        "id": 3,
        "error": {"code": -32601, "message": "Method not found", "data": "unknown/request"},
    }


async def test_custom_handler_object_claims_notifications() -> None:
    class Recorder:
        def __init__(self) -> None:
            self.seen: list[Any] = []

        async def handle(self, message: Dispatch, cx: Connection) -> Unhandled | None:
            if message.method == "note":
                self.seen.append(message.params)
                return None
            return Unhandled(message)

    recorder = Recorder()
    app = echo_builder().with_handler(recorder)
    async with serving(app) as peer:
        peer.send({"jsonrpc": "2.0", "method": "note", "params": {"text": "hi"}})
        assert (await peer.request("hello", {"name": "n"}))["result"] == {"greeting": "hello, n"}
    assert recorder.seen == [{"text": "hi"}]


async def test_handler_changes_a_request_en_route() -> None:
    app = UntypedRole.builder()

    @app.on_request
    async def add_a(req: Tags) -> Unhandled:
        req.tags.append("a")
        return Unhandled(req)

    @app.on_request
    async def add_b(req: Tags) -> EchoResult:
        return EchoResult(value=[*req.tags, "b"])

    async with serving(app) as peer:
        assert (await peer.request("tags", {"tags": []}))["result"] == {"value": ["a", "b"]}


async def test_dispatch_handler_changes_a_message_to_an_untyped_one() -> None:
    app = UntypedRole.builder()

    @app.on_dispatch
    async def rename(message: Dispatch, cx: Connection) -> Unhandled:
        if message.method == "old/name":
            return Unhandled(UntypedMessage("echo", {"value": "renamed"}))
        return Unhandled(message)

    @app.on_request
    async def echo(req: Echo) -> EchoResult:
        return EchoResult(value=req.value)

    async with serving(app) as peer:
        assert (await peer.request("old/name", {}))["result"] == {"value": "renamed"}


async def test_a_claiming_handler_stops_the_chain() -> None:
    app = UntypedRole.builder()
    later: list[str] = []

    @app.on_request
    async def claim(req: Tags) -> EchoResult:
        return EchoResult(value=[*req.tags, "a"])

    @app.on_request
    async def mutate(req: Tags) -> Unhandled:
        later.append("ran")
        return Unhandled(req)

    async with serving(app) as peer:
        assert (await peer.request("tags", {}))["result"] == {"value": ["a"]}
    assert later == []


async def test_deep_chain_of_33_handlers_dispatches_correctly() -> None:
    app = UntypedRole.builder()
    notes: list[str] = []
    for i in range(16):

        class Req(BaseModel):
            METHOD: ClassVar[str] = f"req/{i}"
            RESPONSE: ClassVar[type[BaseModel]] = EchoResult

        class Notif(BaseModel):
            METHOD: ClassVar[str] = f"note/{i}"

        async def answer(req: Any, n: int = i) -> EchoResult:
            return EchoResult(value=n)

        async def record(note: Any, cx: Connection, n: int = i) -> None:
            notes.append(f"note/{n}")

        app.on_request(Req, answer)
        app.on_notification(Notif, record)
    app.merge(echo_builder())
    assert app.statistics()["handlers"] == 34
    async with serving(app) as peer:
        for i in (0, 7, 15):
            peer.send({"jsonrpc": "2.0", "method": f"note/{i}"})
            assert (await peer.request(f"req/{i}"))["result"] == {"value": i}
        assert (await peer.request("hello", {"name": "deep"}))["result"] == {"greeting": "hello, deep"}
    assert notes == ["note/0", "note/7", "note/15"]


async def test_handler_forms_by_arity_and_annotation() -> None:
    app = UntypedRole.builder()
    got: list[str] = []

    @app.on_request
    async def one(req: Hello) -> HelloResult:
        return HelloResult(greeting="one")

    @app.on_request
    async def two_responder(req: Echo, responder: Responder[EchoResult]) -> None:
        responder.respond(EchoResult(value="two"))

    @app.on_request
    async def two_cx(req: Tags, cx: Connection) -> EchoResult:
        assert isinstance(cx, Connection)
        return EchoResult(value="cx")

    @app.on_notification
    async def bare(note: Note) -> None:
        got.append(note.text)

    async with serving(app) as peer:
        assert (await peer.request("hello", {"name": "x"}))["result"] == {"greeting": "one"}
        assert (await peer.request("echo", {}))["result"] == {"value": "two"}
        assert (await peer.request("tags", {}))["result"] == {"value": "cx"}
        peer.send({"jsonrpc": "2.0", "method": "note", "params": {"text": "t"}})
        await peer.request("hello", {"name": "barrier"})
    assert got == ["t"]


def test_registration_errors_name_the_fix() -> None:
    app = UntypedRole.builder()

    async def unannotated(req, responder, cx):  # type: ignore[no-untyped-def]
        return None

    with pytest.raises(TypeError, match="annotate its first parameter"):
        app.on_request(unannotated)

    async def untyped_message(req: dict[str, Any]) -> None:
        return None

    with pytest.raises(TypeError, match="METHOD"):
        app.on_request(untyped_message)

    with pytest.raises(TypeError, match="not a handler"):
        app.with_handler(42)


async def test_merged_builders_keep_handler_order() -> None:
    outer = UntypedRole.builder(name="outer")
    inner = UntypedRole.builder(name="inner")

    @outer.on_request
    async def outer_echo(req: Echo) -> EchoResult:
        return EchoResult(value="outer")

    @inner.on_request
    async def inner_echo(req: Echo) -> EchoResult:
        return EchoResult(value="inner")

    @inner.on_request
    async def inner_hello(req: Hello) -> HelloResult:
        return HelloResult(greeting="inner")

    async with serving(outer.merge(inner)) as peer:
        assert (await peer.request("echo", {}))["result"] == {"value": "outer"}
        assert (await peer.request("hello", {"name": "x"}))["result"] == {"greeting": "inner"}


async def test_dispatch_handler_can_ignore_notifications_and_reject_requests() -> None:
    app = UntypedRole.builder()

    @app.on_dispatch
    async def gate(message: Dispatch, cx: Connection) -> None:
        if isinstance(message, RequestDispatch):
            raise MethodNotFound(message.method, message="Nothing here")

    async with serving(app) as peer:
        peer.send({"jsonrpc": "2.0", "method": "ignored"})
        reply = await peer.request("x")
        assert reply["error"] == {"code": -32601, "message": "Nothing here", "data": "x"}
        reply = await peer.request("y")
        assert reply["error"]["code"] == -32601
