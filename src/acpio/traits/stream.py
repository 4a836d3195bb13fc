"""Watching a connection's traffic: every message, with its direction, for loggers and inspectors.

``conn.subscribe()`` returns a :class:`Subscription`: an async iterator of :class:`StreamMessage`
that starts with the next message sent or received and ends when the connection closes::

    async def log(messages: Subscription) -> None:
        async for m in messages:
            print(m.direction.value, m.kind, m.method or m.id)

    asyncio.create_task(log(conn.subscribe()))

Messages are seen where they cross the transport, in the order this side sent and read them;
a batch is seen as its entries, in order. A subscription buffers what its reader has not taken
yet (without limit): close it (``close()`` or a ``with`` block) when you stop reading.
"""

from __future__ import annotations

import asyncio
from collections import deque
from dataclasses import dataclass
from typing import Any, Literal

import orjson

from acpio.jsonrpc import JsonValue, RequestId
from acpio.transports.base import OversizedFrame
from acpio.transports.tap import Direction

__all__ = ["StreamDirection", "StreamMessage", "Subscription"]


#: Which way a message went, seen from the connection that reports it: the transports'
#: :class:`~acpio.transports.Direction` (``INCOMING``, ``OUTGOING``), under the name this API had.
StreamDirection = Direction


@dataclass(frozen=True, slots=True)
class StreamMessage:
    """One JSON-RPC message that crossed the connection: its ``direction`` and the decoded ``message``."""

    direction: StreamDirection
    message: JsonValue

    @property
    def kind(self) -> Literal["request", "notification", "response", "invalid"]:
        """``"request"``, ``"notification"``, ``"response"``, or ``"invalid"`` for anything else."""
        message = self.message
        if not isinstance(message, dict):
            return "invalid"
        if isinstance(message.get("method"), str):
            return "request" if "id" in message else "notification"
        if "result" in message or "error" in message:
            return "response"
        return "invalid"

    @property
    def method(self) -> str | None:
        """The method of a request or notification; ``None`` for a response."""
        message = self.message
        method = message.get("method") if isinstance(message, dict) else None
        return method if isinstance(method, str) else None

    @property
    def id(self) -> RequestId:
        """The id of a request or response; ``None`` for a notification."""
        message = self.message
        value = message.get("id") if isinstance(message, dict) else None
        return value if isinstance(value, int | str) else None

    @property
    def params(self) -> JsonValue:
        """The params of a request or notification (``None`` when absent)."""
        return self.message.get("params") if isinstance(self.message, dict) else None


class Subscription:
    """The messages of one connection from the moment of ``subscribe()``: ``async for m in sub``.

    Iteration ends when the connection closes (after the messages already seen) or when
    :meth:`close` is called. :meth:`get_nowait` takes a buffered message without waiting.
    """

    __slots__ = ("_buffer", "_ended", "_hub", "_waiter")

    def __init__(self, hub: StreamHub) -> None:
        self._hub = hub
        self._buffer: deque[StreamMessage] = deque()
        self._waiter: asyncio.Future[None] | None = None
        self._ended = False

    def __repr__(self) -> str:
        state = "ended" if self._ended else "open"
        return f"<Subscription {state} buffered={len(self._buffer)}>"

    @property
    def ended(self) -> bool:
        """Whether no more messages will be added (the connection closed, or :meth:`close` was called)."""
        return self._ended

    def _push(self, item: StreamMessage) -> None:
        self._buffer.append(item)
        self._wake()

    def _end(self) -> None:
        self._ended = True
        self._wake()

    def _wake(self) -> None:
        waiter = self._waiter
        if waiter is not None and not waiter.done():
            waiter.set_result(None)

    def close(self) -> None:
        """Stop receiving messages; iteration ends after those already buffered."""
        self._hub._remove(self)
        self._end()

    def get_nowait(self) -> StreamMessage | None:
        """The next buffered message, or ``None`` if there is none right now."""
        return self._buffer.popleft() if self._buffer else None

    def __enter__(self) -> Subscription:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def __aiter__(self) -> Subscription:
        return self

    async def __anext__(self) -> StreamMessage:
        while not self._buffer:
            if self._ended:
                raise StopAsyncIteration
            self._waiter = asyncio.get_running_loop().create_future()
            try:
                await self._waiter
            finally:
                self._waiter = None
        return self._buffer.popleft()


class StreamHub:
    """The subscriptions of one connection, fed by a :class:`~acpio.transports.Tap` (internal)."""

    __slots__ = ("_closed", "_subscriptions")

    def __init__(self) -> None:
        self._subscriptions: list[Subscription] = []
        self._closed = False

    def subscribe(self) -> Subscription:
        """A new subscription (already ended if the connection has closed)."""
        subscription = Subscription(self)
        if self._closed:
            subscription._end()
        else:
            self._subscriptions.append(subscription)
        return subscription

    def _remove(self, subscription: Subscription) -> None:
        if subscription in self._subscriptions:
            self._subscriptions.remove(subscription)

    def publish(self, direction: Direction, frame: bytes | OversizedFrame) -> None:
        """Decode ``frame`` (only when someone listens) and hand each message to every subscription.

        The observer of the connection's tap; an oversized line, never read, is no message.
        """
        if not self._subscriptions or type(frame) is not bytes:
            return
        try:
            decoded: Any = orjson.loads(frame)
        except orjson.JSONDecodeError:
            decoded = frame.decode("utf-8", "replace")
        entries = decoded if isinstance(decoded, list) and decoded else [decoded]
        for entry in entries:
            item = StreamMessage(direction, entry)
            for subscription in self._subscriptions:
                subscription._push(item)

    def close(self) -> None:
        """End every subscription: the connection is closed."""
        self._closed = True
        subscriptions, self._subscriptions = self._subscriptions, []
        for subscription in subscriptions:
            subscription._end()
