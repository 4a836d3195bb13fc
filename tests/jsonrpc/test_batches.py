"""Incoming JSON-RPC batches: order, one grouped answer, invalid entries (A3)."""

from __future__ import annotations

import asyncio
import logging
from typing import Any

import pytest

from acpio.errors import InternalError, RequestError
from acpio.jsonrpc import Connection, Dispatch, Responder, Unhandled, UntypedRole
from acpio.jsonrpc.messages import MAX_BATCH_ENTRIES
from acpio.transports.channel import Channel

from ._support import TIMEOUT, Echo, EchoResult, Note, Slow, WirePeer, echo_builder, serving


def _req(request_id: Any, method: str, params: Any = None) -> dict[str, Any]:
    message: dict[str, Any] = {"jsonrpc": "2.0", "id": request_id, "method": method}
    if params is not None:
        message["params"] = params
    return message


def _note(method: str, params: Any = None) -> dict[str, Any]:
    message: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
    if params is not None:
        message["params"] = params
    return message


class Fails(Echo):
    METHOD = "fails"


class FailingNote(Note):
    METHOD = "failing-note"


def _batch_server(notes: list[str]) -> Any:
    app = echo_builder()

    @app.on_request
    async def fails(req: Fails) -> None:
        raise RequestError(-32603, "Internal error", {"why": "handler failed"})

    @app.on_notification
    async def note(n: Note) -> None:
        notes.append(n.text)

    @app.on_notification
    async def failing(n: FailingNote) -> None:
        raise RuntimeError("notification handler failed")

    return app


async def test_mixed_batch_gets_one_array_with_each_response_bearing_entry() -> None:
    notes: list[str] = []
    async with serving(_batch_server(notes)) as peer:
        peer.send(
            [
                _req(1, "echo", {"value": "ok"}),
                _note("note", {"text": "n1"}),
                17,
                _req(2, "hello", {"wrong": True}),
                _req(3, "fails", {}),
                {"jsonrpc": "2.0", "id": 9, "result": 1, "error": {"code": 1, "message": "x"}},
                _note("note", {"bad": "params"}),
                _note("failing-note", {"text": "x"}),
            ]
        )
        answer = await peer.recv()
        assert isinstance(answer, list)
        assert answer[0] == {"jsonrpc": "2.0", "id": 1, "result": {"value": "ok"}}
        assert answer[1]["id"] is None
        assert answer[1]["error"]["code"] == -32600
        assert answer[2]["id"] == 2
        assert answer[2]["error"]["code"] == -32602
        assert answer[3] == {
            "jsonrpc": "2.0",
            "id": 3,
            "error": {"code": -32603, "message": "Internal error", "data": {"why": "handler failed"}},
        }
        assert len(answer) == 4
        standalone = await peer.request("echo", {"value": "after"}, request_id=10)
        assert standalone == {"jsonrpc": "2.0", "id": 10, "result": {"value": "after"}}
    assert notes == ["n1"]


async def test_batch_answer_waits_for_a_trailing_notification_handler() -> None:
    app = echo_builder()
    finished: list[str] = []

    @app.on_notification
    async def slow_note(n: Note) -> None:
        for _ in range(20):
            await asyncio.sleep(0)  # yield: an early array would reach the peer meanwhile
        finished.append(n.text)

    async with serving(app) as peer:
        peer.send([_req(1, "echo", {"value": 1}), _note("note", {"text": "trailing"})])
        answer = await peer.recv()
        assert finished == ["trailing"]
        assert answer == [{"jsonrpc": "2.0", "id": 1, "result": {"value": 1}}]


async def test_deferred_entry_withholds_the_array_but_not_standalone_calls() -> None:
    app = echo_builder()
    parked: list[Responder[EchoResult]] = []

    @app.on_request
    async def slow(req: Slow, responder: Responder[EchoResult]) -> None:
        parked.append(responder)

    async with serving(app) as peer:
        peer.send([_req(1, "slow"), _req(2, "echo", {"value": "sibling"})])
        assert await peer.request("echo", {"value": "standalone"}, request_id=3) == {
            "jsonrpc": "2.0",
            "id": 3,
            "result": {"value": "standalone"},
        }
        parked[0].respond(EchoResult(value="late"))
        assert await peer.recv() == [
            {"jsonrpc": "2.0", "id": 1, "result": {"value": "late"}},
            {"jsonrpc": "2.0", "id": 2, "result": {"value": "sibling"}},
        ]


async def test_dropped_batch_responder_fills_its_slot_with_an_internal_error() -> None:
    app = echo_builder()

    @app.on_request
    async def slow(req: Slow, responder: Responder[EchoResult]) -> None:
        return None  # neither answers nor keeps the responder

    async with serving(app) as peer:
        peer.send([_req(1, "slow"), _req(2, "echo", {"value": "sibling"})])
        answer = await peer.recv()
        assert answer[0]["id"] == 1
        assert answer[0]["error"]["code"] == InternalError.CODE
        assert answer[1] == {"jsonrpc": "2.0", "id": 2, "result": {"value": "sibling"}}


async def test_retried_batch_entry_waits_for_a_dynamic_handler_whose_error_fills_the_slot() -> None:
    app = echo_builder()
    connections: list[Connection] = []

    @app.on_dispatch
    async def park(message: Dispatch, cx: Connection) -> Unhandled:
        connections.append(cx)
        return Unhandled(message, retry=message.method == "later")

    async def failing(message: Dispatch, cx: Connection) -> None:
        raise RequestError(-32603, "Internal error", {"from": "dynamic"})

    async with serving(app) as peer:
        peer.send([_req(1, "later"), _req(2, "echo", {"value": "healthy"})])
        barrier = await peer.request("echo", {"value": "barrier"}, request_id=3)
        assert barrier["id"] == 3  # the array is withheld meanwhile
        connections[0].add_dynamic_handler(failing)
        assert await peer.recv() == [
            {
                "jsonrpc": "2.0",
                "id": 1,
                "error": {"code": -32603, "message": "Internal error", "data": {"from": "dynamic"}},
            },
            {"jsonrpc": "2.0", "id": 2, "result": {"value": "healthy"}},
        ]


async def test_all_invalid_batch_gets_an_array_of_errors() -> None:
    async with serving(echo_builder()) as peer:
        peer.send(b"[17, true, null]")
        answer = await peer.recv()
        assert [(e["id"], e["error"]["code"]) for e in answer] == [(None, -32600)] * 3
        assert (await peer.request("echo", {"value": 1}))["result"] == {"value": 1}


async def test_malformed_response_entry_is_ignored_beside_an_invalid_scalar() -> None:
    async with serving(echo_builder()) as peer:
        peer.send([17, {"jsonrpc": "2.0", "id": 1, "result": 1, "error": {"code": 1, "message": "x"}}])
        answer = await peer.recv()
        assert len(answer) == 1
        assert answer[0]["error"]["code"] == -32600


async def test_duplicate_ids_in_one_batch_get_distinct_entries() -> None:
    async with serving(echo_builder()) as peer:
        peer.send([_req(1, "echo", {"value": "a"}), _req(1, "echo", {"value": "b"})])
        assert await peer.recv() == [
            {"jsonrpc": "2.0", "id": 1, "result": {"value": "a"}},
            {"jsonrpc": "2.0", "id": 1, "result": {"value": "b"}},
        ]


async def test_first_answer_wins_over_a_later_handler_error() -> None:
    app = echo_builder()

    @app.on_request
    async def slow(req: Slow, responder: Responder[EchoResult]) -> None:
        responder.respond(EchoResult(value="first"))
        raise RequestError(-32000, "too late")

    async with serving(app) as peer:
        peer.send([_req(1, "slow")])
        assert await peer.recv() == [{"jsonrpc": "2.0", "id": 1, "result": {"value": "first"}}]
        assert await peer.request("slow", request_id=2) == {
            "jsonrpc": "2.0",
            "id": 2,
            "result": {"value": "first"},
        }
        # nothing else was written for either request: the next frame answers the next request
        assert (await peer.request("echo", {"value": "next"}, request_id=3))["id"] == 3


async def test_overlapping_batches_reusing_ids_do_not_mix() -> None:
    app = echo_builder()
    parked: list[tuple[str, Responder[EchoResult]]] = []

    @app.on_request
    async def slow(req: Slow, responder: Responder[EchoResult], cx: Connection) -> None:
        parked.append((f"batch{len(parked) + 1}", responder))

    async with serving(app) as peer:
        peer.send([_req(1, "slow"), _req(2, "echo", {"value": "b1"})])
        peer.send([_req(1, "slow"), _req(2, "echo", {"value": "b2"})])
        await peer.request("echo", {"value": "barrier"}, request_id=99)
        for name, responder in reversed(parked):
            responder.respond(EchoResult(value=name))
        second, first = await peer.recv(), await peer.recv()
        assert second == [
            {"jsonrpc": "2.0", "id": 1, "result": {"value": "batch2"}},
            {"jsonrpc": "2.0", "id": 2, "result": {"value": "b2"}},
        ]
        assert first == [
            {"jsonrpc": "2.0", "id": 1, "result": {"value": "batch1"}},
            {"jsonrpc": "2.0", "id": 2, "result": {"value": "b1"}},
        ]


async def test_empty_batch_gets_one_standalone_invalid_request() -> None:
    async with serving(echo_builder()) as peer:
        peer.send(b"[]")
        answer = await peer.recv()
        assert answer["id"] is None
        assert answer["error"]["code"] == -32600
        assert (await peer.request("echo", {"value": 1}, request_id=1))["result"] == {"value": 1}


async def test_notification_only_batch_writes_nothing() -> None:
    notes: list[str] = []
    async with serving(_batch_server(notes)) as peer:
        peer.send(
            [
                _note("note", {"text": "1"}),
                _note("failing-note", {"text": "x"}),
                _note("note", {"bad": 1}),
                _note("note", {"text": "2"}),
            ]
        )
        barrier = await peer.request("echo", {"value": "barrier"}, request_id=5)
        assert barrier == {"jsonrpc": "2.0", "id": 5, "result": {"value": "barrier"}}
    assert notes == ["1", "2"]


async def test_batch_of_responses_is_routed_by_id_and_own_messages_are_single_lines() -> None:
    ours, theirs = Channel.duplex()
    peer = WirePeer(theirs)

    async def main(cx: Connection) -> list[Any]:
        first = cx.send_request("a", {})
        second = cx.send_request("b", {})
        cx.send_notification("n", {})
        frames = [await peer.recv() for _ in range(3)]
        assert all(isinstance(f, dict) for f in frames)  # never batches
        ids = {f["method"]: f.get("id") for f in frames}
        peer.send(
            [
                {"jsonrpc": "2.0", "id": ids["b"], "result": "B"},
                {"jsonrpc": "2.0", "id": ids["a"], "result": "A"},
                17,
            ]
        )
        invalid = await peer.recv()
        assert len(invalid) == 1
        assert invalid[0]["error"]["code"] == -32600
        async with asyncio.timeout(TIMEOUT):
            return [await first, await second]

    assert await UntypedRole.builder().connect_with(ours, main) == ["A", "B"]


async def test_a_batch_over_the_limit_is_refused_whole_and_every_request_in_it_answered_by_id(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """The first 1,000 entries were dispatched and the rest answered with one ``id: null`` error: a
    client waiting for the requests past the cap waited forever. Now nothing of it is processed, and
    each request gets its error under its own id (notifications, as always, get no answer)."""
    notes: list[str] = []
    batch = [_req(i, "echo", {"value": i}) for i in range(MAX_BATCH_ENTRIES)] + [_note("note", {"text": "n"})]
    batch.insert(500, _req("a-string-id", "echo", {"value": "s"}))
    async with serving(_batch_server(notes)) as peer:
        with caplog.at_level(logging.WARNING, logger="acpio.jsonrpc"):
            peer.send(batch)
            answer = await peer.recv()
        assert isinstance(answer, list)
        assert [e["id"] for e in answer] == [*range(500), "a-string-id", *range(500, MAX_BATCH_ENTRIES)]
        assert {e["error"]["code"] for e in answer} == {-32600}
        assert (
            answer[0]["error"]["message"]
            == "Batch too large: 1002 entries, the limit is 1000; none was processed"
        )
        assert answer[0]["error"]["data"] == {"reason": "batch too large", "entries": 1002, "limit": 1000}
        assert (await peer.request("echo", {"value": 1}))["result"] == {"value": 1}
    assert notes == []
    assert len(caplog.records) == 1  # one line per batch, not one per entry


async def test_a_batch_over_the_limit_without_requests_is_answered_with_one_error_object() -> None:
    async with serving(echo_builder()) as peer:
        peer.send(b"[" + b",".join([b"0"] * (MAX_BATCH_ENTRIES + 1)) + b"]")
        answer = await peer.recv()
        assert answer["id"] is None
        assert answer["error"]["code"] == -32600
        assert answer["error"]["data"] == {"reason": "batch too large", "entries": 1001, "limit": 1000}


async def test_batch_at_the_limit_is_dispatched_whole() -> None:
    async with serving(echo_builder()) as peer:
        peer.send([_req(i, "echo", {"value": i}) for i in range(MAX_BATCH_ENTRIES)])
        answer = await peer.recv()
        assert [e["result"]["value"] for e in answer] == list(range(MAX_BATCH_ENTRIES))
