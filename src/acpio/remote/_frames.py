"""What the HTTP and WebSocket transports share: the inbox of received frames, routing keys, SSE framing.

And what their clients send with every request (:func:`auth_headers`).
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import Mapping
from typing import Any, Final

import orjson

from acpio.errors import ConnectionClosed, TransportError
from acpio.transports.base import OversizedFrame

__all__ = [
    "CONNECTION_HEADER",
    "DEFAULT_MAX_BUFFERED",
    "DEFAULT_MAX_MESSAGE",
    "SESSION_HEADER",
    "SESSION_SCOPED_METHODS",
    "Inbox",
    "auth_headers",
    "head_of",
    "id_key",
    "parse",
    "session_of",
    "session_route",
    "sse_event",
]

CONNECTION_HEADER: Final = "acp-connection-id"
SESSION_HEADER: Final = "acp-session-id"

DEFAULT_MAX_MESSAGE: Final = 16 * 1024 * 1024
"""The largest message accepted by default, as the TypeScript SDK's server: 16 MiB."""

DEFAULT_MAX_BUFFERED: Final = 4 * 1024 * 1024
"""Bytes one connection holds that its reader has not taken, each way, before its sender waits: 4 MiB."""

#: Methods whose POST must name its session in ``Acp-Session-Id`` (the TypeScript SDK's list).
SESSION_SCOPED_METHODS: Final = frozenset(
    {
        "session/cancel",
        "session/close",
        "session/delete",
        "session/fork",
        "session/load",
        "session/prompt",
        "session/resume",
        "session/set_config_option",
        "session/set_mode",
        "session/set_model",
    }
)

_HEAD = 200


def parse(frame: bytes) -> dict[str, Any] | None:
    """The JSON object a frame holds, or ``None`` for anything else (invalid JSON, an array)."""
    try:
        value = orjson.loads(frame)
    except orjson.JSONDecodeError:
        return None
    return value if isinstance(value, dict) else None


def session_of(message: dict[str, Any]) -> str | None:
    """``params.sessionId`` of a request or notification, when it is a string."""
    params = message.get("params")
    if isinstance(params, dict):
        session = params.get("sessionId")
        if isinstance(session, str):
            return session
    return None


def session_route(message: dict[str, Any] | None, answered: dict[str, str | None]) -> str | None:
    """The session a message goes with, ``None`` for none.

    A request's or notification's ``params.sessionId``; for an answer, the session ``answered``
    recorded for its request (taken out of it).
    """
    if message is None:
        return None
    if "method" in message:
        return session_of(message)
    key = id_key(message.get("id"))
    return answered.pop(key, None) if key is not None else None


def id_key(value: object) -> str | None:
    """A key telling ``1`` from ``"1"``, for a JSON-RPC id; ``None`` for what cannot be an id."""
    if isinstance(value, bool):
        return None
    if isinstance(value, str):
        return "s" + value
    if isinstance(value, int | float):
        return f"n{value}"
    return None


def auth_headers(token: str | None, headers: Mapping[str, str] | None) -> dict[str, str]:
    """``headers`` and, given a ``token``, ``Authorization: Bearer`` with it: what a client sends."""
    merged = dict(headers or {})
    if token is not None:
        merged["Authorization"] = f"Bearer {token}"
    return merged


def head_of(body: bytes) -> bytes:
    """The start of a message, for an error about it."""
    return body[:_HEAD]


def sse_event(frame: bytes) -> bytes:
    """One SSE event carrying ``frame`` (``data:`` lines, then a blank line)."""
    if b"\n" not in frame and b"\r" not in frame:
        return b"data: " + frame + b"\n\n"
    lines = frame.replace(b"\r\n", b"\n").replace(b"\r", b"\n").split(b"\n")
    return b"".join(b"data: " + line + b"\n" for line in lines) + b"\n"


class Inbox:
    """Frames received and not yet taken by ``receive()``, with a bound on the bytes they hold.

    ``put()`` waits while more than ``limit`` bytes are held (the writer is ahead of the reader);
    ``end()`` is the clean end of input, ``fail()`` a broken one. Both wake every waiter.
    """

    __slots__ = ("_bytes", "_ended", "_failure", "_frames", "_limit", "_reader", "_room")

    def __init__(self, limit: int) -> None:
        self._frames: deque[bytes | OversizedFrame] = deque()
        self._bytes = 0
        self._limit = limit
        self._reader: asyncio.Future[None] | None = None
        self._room: asyncio.Event = asyncio.Event()
        self._room.set()
        self._ended = False
        self._failure: TransportError | None = None

    @property
    def ended(self) -> bool:
        """Whether the input ended (cleanly or not)."""
        return self._ended

    def put_nowait(self, frame: bytes | OversizedFrame) -> None:
        """Add a frame without waiting for room; raises ``ConnectionClosed`` once the input ended."""
        if self._ended:
            raise ConnectionClosed("The connection is closed: it takes no more messages")
        self._frames.append(frame)
        if isinstance(frame, bytes):
            self._bytes += len(frame)
            if self._bytes > self._limit:
                self._room.clear()
        reader = self._reader
        if reader is not None and not reader.done():
            reader.set_result(None)

    async def put(self, frame: bytes | OversizedFrame) -> None:
        """Add a frame once the reader has made room; raises ``ConnectionClosed`` once the input ended."""
        while not self._room.is_set() and not self._ended:
            await self._room.wait()
        self.put_nowait(frame)

    async def get(self) -> bytes | OversizedFrame | None:
        """The next frame; ``None`` at the end; raises the ``TransportError`` of a broken input."""
        while not self._frames:
            if self._ended:
                if self._failure is not None:
                    raise self._failure
                return None
            self._reader = asyncio.get_running_loop().create_future()
            try:
                await self._reader
            finally:
                self._reader = None
        frame = self._frames.popleft()
        if isinstance(frame, bytes):
            self._bytes -= len(frame)
            if self._bytes <= self._limit:
                self._room.set()
        return frame

    def end(self, failure: TransportError | None = None) -> None:
        """End the input after the frames already held (``failure``: it broke)."""
        if self._ended:
            return
        self._ended = True
        self._failure = failure
        self._room.set()
        reader = self._reader
        if reader is not None and not reader.done():
            reader.set_result(None)

    def discard(self) -> None:
        """Drop the frames held: the reader is gone."""
        self._frames.clear()
        self._bytes = 0
        self._room.set()
