"""Dynamic handlers, the retry queue and the role's default handler (B1.10-B1.13, A8.19, chain order)."""

from __future__ import annotations

import asyncio
import json
import socket
from typing import Any

import pytest

from acpio.jsonrpc import (
    CANCEL_METHOD,
    Builder,
    Connection,
    Dispatch,
    Handler,
    NotificationDispatch,
    ParkingLimits,
    RequestDispatch,
    Role,
    Unhandled,
    UntypedRole,
)
from acpio.transports import ByteStreams

from ._support import TIMEOUT, echo_builder, serving


def _notify(method: str, params: Any) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "method": method, "params": params}


class SessionHandler:
    """Claims notifications and requests for one session id; records what it saw."""

    def __init__(self, session_id: str) -> None:
        self.session_id = session_id
        self.seen: list[Any] = []

    async def handle(self, message: Dispatch, cx: Connection) -> Unhandled | None:
        if (
            isinstance(message, NotificationDispatch | RequestDispatch)
            and message.session_id == self.session_id
        ):
            self.seen.append(message.params["n"])
            if isinstance(message, RequestDispatch):
                message.responder.respond({"handled_by": self.session_id})
            return None
        return Unhandled(message)


def _parking_server(connections: list[Connection]) -> Builder:
    """Like an ACP client: messages carrying a sessionId are parked until a session handler exists."""
    app = echo_builder()

    @app.on_dispatch
    async def park(message: Dispatch, cx: Connection) -> Unhandled:
        if not connections:
            connections.append(cx)
        return Unhandled(message, retry=message.session_id is not None)

    return app


async def test_parked_messages_are_replayed_in_order_to_a_later_handler_then_live_ones_follow() -> None:
    connections: list[Connection] = []
    async with serving(_parking_server(connections)) as peer:
        for n in range(3):
            peer.send(_notify("session/update", {"sessionId": "s1", "n": n}))
        await peer.request("echo", {"value": "barrier"})
        handler = SessionHandler("s1")
        connections[0].add_dynamic_handler(handler)  # from outside the dispatch loop
        peer.send(_notify("session/update", {"sessionId": "s1", "n": 3}))
        await peer.request("echo", {"value": "barrier"})
        assert handler.seen == [0, 1, 2, 3]
        assert connections[0].statistics()["retry_queue"] == 0


async def test_messages_the_new_handler_declines_stay_parked_for_the_next_one() -> None:
    connections: list[Connection] = []
    async with serving(_parking_server(connections)) as peer:
        peer.send(_notify("session/update", {"sessionId": "a", "n": 1}))
        peer.send(_notify("session/update", {"sessionId": "b", "n": 2}))
        peer.send({"jsonrpc": "2.0", "id": 5, "method": "session/ask", "params": {"sessionId": "b", "n": 3}})
        await peer.request("echo", {"value": "barrier"})
        cx = connections[0]
        a, b = SessionHandler("a"), SessionHandler("b")
        cx.add_dynamic_handler(a)
        await peer.request("echo", {"value": "barrier"})
        assert (a.seen, b.seen, cx.statistics()["retry_queue"]) == ([1], [], 2)
        cx.add_dynamic_handler(b)
        assert await peer.recv() == {"jsonrpc": "2.0", "id": 5, "result": {"handled_by": "b"}}
        assert b.seen == [2, 3]


async def test_a_declined_cancel_request_with_retry_reaches_a_later_handler_exactly_once() -> None:
    connections: list[Connection] = []
    app = echo_builder()
    seen: list[Any] = []

    @app.on_dispatch
    async def park(message: Dispatch, cx: Connection) -> Unhandled:
        connections.append(cx)
        return Unhandled(message, retry=message.method == CANCEL_METHOD)

    async def record(message: Dispatch, cx: Connection) -> Unhandled | None:
        if message.method == CANCEL_METHOD:
            seen.append(message.params)
            return None
        return Unhandled(message)

    async with serving(app) as peer:
        peer.send(_notify(CANCEL_METHOD, {"requestId": 1}))
        await peer.request("echo", {"value": "barrier"})
        connections[0].add_dynamic_handler(record)
        await peer.request("echo", {"value": "barrier"})
        connections[0].add_dynamic_handler(record)  # a second handler: nothing left to replay
        await peer.request("echo", {"value": "barrier"})
    assert seen == [{"requestId": 1}]


async def test_removed_handler_no_longer_sees_messages() -> None:
    connections: list[Connection] = []
    app = UntypedRole.builder()

    @app.on_dispatch
    async def remember(message: Dispatch, cx: Connection) -> Unhandled:
        connections.append(cx)
        return Unhandled(message)

    async with serving(app) as peer:
        assert (await peer.request("ping"))["error"]["code"] == -32601
        cx = connections[0]
        handler = SessionHandler("s")
        with cx.add_dynamic_handler(handler) as registration:
            assert registration.active
            reply = await peer.request("x", {"sessionId": "s", "n": 1})
            assert reply["result"] == {"handled_by": "s"}
        assert not registration.active
        assert (await peer.request("x", {"sessionId": "s", "n": 2}))["error"]["code"] == -32601
        assert handler.seen == [1]
        assert cx.statistics()["dynamic_handlers"] == 0


async def test_handler_removed_before_activation_never_runs() -> None:
    app = echo_builder()
    seen: list[str] = []
    checked = asyncio.Event()

    async def record(message: Dispatch, cx: Connection) -> None:
        seen.append(message.method)

    async def add_then_remove(cx: Connection) -> None:
        registration = cx.add_dynamic_handler(record)
        registration.remove()
        checked.set()

    app.with_spawned(add_then_remove)
    async with serving(app) as peer:
        async with asyncio.timeout(TIMEOUT):
            await checked.wait()
        peer.send(_notify("anything", {}))
        assert (await peer.request("echo", {"value": 1}))["result"] == {"value": 1}
    assert seen == []


async def test_run_indefinitely_keeps_the_handler() -> None:
    connections: list[Connection] = []
    app = UntypedRole.builder()

    @app.on_dispatch
    async def remember(message: Dispatch, cx: Connection) -> Unhandled:
        connections.append(cx)
        return Unhandled(message)

    async with serving(app) as peer:
        await peer.request("ping")
        handler = SessionHandler("s")
        registration = connections[0].add_dynamic_handler(handler)
        registration.run_indefinitely()
        registration.remove()
        assert (await peer.request("x", {"sessionId": "s", "n": 1}))["result"] == {"handled_by": "s"}


async def test_a_handler_is_told_once_when_removed_and_never_when_kept() -> None:
    class Told:
        def __init__(self) -> None:
            self.removals = 0

        async def handle(self, message: Dispatch, cx: Connection) -> Unhandled | None:
            return Unhandled(message)

        def removed(self) -> None:
            self.removals += 1

    removed, kept = Told(), Told()
    connections: list[Connection] = []
    app = UntypedRole.builder()

    @app.on_dispatch
    async def remember(message: Dispatch, cx: Connection) -> Unhandled:
        connections.append(cx)
        return Unhandled(message)

    async with serving(app) as peer:
        await peer.request("ping")
        registration = connections[0].add_dynamic_handler(removed)
        registration.remove()
        registration.remove()
        keeping = connections[0].add_dynamic_handler(kept)
        keeping.run_indefinitely()
        keeping.remove()
    assert (removed.removals, kept.removals) == (1, 0)


class _DefaultRole(Role):
    """A role whose default handler answers everything, to check where it sits in the chain."""

    NAME = "with-default"

    def default_handler(self) -> Handler | None:
        class Default:
            async def handle(self, message: Dispatch, cx: Connection) -> Unhandled | None:
                if isinstance(message, RequestDispatch):
                    message.responder.respond({"handled_by": "default"})
                    return None
                return Unhandled(message)

        return Default()


async def test_chain_order_is_builder_then_dynamic_then_role_default() -> None:
    app = Builder(_DefaultRole(), name="ordered")
    connections: list[Connection] = []

    @app.on_dispatch
    async def builder_handler(message: Dispatch, cx: Connection) -> Unhandled | None:
        connections.append(cx)
        if message.method == "builder":
            assert isinstance(message, RequestDispatch)
            message.responder.respond({"handled_by": "builder"})
            return None
        return Unhandled(message)

    async with serving(app) as peer:
        assert (await peer.request("dynamic", {"sessionId": "s", "n": 0}))["result"] == {
            "handled_by": "default"
        }
        connections[0].add_dynamic_handler(SessionHandler("s"))
        assert (await peer.request("builder", {"sessionId": "s", "n": 1}))["result"] == {
            "handled_by": "builder"
        }
        assert (await peer.request("dynamic", {"sessionId": "s", "n": 2}))["result"] == {"handled_by": "s"}
        assert (await peer.request("other"))["result"] == {"handled_by": "default"}
    assert connections[0].counterpart == _DefaultRole()


# -- a replay when the input ends or is cut short --------------------------------------------------


class PatientRole(UntypedRole):
    """Parked requests wait a minute for a handler: an answer in seconds is the fallback's."""

    def parking_limits(self) -> ParkingLimits:
        return ParkingLimits(request_wait=60)


class Declining:
    """Offered a parked message: waits until the input ended, then declines it (retry); or never returns."""

    def __init__(self, *, returns: bool) -> None:
        self.returns = returns
        self.offered = asyncio.Event()

    async def handle(self, message: Dispatch, cx: Connection) -> Unhandled:
        self.offered.set()
        if not self.returns:
            await asyncio.Event().wait()  # cancelled when the connection shuts down
        await cx.wait_closed()
        return Unhandled(message, retry=True)


async def _answers_when_the_input_ends_during_a_replay(handler: Declining) -> list[dict[str, Any]]:
    """Park request 7, add ``handler``, end the input while it is offered 7: the answers sent."""
    app = PatientRole.builder()
    connections: list[Connection] = []

    @app.on_dispatch
    async def park(message: Dispatch, cx: Connection) -> Unhandled:
        connections.append(cx)
        return Unhandled(message, retry=True)

    ours, theirs = socket.socketpair()
    ours.setblocking(False)
    loop = asyncio.get_running_loop()
    transport = ByteStreams(*await asyncio.open_unix_connection(sock=theirs), label="client")
    serving = asyncio.create_task(app.serve(transport))
    received = b""
    try:
        async with asyncio.timeout(TIMEOUT):
            await loop.sock_sendall(ours, b'{"jsonrpc":"2.0","id":7,"method":"session/ask","params":{}}\n')
            while not connections or connections[0].statistics()["retry_queue"] != 1:  # noqa: ASYNC110
                await asyncio.sleep(0.01)  # polled: nothing tells the outside that 7 was parked
            connections[0].add_dynamic_handler(handler)
            await handler.offered.wait()
            ours.shutdown(socket.SHUT_WR)
            while chunk := await loop.sock_recv(ours, 65536):
                received += chunk
            await serving
    finally:
        serving.cancel()
        ours.close()
    return [json.loads(line) for line in received.splitlines()]


@pytest.mark.parametrize(
    "returns", [True, False], ids=["declined after the input ended", "replay cancelled at shutdown"]
)
async def test_a_request_offered_when_the_input_ends_gets_the_fallback_answer(returns: bool) -> None:
    """Declined after the release it was parked again for its minute; cancelled, it was lost unanswered."""
    answers = await _answers_when_the_input_ends_during_a_replay(Declining(returns=returns))
    assert answers == [
        {
            "jsonrpc": "2.0",
            "id": 7,
            "error": {"code": -32601, "message": "Method not found", "data": "session/ask"},
        }
    ]
