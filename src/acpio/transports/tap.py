"""Watching the frames a transport moves: :class:`Tap`.

A :class:`Tap` wraps a transport and shows each frame it moves to an *observer*, a function
``observer(direction, frame)``:

* ``direction`` is :attr:`Direction.INCOMING` for a frame received from the peer, and
  :attr:`Direction.OUTGOING` for a frame sent to it (this is the one direction vocabulary of
  acpio: ``conn.subscribe()``, ``acpio prompt --json`` and the conductor's traces are all fed by a
  tap);
* ``frame`` is the frame's bytes, or the :class:`~acpio.transports.OversizedFrame` that stands in
  for a line too long to read.

The observer is called in the order the frames cross the transport, before a received frame is
returned to the connection and right after a sent frame was queued. It runs on the hot path: keep it
quick, and hand slow work to a task. An observer that raises does not break the connection: its
exception is logged (logger ``acpio.transports``, with the traceback) and the frame goes on as if
the observer had returned; the next frame is shown to it again.

::

    def show(direction: Direction, frame: bytes | OversizedFrame) -> None:
        print(direction.value, frame)

    transport = Tap(await AcpAgent("my-agent").open(), show)
    await Client.builder().connect_with(transport, main)
"""

from __future__ import annotations

import enum
import logging
from collections.abc import Callable
from typing import Final, TypeAlias

from acpio.transports.base import OversizedFrame, Transport

__all__ = ["Direction", "Tap", "TapObserver"]

_log = logging.getLogger("acpio.transports")


class Direction(enum.Enum):
    """Which way a frame (or message) went, seen from the side that reports it."""

    #: Received from the peer.
    INCOMING = "incoming"
    #: Sent to the peer.
    OUTGOING = "outgoing"


#: ``observer(direction, frame)``: called by a :class:`Tap` with each frame it moves.
TapObserver: TypeAlias = Callable[[Direction, bytes | OversizedFrame], None]

_INCOMING: Final = Direction.INCOMING
_OUTGOING: Final = Direction.OUTGOING


class Tap:
    """``inner``, with each frame it receives or sends shown to ``observer`` (see the module docstring).

    ``on_input_end(error)``, if given, is called when ``receive()`` meets the end of the input:
    with ``None`` at a clean end, with the exception when reading failed (which then propagates),
    in both cases before the connection above learns of it. Its own exceptions propagate.
    """

    __slots__ = ("_inner", "_observer", "_on_input_end")

    def __init__(
        self,
        inner: Transport,
        observer: TapObserver,
        *,
        on_input_end: Callable[[BaseException | None], None] | None = None,
    ) -> None:
        self._inner = inner
        self._observer = observer
        self._on_input_end = on_input_end

    def __repr__(self) -> str:
        return f"Tap({self._inner!r})"

    @property
    def inner(self) -> Transport:
        """The transport that moves the frames."""
        return self._inner

    @property
    def max_line(self) -> int | None:
        """The inner transport's ``max_line`` (its longest incoming line), ``None`` when it has none."""
        max_line = getattr(self._inner, "max_line", None)
        return max_line if isinstance(max_line, int) else None

    def statistics(self) -> dict[str, int]:
        """The inner transport's ``statistics()``; empty when it keeps none."""
        statistics = getattr(self._inner, "statistics", None)
        return statistics() if callable(statistics) else {}

    async def receive(self) -> bytes | OversizedFrame | None:
        """The next frame of the inner transport, shown to the observer as incoming."""
        try:
            frame = await self._inner.receive()
        except Exception as exc:
            if self._on_input_end is not None:
                self._on_input_end(exc)
            raise
        if frame is None:
            if self._on_input_end is not None:
                self._on_input_end(None)
            return None
        try:
            self._observer(_INCOMING, frame)
        except Exception:
            _log.exception("The observer of %r failed on an incoming frame", self)
        return frame

    def send(self, frame: bytes) -> None:
        """Queue ``frame`` on the inner transport, then show it to the observer as outgoing.

        A frame the inner transport refuses (it raises) is not shown.
        """
        self._inner.send(frame)
        try:
            self._observer(_OUTGOING, frame)
        except Exception:
            _log.exception("The observer of %r failed on an outgoing frame", self)

    async def drain(self) -> None:
        """Wait until the inner transport wrote everything queued."""
        await self._inner.drain()

    async def aclose(self) -> None:
        """Close the inner transport."""
        await self._inner.aclose()
