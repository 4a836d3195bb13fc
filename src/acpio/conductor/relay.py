"""Notifications passed through the conductor as bytes: what a hop need not read, it does not re-encode.

The conductor routes a notification by its envelope alone: its method, and whether a proxy wrapped
it in ``proxy/successor``. The engine would decode the whole frame into Python values, offer it to
the connection's handlers, and encode it again on the next hop (wrapped or unwrapped), twice per
proxy. A :class:`Relay` on each of a run's connections looks at every frame before the connection
does; a notification written the way JSON-RPC peers write them (acpio, the TypeScript SDK)::

    {"jsonrpc":"2.0","method":"session/update","params":{...}}
    {"jsonrpc":"2.0","method":"proxy/successor","params":{"method":"session/update","params":{...}}}

is read with :func:`read_notification` (the head matched byte for byte, the params parsed once to
check them) and handed to the run's :class:`~acpio.conductor.delivery.Delivery`, which sends it
on spliced from the bytes it came with (:func:`plain_frame`, :func:`wrapped_frame`): the next hop
gets what the engine would have written, with the sender's own spelling of the params (the same
JSON value). Nothing else takes this path: requests (each hop has its own ids), responses,
batches, ``$/cancel_request``, initialization, an envelope with its own ``_meta``, another key
order or spacing, or params that are not valid JSON go to the connection as before, so bad input
is still answered at the first hop. A frame taken here is one the connection would have forwarded
at the same point of its input: the order of what each component sends is kept.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Final

import orjson

from acpio.jsonrpc.messages import NOTIFICATION_HEAD, JsonValue, method_at
from acpio.transports.base import OversizedFrame

from .batches import Gathering

__all__ = ["RawNotification", "Relay", "plain_frame", "read_notification", "wrapped_frame"]

#: How every frame passed on starts.
_HEAD: Final = NOTIFICATION_HEAD
#: Where the method name starts.
_AT: Final = len(_HEAD)
#: How an envelope's params start (its inner message's method name follows).
_INNER: Final = b'{"method":"'
#: ``{"jsonrpc":"2.0",`` before a message's ``"method"``.
_JSONRPC: Final = b'{"jsonrpc":"2.0",'
#: The envelope methods, current and legacy.
_SUCCESSORS: Final = frozenset({"proxy/successor", "_proxy/successor"})


class RawNotification:
    """A notification read from its frame's bytes: enough to route it and to write it on."""

    __slots__ = ("body", "frame", "method", "params", "start", "successor")

    def __init__(
        self, frame: bytes, method: str, successor: str | None, body: int, start: int, params: JsonValue
    ) -> None:
        #: The frame as received.
        self.frame = frame
        #: The logical method (the inner one of an envelope).
        self.method = method
        #: The envelope's method (``proxy/successor`` or ``_proxy/successor``), or ``None`` if plain.
        self.successor = successor
        #: Where ``"method":...,"params":...`` of the (inner) message starts in :attr:`frame`.
        self.body = body
        #: Where the params' JSON text starts in :attr:`frame`.
        self.start = start
        #: The params, decoded (an object or an array).
        self.params = params

    @property
    def end(self) -> int:
        """Where the (inner) message ends in :attr:`frame`, counted from its end: before ``}`` or ``}}``."""
        return -2 if self.successor is not None else -1

    @property
    def params_json(self) -> bytes:
        """The params' JSON text, as the sender wrote it."""
        return self.frame[self.start : self.end]


def read_notification(frame: bytes) -> RawNotification | None:
    """The notification ``frame`` is, if written in the shape this module passes on; else ``None``.

    ``None`` means only "not here": the frame may be a request, a response, a batch, written
    otherwise, or bad input; the connection reads it as usual. A frame with a newline is left to
    it too (it could not go on a line transport as it is).
    """
    if not frame.startswith(_HEAD):
        return None
    found = method_at(frame, _AT)
    if found is None:
        return None
    method, start = found
    successor: str | None = None
    body, end = len(_JSONRPC), -1
    if method in _SUCCESSORS and frame.startswith(_INNER, start):
        found = method_at(frame, start + len(_INNER))
        if found is None:
            return None
        successor, body, end = method, start + 1, -2
        method, start = found
    if not frame.endswith(_CLOSE[end]) or b"\n" in frame:
        return None
    try:
        params = orjson.loads(frame[start:end])  # checked as the engine would check it
    except orjson.JSONDecodeError:
        return None
    if type(params) is not dict and type(params) is not list:
        return None
    return RawNotification(frame, method, successor, body, start, params)


#: How a plain frame (``-1``) and an envelope frame (``-2``) end.
_CLOSE: Final = {-1: b"}", -2: b"}}"}


def _body(note: RawNotification) -> memoryview:
    return memoryview(note.frame)[note.body : note.end]


def plain_frame(note: RawNotification) -> bytes:
    """``note`` as a plain notification (unwrapped if it came in an envelope)."""
    if note.successor is None:
        return note.frame
    return b"".join((_JSONRPC, _body(note), b"}"))


def wrapped_frame(note: RawNotification, successor: str) -> bytes:
    """``note`` in a ``successor`` envelope (``proxy/successor`` or ``_proxy/successor``)."""
    return b"".join((_HEAD, successor.encode(), b'","params":{', _body(note), b"}}"))


class Relay:
    """``inner``, whose notifications ``pass_on`` may send on before the connection sees them.

    ``pass_on(note)`` returns the transport it sent ``note`` on, or ``None`` to leave the frame to
    the connection. After a notification went on, the relay waits, as the connection would, while
    that transport has much unwritten (backpressure): the component that sent it is read no
    further meanwhile. ``watch(frame)``, if given, sees each frame left to the connection, before
    the connection does (the trace looks for responses there).
    """

    __slots__ = ("_inner", "_pass_on", "_watch")

    def __init__(
        self,
        inner: Gathering,
        pass_on: Callable[[RawNotification], Gathering | None],
        watch: Callable[[bytes], None] | None = None,
    ) -> None:
        self._inner = inner
        self._pass_on = pass_on
        self._watch = watch

    def __repr__(self) -> str:
        return f"Relay({self._inner!r})"

    @property
    def inner(self) -> Gathering:
        """The transport underneath."""
        return self._inner

    async def receive(self) -> bytes | OversizedFrame | None:
        """The next frame that is not passed on here."""
        receive = self._inner.receive
        pass_on = self._pass_on
        while True:
            frame = await receive()
            if type(frame) is not bytes:
                return frame
            if frame.startswith(_HEAD) and (note := read_notification(frame)) is not None:
                target = pass_on(note)
                if target is not None:
                    if target.due:
                        await target.drain_forwarded()
                    continue
            if self._watch is not None:
                self._watch(frame)
            return frame

    def send(self, frame: bytes) -> None:
        """Send ``frame`` on the inner transport."""
        self._inner.send(frame)

    async def drain(self) -> None:
        """Wait until the inner transport wrote what it was given."""
        await self._inner.drain()

    async def aclose(self) -> None:
        """Close the inner transport."""
        await self._inner.aclose()
