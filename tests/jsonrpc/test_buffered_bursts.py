"""A burst of frames read in one chunk: taken without a coroutine per frame, dispatched as one by one.

The dispatch loop takes a frame the transport already holds with ``receive_nowait()`` and the
chain's lock with a plain call when it is free (:class:`~acpio.jsonrpc.dispatch_lock.DispatchLock`).
Whatever a handler does meanwhile (await, add a handler, close, get its task cancelled), each
message of the burst is dispatched once, in order, after the previous one's handler returned; a
handler added from outside the loop joins between two messages of the burst. On both event loops.
"""

from __future__ import annotations

import asyncio
from typing import Any, ClassVar

import orjson
import pytest
from pydantic import BaseModel

from acpio.jsonrpc import Connection, Dispatch, NotificationDispatch, Unhandled, UntypedRole
from acpio.jsonrpc.dispatch_lock import DispatchLock
from acpio.transports import Lines

from ._support import TIMEOUT, Note

BOTH_EVENT_LOOPS = True


class Other(BaseModel):
    """A notification no builder handler takes: decoded whole, offered to dynamic handlers."""

    METHOD: ClassVar[str] = "other"
    text: str


def frame(method: str, text: str) -> bytes:
    return orjson.dumps({"jsonrpc": "2.0", "method": method, "params": {"text": text}})


class Burst:
    """A transport reading ``frames`` in one chunk, then waiting for ``end`` before its end of input."""

    def __init__(self, frames: list[bytes]) -> None:
        self.chunks = [b"".join(f + b"\n" for f in frames)]
        self.end = asyncio.Event()
        self.reads = 0

    async def read(self) -> bytes:
        self.reads += 1
        if self.chunks:
            return self.chunks.pop(0)
        await self.end.wait()
        return b""

    async def write(self, data: bytes) -> None:
        pass

    def lines(self) -> Lines:
        return Lines(self.read, self.write)


async def test_a_handler_that_awaits_holds_back_the_rest_of_the_burst() -> None:
    events: list[str] = []
    burst = Burst([frame("note", str(i)) for i in range(30)])
    server = UntypedRole.builder(name="burst")

    @server.on_notification
    async def note(n: Note) -> None:
        events.append(f"start {n.text}")
        for _ in range(3):
            await asyncio.sleep(0)
        if n.text == "29":
            burst.end.set()
        events.append(f"end {n.text}")

    async with asyncio.timeout(TIMEOUT):
        await server.serve(burst.lines())
    assert events == [e for i in range(30) for e in (f"start {i}", f"end {i}")]
    assert burst.reads == 2  # the burst in one read, then the end of input


async def test_a_handler_added_inside_a_handler_sees_the_rest_of_the_burst_once_in_order() -> None:
    seen: list[str] = []
    frames = [f for i in range(10) for f in (frame("note", str(i)), frame("other", str(i)))]
    burst = Burst(frames)
    server = UntypedRole.builder(name="burst")

    async def others(message: Dispatch) -> Unhandled | None:
        if message.method != "other":
            return Unhandled(message)
        assert isinstance(message, NotificationDispatch)
        seen.append(message.parse(Other).text)
        if message.parse(Other).text == "9":
            burst.end.set()
        return None

    @server.on_notification
    async def note(n: Note, cx: Connection) -> None:
        if n.text == "4":
            cx.add_dynamic_handler(others).run_indefinitely()
            await asyncio.sleep(0)

    async with asyncio.timeout(TIMEOUT):
        await server.serve(burst.lines())
    assert seen == [str(i) for i in range(4, 10)]


async def test_a_handler_added_from_outside_joins_between_two_messages_of_the_burst() -> None:
    """Added while the loop holds the lock (a handler awaits): it is in the chain for the next message."""
    seen: list[str] = []
    first_running = asyncio.Event()
    go_on = asyncio.Event()
    burst = Burst([frame("note", "0"), *(frame("other", str(i)) for i in range(5))])
    server = UntypedRole.builder(name="burst")

    async def others(message: Dispatch) -> Unhandled | None:
        if message.method != "other":
            return Unhandled(message)
        text = message.parse(Other).text
        seen.append(text)
        if text == "4":
            burst.end.set()
        return None

    @server.on_notification
    async def note(n: Note) -> None:
        first_running.set()
        await go_on.wait()

    async def main(cx: Connection) -> None:
        await first_running.wait()
        cx.add_dynamic_handler(others).run_indefinitely()  # from this task: activated by a task of its own
        for _ in range(5):
            await asyncio.sleep(0)  # the activation now waits for the lock the loop holds
        go_on.set()
        await burst.end.wait()

    async with asyncio.timeout(TIMEOUT):
        await server.connect_with(burst.lines(), main)
    assert seen == ["0", "1", "2", "3", "4"]


@pytest.mark.parametrize("how", ["close", "cancel"])
async def test_the_rest_of_a_burst_is_not_dispatched_once_the_connection_stops(how: str) -> None:
    delivered: list[str] = []
    cancelled: list[str] = []
    burst = Burst([frame("note", str(i)) for i in range(20)])
    server = UntypedRole.builder(name="burst")
    serving: asyncio.Task[None] | None = None

    @server.on_notification
    async def note(n: Note, cx: Connection) -> None:
        delivered.append(n.text)
        if n.text != "7":
            return
        if how == "close":
            await cx.close()
            return
        assert serving is not None
        serving.cancel()
        try:
            await asyncio.sleep(TIMEOUT)
        except asyncio.CancelledError:
            cancelled.append(n.text)
            raise

    serving = asyncio.ensure_future(server.serve(burst.lines()))
    async with asyncio.timeout(TIMEOUT):
        if how == "cancel":
            with pytest.raises(asyncio.CancelledError):
                await serving
        else:
            await serving
    assert delivered == [str(i) for i in range(8)]
    assert cancelled == (["7"] if how == "cancel" else [])


class _Overriding(Lines):
    """A subclass with its own ``receive()``: every frame must go through it."""

    def __init__(self, burst: Burst) -> None:
        super().__init__(burst.read, burst.write)
        self.received = 0

    async def receive(self) -> Any:
        frame = await super().receive()
        if frame is not None:
            self.received += 1
        return frame


async def test_receive_nowait_hands_over_buffered_frames_in_order_and_never_past_a_subclass() -> None:
    burst = Burst([frame("note", str(i)) for i in range(3)])
    lines = burst.lines()
    assert lines.receive_nowait() is None  # nothing read yet
    assert await lines.receive() == frame("note", "0")
    assert [lines.receive_nowait(), lines.receive_nowait()] == [frame("note", "1"), frame("note", "2")]
    assert lines.receive_nowait() is None

    burst = Burst([frame("note", str(i)) for i in range(5)])
    overriding = _Overriding(burst)
    texts: list[str] = []
    server = UntypedRole.builder(name="burst")

    @server.on_notification
    async def note(n: Note) -> None:
        texts.append(n.text)
        if n.text == "4":
            burst.end.set()

    async with asyncio.timeout(TIMEOUT):
        await server.serve(overriding)
    assert texts == ["0", "1", "2", "3", "4"]
    assert overriding.received == 5


# --- the lock -------------------------------------------------------------------------------------


async def test_the_lock_is_taken_without_waiting_when_free_and_handed_on_in_order() -> None:
    lock = DispatchLock()
    assert lock.try_acquire()
    assert lock.locked()
    assert not lock.try_acquire()
    order: list[str] = []

    async def take(name: str) -> None:
        await lock.acquire()
        order.append(name)
        await asyncio.sleep(0)
        lock.release()

    first = asyncio.ensure_future(take("first"))
    second = asyncio.ensure_future(take("second"))
    await asyncio.sleep(0)
    lock.release()
    # Free, but "first" was woken and has not run yet: not taken past it.
    assert not lock.locked()
    assert not lock.try_acquire()
    await asyncio.gather(first, second)
    assert order == ["first", "second"]
    assert lock.try_acquire()
    lock.release()


async def test_a_cancelled_waiter_does_not_keep_the_lock_from_the_others() -> None:
    lock = DispatchLock()
    assert lock.try_acquire()
    waiting = asyncio.ensure_future(lock.acquire())
    after = asyncio.ensure_future(lock.acquire())
    await asyncio.sleep(0)
    waiting.cancel()
    lock.release()
    with pytest.raises(asyncio.CancelledError):
        await waiting
    await asyncio.wait_for(after, TIMEOUT)
    assert lock.locked()
    lock.release()
    assert not lock.locked()
    with pytest.raises(RuntimeError, match="not held"):
        lock.release()
