"""What each incoming message becomes: a dispatch offered to the chain, a settled request, or an answer.

The dispatch loop (:mod:`~acpio.jsonrpc.loop`) reads the frames; :class:`IncomingMessages` takes
what they decode to. A notification or a request is routed by the role and offered to the handler
chain (a request with its responder; ``$/cancel_request`` is acted on before its handlers see it).
A response settles the request it answers, or is offered to the chain when a handler may intercept
responses. A batch is taken entry by entry, its answers gathered into one array. Bad input is
answered (``-32700``/``-32600`` with ``id: null``), a line or batch over a limit refused, and the
connection goes on.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import Any

from acpio.errors import InvalidRequest, ParseError
from acpio.jsonrpc.chain import HandlerChain
from acpio.jsonrpc.dispatch import Dispatch, NotificationDispatch, RequestDispatch, ResponseDispatch
from acpio.jsonrpc.lifecycle import Lifecycle
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
    encode_error,
    encode_errors,
    head_request_id,
    line_head,
)
from acpio.jsonrpc.outbox import BatchAnswers, Outbox
from acpio.jsonrpc.responses import ResponseRouter
from acpio.jsonrpc.role import Role
from acpio.jsonrpc.tracing import MessageTracer
from acpio.transports.base import OversizedFrame

__all__ = ["IncomingMessages"]

_log = logging.getLogger("acpio.jsonrpc")


class IncomingMessages:
    """Turns one connection's decoded input into dispatches and answers (see the module docstring).

    ``between`` is called after each entry of a batch: it gives what to await before the next entry
    when the entry made something ready (response callbacks, handlers added), as the loop runs it
    between two frames, or ``None`` when nothing is (then no coroutine is made).
    """

    __slots__ = ("_between", "_chain", "_life", "_role", "_tracer", "counterpart", "offer", "outbox", "route")

    def __init__(
        self,
        role: Role,
        life: Lifecycle,
        chain: HandlerChain,
        outbox: Outbox,
        *,
        between: Callable[[], Awaitable[None] | None],
        tracer: MessageTracer | None = None,
    ) -> None:
        self._role = role
        self._life = life
        self._chain = chain
        self.outbox = outbox
        self._between = between
        self._tracer = tracer
        #: How a message is offered to the chain: straight, or inside the tracer's record of it.
        self.offer: Callable[[Dispatch], Awaitable[None]] = (
            chain.offer if tracer is None else self._traced_offer
        )
        #: The peer a message comes from when the role does not route it.
        self.counterpart = role.counterpart()
        #: The role's incoming-routing hook, or ``None`` when it keeps the default (a fast path).
        self.route: Callable[[str, Any], tuple[Role, str, Any]] | None = (
            role.route_incoming if type(role).route_incoming is not Role.route_incoming else None
        )

    def notification(self, entry: Notification) -> NotificationDispatch:
        """The dispatch of an incoming notification, routed by the role (``$/cancel_request`` acted on)."""
        if entry.method == CANCEL_METHOD:
            self.outbox.cancel_incoming(entry.params)
        route = self.route
        if route is None:
            return NotificationDispatch(entry.method, entry.params, self.counterpart)
        peer, method, params = route(entry.method, entry.params)
        return NotificationDispatch(method, params, peer)

    def request(self, entry: Request, batch: BatchAnswers | None) -> RequestDispatch:
        """The dispatch of an incoming request, routed by the role, with its responder.

        ``batch`` gathers the answer when the request came in a batch.
        """
        route = self.route
        if route is None:
            peer, method, params = self.counterpart, entry.method, entry.params
        else:
            peer, method, params = route(entry.method, entry.params)
        responder = self.outbox.responder(entry.id, method, batch)
        return RequestDispatch(method, params, entry.id, responder, peer)

    async def response(self, entry: Response) -> None:
        """Settle the request ``entry`` answers, or offer it to the chain when handlers may intercept it."""
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
        peer = self.counterpart if reply.peer is None else self._role.resolve_peer(reply.peer)
        await self._chain.offer(
            ResponseDispatch(reply.method, entry.id, entry.result, entry.error, router, peer)
        )

    async def other(self, decoded: Entry | Batch | OversizedBatch | OversizedFrame) -> None:
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

    async def _traced_offer(self, message: Dispatch) -> None:
        """Offer ``message`` to the chain inside the tracer's record of it (its span is current there)."""
        assert self._tracer is not None
        received = self._tracer.receiving(self._life.name, message)
        if type(message) is RequestDispatch:
            assert isinstance(message, RequestDispatch)
            message.responder.trace = received.answered
        with received:
            await self._chain.offer(message)

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
            waiting = self._between()
            if waiting is not None:
                await waiting
        if invalid:
            _log.warning("Answered %d invalid entries of a batch of %d", invalid, len(frame.entries))
        answers.seal()

    async def _entry(self, entry: Entry, batch: BatchAnswers | None) -> None:
        kind = type(entry)
        if kind is Notification:
            assert isinstance(entry, Notification)
            await self.offer(self.notification(entry))
        elif kind is Request:
            assert isinstance(entry, Request)
            await self.offer(self.request(entry, batch))
        elif kind is Response:
            assert isinstance(entry, Response)
            await self.response(entry)
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
