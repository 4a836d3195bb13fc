"""A response read alone from an agent process is settled from the pipe callback: in order, and cancellable.

The connection settles a response that arrives alone, while its dispatch loop waits for input,
without waking that loop (``take_lone_frames``). What arrived before it is still seen first.
"""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Callable
from typing import Any, ClassVar

import pytest
from pydantic import BaseModel

from acpio.errors import RequestCancelled
from acpio.jsonrpc import Builder, Connection, UntypedRole
from acpio.transports import AcpAgent, AgentProcess

TIMEOUT = 10

#: Every test here runs on asyncio's loop and on uvloop's (see conftest.py).
BOTH_EVENT_LOOPS = True

#: An agent that writes each frame with its own write, a pause between them (each is read alone).
AGENT = r"""
import json, sys, time

def send(message):
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()
    time.sleep(0.05)

for line in sys.stdin:
    message = json.loads(line)
    method, params = message["method"], message.get("params") or {}
    if method == "note_then_answer":  # a notification, then (in another write) the answer
        send({"jsonrpc": "2.0", "method": "note", "params": {"n": 1}})
        send({"jsonrpc": "2.0", "id": message["id"], "result": {"answered": True}})
    elif method == "together":  # a notification and the answer in one write
        sys.stdout.write(
            json.dumps({"jsonrpc": "2.0", "method": "note", "params": {"n": 2}}) + "\n"
            + json.dumps({"jsonrpc": "2.0", "id": message["id"], "result": {"answered": True}}) + "\n"
        )
        sys.stdout.flush()
    elif method == "echo":
        send({"jsonrpc": "2.0", "id": message["id"], "result": params})
    elif method == "$/cancel_request":
        target = params["requestId"]
        send({"jsonrpc": "2.0", "id": target, "error": {"code": -32800, "message": "cancelled"}})
    # "slow" gets no answer until it is cancelled
"""


class Note(BaseModel):
    METHOD: ClassVar[str] = "note"
    n: int


def builder(seen: list[str], handler_delay: float) -> Builder[Any]:
    app = Builder(UntypedRole(), name="client")

    @app.on_notification
    async def on_note(note: Note, cx: Connection) -> None:
        seen.append("note started")
        await asyncio.sleep(handler_delay)  # the answer arrives meanwhile
        seen.append("note handled")

    return app


async def agent_process(monkeypatch: pytest.MonkeyPatch, taken: list[bytes]) -> AgentProcess:
    """The test agent's process; ``taken`` gets each frame the connection takes from its pipe callback."""
    process = await AcpAgent([sys.executable, "-c", AGENT]).open()
    assert isinstance(process, AgentProcess)
    offer = process.take_lone_frames

    def spy(take: Callable[[bytes], bool] | None) -> None:
        def counting(frame: bytes) -> bool:
            took = take is not None and take(frame)
            if took:
                taken.append(frame)
            return took

        offer(counting)

    monkeypatch.setattr(process, "take_lone_frames", spy)
    return process


async def test_a_response_read_alone_waits_for_the_notification_handler_before_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    seen: list[str] = []
    taken: list[bytes] = []

    async def main(cx: Connection) -> None:
        result = await cx.send_request("note_then_answer", {})
        seen.append(f"answer {result}")

    agent = await agent_process(monkeypatch, taken)
    await asyncio.wait_for(builder(seen, 0.3).connect_with(agent, main), TIMEOUT)
    assert seen == ["note started", "note handled", "answer {'answered': True}"]
    assert taken == []  # read while the handler ran: left to the dispatch loop


async def test_a_response_read_with_a_notification_before_it_is_seen_after_it() -> None:
    seen: list[str] = []

    async def main(cx: Connection) -> None:
        result = await cx.send_request("together", {})
        seen.append(f"answer {result}")

    agent = AcpAgent([sys.executable, "-c", AGENT])
    await asyncio.wait_for(builder(seen, 0.05).connect_with(agent, main), TIMEOUT)
    assert seen == ["note started", "note handled", "answer {'answered': True}"]


async def test_round_trips_read_alone_give_each_request_its_own_answer(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    taken: list[bytes] = []

    async def main(cx: Connection) -> list[object]:
        return [await cx.send_request("echo", {"i": i}) for i in range(20)]

    agent = await agent_process(monkeypatch, taken)
    answers = await asyncio.wait_for(builder([], 0).connect_with(agent, main), TIMEOUT)
    assert answers == [{"i": i} for i in range(20)]
    assert len(taken) == 20  # each settled from the pipe callback


async def test_a_failure_while_settling_a_lone_response_loses_nothing(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """Raised in the pipe's callback, the chunk would be gone: it is logged and read in order instead."""
    process = await AcpAgent([sys.executable, "-c", AGENT]).open()
    assert isinstance(process, AgentProcess)

    def broken(frame: bytes) -> bool:
        raise RuntimeError("settling failed")

    monkeypatch.setattr(process, "offer_lone_frame", broken)

    async def main(cx: Connection) -> list[object]:
        return [await cx.send_request("echo", {"i": i}) for i in range(3)]

    answers = await asyncio.wait_for(builder([], 0).connect_with(process, main), TIMEOUT)
    assert answers == [{"i": i} for i in range(3)]
    assert "Settling a lone response from the agent failed" in caplog.text


async def test_a_cancelled_request_gets_its_cancellation_answer_and_the_connection_goes_on(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    taken: list[bytes] = []

    async def main(cx: Connection) -> object:
        sent = cx.send_request("slow", {})
        waiting = asyncio.ensure_future(sent)
        await asyncio.sleep(0.1)
        assert not sent.done
        waiting.cancel()  # cancelling the awaiting task sends $/cancel_request
        with pytest.raises(asyncio.CancelledError):
            await waiting
        for _ in range(100):  # the agent's -32800 answer settles the request
            if sent.done:
                break
            await asyncio.sleep(0.02)
        with pytest.raises(RequestCancelled):
            sent.result()
        sent_again = cx.send_request("slow", {})
        sent_again.cancel()
        with pytest.raises(RequestCancelled):
            await sent_again
        return await cx.send_request("echo", {"after": "cancel"})

    agent = await agent_process(monkeypatch, taken)
    assert await asyncio.wait_for(builder([], 0).connect_with(agent, main), TIMEOUT) == {"after": "cancel"}
    assert len(taken) == 3  # both -32800 answers and the echo


async def test_a_request_awaited_under_a_timeout_fails_with_timeout_and_is_cancelled() -> None:
    async def main(cx: Connection) -> object:
        with pytest.raises(TimeoutError):
            async with asyncio.timeout(0.1):
                await cx.send_request("slow", {})
        return await cx.send_request("echo", {"after": "timeout"})

    agent = AcpAgent([sys.executable, "-c", AGENT])
    assert await asyncio.wait_for(builder([], 0).connect_with(agent, main), TIMEOUT) == {"after": "timeout"}


ECHO = r"""
import sys
for line in sys.stdin:
    if '"pair"' in line:  # two frames in one write
        line = '{"take":3}\n{"take":4}\n'
    sys.stdout.write(line)
    sys.stdout.flush()
"""


async def test_the_pipe_offers_a_lone_frame_to_take_and_receive_never_returns_it() -> None:
    process = await AcpAgent([sys.executable, "-c", ECHO]).open()
    assert isinstance(process, AgentProcess)
    taken: list[bytes] = []

    def take(frame: bytes) -> bool:
        taken.append(frame)
        return b"take" in frame

    process.take_lone_frames(take)
    try:
        receiving = asyncio.ensure_future(process.receive())
        await asyncio.sleep(0.05)  # receive() waits for input
        process.send(b'{"take":1}')
        await asyncio.sleep(0.2)
        assert taken == [b'{"take":1}']
        assert not receiving.done()
        process.send(b'{"keep":2}')  # offered, refused: receive() returns it
        assert await asyncio.wait_for(receiving, TIMEOUT) == b'{"keep":2}'
        assert taken == [b'{"take":1}', b'{"keep":2}']
        process.send(b'{"pair":0}')  # two frames in one chunk: never offered
        assert await asyncio.wait_for(process.receive(), TIMEOUT) == b'{"take":3}'
        assert await asyncio.wait_for(process.receive(), TIMEOUT) == b'{"take":4}'
        assert len(taken) == 2
        process.send(b'{"take":5}')  # nobody waits in receive(): not offered
        await asyncio.sleep(0.2)
        assert await asyncio.wait_for(process.receive(), TIMEOUT) == b'{"take":5}'
        assert len(taken) == 2
    finally:
        await process.aclose()
