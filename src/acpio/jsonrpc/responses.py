"""The two ends of a request: answering one (:class:`Responder`), waiting for one (:class:`SentRequest`).

* :class:`Responder` answers a request the peer sent. The first completion wins; later ones are
  ignored (and logged at debug level). It also tells the handler whether the peer cancelled the
  request with ``$/cancel_request``.
* :class:`SentRequest` is a request this side sent. ``await sent`` gives the result (or raises the
  error) from a spawned task or from ``connect_with``'s main; awaiting it inside a handler raises
  :class:`~acpio.DeadlockError` at once, since only the busy dispatch loop could read the answer.
  ``on_receiving_result`` registers a callback that the dispatch loop runs before it dispatches the
  next message.
* :class:`ResponseRouter` delivers a response that arrived for one of our requests to whatever
  waits for it; handlers that intercept responses get one.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable, Coroutine, Generator
from typing import TYPE_CHECKING, Any, Generic, Protocol, TypeAlias, TypeVar, cast

from acpio.errors import (
    AcpError,
    DeadlockError,
    InternalError,
    RequestCancelled,
    RequestError,
)
from acpio.jsonrpc.messages import JsonValue, RequestId
from acpio.jsonrpc.pending import CancelFlag

if TYPE_CHECKING:
    from acpio.jsonrpc.role import PeerLike

__all__ = [
    "Answering",
    "Awaiting",
    "Outcome",
    "PendingReply",
    "Responder",
    "ResponseRouter",
    "SentRequest",
    "as_request_error",
]

_log = logging.getLogger("acpio.jsonrpc")

T = TypeVar("T")
U = TypeVar("U")
R = TypeVar("R")

#: A settled outcome: the raw JSON result, or the error that replaced it.
Outcome: TypeAlias = "JsonValue | BaseException"


def as_request_error(error: BaseException) -> RequestError:
    """``error`` as something that can be sent on the wire (non-protocol errors become -32603)."""
    if isinstance(error, RequestError):
        return error
    return InternalError({"reason": str(error)})


class Awaiting(Protocol):
    """What a request this side sent needs from the connection that carries it."""

    @property
    def name(self) -> str:
        """The connection's name, for error messages."""
        ...

    def in_dispatch_loop(self) -> bool:
        """Whether the current task is the connection's dispatch loop (awaiting there deadlocks)."""
        ...

    def run_response_callback(self, callback: Callable[[Outcome], Awaitable[None]], outcome: Outcome) -> None:
        """Run ``await callback(outcome)``: in the dispatch loop before its next message, else as a task."""
        ...

    def cancel_request(self, reply: PendingReply) -> None:
        """Send ``$/cancel_request`` for ``reply`` (nothing when the connection is closed)."""
        ...


class Answering(Protocol):
    """What a :class:`Responder` needs from the connection that carries its request."""

    def answer(self, responder: Responder[Any], value: Any, error: RequestError | None) -> None:
        """Send the answer of ``responder`` (called once, by the responder)."""
        ...

    def unanswered(self, responder: Responder[Any]) -> None:
        """``responder`` was garbage-collected without an answer."""
        ...


class PendingReply:
    """The connection's record of one outgoing request: what the response settles, once."""

    __slots__ = (
        "callback",
        "cancel_sent",
        "carrier",
        "future",
        "id",
        "method",
        "outcome",
        "peer",
        "settled",
        "sink",
        "trace",
    )

    def __init__(self, carrier: Awaiting, method: str, peer: PeerLike | None) -> None:
        self.carrier = carrier
        self.method = method
        self.peer = peer
        self.id: RequestId = None
        self.settled = False
        self.outcome: Outcome = None
        self.future: asyncio.Future[None] | None = None
        #: An async consumer the dispatch loop awaits before the next message (on_receiving_result).
        self.callback: Callable[[Outcome], Awaitable[None]] | None = None
        #: A sync consumer run as soon as the outcome is known (forward_response_to).
        self.sink: Callable[[Outcome], None] | None = None
        self.cancel_sent = False
        #: The tracer's end of this request (``acpio.jsonrpc.tracing``), when one is installed.
        self.trace: Callable[[Outcome], None] | None = None

    def settle(self, outcome: Outcome) -> bool:
        """Record the outcome (a raw result, or an exception) and wake its consumer. First one wins."""
        if self.settled:
            _log.debug("Ignoring a second outcome for request %r (%s)", self.id, self.method)
            return False
        self.settled = True
        self.outcome = outcome
        if self.trace is not None:
            self.trace(outcome)
        if self.sink is not None:
            try:
                self.sink(outcome)
            except Exception:
                _log.exception("Forwarding the response to %r failed", self.method)
        elif self.callback is not None:
            self.carrier.run_response_callback(self.callback, outcome)
        future = self.future
        if future is not None and not future.done():
            future.set_result(None)
        return True


class _OurRequest:
    """What a handle on one of our outgoing requests can say about it."""

    __slots__ = ()
    _reply: PendingReply

    @property
    def id(self) -> RequestId:
        """The JSON-RPC id our request was sent with."""
        return self._reply.id

    @property
    def method(self) -> str:
        """The method of our request."""
        return self._reply.method

    @property
    def done(self) -> bool:
        """Whether the response (or the error that replaces it) has been delivered."""
        return self._reply.settled


class SentRequest(_OurRequest, Generic[T]):
    """A request this side sent; await it (outside handlers) or register what to do with the answer.

    ``await sent`` returns the result (parsed into the request's ``RESPONSE`` type when it has one)
    or raises: the peer's error as the matching :class:`~acpio.RequestError` subclass,
    :class:`~acpio.ConnectionClosed` if the connection ended first. Cancelling the awaiting task
    sends ``$/cancel_request`` to the peer.
    """

    __slots__ = ("_cached", "_has_cached", "_parse", "_reply")

    def __init__(self, reply: PendingReply, parse: Callable[[JsonValue], T]) -> None:
        self._reply = reply
        self._parse = parse
        self._has_cached = False
        self._cached: Any = None

    def __repr__(self) -> str:
        state = "done" if self._reply.settled else "pending"
        return f"<SentRequest {self.method!r} id={self.id!r} {state}>"

    def _value(self, outcome: Outcome) -> T:
        """The consumer's view of a settled outcome: the parsed value, or raise the error."""
        if isinstance(outcome, BaseException):
            raise outcome
        if self._has_cached:
            return self._cached  # type: ignore[no-any-return]
        value = self._parse(outcome)
        self._cached = value
        self._has_cached = True
        return value

    def _as_result(self, outcome: Outcome) -> T | AcpError:
        try:
            return self._value(outcome)
        except AcpError as error:
            return error

    def __await__(self) -> Generator[Any, None, T]:
        # A generator, not a coroutine awaited inside one: awaiting a request is the round trip's
        # path, and the extra coroutine cost a frame and a layer of resumption per request.
        reply = self._reply
        if not reply.settled:
            future = self._waiter()
            try:
                yield from future
            except asyncio.CancelledError:
                if future.cancelled():
                    reply.future = None
                self.cancel()
                raise
        return self._value(reply.outcome)

    def result(self) -> T:
        """The answer, read now without waiting: the value, or raise the error (as ``await`` would).

        Raises ``asyncio.InvalidStateError`` while the answer has not arrived (see :attr:`done`).
        Unlike ``await``, it may be called inside a handler.
        """
        reply = self._reply
        if not reply.settled:
            raise asyncio.InvalidStateError(f"No answer to {reply.method!r} (id {reply.id!r}) yet")
        return self._value(reply.outcome)

    def _waiter(self) -> asyncio.Future[None]:
        """The future the response settles, for a task that may wait for it (not the dispatch loop)."""
        reply = self._reply
        carrier = reply.carrier
        if carrier.in_dispatch_loop():
            self.cancel()  # it was sent already: tell the peer not to act on it (ask the user...)
            raise DeadlockError(
                f"Awaiting the response to {reply.method!r} inside a handler of connection "
                f"{carrier.name!r} would deadlock: only this same dispatch loop can read it. "
                "Move the await into cx.spawn(...), or use sent.on_receiving_result(callback)."
            )
        future = reply.future
        if future is None:
            future = reply.future = asyncio.get_running_loop().create_future()
        return future

    def _claim(self) -> None:
        reply = self._reply
        if reply.callback is not None or reply.sink is not None:
            raise RuntimeError(
                f"The response to {reply.method!r} already has a consumer; register only one of "
                "on_receiving_result, on_receiving_ok_result or forward_response_to."
            )

    def on_receiving_result(self, callback: Callable[[T | AcpError], Awaitable[object]]) -> None:
        """Run ``await callback(result)`` when the answer arrives; returns at once.

        ``result`` is the value, or the error (a :class:`~acpio.RequestError`, or
        :class:`~acpio.ConnectionClosed`). Registered before the response is dispatched, the callback
        runs *inside* the dispatch loop, which waits for it before the next message (so a handler it
        installs sees everything that follows). It must therefore not await other responses. An
        exception raised by the callback fails the connection.
        """
        self._claim()

        async def consume(outcome: Outcome) -> None:
            await callback(self._as_result(outcome))

        reply = self._reply
        reply.callback = consume
        if reply.settled:
            reply.carrier.run_response_callback(consume, reply.outcome)

    def on_receiving_ok_result(
        self, responder: Responder[Any], callback: Callable[[T, Responder[Any]], Awaitable[object]]
    ) -> None:
        """Like :meth:`on_receiving_result`, but an error answers ``responder`` and skips ``callback``."""

        async def consume(result: T | AcpError) -> None:
            if isinstance(result, AcpError):
                responder.respond_with_error(result)
            else:
                await callback(result, responder)

        self.on_receiving_result(consume)

    def forward_response_to(self, responder: Responder[Any]) -> None:
        """Answer ``responder`` with this request's response (result or error), unparsed.

        If the peer of ``responder`` cancels its request, ``$/cancel_request`` is sent for this one
        (with this request's own id). If this connection ends first, ``responder`` gets an error.
        """
        self._claim()
        reply = self._reply

        def forward(outcome: Outcome) -> None:
            responder._remove_cancel_callback(self.cancel)
            if isinstance(outcome, BaseException):
                responder.respond_with_error(outcome)
            else:
                responder.respond(outcome)

        reply.sink = forward
        if reply.settled:
            forward(reply.outcome)
        else:
            responder._add_cancel_callback(self.cancel)

    def forward_cancellation_from(self, responder: Responder[Any]) -> SentRequest[T]:
        """Cancel this request (with its own id) when the peer of ``responder`` cancels its request.

        :meth:`forward_response_to` does this by itself; use this method when the response goes
        elsewhere (for example to :meth:`on_receiving_result`). Returns ``self``.
        """
        if not self._reply.settled:
            responder._add_cancel_callback(self.cancel)
        return self

    def map(self, fn: Callable[[T], U]) -> SentRequest[U]:
        """A view of this request whose value is ``fn(value)``; ``fn`` runs at most once, errors skip it."""

        def parse(raw: JsonValue) -> U:
            return fn(self._value(raw))

        return SentRequest(self._reply, parse)

    def cancel(self) -> None:
        """Ask the peer to cancel this request (``$/cancel_request``), once; no-op once answered.

        The request still gets exactly one answer: the result, or ``RequestCancelled`` (-32800).
        """
        reply = self._reply
        if reply.settled or reply.cancel_sent:
            return
        reply.cancel_sent = True
        reply.carrier.cancel_request(reply)


class Responder(Generic[T]):
    """Answers one incoming request; the first answer wins, later ones are ignored.

    Answer with :meth:`respond`, :meth:`respond_with_error` or :meth:`respond_with_result`.
    A handler may also just ``return`` the value. The responder can be kept and answered later, from
    a spawned task. :attr:`cancelled`, :meth:`wait_cancelled` and :meth:`run_until_cancelled` tell
    whether the peer sent ``$/cancel_request`` for it; the request still gets exactly one answer.
    """

    # __weakref__: a client's connection tracks pending session/request_permission responders
    # weakly, so that one its handler dropped is still answered by the engine.
    __slots__ = ("__weakref__", "_answering", "_cancel", "_done", "id", "method", "trace")

    def __init__(
        self, answering: Answering, request_id: RequestId, method: str, cancel: CancelFlag | None = None
    ) -> None:
        self._answering = answering
        self.id = request_id
        self.method = method
        self._done = False
        self._cancel = cancel if cancel is not None else CancelFlag()
        #: Told of the answer by the connection, when a tracer follows it (``acpio.jsonrpc.tracing``).
        self.trace: Callable[[RequestError | None], None] | None = None

    def __repr__(self) -> str:
        return f"<Responder {self.method!r} id={self.id!r}{' done' if self._done else ''}>"

    @property
    def done(self) -> bool:
        """Whether an answer has been sent."""
        return self._done

    def respond(self, value: T) -> None:
        """Answer with ``value`` (a typed object, or any JSON value)."""
        if self._done:
            _log.debug("Ignoring a second answer to request %r (%s)", self.id, self.method)
            return
        self._done = True
        self._answering.answer(self, value, None)

    def respond_with_error(self, error: BaseException) -> None:
        """Answer with ``error``; anything but a :class:`~acpio.RequestError` is sent as -32603."""
        if self._done:
            _log.debug("Ignoring a second answer to request %r (%s)", self.id, self.method)
            return
        self._done = True
        self._answering.answer(self, None, as_request_error(error))

    def respond_with_result(self, result: T | BaseException) -> None:
        """Answer with ``result``: an exception is sent as an error, anything else as the result."""
        if isinstance(result, BaseException):
            self.respond_with_error(result)
        else:
            self.respond(result)

    def respond_with_internal_error(self, message: str) -> None:
        """Answer with -32603 carrying ``message`` as its data."""
        self.respond_with_error(InternalError(message))

    # --- cancellation -------------------------------------------------------------------------------

    @property
    def cancel_flag(self) -> CancelFlag:
        """The flag :meth:`mark_cancelled` sets (the connection finds it by the request's id)."""
        return self._cancel

    @property
    def cancelled(self) -> bool:
        """Whether the peer asked to cancel this request, or its answer is no longer wanted.

        The second case: a client's connection answered a ``session/request_permission`` with the
        ``cancelled`` outcome because the client cancelled the turn (``session/cancel``).
        """
        return self._cancel.cancelled

    def mark_cancelled(self) -> None:
        """Mark the request cancelled from this side: its answer is no longer wanted.

        Work watching :attr:`cancelled` (``wait_cancelled``, ``run_until_cancelled``) stops as if
        the peer had sent ``$/cancel_request``. The request still gets exactly one answer. The
        connection calls this when ``$/cancel_request`` arrives; a client's connection, for the
        permission requests it answers ``cancelled`` itself.
        """
        self._cancel.set()

    def _add_cancel_callback(self, callback: Callable[[], object]) -> None:
        self._cancel.add_callback(callback)

    def _remove_cancel_callback(self, callback: Callable[[], object]) -> None:
        self._cancel.remove_callback(callback)

    async def wait_cancelled(self) -> None:
        """Wait until the peer cancels this request (returns at once if it already did)."""
        if self.cancelled:
            return
        future: asyncio.Future[None] = asyncio.get_running_loop().create_future()

        def wake() -> None:
            if not future.done():
                future.set_result(None)

        self._add_cancel_callback(wake)
        try:
            await future
        finally:
            self._remove_cancel_callback(wake)

    async def run_until_cancelled(self, work: Awaitable[R]) -> R:
        """Run ``work``; if the peer cancels first, stop it and raise :class:`~acpio.RequestCancelled`.

        Raised out of a handler, ``RequestCancelled`` answers the request with -32800.
        """
        if self.cancelled:
            if isinstance(work, Coroutine):
                work.close()
            raise RequestCancelled()
        task = asyncio.ensure_future(work)
        self._add_cancel_callback(task.cancel)
        try:
            return await task
        except asyncio.CancelledError:
            current = asyncio.current_task()
            if self.cancelled and task.cancelled() and (current is None or not current.cancelling()):
                raise RequestCancelled() from None
            raise
        finally:
            self._remove_cancel_callback(task.cancel)

    def __del__(self) -> None:
        if self._done:
            return
        self._done = True
        with contextlib.suppress(Exception):  # never raise from a finalizer
            self._answering.unanswered(self)


class ResponseRouter(_OurRequest, Generic[T]):
    """Delivers a response that arrived for one of our requests to whatever waits for it.

    Handlers that intercept responses (``on_dispatch`` or custom handlers) receive one: they may
    deliver the result unchanged, change it, replace it with an error, or keep the router to deliver
    later. The first delivery wins.
    """

    __slots__ = ("_reply",)

    def __init__(self, reply: PendingReply) -> None:
        self._reply = reply

    def respond(self, value: T) -> None:
        """Deliver ``value`` as the result (a typed object is delivered as its wire JSON)."""
        to_wire = getattr(value, "to_wire", None)
        # a handler delivers what the peer would have sent: JSON, or an object that writes it
        self._reply.settle(to_wire() if to_wire is not None else cast("JsonValue", value))

    def respond_with_error(self, error: BaseException) -> None:
        """Deliver ``error`` instead of a result."""
        self._reply.settle(error if isinstance(error, AcpError) else as_request_error(error))

    def respond_with_result(self, result: T | BaseException) -> None:
        """Deliver ``result``: an exception as an error, anything else as the result."""
        if isinstance(result, BaseException):
            self.respond_with_error(result)
        else:
            self.respond(result)

    def __del__(self) -> None:
        reply = self._reply
        if reply.settled:
            return
        message = f"The response to {reply.method!r} was never delivered: a handler claimed it and dropped it"
        with contextlib.suppress(Exception):  # never raise from a finalizer
            reply.settle(InternalError({"method": reply.method}, message=message))
