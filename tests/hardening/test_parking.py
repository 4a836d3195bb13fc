"""A client parks agent messages for sessions it has not attached yet, within bounds."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from typing import Any

import pytest

from acpio import Client, SessionConnection
from acpio.jsonrpc import ParkingLimits, Unhandled, UntypedMessage
from acpio.testing import WirePeer
from acpio.transports import Channel

TIMEOUT = 10


class QuickClient(Client):
    """A client with small parking limits, so that the tests run in a blink."""

    def parking_limits(self) -> ParkingLimits:
        return ParkingLimits(per_key=50, total=80, max_age=0.3, request_wait=0.3)


class CountingClient(Client):
    """QuickClient's bounds, but nothing expires while a loaded machine works through a flood."""

    def parking_limits(self) -> ParkingLimits:
        return ParkingLimits(per_key=50, total=80, max_age=60, request_wait=0.3)


def update(session_id: str, n: int) -> dict[str, Any]:
    chunk = {"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": str(n)}}
    return {
        "jsonrpc": "2.0",
        "method": "session/update",
        "params": {"sessionId": session_id, "update": chunk},
    }


async def with_agent(
    client: Any, play: Callable[[WirePeer, SessionConnection], Awaitable[None]], seconds: float = TIMEOUT
) -> None:
    """Connect ``client`` to a raw agent peer; run ``play(agent, cx)``; close (within ``seconds``)."""
    ours, theirs = Channel.duplex()
    agent = WirePeer(ours, timeout=seconds)

    async def main(cx: SessionConnection) -> None:
        await play(agent, cx)

    async with asyncio.timeout(seconds):
        await client.connect_with(theirs, main)
        await agent.close()


async def settle(cx: SessionConnection, parked: int) -> None:
    """Wait until ``parked`` messages wait for handlers."""
    while cx.statistics()["retry_queue"] != parked:  # noqa: ASYNC110 - polled: no event to wait on
        await asyncio.sleep(0.01)


async def test_notifications_for_unknown_sessions_are_bounded_per_session_and_in_total(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """1,000,000 updates for a session the client never opened were parked without limit (985 MB)."""

    async def play(agent: WirePeer, cx: SessionConnection) -> None:
        for n in range(200):
            agent.send(update("ghost-1", n))
        await settle(cx, 50)  # per session
        for n in range(200):
            agent.send(update("ghost-2", n))
        await settle(cx, 80)  # in total

    with caplog.at_level(logging.WARNING, logger="acpio.jsonrpc"):
        await with_agent(CountingClient.builder(), play)
    warnings = [r.getMessage() for r in caplog.records if "waited for a handler" in r.getMessage()]
    assert len(warnings) == 2  # once per session, not once per message
    assert "'ghost-1'" in warnings[0]


@pytest.mark.slow
async def test_default_limits_hold_under_a_flood() -> None:
    async def play(agent: WirePeer, cx: SessionConnection) -> None:
        for n in range(60_000):
            agent.send(update("ghost", n))
        await settle(cx, ParkingLimits().per_key)

    await with_agent(Client.builder(), play, seconds=60)  # 6-9 s alone on this machine


async def test_parked_notifications_expire() -> None:
    async def play(agent: WirePeer, cx: SessionConnection) -> None:
        for n in range(10):
            agent.send(update("late", n))
        await settle(cx, 10)
        await asyncio.sleep(0.4)  # older than max_age now
        agent.send(update("other", 0))  # parking again drops what expired
        await settle(cx, 1)

    await with_agent(QuickClient.builder(), play)


async def test_a_request_for_an_unknown_session_is_answered_after_a_bounded_wait() -> None:
    """It waited until the connection ended; now -32002 with the sessionId, after request_wait."""

    async def play(agent: WirePeer, cx: SessionConnection) -> None:
        loop = asyncio.get_running_loop()
        started = loop.time()
        agent.send(
            {
                "jsonrpc": "2.0",
                "id": 7,
                "method": "session/request_permission",
                "params": {"sessionId": "nobody", "toolCall": {"toolCallId": "t"}, "options": []},
            }
        )
        answer = await agent.recv()
        waited = loop.time() - started
        assert answer["id"] == 7
        assert answer["error"]["code"] == -32002
        assert answer["error"]["data"] == {"sessionId": "nobody"}
        assert 0.25 < waited < 3
        assert cx.statistics()["retry_queue"] == 0

    await with_agent(QuickClient.builder(), play)


async def test_a_session_request_without_a_session_id_is_invalid_params() -> None:
    """-32601 said the method does not exist; it does, its params lack the sessionId."""

    async def play(agent: WirePeer, cx: SessionConnection) -> None:
        params = {"toolCall": {"toolCallId": "t"}, "options": []}
        agent.send({"jsonrpc": "2.0", "id": 8, "method": "session/request_permission", "params": params})
        answer = await agent.recv()
        assert answer["error"]["code"] == -32602
        assert "sessionId" in answer["error"]["message"]
        agent.send({"jsonrpc": "2.0", "id": 9, "method": "_vendor/whatever", "params": {}})
        assert (await agent.recv())["error"]["code"] == -32601  # unknown methods stay -32601

    await with_agent(Client.builder(), play)


class SlowAnswerClient(Client):
    """Default sizes, a short wait for requests."""

    def parking_limits(self) -> ParkingLimits:
        return ParkingLimits(request_wait=0.2)


def permission_request(request_id: int, session_id: str) -> dict[str, Any]:
    params = {"sessionId": session_id, "toolCall": {"toolCallId": "t"}, "options": []}
    return {"jsonrpc": "2.0", "id": request_id, "method": "session/request_permission", "params": params}


async def test_many_parked_requests_expire_without_freezing_the_client() -> None:
    """Each expiry scanned the whole lot: 10,000 expiries behind 40,000 updates took 27 s."""

    async def play(agent: WirePeer, cx: SessionConnection) -> None:
        for n in range(40_000):
            agent.send(update(f"ghost-{n % 4}", n))
        for n in range(10_000):
            agent.send(permission_request(n, "ghost-requests"))
        started = asyncio.get_running_loop().time()
        answered = 0
        while answered < 10_000:
            message = await agent.recv()
            assert message["error"]["code"] == -32002
            answered += 1
        # The quadratic expiry took 27 s on a quiet machine; linear, a few, even on a loaded one.
        assert asyncio.get_running_loop().time() - started < 20

    await with_agent(SlowAnswerClient.builder(), play, seconds=60)


class Stall:
    """A dynamic handler that declines everything, taking ``seconds`` (or changing the message)."""

    def __init__(self, seconds: float = 0.0, *, change: bool = False) -> None:
        self.seconds = seconds
        self.change = change

    async def handle(self, message: Any, cx: Any) -> Unhandled:
        await asyncio.sleep(self.seconds)
        if self.change:
            return Unhandled(UntypedMessage(message.method, dict(message.params, changed=True)), retry=True)
        return Unhandled(message, retry=True)


@pytest.mark.parametrize(
    "stall", [Stall(0.5), Stall(change=True)], ids=["timer fired during a replay", "message changed"]
)
async def test_a_replayed_request_is_still_answered_in_time(stall: Stall) -> None:
    """A request re-parked after a replay kept no timer and waited until the connection ended."""

    async def play(agent: WirePeer, cx: SessionConnection) -> None:
        agent.send(permission_request(1, "nobody"))
        await settle(cx, 1)
        cx.add_dynamic_handler(stall)
        answer = await agent.recv()
        assert answer["id"] == 1
        assert answer["error"]["code"] == -32002

    await with_agent(QuickClient.builder(), play)


async def test_unique_session_ids_do_not_grow_the_logs_or_the_counts(
    caplog: pytest.LogCaptureFixture,
) -> None:
    async def play(agent: WirePeer, cx: SessionConnection) -> None:
        for n in range(3_000):
            agent.send(update(f"unique-{n}", n))
        await settle(cx, 80)
        agent.send(update("after", 0))
        await settle(cx, 80)

    with caplog.at_level(logging.WARNING, logger="acpio.jsonrpc"):
        await with_agent(CountingClient.builder(), play)
    lines = [r.getMessage() for r in caplog.records if "handler" in r.getMessage()]
    assert len(lines) == 101  # one line per session up to 100, then one summary
    assert "not logging further sessions" in lines[-1]
