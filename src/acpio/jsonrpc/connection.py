"""The connection: one dispatch loop reading frames, the handler chain, sending, closing.

This is the only module of the engine that runs asyncio machinery of its own. A connection reads
frames from its transport in one task (the *dispatch loop*) and offers each message to the handler
chain inline, without a task per message: a handler runs to completion before the next message is
dispatched, and slow work belongs in :meth:`Connection.spawn`. Reading never stops while requests
are pending: their responses are read by this same loop.

Bad input never ends the connection; it is answered (``-32700``/``-32600`` with ``id: null``) and
the loop goes on. A clean end of input fails every pending request with
:class:`~acpio.ConnectionClosed`, runs the ``on_close`` callbacks and drains queued output; a read
error (:class:`~acpio.TransportError`) fails the connection instead.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Coroutine, Iterable
from typing import TYPE_CHECKING, Any, Self, TypeVar, overload

from acpio.errors import (
    ConnectionClosed,
    InternalError,
    InvalidRequest,
    MethodNotFound,
    RequestError,
)
from acpio.jsonrpc.handlers import (
    Dispatch,
    DynamicHandlerRegistration,
    Handler,
    NotificationDispatch,
    RequestDispatch,
    ResponseDispatch,
    Unhandled,
    as_handler,
    message_method,
    passed_on,
)
from acpio.jsonrpc.messages import (
    CANCEL_METHOD,
    MAX_BATCH_ENTRIES,
    Batch,
    Entry,
    Invalid,
    JsonValue,
    Notification,
    Request,
    RequestId,
    Response,
    UntypedMessage,
    cancel_target,
    decode,
    encode_error,
    encode_notification,
    encode_request,
    encode_result,
    line_head,
)
from acpio.jsonrpc.parking import Parked, ParkingLot
from acpio.jsonrpc.pending import CancelFlag, IncomingRequests, OutgoingRequests
from acpio.jsonrpc.responses import PendingReply, Responder, ResponseRouter, SentRequest, _parse_with
from acpio.transports.base import OversizedFrame, Transport

if TYPE_CHECKING:
    from acpio.jsonrpc.builder import Builder, Role

__all__ = ["Connection"]

_log = logging.getLogger("acpio.jsonrpc")
#: Unread bytes past which a sender that never awaits ``drain()`` is warned (once).
_UNFLUSHED_WARNING = 64 * 1024 * 1024
#: Sessions whose dropped or refused parked messages are logged, one line each; then one summary.
_PARKING_WARNINGS = 100

T = TypeVar("T")

_UNSET: Any = object()

#: A chain link: the handler's ``accepts`` (or ``None``: it sees everything) and its ``handle``.
_Link = tuple[
    Callable[[Dispatch], bool] | None, Callable[[Dispatch, "Connection"], Awaitable[Unhandled | None]]
]


def _identity(raw: Any) -> Any:
    return raw


class _Batch:
    """Collects the answers of one incoming batch; writes one array once every slot is filled."""

    __slots__ = ("connection", "missing", "sealed", "slots")

    def __init__(self, connection: Connection) -> None:
        self.connection = connection
        self.slots: list[bytes | None] = []
        self.missing = 0
        self.sealed = False

    def new_slot(self) -> int:
        self.slots.append(None)
        self.missing += 1
        return len(self.slots) - 1

    def fill(self, slot: int, frame: bytes) -> None:
        if slot >= len(self.slots) or self.slots[slot] is not None:
            return  # already filled (or the array was already written)
        self.slots[slot] = frame
        self.missing -= 1
        self._flush()

    def seal(self) -> None:
        self.sealed = True
        self._flush()

    def _flush(self) -> None:
        if self.sealed and self.missing == 0 and self.slots:
            frame = b"[" + b",".join(s for s in self.slots if s is not None) + b"]"
            self.slots = []
            self.connection._send_frame(frame)


class Connection:
    """The handle on one live JSON-RPC connection (``cx`` in handlers).

    Send with :meth:`send_request`, :meth:`send_notification` and :meth:`send_error_notification`;
    run background work with :meth:`spawn`; add handlers at run time with
    :meth:`add_dynamic_handler`; forward messages with :meth:`send_proxied_message`. Connections are
    made by a :class:`~acpio.jsonrpc.Builder` (``connect_to`` / ``connect_with``), not directly.
    Await :meth:`drain` after sending in a loop to slow down to the peer's pace.
    """

    #: Bytes sent without waiting after which :meth:`drain` waits for the peer (256 KiB).
    HIGH_WATER: int = 256 * 1024

    def __init__(
        self,
        role: Role,
        transport: Transport,
        *,
        name: str,
        handlers: Iterable[Handler],
        startup: Iterable[Callable[[Connection], Awaitable[object]]] = (),
        close_callbacks: Iterable[Callable[..., Awaitable[object]]] = (),
    ) -> None:
        loop = asyncio.get_running_loop()
        self.role = role
        self.name = name
        #: The peer of messages the role does not route (and of requests sent with ``peer=None``).
        self._counterpart = role.counterpart()
        #: The role's incoming-routing hook, or ``None`` when it keeps the default (a fast path).
        self._route_incoming: Callable[[str, JsonValue], tuple[Role, str, JsonValue]] | None = (
            role.route_incoming if type(role).route_incoming is not _default_route_incoming() else None
        )
        self._transport = transport
        self._builder_links: tuple[_Link, ...] = tuple(
            (getattr(h, "accepts", None), h.handle) for h in handlers
        )
        default = role.default_handler()
        self._default_links: tuple[_Link, ...] = (
            ((getattr(default, "accepts", None), default.handle),) if default is not None else ()
        )
        #: Methods the role does not speak: never sent, and kept from the handlers when received.
        self._disabled: frozenset[str] = role.disabled_methods()
        disabled = role.disabled_handler()
        #: The chain an incoming message for a disabled method walks instead (maybe empty).
        self._disabled_chain: tuple[_Link, ...] = (
            ((getattr(disabled, "accepts", None), disabled.handle),) if disabled is not None else ()
        )
        self._dynamic: list[DynamicHandlerRegistration] = []
        self._new_dynamic: list[DynamicHandlerRegistration] = []
        self._chain: tuple[_Link, ...] = ()
        self._intercepts_responses = False
        self._rebuild_chain()
        self._parked = ParkingLot(role.parking_limits())
        #: Bytes handed to the transport since the last :meth:`drain` that waited.
        self._unflushed = 0
        self._warned_unflushed = False
        self._parking_warned: set[str | None] = set()
        self._startup = list(startup)
        self._close_callbacks = list(close_callbacks)
        self._outgoing: OutgoingRequests[PendingReply] = OutgoingRequests()
        #: Cancel flags of the peer's requests still being answered, by id.
        self._incoming: IncomingRequests[CancelFlag] = IncomingRequests()
        self._ready: list[tuple[Callable[[Any], Awaitable[None]], Any]] = []
        self._lock = asyncio.Lock()
        self._reader: asyncio.Task[None] | None = None
        #: The task running the chain right now (the dispatch loop, or a dynamic-handler replay).
        self._dispatcher: asyncio.Task[Any] | None = None
        self._tasks: set[asyncio.Task[Any]] = set()
        self._closed = False  # no new requests
        self._closing = False  # close() was called
        self._finished = False
        self._failure: BaseException | None = None
        self._close_callbacks_ran = False
        self._stopped: asyncio.Future[None] = loop.create_future()
        self._failed: asyncio.Future[None] = loop.create_future()
        self._incoming_closed = asyncio.Event()

    def __repr__(self) -> str:
        state = "closed" if self._closed else "open"
        return f"<Connection {self.name!r} {type(self.role).__name__} {state}>"

    @property
    def counterpart(self) -> Role:
        """The role of the peer at the other end."""
        return self.role.counterpart()

    @property
    def closed(self) -> bool:
        """Whether the connection stopped taking requests (end of input, :meth:`close`, or a failure)."""
        return self._closed

    def in_dispatch_loop(self) -> bool:
        """Whether the current task is this connection's dispatch loop (a handler runs in it).

        Awaiting a response there would deadlock: only that loop can read it. Code that may run
        either inside a handler or outside can check this to choose ``on_receiving_result`` or
        ``cx.spawn(...)`` over awaiting.
        """
        current = asyncio.current_task()
        return current is not None and (current is self._dispatcher or current is self._reader)

    async def wait_closed(self) -> None:
        """Wait until the input ended (after the ``on_close`` callbacks ran) or the connection closed."""
        await self._incoming_closed.wait()

    def statistics(self) -> dict[str, int]:
        """Counts for introspection: requests waiting for an answer each way, parked messages, tasks."""
        return {
            "outgoing_pending": len(self._outgoing),
            "incoming_pending": len(self._incoming),
            "retry_queue": len(self._parked),
            "dynamic_handlers": len(self._dynamic),
            "tasks": len(self._tasks),
        }

    # --- sending ----------------------------------------------------------------------------------

    @overload
    def send_request(self, message: str, params: JsonValue = None) -> SentRequest[Any]: ...
    @overload
    def send_request(self, message: Any) -> SentRequest[Any]: ...

    def send_request(self, message: Any, params: JsonValue = _UNSET) -> SentRequest[Any]:
        """Send a request to the peer; the returned :class:`SentRequest` gives its answer.

        ``message`` is a typed request object (its class has ``METHOD``, and ``RESPONSE`` to parse
        the result into), an :class:`~acpio.jsonrpc.UntypedMessage`, or a method name with ``params``.
        Raises :class:`~acpio.ConnectionClosed` at once if the connection no longer takes requests.
        """
        return self.send_request_to(None, message, params)

    def send_request_to(self, peer: Any, message: Any, params: JsonValue = _UNSET) -> SentRequest[Any]:
        """Send a request to ``peer``, one of the role's peers (``None``: the counterpart)."""
        method, params, parse = _outgoing(message, params, request=True)
        if method in self._disabled:
            raise self.role.disabled_error(method, "send")
        return self._send_request(peer, method, params, parse)

    def _send_request(
        self, peer: Any, method: str, params: Any, parse: Callable[[Any], Any]
    ) -> SentRequest[Any]:
        if self._closed:
            raise ConnectionClosed(f"Connection {self.name!r} closed", method=method)
        reply = PendingReply(self, method, peer)
        wire_method, wire_params = (
            (method, params) if peer is None else self.role.route_outgoing(peer, method, params)
        )
        request_id = self._outgoing.allocate(reply)
        reply.id = request_id
        try:
            frame = encode_request(request_id, wire_method, wire_params)
            self._emit(frame)
        except BaseException:
            self._outgoing.discard(request_id, reply)
            raise
        return SentRequest(reply, parse)

    def send_notification(self, message: Any, params: JsonValue = _UNSET) -> None:
        """Send a notification (a typed object, an ``UntypedMessage``, or a method name with ``params``)."""
        self.send_notification_to(None, message, params)

    def send_notification_to(self, peer: Any, message: Any, params: JsonValue = _UNSET) -> None:
        """Send a notification to ``peer``, one of the role's peers (``None``: the counterpart)."""
        typed = _TYPED.get(type(message)) if params is _UNSET else None
        if typed is not None:  # a typed object whose class was seen before: the streaming path
            method, params = typed[0], message
        else:
            method, params, _ = _outgoing(message, params, request=False)
        if method in self._disabled:
            raise self.role.disabled_error(method, "send")
        self._send_notification(peer, method, params)

    def _send_notification(self, peer: Any, method: str, params: Any) -> None:
        if peer is not None:
            method, params = self.role.route_outgoing(peer, method, params)
        self._emit(encode_notification(method, params))

    async def drain(self) -> None:
        """Backpressure: wait while the peer has not yet read much of what this connection sent.

        Sending never blocks: the transport queues frames and writes them in batches. A sender that
        can outpace its peer (a loop streaming updates) awaits ``cx.drain()`` after each send. It
        returns at once while fewer than :attr:`HIGH_WATER` bytes were sent since the last wait;
        past that it waits until the transport has written them (for an in-process channel: until
        the peer has received them). So memory stays bounded whatever the reader does, and nothing
        is dropped. Raises :class:`~acpio.TransportError` if the peer stopped reading for good.

        Awaited inside a handler, it also stops this connection's reading until the peer catches
        up: fine when the peer keeps reading, a deadlock if the peer drains inside its own
        handlers too while both send to each other.
        """
        if self._unflushed < self.HIGH_WATER:
            return
        self._unflushed = 0
        await self._transport.drain()

    def _emit(self, frame: bytes) -> None:
        """Hand ``frame`` to the transport, counting it for :meth:`drain` (and the unread warning)."""
        self._transport.send(frame)
        unflushed = self._unflushed = self._unflushed + len(frame)
        if unflushed > _UNFLUSHED_WARNING and not self._warned_unflushed:
            self._warn_unflushed()

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
            "side sends. Await cx.drain() after sending to wait for it instead of buffering.",
            self.name,
            self._unflushed // 1_000_000,
        )

    def send_error_notification(self, error: RequestError) -> None:
        """Send an error that answers no request: a response with ``id: null``."""
        self._emit(encode_error(None, error))

    def send_cancel_request(self, request_id: RequestId, peer: Any = None) -> None:
        """Send ``$/cancel_request`` for ``request_id`` (low level; prefer ``SentRequest.cancel``)."""
        self.send_notification_to(peer, CANCEL_METHOD, {"requestId": request_id})

    def _send_cancel(self, request_id: RequestId, peer: Any) -> None:
        try:
            self.send_cancel_request(request_id, peer)
        except ConnectionClosed:
            _log.debug("Not sending $/cancel_request for %r: connection closed", request_id)

    def send_proxied_message(self, message: Dispatch) -> None:
        """Forward an incoming request or notification to the counterpart, unvalidated.

        A request gets a fresh id here, and its answer goes back to the original responder
        (cancelling the original re-issues ``$/cancel_request`` with the new id). ``$/cancel_request``
        itself is never forwarded: its id means nothing on this connection.
        """
        self.send_proxied_message_to(None, message)

    def send_proxied_message_to(self, peer: Any, message: Dispatch) -> None:
        """Like :meth:`send_proxied_message`, to ``peer`` (one of the role's peers)."""
        if message.method == CANCEL_METHOD:
            _log.debug("Not forwarding $/cancel_request: it is re-issued per hop")
            return
        if type(message) is RequestDispatch:
            try:
                sent = self._send_request(peer, message.method, message.params, _identity)
            except ConnectionClosed as exc:
                message.responder.respond_with_error(InternalError(message=str(exc)))
                return
            sent.forward_response_to(message.responder)
        elif type(message) is NotificationDispatch:
            self._send_notification(peer, message.method, message.params)
        else:
            raise TypeError(f"Only requests and notifications can be forwarded, not {message!r}")

    def _send_frame(self, frame: bytes) -> None:
        try:
            self._emit(frame)
        except ConnectionClosed:
            _log.debug("Dropping an outgoing frame: connection %r is closed", self.name)

    def _answer(self, responder: Responder[Any], value: Any, error: RequestError | None) -> None:
        """Send the answer of ``responder`` (called once, by the responder)."""
        request_id = responder.id
        self._incoming.remove(request_id, responder._cancel)
        if error is None:
            try:
                frame = encode_result(request_id, value)
            except TypeError:
                _log.exception("The result of %r could not be serialized", responder.method)
                frame = encode_error(request_id, InternalError(message="The result could not be serialized"))
        else:
            frame = encode_error(request_id, error)
        batch = responder._batch
        if batch is not None:
            batch.fill(responder._slot, frame)
        else:
            self._send_frame(frame)

    def _dropped(self, responder: Responder[Any]) -> None:
        """A responder was garbage-collected unanswered (its handler neither answered nor kept it)."""
        self._incoming.remove(responder.id, responder._cancel)
        if responder._batch is not None:
            # A batch is written only once every slot is filled: never strand the siblings.
            error = InternalError(message="The handler dropped this request without answering")
            responder._batch.fill(responder._slot, encode_error(responder.id, error))
        elif not self._closed:
            _log.warning(
                "Request %r (%s) was dropped without an answer; the peer may wait forever. "
                "Return a value, call responder.respond(...), or keep the responder to answer later.",
                responder.id,
                responder.method,
            )

    # --- tasks ------------------------------------------------------------------------------------

    def spawn(self, work: Any, *args: Any) -> asyncio.Task[Any]:
        """Run ``work`` (a coroutine, or an async function called with ``*args``) beside the connection.

        The task is cancelled when the connection ends. If it raises, the connection fails with that
        error (``connect_to``/``connect_with`` raise it).
        """
        coro = work(*args) if callable(work) else work
        if self._finished:
            if isinstance(coro, Coroutine):
                coro.close()
            raise ConnectionClosed(f"Connection {self.name!r} has ended; cannot spawn a task on it")
        task: asyncio.Task[Any] = asyncio.get_running_loop().create_task(coro)
        self._tasks.add(task)
        task.add_done_callback(self._task_done)
        return task

    def _task_done(self, task: asyncio.Task[Any]) -> None:
        self._tasks.discard(task)
        if task.cancelled():
            return
        error = task.exception()
        if error is not None:
            error.add_note(f"(raised by a task spawned on connection {self.name!r})")
            self._fail(error)

    async def spawn_connection(self, builder: Builder, target: Any) -> Connection:
        """Start ``builder`` on ``target`` (a transport or component) beside this connection.

        Returns the new connection's handle; it is served by a task of this connection, whose
        failure fails this one too.
        """
        from acpio.jsonrpc.builder import open_transport

        transport = await open_transport(target)
        child = builder._make_connection(transport)
        self.spawn(child._serve_until_stopped)
        return child

    def _schedule_callback(self, callback: Callable[[Any], Awaitable[None]], outcome: Any) -> None:
        """Run a response callback: inside the dispatch loop before the next message, else as a task."""
        if asyncio.current_task() is self._dispatcher:
            self._ready.append((callback, outcome))
        elif not self._finished:
            self.spawn(callback, outcome)

    # --- dynamic handlers -------------------------------------------------------------------------

    def add_dynamic_handler(self, handler: Any) -> DynamicHandlerRegistration:
        """Add a handler after the builder's handlers and before the role's default one.

        Messages parked with ``Unhandled(..., retry=True)`` are offered to it first, in order, before
        the next incoming message. ``handler`` is a :class:`~acpio.jsonrpc.Handler` or an async
        function ``(message, cx)``. Use the returned registration to remove it (or as a context
        manager).
        """
        registration = DynamicHandlerRegistration(self, as_handler(handler))
        self._new_dynamic.append(registration)
        if asyncio.current_task() is not self._dispatcher and not self._finished:
            self.spawn(self._activate_outside)
        return registration

    def _remove_dynamic(self, registration: DynamicHandlerRegistration) -> None:
        if registration in self._dynamic:
            self._dynamic.remove(registration)
            self._rebuild_chain()
        elif registration in self._new_dynamic:
            self._new_dynamic.remove(registration)

    def _rebuild_chain(self) -> None:
        links = self._builder_links + tuple((None, r._handle) for r in self._dynamic) + self._default_links
        self._chain = links
        self._intercepts_responses = bool(self._dynamic) or any(a is None for a, _ in links)

    async def _activate_outside(self) -> None:
        async with self._lock:
            self._dispatcher = asyncio.current_task()
            try:
                await self._after_message()
            finally:
                self._dispatcher = None

    async def _activate_new_handlers(self) -> None:
        while self._new_dynamic:
            registration = self._new_dynamic.pop(0)
            if not registration._active:
                continue
            self._dynamic.append(registration)
            self._rebuild_chain()
            if not self._parked:
                continue
            kept: list[Parked] = []
            for entry in self._parked.take_all():
                message = entry.message
                try:
                    result = await registration._handle(message, self)
                except Exception as exc:
                    self._unpark(entry)
                    self._handler_failed(message, exc)
                    continue
                if result is None:
                    self._unpark(entry)
                else:
                    entry.message = passed_on(message, result)  # same ticket: its timer still finds it
                    kept.append(entry)
                await self._run_ready_callbacks()
            self._parked.put_back(kept)
            self._expire_overdue_requests(kept)

    async def _run_ready_callbacks(self) -> None:
        while self._ready:
            callback, outcome = self._ready.pop(0)
            try:
                await callback(outcome)
            except Exception as exc:
                exc.add_note(f"(raised by a response callback on connection {self.name!r})")
                self._fail(exc)

    async def _after_message(self) -> None:
        while self._ready or self._new_dynamic:
            await self._run_ready_callbacks()
            await self._activate_new_handlers()

    # --- the dispatch loop ------------------------------------------------------------------------

    async def _read_loop(self) -> None:
        receive = self._transport.receive
        lock = self._lock
        me = asyncio.current_task()
        try:
            while not self._closing:
                frame = await receive()
                if frame is None:
                    break
                await lock.acquire()
                self._dispatcher = me
                try:
                    # One message per frame is the common case: dispatched here, one call deep.
                    decoded = frame if isinstance(frame, OversizedFrame) else decode(frame)
                    if type(decoded) is Notification:
                        await self._offer(self._notification_dispatch(decoded))
                    elif type(decoded) is Request:
                        await self._offer(self._request_dispatch(decoded, None, 0))
                    elif type(decoded) is Response:
                        await self._on_response(decoded)
                    elif decoded is not None:
                        await self._handle_other(decoded)
                    if self._ready or self._new_dynamic:
                        await self._after_message()
                finally:
                    self._dispatcher = None
                    lock.release()
            else:
                return
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            self._fail(exc)
            return
        await self._on_end_of_input()

    async def _handle_other(self, decoded: Entry | Batch | OversizedFrame) -> None:
        """The rare frames: a batch, invalid input, or a line over the transport's limit."""
        if isinstance(decoded, OversizedFrame):
            self._answer_oversized(decoded)
        elif isinstance(decoded, Batch):
            await self._dispatch_batch(decoded)
        else:
            await self._dispatch_entry(decoded, None)

    def _answer_oversized(self, frame: OversizedFrame) -> None:
        _log.warning("Skipped a message of %d bytes: over the transport's limit", frame.size)
        data = {"reason": "message too large", "size": frame.size, "line": line_head(frame.head)}
        self._send_frame(encode_error(None, InvalidRequest(data, message="Message too large")))

    async def _dispatch_batch(self, batch_frame: Batch) -> None:
        batch = _Batch(self)
        invalid = 0
        for entry in batch_frame.entries:
            if type(entry) is Invalid:
                invalid += 1  # logged once below, not once per entry
                if entry.answer:
                    batch.fill(batch.new_slot(), encode_error(None, entry.error))
                continue
            await self._dispatch_entry(entry, batch)
            if self._ready or self._new_dynamic:
                await self._after_message()
        if invalid:
            _log.warning("Answered %d invalid entries of a batch of %d", invalid, len(batch_frame.entries))
        if batch_frame.excess:
            _log.warning(
                "A batch had %d entries over the limit of %d: answered with one error",
                batch_frame.excess,
                MAX_BATCH_ENTRIES,
            )
            data = {"reason": "batch too large", "limit": MAX_BATCH_ENTRIES, "ignored": batch_frame.excess}
            batch.fill(batch.new_slot(), encode_error(None, InvalidRequest(data, message="Batch too large")))
        batch.seal()

    async def _dispatch_entry(self, entry: Entry, batch: _Batch | None) -> None:
        kind = type(entry)
        if kind is Notification:
            assert isinstance(entry, Notification)
            await self._offer(self._notification_dispatch(entry))
        elif kind is Request:
            assert isinstance(entry, Request)
            slot = batch.new_slot() if batch is not None else 0
            await self._offer(self._request_dispatch(entry, batch, slot))
        elif kind is Response:
            assert isinstance(entry, Response)
            await self._on_response(entry)
        else:
            assert isinstance(entry, Invalid)
            if not entry.answer:
                _log.warning("Ignoring a malformed response: %s", entry.error.data)
                return
            _log.warning("Answering invalid input with %s", entry.error)
            frame = encode_error(None, entry.error)
            if batch is not None:
                batch.fill(batch.new_slot(), frame)
            else:
                self._send_frame(frame)

    def _notification_dispatch(self, entry: Notification) -> NotificationDispatch:
        """The dispatch of an incoming notification, routed by the role (``$/cancel_request`` acted on)."""
        if entry.method == CANCEL_METHOD:
            self._on_cancel_request(entry.params)
        route = self._route_incoming
        if route is None:
            return NotificationDispatch(entry.method, entry.params, self._counterpart)
        peer, method, params = route(entry.method, entry.params)
        return NotificationDispatch(method, params, peer)

    def _request_dispatch(self, entry: Request, batch: _Batch | None, slot: int) -> RequestDispatch:
        """The dispatch of an incoming request, routed by the role; its responder is registered."""
        route = self._route_incoming
        if route is None:
            peer, method, params = self._counterpart, entry.method, entry.params
        else:
            peer, method, params = route(entry.method, entry.params)
        responder: Responder[Any] = Responder(self, entry.id, method, batch, slot)
        self._incoming.add(entry.id, responder._cancel)
        return RequestDispatch(method, params, entry.id, responder, peer)

    def _on_cancel_request(self, params: JsonValue) -> None:
        ok, target = cancel_target(params)
        if not ok:
            _log.warning("Ignoring $/cancel_request with malformed params: %r", params)
            return
        flag = self._incoming.get(target)
        if flag is not None:
            flag.set()

    async def _on_response(self, entry: Response) -> None:
        reply = self._outgoing.pop(entry.id)
        if reply is None:
            if entry.error is not None and entry.id is None:
                _log.warning("The peer reported an error: %s", entry.error)
            else:
                _log.debug("Discarding a response to unknown request id %r", entry.id)
            return
        if not self._intercepts_responses:
            reply.settle(entry.error if entry.error is not None else entry.result)
            return
        router: ResponseRouter[Any] = ResponseRouter(reply)
        peer = self._counterpart if reply.peer is None else self.role.resolve_peer(reply.peer)
        await self._offer(ResponseDispatch(reply.method, entry.id, entry.result, entry.error, router, peer))

    async def _offer(self, message: Dispatch) -> None:
        """Walk ``message`` through the chain; the fallback takes what nobody claims.

        A message for a method the role disabled walks the role's disabled chain instead (a proxy's
        forwarding handler), so the handlers never see it, nor the response to it when it was
        forwarded.
        """
        chain = self._chain
        if message.method in self._disabled:
            chain = self._disabled_chain
        retry = False
        for accepts, handle in chain:
            if accepts is not None and not accepts(message):
                continue
            try:
                result = await handle(message, self)
            except Exception as exc:
                self._handler_failed(message, exc)
                return
            if result is None:
                return
            if result.retry:
                retry = True
            if result.message is not message:
                message = passed_on(message, result)
        if retry:
            self._park(message)
            return
        self._fallback(message)

    def _park(self, message: Dispatch) -> None:
        """Park ``message`` for a handler added later, within the role's :class:`ParkingLimits`."""
        loop = asyncio.get_running_loop()
        now = loop.time()
        lot = self._parked
        for expired in lot.expire_notifications(now):
            self._warn_parking(expired.message, "no handler claimed it in time; dropped")
        if not lot.has_room(message):
            self._warn_parking(message, "too many messages are waiting for handlers; refused")
            self._refuse_parked(message)
            return
        entry = lot.park(message, now)
        if entry.is_request:
            entry.timer = loop.call_later(lot.limits.request_wait, self._expire_parked_request, entry.ticket)

    def _unpark(self, entry: Parked) -> None:
        """A parked message was claimed (or failed): its request timer has nothing left to do."""
        if entry.timer is not None:
            entry.timer.cancel()
            entry.timer = None

    def _expire_parked_request(self, ticket: int) -> None:
        entry = self._parked.remove(ticket)
        if entry is not None:
            entry.timer = None
            self._refuse_parked(entry.message)
        # else: claimed meanwhile, or out of the lot while a new handler replays it (then the
        # replay answers it once it is parked again: see _expire_overdue_requests)

    def _expire_overdue_requests(self, entries: list[Parked]) -> None:
        """Answer the re-parked requests whose wait ran out while they were being replayed."""
        deadline = asyncio.get_running_loop().time() - self._parked.limits.request_wait
        for entry in entries:
            if entry.is_request and entry.parked_at <= deadline:
                self._parked.remove(entry.ticket)
                self._unpark(entry)
                self._refuse_parked(entry.message)

    def _refuse_parked(self, message: Dispatch) -> None:
        if type(message) is RequestDispatch:
            assert isinstance(message, RequestDispatch)
            message.responder.respond_with_error(self.role.unclaimed_error(message))

    def _warn_parking(self, message: Dispatch, what: str) -> None:
        key = message.session_id
        warned = self._parking_warned
        if key in warned or len(warned) > _PARKING_WARNINGS:
            return
        warned.add(key)
        if len(warned) > _PARKING_WARNINGS:
            _log.warning(
                "Connection %r: messages for %d sessions waited for handlers and were dropped or "
                "refused; not logging further sessions",
                self.name,
                _PARKING_WARNINGS,
            )
            return
        _log.warning(
            "Connection %r: a %r message for session %r waited for a handler: %s (logged once per session)",
            self.name,
            message.method,
            key,
            what,
        )

    def _fallback(self, message: Dispatch) -> None:
        """What happens to a message nobody claims: -32601, delivery to the caller, or nothing."""
        kind = type(message)
        if kind is RequestDispatch:
            assert isinstance(message, RequestDispatch)
            message.responder.respond_with_error(MethodNotFound(message.method))
        elif kind is ResponseDispatch:
            assert isinstance(message, ResponseDispatch)
            router = message.router
            if message.error is not None:
                router.respond_with_error(message.error)
            else:
                router._reply.settle(message.result)
        else:
            _log.debug("No handler for notification %r", message.method)

    def _handler_failed(self, message: Dispatch, exc: Exception) -> None:
        if type(message) is RequestDispatch:
            assert isinstance(message, RequestDispatch)
            if isinstance(exc, RequestError):
                _log.debug("Handler for %r answered with %s", message.method, exc)
                message.responder.respond_with_error(exc)
            else:
                _log.exception("Handler for request %r failed", message.method, exc_info=exc)
                message.responder.respond_with_error(InternalError())
        elif type(message) is ResponseDispatch:
            assert isinstance(message, ResponseDispatch)
            message.router.respond_with_error(exc)
        elif isinstance(exc, RequestError):
            _log.warning("Notification %r rejected: %s", message.method, exc)
        else:
            _log.exception("Handler for notification %r failed", message.method, exc_info=exc)

    # --- lifecycle --------------------------------------------------------------------------------

    def _fail_pending(self, make_error: Callable[[str], BaseException]) -> None:
        for reply in self._outgoing.drain():
            reply.settle(make_error(reply.method))

    def _release_parked(self) -> None:
        """The input ended: parked messages no handler will ever claim get the normal fallback."""
        for entry in self._parked.take_all():
            self._unpark(entry)
            self._fallback(entry.message)

    async def _on_end_of_input(self) -> None:
        """Clean EOF: fail pending requests, run the close callbacks, then report the end."""
        self._closed = True
        self._fail_pending(lambda method: ConnectionClosed("Connection closed by the peer", method=method))
        self._release_parked()
        await self._run_close_callbacks()
        self._incoming_closed.set()
        if not self._stopped.done():
            self._stopped.set_result(None)

    async def _run_close_callbacks(self) -> None:
        if self._close_callbacks_ran:
            return
        self._close_callbacks_ran = True
        first_error: BaseException | None = None
        for callback in self._close_callbacks:
            try:
                await callback(self)
            except Exception as exc:
                _log.debug("An on_close callback failed", exc_info=exc)
                if first_error is None:
                    exc.add_note(f"(raised by an on_close callback of connection {self.name!r})")
                    first_error = exc
        if first_error is not None:
            self._fail(first_error)

    def _fail(self, error: BaseException) -> None:
        """The connection failed: remember the first error, fail pending requests, stop serving."""
        if self._failure is not None or self._finished:
            _log.debug("Connection %r: a further error after the first failure", self.name, exc_info=error)
            return
        self._failure = error
        self._closed = True

        def closed(method: str) -> BaseException:
            exc = ConnectionClosed(f"Connection {self.name!r} failed ({error})", method=method)
            exc.__cause__ = error
            return exc

        self._fail_pending(closed)
        self._incoming_closed.set()
        if not self._failed.done():
            self._failed.set_result(None)
        if not self._stopped.done():
            self._stopped.set_result(None)

    def close(self) -> None:
        """Stop the connection: pending requests fail with ``ConnectionClosed``, reading stops.

        ``connect_to`` then returns (after draining output); in ``connect_with``, the main function
        keeps running, but its requests fail at once. Calling it again does nothing.
        """
        if self._closing:
            return
        self._closing = True
        self._closed = True
        self._fail_pending(lambda method: ConnectionClosed(f"Connection {self.name!r} closed", method=method))
        self._incoming_closed.set()
        if not self._stopped.done():
            self._stopped.set_result(None)
        reader = self._reader
        if reader is not None and asyncio.current_task() is not reader:
            reader.cancel()

    async def _serve_until_stopped(self) -> None:
        await self._serve(None)

    async def _serve(self, main: Callable[[Self], Awaitable[T]] | None) -> T | None:
        """Serve until the input ends (``main is None``) or ``main(self)`` returns; then shut down."""
        loop = asyncio.get_running_loop()
        self._reader = loop.create_task(self._read_loop(), name=f"acpio dispatch loop {self.name}")
        main_task: asyncio.Task[T] | None = None
        try:
            for start in self._startup:
                self.spawn(start, self)
            if main is None:
                await self._stopped
                return None
            main_task = loop.create_task(_call(main, self), name=f"acpio main {self.name}")
            await asyncio.wait((main_task, self._failed), return_when=asyncio.FIRST_COMPLETED)
            if main_task.done():
                return main_task.result()
            return None  # failed: raised below
        finally:
            await self._shutdown(main_task)

    async def _shutdown(self, main_task: asyncio.Task[Any] | None) -> None:
        self._closed = True
        self._fail_pending(lambda method: ConnectionClosed(f"Connection {self.name!r} closed", method=method))
        self._release_parked()
        if self._failure is None:
            await self._run_close_callbacks()
        self._finished = True
        self._incoming_closed.set()
        pending: list[asyncio.Task[Any]] = []
        if main_task is not None and not main_task.done():
            main_task.cancel()
            pending.append(main_task)
        reader = self._reader
        if reader is not None and not reader.done():
            reader.cancel()
            pending.append(reader)
        for task in list(self._tasks):
            task.cancel()
            pending.append(task)
        if pending:
            await asyncio.gather(*pending, return_exceptions=True)
        try:
            # aclose flushes queued output within the transport's own time limit; an unbounded
            # drain() here would hang on a peer that stopped reading.
            await self._transport.aclose()
        except Exception as exc:
            _log.debug("Closing connection %r failed", self.name, exc_info=exc)
        if self._failure is not None:
            raise self._failure


def _default_route_incoming() -> Any:
    from acpio.jsonrpc.builder import Role

    return Role.route_incoming


_C = TypeVar("_C", bound="Connection")


async def _call(main: Callable[[_C], Awaitable[T]], cx: _C) -> T:
    return await main(cx)


_TYPED: dict[type, tuple[str, Callable[[Any], Any]]] = {}


def _typed(kind: type) -> tuple[str, Callable[[Any], Any]]:
    """Method and result parser of a typed message class (looked up once per class)."""
    found = _TYPED.get(kind)
    if found is None:
        method = message_method(kind)
        response_type = getattr(kind, "RESPONSE", None)
        parse = _parse_with(response_type, method) if response_type is not None else _identity
        found = _TYPED[kind] = (method, parse)
    return found


def _outgoing(message: Any, params: Any, *, request: bool) -> tuple[str, Any, Callable[[Any], Any]]:
    """Method, params and result parser for an outgoing message in any of the accepted forms."""
    if isinstance(message, str):
        return message, (None if params is _UNSET else params), _identity
    if params is not _UNSET:
        raise TypeError("params= is only for a method name; a message object carries its own params")
    if isinstance(message, UntypedMessage):
        return message.method, message.params, _identity
    method, parse = _typed(type(message))
    return method, message, parse if request else _identity
