"""The one interface every transport implements.

A transport moves *frames*: one JSON text per message, as bytes, without the newline. It knows
nothing of JSON-RPC. The connection (``acpio.jsonrpc``) reads frames with :meth:`Transport.receive`
and queues frames with :meth:`Transport.send`; stdio, byte streams, subprocesses and the in-process
channel are adapters to this protocol.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

__all__ = [
    "BufferedFrames",
    "Component",
    "FrameSink",
    "LoneFrames",
    "OversizedFrame",
    "SendsThrough",
    "Transport",
    "sink_of",
]


@dataclass(frozen=True, slots=True)
class OversizedFrame:
    """Stands in for a line longer than the transport's maximum, which was skipped unread.

    The connection answers it with an error instead of dispatching it. ``head`` is the start of
    the line (enough to show in an error), ``size`` the number of bytes that were skipped.
    """

    size: int
    head: bytes


@runtime_checkable
class Transport(Protocol):
    """Frames in and out.

    * ``receive()`` returns the next frame, an :class:`OversizedFrame` for a line that was too long,
      or ``None`` at a clean end of input. A read failure raises :class:`acpio.TransportError`.
    * ``send(frame)`` queues a frame and never blocks: transports batch queued frames into as few
      writes as they can. It raises :class:`acpio.ConnectionClosed` once the transport is closed.
    * ``drain()`` waits until every queued frame has been written (or the write side failed).
    * ``aclose()`` flushes what it can, then releases the transport; calling it twice is harmless.
    """

    async def receive(self) -> bytes | OversizedFrame | None:
        """The next incoming frame; ``None`` at end of input."""
        ...

    def send(self, frame: bytes) -> None:
        """Queue one outgoing frame (no trailing newline)."""
        ...

    async def drain(self) -> None:
        """Wait until every queued frame is written."""
        ...

    async def aclose(self) -> None:
        """Flush, then close both directions."""
        ...


@runtime_checkable
class LoneFrames(Protocol):
    """A transport that can hand a lone frame over from its input callback, before ``receive()`` would.

    Optional: a connection whose transport has it settles a response that arrives alone, while it
    waits for input, without waking its reading task (``acpio.jsonrpc``'s dispatch loop).
    """

    def take_lone_frames(self, take: Callable[[bytes], bool] | None) -> None:
        """Offer ``take(frame)`` each frame that arrives alone while ``receive()`` waits; ``None``: stop.

        Offered only while nothing received before is pending. ``take`` returns ``True`` when it
        consumed the frame, which ``receive()`` then never returns.
        """
        ...


@runtime_checkable
class BufferedFrames(Protocol):
    """A transport that hands over a frame it already holds with a plain call, before ``receive()`` would.

    Optional: a connection whose transport has it reads a burst of buffered frames without a
    coroutine per frame (``acpio.jsonrpc``'s dispatch loop), and awaits ``receive()`` only when
    nothing is held.
    """

    def receive_nowait(self) -> bytes | OversizedFrame | None:
        """The frame ``receive()`` would return at once, if one is held; ``None`` if none is.

        ``None`` does not mean the end of input: ``receive()`` reports that.
        """
        ...


class FrameSink(Protocol):
    """What queues outgoing frames: ``send(frame)``, as :meth:`Transport.send` describes it."""

    def send(self, frame: bytes) -> None:
        """Queue one outgoing frame (no trailing newline)."""
        ...


@runtime_checkable
class SendsThrough(Protocol):
    """A transport whose ``send(frame)`` only hands the frame to another object's ``send``.

    Optional: a connection whose transport has it calls ``frame_sink.send(frame)`` itself, one call
    per frame sent instead of two (``acpio.jsonrpc``'s outbox; see :func:`sink_of`). ``frame_sink``
    is read once, when the connection is made: for the transport's whole life it must be what
    ``send()`` hands its frames to, and its ``send`` must check what ``send()`` checks (after
    ``aclose()`` it raises :class:`~acpio.ConnectionClosed`). ``acpio.testing.check_transport``
    checks both.
    """

    @property
    def frame_sink(self) -> FrameSink:
        """The object whose ``send`` queues this transport's frames, exactly as ``send()`` would."""
        ...


def sink_of(transport: Transport) -> FrameSink:
    """What queues ``transport``'s frames: its ``frame_sink`` when it :class:`SendsThrough`, else itself."""
    return transport.frame_sink if isinstance(transport, SendsThrough) else transport


@runtime_checkable
class Component(Protocol):
    """Something a connection can be made to: a spawned agent process, a builder, a server.

    ``open()`` starts it and returns the transport that talks to it. Closing that transport ends
    the component (a subprocess is terminated, an in-process builder sees end of input).
    A :class:`Transport` is used as it is; anything else a connection is asked to connect to
    must be a ``Component``.
    """

    async def open(self) -> Transport:
        """Start the component; the returned transport talks to it."""
        ...
