"""A transport that reports every frame it moves, for ``acpio prompt --json``.

:class:`RecordingTransport` wraps the transport to the agent and calls ``record(direction, frame)``
for each frame: ``"send"`` when a frame is queued for the agent, ``"recv"`` when one is read from
it, in that order. The connection above sees exactly what it would see without it.
"""

from __future__ import annotations

from collections.abc import Callable

from acpio.oneshot.render import Direction
from acpio.transports.base import OversizedFrame, Transport

__all__ = ["RecordingTransport"]


class RecordingTransport:
    """``inner``, with each frame sent or received passed to ``record`` first."""

    __slots__ = ("_inner", "_record")

    def __init__(self, inner: Transport, record: Callable[[Direction, bytes], None]) -> None:
        self._inner = inner
        self._record = record

    def __repr__(self) -> str:
        return f"RecordingTransport({self._inner!r})"

    @property
    def inner(self) -> Transport:
        """The transport that moves the frames."""
        return self._inner

    async def receive(self) -> bytes | OversizedFrame | None:
        """The next frame from the agent, recorded as ``"recv"``."""
        frame = await self._inner.receive()
        if type(frame) is bytes:
            self._record("recv", frame)
        return frame

    def send(self, frame: bytes) -> None:
        """Queue ``frame`` for the agent and record it as ``"send"``."""
        self._inner.send(frame)
        self._record("send", frame)

    async def drain(self) -> None:
        """Wait until the inner transport wrote everything queued."""
        await self._inner.drain()

    async def aclose(self) -> None:
        """Close the inner transport."""
        await self._inner.aclose()
