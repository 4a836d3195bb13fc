"""The dispatch loop: one task reads a connection's frames and offers each message to the chain inline.

There is no task per message: a handler runs to completion before the next message is
dispatched, so handlers see messages in order. A burst of frames costs no coroutine per frame
beyond the handlers': a frame the transport already holds is taken with ``receive_nowait()``,
and the chain's :class:`~acpio.jsonrpc.dispatch_lock.DispatchLock` with a plain call when free.
Reading never stops while requests are pending: their responses are read by this same loop.
Between two messages the loop runs the response callbacks made ready (``on_receiving_result``)
and puts handlers added meanwhile in the chain.

A response that arrives alone while the loop waits for input, with nothing received before it
still to dispatch, is settled by the transport's input callback (``take_lone_frames``) instead of
waking this task: the awaiting task is woken once, not twice. It then cannot overtake anything.

Bad input never ends the loop: it is answered (``-32700``/``-32600`` with ``id: null``) and the
loop goes on. The end of input calls ``on_end``; a read error calls ``on_error``.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from typing import Any

from acpio.errors import InvalidRequest, ParseError
from acpio.jsonrpc.chain import HandlerChain
from acpio.jsonrpc.dispatch import Dispatch, NotificationDispatch, RequestDispatch, ResponseDispatch
from acpio.jsonrpc.dispatch_lock import DispatchLock
from acpio.jsonrpc.lifecycle import Lifecycle, Phase
from acpio.jsonrpc.messages import (
    CANCEL_METHOD,
    MAX_BATCH_ENTRIES,
    Batch,
    Entry,
    Invalid,
    Notification,
    OversizedBatch,
    Request,
    Response,
    decode,
    decode_response,
    encode_error,
    encode_errors,
    head_request_id,
    line_head,
    notification_head,
    params_from,
)
from acpio.jsonrpc.outbox import BatchAnswers, Outbox
from acpio.jsonrpc.responses import Outcome, ResponseRouter
from acpio.jsonrpc.role import Role
from acpio.jsonrpc.tracing import MessageTracer
from acpio.transports.base import BufferedFrames, LoneFrames, OversizedFrame, Transport

__all__ = ["DispatchLoop"]

_log = logging.getLogger("acpio.jsonrpc")

_Callback = Callable[[Outcome], Awaitable[None]]

#: How many methods the loop looks at to cut their notifications' params out (:meth:`DispatchLoop._learn`).
_LEARNED_METHODS = 32


class DispatchLoop:
    """Reads one connection's input and dispatches it (see the module docstring).

    ``spawn`` runs work beside the connection; ``on_end`` is awaited at a clean end of input and
    ``on_error`` called with a read error or a failed response callback.
    """

    __slots__ = (
        "_chain",
        "_counterpart",
        "_dispatcher",
        "_heads",
        "_life",
        "_lock",
        "_offer",
        "_on_end",
        "_on_error",
        "_ready",
        "_role",
        "_route",
        "_spawn",
        "_tracer",
        "_transport",
        "_tried",
        "outbox",
        "reader",
    )

    def __init__(
        self,
        transport: Transport,
        role: Role,
        life: Lifecycle,
        chain: HandlerChain,
        *,
        spawn: Callable[..., asyncio.Task[object]],
        on_end: Callable[[], Awaitable[None]],
        on_error: Callable[[BaseException], None],
        tracer: MessageTracer | None = None,
    ) -> None:
        self._transport = transport
        self._tracer = tracer
        #: How a message is offered to the chain: straight, or inside the tracer's record of it.
        self._offer: Callable[[Dispatch], Awaitable[None]] = (
            chain.offer if tracer is None else self._traced_offer
        )
        self._role = role
        self._life = life
        self._chain = chain
        self._spawn = spawn
        self._on_end = on_end
        self._on_error = on_error
        self._counterpart = role.counterpart()
        #: The role's incoming-routing hook, or ``None`` when it keeps the default (a fast path).
        self._route: Callable[[str, Any], tuple[Role, str, Any]] | None = (
            role.route_incoming if type(role).route_incoming is not Role.route_incoming else None
        )
        #: The frame heads of the builder's handlers' methods, and of the methods of notifications
        #: received since (see :meth:`_learn`): their params are cut out of the frame and decoded
        #: alone (:func:`~acpio.jsonrpc.messages.params_from`).
        self._heads = tuple(
            (head, len(head), method)
            for method in chain.handler_methods
            if method != CANCEL_METHOD and (head := notification_head(method)) is not None
        )
        #: The methods whose head was looked for (their frames are cut, or are not written so).
        self._tried = {method for _, _, method in self._heads}
        self.outbox = Outbox(
            transport,
            role,
            life,
            in_dispatch_loop=self.in_dispatch_loop,
            run_response_callback=self.run_response_callback,
            tracer=tracer,
        )
        self._ready: list[tuple[_Callback, Outcome]] = []
        self._lock = DispatchLock()
        self.reader: asyncio.Task[None] | None = None
        #: The task running the chain right now (the loop, or a dynamic-handler activation).
        self._dispatcher: asyncio.Task[Any] | None = None
        chain.after_each = self._run_ready

    def start(self, name: str) -> None:
        """Start reading in a task of its own."""
        self.reader = asyncio.get_running_loop().create_task(self._read(), name=f"acpio dispatch loop {name}")
        # Not when traced: the tracer records each message received, inside the loop.
        if self._tracer is None and isinstance(self._transport, LoneFrames):
            self._transport.take_lone_frames(self._settle_lone)

    def in_dispatch_loop(self) -> bool:
        """Whether the current task runs the chain (awaiting a response there would deadlock)."""
        current = asyncio.current_task()
        return current is not None and (current is self._dispatcher or current is self.reader)

    def run_response_callback(self, callback: _Callback, outcome: Outcome) -> None:
        """Run a response callback: inside the dispatch loop before the next message, else as a task."""
        if asyncio.current_task() is self._dispatcher:
            self._ready.append((callback, outcome))
        elif self._life.phase is not Phase.FINISHED:
            self._spawn(callback, outcome)

    def handlers_added(self) -> None:
        """Handlers were added: activate them now if no message is being dispatched."""
        if asyncio.current_task() is not self._dispatcher and self._life.phase is not Phase.FINISHED:
            self._spawn(self._activate_outside)

    async def _activate_outside(self) -> None:
        await self._lock.acquire()
        self._dispatcher = asyncio.current_task()
        try:
            await self._between_messages()
        finally:
            self._dispatcher = None
            self._lock.release()

    async def _run_ready(self) -> None:
        while self._ready:
            callback, outcome = self._ready.pop(0)
            try:
                await callback(outcome)
            except Exception as exc:
                exc.add_note(f"(raised by a response callback on connection {self._life.name!r})")
                self._on_error(exc)

    async def _between_messages(self) -> None:
        chain = self._chain
        while self._ready or chain.has_new:
            await self._run_ready()
            await chain.activate_new()

    # --- reading ----------------------------------------------------------------------------------

    async def _read(self) -> None:
        transport = self._transport
        receive = transport.receive
        # A frame already held is taken with a plain call: no coroutine per frame of a burst.
        nowait = transport.receive_nowait if isinstance(transport, BufferedFrames) else None
        lock = self._lock
        me = asyncio.current_task()
        life = self._life
        offer = self._offer
        chain = self._chain
        heads = self._heads
        route = self._route
        counterpart = self._counterpart
        open_ = Phase.OPEN
        try:
            while life.phase is open_:
                frame = None if nowait is None else nowait()
                if frame is None:
                    frame = await receive()
                    if frame is None:
                        break
                if not lock.try_acquire():
                    await lock.acquire()
                self._dispatcher = me
                try:
                    # One message per frame is the common case: dispatched here, one call deep. A
                    # notification of a method in the heads (see _learn) has its params cut out.
                    dispatch: NotificationDispatch | None = None
                    if heads and type(frame) is bytes:
                        for head, start, method in heads:
                            if frame.startswith(head):
                                try:
                                    params = params_from(frame, start)
                                except ValueError:
                                    break  # decoded whole below, which answers what is wrong
                                dispatch = (
                                    NotificationDispatch(method, params, counterpart)
                                    if route is None
                                    else self._notification(Notification(method, params))
                                )
                                break
                    if dispatch is not None:
                        await offer(dispatch)
                    else:
                        decoded = frame if isinstance(frame, OversizedFrame) else decode(frame)
                        if type(decoded) is Notification:
                            if len(self._tried) < _LEARNED_METHODS and type(frame) is bytes:
                                heads = self._learn(frame, decoded.method)
                            await offer(self._notification(decoded))
                        elif type(decoded) is Request:
                            await offer(self._request(decoded, None))
                        elif type(decoded) is Response:
                            await self._response(decoded)
                        elif decoded is not None:
                            await self._other(decoded)
                    if self._ready or chain.has_new:
                        await self._between_messages()
                finally:
                    self._dispatcher = None
                    lock.release()
                # Not held while the next frame is awaited: a large message would be kept twice.
                frame = decoded = dispatch = params = None
            else:
                return
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            self._on_error(exc)
            return
        await self._on_end()

    def _learn(self, frame: bytes, method: str) -> tuple[tuple[bytes, int, str], ...]:
        """The heads, with ``method``'s when its notification ``frame`` (decoded whole) starts with it.

        A peer that writes one notification of a method the usual way writes the next ones so too
        (a session's stream of ``session/update``): those are cut out as the builder's methods are.
        Each method is looked at once, and at most :data:`_LEARNED_METHODS` of them.
        """
        if method not in self._tried:
            self._tried.add(method)
            head = notification_head(method)
            if method != CANCEL_METHOD and head is not None and frame.startswith(head):
                self._heads = (*self._heads, (head, len(head), method))
        return self._heads

    def _settle_lone(self, frame: bytes) -> bool:
        """Settle a response the transport read alone while the loop waits for input; ``True`` if it did.

        The transport offers a frame only when nothing it received before is pending. Left to the
        loop, to be read in order: anything but a response to one of our requests; any frame while
        a message is being dispatched (the lock is held: by the loop, or by handlers being
        activated), while response callbacks or new handlers wait, or once the connection stopped
        reading; a response that handlers intercept, or whose consumer is a callback
        (``on_receiving_result``), which runs inside the loop before its next message.
        """
        # A request or a notification is not decoded twice. (find, not `in`: see Lines.send; not
        # partition either, which copies the frame when it finds the key.)
        if (
            frame.find(b'"method"') >= 0
            or self._lock.locked()
            or self._ready
            or self._chain.has_new
            or self._chain.intercepts_responses
            or not self._life.is_open
        ):
            return False
        response = decode_response(frame)
        if response is None:
            return False
        return self.outbox.settle_awaited(*response)

    async def _traced_offer(self, message: Dispatch) -> None:
        """Offer ``message`` to the chain inside the tracer's record of it (its span is current there)."""
        assert self._tracer is not None
        received = self._tracer.receiving(self._life.name, message)
        if type(message) is RequestDispatch:
            assert isinstance(message, RequestDispatch)
            message.responder.trace = received.answered
        with received:
            await self._chain.offer(message)

    async def _other(self, decoded: Entry | Batch | OversizedBatch | OversizedFrame) -> None:
        """The rare frames: a batch, invalid input, or a line or batch over a limit."""
        if isinstance(decoded, OversizedFrame):
            _log.warning("Skipped a message of %d bytes: over the transport's limit", decoded.size)
            data = {"reason": "message too large", "size": decoded.size, "line": line_head(decoded.head)}
            answer = InvalidRequest(data, message="Message too large")
            self.outbox.emit_quietly(encode_error(head_request_id(decoded.head), answer))
        elif isinstance(decoded, Batch):
            await self._batch(decoded)
        elif isinstance(decoded, OversizedBatch):
            self.outbox.emit_quietly(_refusal(decoded))
        else:
            await self._entry(decoded, None)

    async def _batch(self, frame: Batch) -> None:
        answers = BatchAnswers(self.outbox)
        invalid = 0
        for entry in frame.entries:
            if type(entry) is Invalid:
                invalid += 1  # logged once below, not once per entry
                if entry.answer:
                    answers.add(encode_error(None, entry.error))
                continue
            await self._entry(entry, answers)
            if self._ready or self._chain.has_new:
                await self._between_messages()
        if invalid:
            _log.warning("Answered %d invalid entries of a batch of %d", invalid, len(frame.entries))
        answers.seal()

    async def _entry(self, entry: Entry, batch: BatchAnswers | None) -> None:
        kind = type(entry)
        if kind is Notification:
            assert isinstance(entry, Notification)
            await self._offer(self._notification(entry))
        elif kind is Request:
            assert isinstance(entry, Request)
            await self._offer(self._request(entry, batch))
        elif kind is Response:
            assert isinstance(entry, Response)
            await self._response(entry)
        else:
            assert isinstance(entry, Invalid)
            if not entry.answer:
                _log.warning("Ignoring a malformed response: %s", entry.error.data)
                return
            if isinstance(entry.error, ParseError) and isinstance(entry.error.data, dict):
                _log.warning(
                    "The peer sent a line that is not JSON (answered with -32700 Parse error): %r. Over "
                    "stdio a peer must write only JSON-RPC messages to its stdout, and its logs to stderr.",
                    entry.error.data.get("line"),
                )
            else:
                _log.warning("Answering invalid input with %s", entry.error)
            frame = encode_error(None, entry.error)
            if batch is not None:
                batch.add(frame)
            else:
                self.outbox.emit_quietly(frame)

    def _notification(self, entry: Notification) -> NotificationDispatch:
        """The dispatch of an incoming notification, routed by the role (``$/cancel_request`` acted on)."""
        if entry.method == CANCEL_METHOD:
            self.outbox.cancel_incoming(entry.params)
        route = self._route
        if route is None:
            return NotificationDispatch(entry.method, entry.params, self._counterpart)
        peer, method, params = route(entry.method, entry.params)
        return NotificationDispatch(method, params, peer)

    def _request(self, entry: Request, batch: BatchAnswers | None) -> RequestDispatch:
        """The dispatch of an incoming request, routed by the role, with its responder."""
        route = self._route
        if route is None:
            peer, method, params = self._counterpart, entry.method, entry.params
        else:
            peer, method, params = route(entry.method, entry.params)
        responder = self.outbox.responder(entry.id, method, batch)
        return RequestDispatch(method, params, entry.id, responder, peer)

    async def _response(self, entry: Response) -> None:
        reply = self.outbox.reply_to(entry.id)
        if reply is None:
            if entry.error is not None and entry.id is None:
                _log.warning("The peer reported an error: %s", entry.error)
            else:
                _log.debug("Discarding a response to unknown request id %r", entry.id)
            return
        if not self._chain.intercepts_responses:
            reply.settle(entry.error if entry.error is not None else entry.result)
            return
        router: ResponseRouter[Any] = ResponseRouter(reply)
        peer = self._counterpart if reply.peer is None else self._role.resolve_peer(reply.peer)
        await self._chain.offer(
            ResponseDispatch(reply.method, entry.id, entry.result, entry.error, router, peer)
        )


def _refusal(batch: OversizedBatch) -> bytes:
    """The answer to a batch over the cap, none of it dispatched: each request in it under its own id.

    The errors go out as one array, or as one error object (``id: null``) if it holds no request.
    """
    _log.warning(
        "Refused a batch of %d entries (the limit is %d): answered %d requests with -32600",
        batch.size,
        MAX_BATCH_ENTRIES,
        len(batch.ids),
    )
    error = InvalidRequest(
        {"reason": "batch too large", "entries": batch.size, "limit": MAX_BATCH_ENTRIES},
        message=f"Batch too large: {batch.size} entries, the limit is {MAX_BATCH_ENTRIES}; "
        "none was processed",
    )
    return encode_errors(batch.ids, error) if batch.ids else encode_error(None, error)
