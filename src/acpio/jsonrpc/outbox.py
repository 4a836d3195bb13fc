"""The sending side of a connection: frames out, requests in flight both ways, answers, backpressure.

:class:`Outbox` is what the two ends of a request talk to: it implements
:class:`~acpio.jsonrpc.responses.Awaiting` for the requests this side sends (ids, cancellation)
and :class:`~acpio.jsonrpc.responses.Answering` for the requests the peer sent (their answers,
written alone or gathered into one array for a batch by :class:`BatchAnswers`). It never reads.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import Any

from acpio.errors import ConnectionClosed, InternalError, RequestError
from acpio.jsonrpc.dispatch import Dispatch, NotificationDispatch, RequestDispatch
from acpio.jsonrpc.lifecycle import Lifecycle, PendingError
from acpio.jsonrpc.messages import (
    CANCEL_METHOD,
    JsonValue,
    RequestId,
    cancel_target,
    encode_error,
    encode_notification,
    encode_request,
    encode_result,
)
from acpio.jsonrpc.pending import CancelFlag, IncomingRequests, OutgoingRequests
from acpio.jsonrpc.responses import Outcome, PendingReply, Responder, SentRequest
from acpio.jsonrpc.role import PeerLike, Role
from acpio.jsonrpc.tracing import MessageTracer
from acpio.jsonrpc.typed import Parser, identity
from acpio.transports.base import FrameSink, Transport, sink_of

__all__ = ["BatchAnswers", "Outbox"]

_log = logging.getLogger("acpio.jsonrpc")
#: Unread bytes past which a sender that never awaits ``drain()`` is warned (once).
_UNFLUSHED_WARNING = 64 * 1024 * 1024


class Outbox:
    """Writes one connection's frames and keeps its requests in flight (see the module docstring).

    ``in_dispatch_loop`` and ``run_response_callback`` come from the reading side: a sent request
    asks them whether awaiting would deadlock, and where a response callback runs.
    """

    __slots__ = (
        "_incoming",
        "_life",
        "_outgoing",
        "_role",
        "_sink",
        "_tracer",
        "_transport",
        "_unflushed",
        "_warned_unflushed",
        "in_dispatch_loop",
        "name",
        "run_response_callback",
    )

    def __init__(
        self,
        transport: Transport,
        role: Role,
        life: Lifecycle,
        *,
        in_dispatch_loop: Callable[[], bool],
        run_response_callback: Callable[[Callable[[Outcome], Awaitable[None]], Outcome], None],
        tracer: MessageTracer | None = None,
    ) -> None:
        self._transport = transport
        #: What queues the frames: the transport, or the object its ``send`` would hand them to.
        self._sink: FrameSink = sink_of(transport)
        self._tracer = tracer
        self._role = role
        self._life = life
        self.name = life.name
        self.in_dispatch_loop = in_dispatch_loop
        self.run_response_callback = run_response_callback
        self._outgoing: OutgoingRequests[PendingReply] = OutgoingRequests()
        #: The cancel flags of the peer's requests still being answered, by id (not the responders:
        #: one its handler dropped must be garbage-collected, to be answered).
        self._incoming: IncomingRequests[CancelFlag] = IncomingRequests()
        #: Bytes handed to the transport since the last :meth:`drain` that waited.
        self._unflushed = 0
        self._warned_unflushed = False

    def statistics(self) -> dict[str, int]:
        """Requests waiting for an answer each way."""
        return {"outgoing_pending": len(self._outgoing), "incoming_pending": len(self._incoming)}

    # --- writing ----------------------------------------------------------------------------------

    def emit(self, frame: bytes) -> None:
        """Hand ``frame`` to the transport, counting it for :meth:`drain` (and the unread warning)."""
        self._sink.send(frame)
        unflushed = self._unflushed = self._unflushed + len(frame)
        if unflushed > _UNFLUSHED_WARNING and not self._warned_unflushed:
            self._warn_unflushed()

    def emit_quietly(self, frame: bytes) -> None:
        """:meth:`emit`, dropping the frame (logged at debug level) once the transport is closed."""
        try:
            self.emit(frame)
        except ConnectionClosed:
            _log.debug("Dropping an outgoing frame: connection %r is closed", self.name)

    async def drain(self, high_water: int) -> None:
        """Wait for the transport to write what was sent, once more than ``high_water`` bytes were."""
        if self._unflushed < high_water:
            return
        self._unflushed = 0
        await self._transport.drain()

    def _warn_unflushed(self) -> None:
        statistics = getattr(self._transport, "statistics", None)
        queued = statistics().get("queued") if callable(statistics) else None
        if not isinstance(queued, int) or queued < _UNFLUSHED_WARNING:
            # written meanwhile (the peer keeps up), or the transport cannot say: no warning
            self._unflushed = queued if isinstance(queued, int) else 0
            return
        self._warned_unflushed = True
        _log.warning(
            "Connection %r has sent %d MB its peer has not read yet: the peer reads slower than this "
            "side sends, and what it has not read is held in memory, without bound. A loop that sends "
            "should call `await cx.drain()` after each send: it returns at once while little is "
            "unread, and waits for the peer past that (docs/builder.md). This warning is not repeated.",
            self.name,
            self._unflushed // 1_000_000,
        )

    # --- our requests -----------------------------------------------------------------------------

    def request(
        self, peer: PeerLike | None, method: str, params: object, parse: Parser
    ) -> SentRequest[object]:
        """Send a request to ``peer`` (``None``: the counterpart); raises ``ConnectionClosed`` once closed."""
        if not self._life.is_open:
            raise self._life.refusal(method)
        reply = PendingReply(self, method, peer)
        request_id = self._outgoing.allocate(reply)
        reply.id = request_id
        try:
            if self._tracer is not None:
                params, reply.trace = self._tracer.sending_request(self.name, method, request_id, params)
            wire_method, wire_params = (
                (method, params) if peer is None else self._role.route_outgoing(peer, method, params)
            )
            self.emit(encode_request(request_id, wire_method, wire_params))
        except BaseException as exc:
            self._outgoing.discard(request_id, reply)
            if reply.trace is not None:
                reply.trace(exc)
            raise
        return SentRequest(reply, parse)

    def notify(self, peer: PeerLike | None, method: str, params: object) -> None:
        """Send a notification to ``peer`` (``None``: the counterpart)."""
        if self._tracer is not None:
            params = self._tracer.sending_notification(self.name, method, params)
        if peer is not None:
            method, params = self._role.route_outgoing(peer, method, params)
        self.emit(encode_notification(method, params))

    def cancel_request(self, reply: PendingReply) -> None:
        """Send ``$/cancel_request`` for ``reply``; nothing once the connection is closed."""
        try:
            self.notify(reply.peer, CANCEL_METHOD, {"requestId": reply.id})
        except ConnectionClosed:
            _log.debug("Not sending $/cancel_request for %r: connection closed", reply.id)

    def settle_awaited(self, request_id: RequestId, outcome: JsonValue | RequestError) -> bool:
        """Settle the request ``request_id`` if a task awaits it; ``False``: not ours, or a callback's.

        ``outcome`` is the response's result, or its error. A request whose consumer is a callback
        (``on_receiving_result``) is left waiting: its response is dispatched in order, by the loop.
        """
        reply = self._outgoing.pop_if(request_id, _awaited)
        if reply is None:
            return False
        reply.settle(outcome)
        return True

    def reply_to(self, request_id: RequestId) -> PendingReply | None:
        """Take the request a response with ``request_id`` answers (``None``: not one of ours)."""
        return self._outgoing.pop(request_id)

    def fail_pending(self, make_error: PendingError) -> None:
        """Fail every request still waiting for an answer (the connection left ``OPEN``)."""
        for reply in self._outgoing.drain():
            reply.settle(make_error(reply.method))

    def forward(self, peer: PeerLike | None, message: Dispatch) -> None:
        """Send an incoming request or notification on to ``peer``, unvalidated (a proxy's hop).

        A request gets a fresh id; its answer, or ``-32603`` if this connection is closed, goes
        back to the original responder. ``$/cancel_request`` is never forwarded: it is re-issued
        per hop.
        """
        if message.method == CANCEL_METHOD:
            _log.debug("Not forwarding $/cancel_request: it is re-issued per hop")
            return
        if type(message) is RequestDispatch:
            assert isinstance(message, RequestDispatch)
            try:
                sent = self.request(peer, message.method, message.params, identity)
            except ConnectionClosed as exc:
                message.responder.respond_with_error(InternalError(message=str(exc)))
                return
            sent.forward_response_to(message.responder)
        elif type(message) is NotificationDispatch:
            self.notify(peer, message.method, message.params)
        else:
            raise TypeError(f"Only requests and notifications can be forwarded, not {message!r}")

    # --- the peer's requests ----------------------------------------------------------------------

    def responder(self, request_id: RequestId, method: str, batch: BatchAnswers | None) -> Responder[Any]:
        """The responder of an incoming request (answering into ``batch`` when it came in one)."""
        answering = self if batch is None else _BatchSlot(self, batch, batch.new_slot())
        flag = CancelFlag()
        self._incoming.add(request_id, flag)
        return Responder(answering, request_id, method, flag)

    def cancel_incoming(self, params: JsonValue) -> None:
        """``$/cancel_request`` arrived: mark its target cancelled (an unknown id is ignored)."""
        ok, target = cancel_target(params)
        if not ok:
            _log.warning("Ignoring $/cancel_request with malformed params: %r", params)
            return
        flag = self._incoming.get(target)
        if flag is not None:
            flag.set()

    def answer(self, responder: Responder[Any], value: Any, error: RequestError | None) -> None:
        """Write the answer of ``responder`` (called once, by the responder)."""
        self.emit_quietly(self.answer_frame(responder, value, error))

    def answer_frame(self, responder: Responder[Any], value: Any, error: RequestError | None) -> bytes:
        """The frame answering ``responder``, which stops being in flight."""
        request_id = responder.id
        self._incoming.remove(request_id, responder.cancel_flag)
        if responder.trace is not None:
            responder.trace(error)
        if error is not None:
            return encode_error(request_id, error)
        try:
            return encode_result(request_id, value)
        except TypeError:
            _log.exception("The result of %r could not be serialized", responder.method)
            return encode_error(request_id, InternalError(message="The result could not be serialized"))

    def unanswered(self, responder: Responder[Any]) -> None:
        """A responder was garbage-collected unanswered (its handler neither answered nor kept it)."""
        self._incoming.remove(responder.id, responder.cancel_flag)
        if responder.trace is not None:
            responder.trace(InternalError(message="The handler dropped this request without answering"))
        if self._life.is_open:
            _log.warning(
                "Request %r (%s) was dropped without an answer; the peer may wait forever. "
                "Return a value, call responder.respond(...), or keep the responder to answer later.",
                responder.id,
                responder.method,
            )


def _awaited(reply: PendingReply) -> bool:
    return reply.callback is None


class BatchAnswers:
    """Collects the answers of one incoming batch; writes one array once every slot is filled."""

    __slots__ = ("_outbox", "missing", "sealed", "slots")

    def __init__(self, outbox: Outbox) -> None:
        self._outbox = outbox
        self.slots: list[bytes | None] = []
        self.missing = 0
        self.sealed = False

    def new_slot(self) -> int:
        """Reserve the place of one more answer."""
        self.slots.append(None)
        self.missing += 1
        return len(self.slots) - 1

    def add(self, frame: bytes) -> None:
        """An answer of the batch known at once (an invalid entry's error)."""
        self.fill(self.new_slot(), frame)

    def fill(self, slot: int, frame: bytes) -> None:
        """Put the answer of ``slot``; the array is written once every slot is filled and it is sealed."""
        if slot >= len(self.slots) or self.slots[slot] is not None:
            return  # already filled (or the array was already written)
        self.slots[slot] = frame
        self.missing -= 1
        self._flush()

    def seal(self) -> None:
        """Every entry of the batch was dispatched: no more slots."""
        self.sealed = True
        self._flush()

    def _flush(self) -> None:
        if self.sealed and self.missing == 0 and self.slots:
            frame = b"[" + b",".join(s for s in self.slots if s is not None) + b"]"
            self.slots = []
            self._outbox.emit_quietly(frame)


class _BatchSlot:
    """How a request that came in a batch is answered: into its slot of the array."""

    __slots__ = ("_batch", "_outbox", "_slot")

    def __init__(self, outbox: Outbox, batch: BatchAnswers, slot: int) -> None:
        self._outbox = outbox
        self._batch = batch
        self._slot = slot

    def answer(self, responder: Responder[Any], value: Any, error: RequestError | None) -> None:
        self._batch.fill(self._slot, self._outbox.answer_frame(responder, value, error))

    def unanswered(self, responder: Responder[Any]) -> None:
        # An array is written only once every slot is filled: never strand the siblings.
        error = InternalError(message="The handler dropped this request without answering")
        self._batch.fill(self._slot, self._outbox.answer_frame(responder, None, error))
