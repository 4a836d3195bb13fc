"""The connection: the handle (``cx``) on one live JSON-RPC connection, and its life from start to end.

A :class:`Connection` puts together the parts of the engine: the
:class:`~acpio.jsonrpc.loop.DispatchLoop` reads and dispatches, the
:class:`~acpio.jsonrpc.outbox.Outbox` writes and keeps the requests in flight, the
:class:`~acpio.jsonrpc.chain.HandlerChain` decides who handles what, the
:class:`~acpio.jsonrpc.lifecycle.Lifecycle` says which phase the connection is in, and the
:class:`~acpio.jsonrpc.ending.ConnectionEnding` does what each way of ending does (end of input,
:meth:`Connection.close`, a failure, the final shutdown). This module adds the public API (sending,
spawning, dynamic handlers, closing, running).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Coroutine, Iterable
from typing import TYPE_CHECKING, Any, Protocol, Self, TypeVar, TypeVarTuple, overload

from acpio.errors import RequestError
from acpio.jsonrpc.chain import DynamicHandlerRegistration, HandlerChain
from acpio.jsonrpc.dispatch import Dispatch, DispatchFunction, Handler, as_handler
from acpio.jsonrpc.ending import ConnectionEnding
from acpio.jsonrpc.lifecycle import Lifecycle, Phase
from acpio.jsonrpc.loop import DispatchLoop
from acpio.jsonrpc.messages import CANCEL_METHOD, JsonValue, RawJson, RequestId, UntypedMessage, encode_error
from acpio.jsonrpc.responses import SentRequest
from acpio.jsonrpc.role import PeerLike, Role
from acpio.jsonrpc.tasks import ConnectionTasks, Work
from acpio.jsonrpc.tracing import guarded, installed_tracer
from acpio.jsonrpc.typed import UNSET, TypedRequest, outgoing
from acpio.transports.base import Transport

if TYPE_CHECKING:
    from acpio.jsonrpc.builder import Target

__all__ = ["Connection", "ConnectionFactory", "SendObserver"]

T = TypeVar("T")
R = TypeVar("R")
Ts = TypeVarTuple("Ts")

#: ``observer(cx, method, params)``, called for each notification ``cx`` sends, right before it is queued:
#: ``params`` serialized once (a :class:`RawJson`, its ``source`` what the sender gave) or ``None``. It runs
#: on the sender's path: keep it quick (see ``Builder.on_send_notification``).
SendObserver = Callable[["Connection", str, "RawJson | None"], None]


class ConnectionFactory(Protocol):
    """What :meth:`Connection.spawn_connection` needs of a builder: a connection on a transport."""

    async def open_connection(self, target: Target) -> Connection:
        """A connection (not served yet) on ``target``, a transport or component."""
        ...


class Connection:
    """The handle on one live JSON-RPC connection (``cx`` in handlers).

    Send with :meth:`send_request`, :meth:`send_notification` and :meth:`send_error_notification`;
    run background work with :meth:`spawn`; add handlers at run time with
    :meth:`add_dynamic_handler`; forward messages with :meth:`send_proxied_message`. Connections are
    made by a :class:`~acpio.jsonrpc.Builder` (``serve`` / ``connect_with``), not directly.
    Await :meth:`drain` after sending in a loop to slow down to the peer's pace.
    """

    #: Bytes sent without waiting after which :meth:`drain` waits for the peer (256 KiB).
    HIGH_WATER: int = 256 * 1024
    #: Whether a request whose handler (or a task it spawned) raised something other than a
    #: :class:`~acpio.RequestError` is answered ``-32603`` with the exception's message in
    #: ``data`` (``{"details": "...", "type": "ValueError"}``), or with no data. Builders set it from their
    #: ``error_details`` keyword (``Agent.builder(error_details=False)`` hides it).
    error_details: bool = True

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
        self.role = role
        self.name = name
        self._startup = list(startup)
        self._chain = HandlerChain(role, handlers, self)
        self._life = life = Lifecycle(name, self._fail_pending)
        self._tasks = ConnectionTasks(life, self._chain)
        self._ending = ConnectionEnding(self, life, self._chain, self._tasks, transport, close_callbacks)
        self._loop = DispatchLoop(
            transport,
            role,
            life,
            self._chain,
            spawn=self._tasks.spawn_unowned,
            on_end=self._ending.end_of_input,
            on_error=life.fail,
            tracer=guarded(installed_tracer()),
        )
        self._outbox = self._loop.outbox
        #: Methods the role does not speak: never sent.
        self._disabled = role.disabled_methods()
        self._send_observers: tuple[SendObserver, ...] = ()

    def __repr__(self) -> str:
        return f"<Connection {self.name!r} {type(self.role).__name__} {self._life.phase.name.lower()}>"

    @property
    def counterpart(self) -> Role:
        """The role of the peer at the other end."""
        return self.role.counterpart()

    @property
    def phase(self) -> Phase:
        """Where the connection is in its life (see :mod:`acpio.jsonrpc.lifecycle`)."""
        return self._life.phase

    @property
    def closed(self) -> bool:
        """Whether the connection stopped taking requests (end of input, :meth:`close`, or a failure)."""
        return not self._life.is_open

    def in_dispatch_loop(self) -> bool:
        """Whether the current task is this connection's dispatch loop (a handler runs in it).

        Awaiting a response there would deadlock: only that loop can read it. Code that may run
        either inside a handler or outside can check this to choose ``on_receiving_result`` or
        ``cx.spawn(...)`` over awaiting.
        """
        return self._loop.in_dispatch_loop()

    async def wait_closed(self) -> None:
        """Wait until the input ended (after the ``on_close`` callbacks ran) or the connection closed."""
        await self._life.stopped.wait()

    @property
    def handler_methods(self) -> frozenset[str]:
        """The methods the builder's typed handlers take (``on_request``, ``on_notification``).

        A role's default handler reads it to tell what this side serves (the ``Agent`` role's
        default ``initialize`` answer advertises capabilities from it). Untyped handlers
        (``on_dispatch``, ``with_handler``) and dynamic handlers are not counted.
        """
        return self._chain.handler_methods

    def add_send_observer(self, observer: SendObserver) -> None:
        """Call ``observer(cx, method, params)`` for each notification sent from now on.

        See :meth:`Builder.on_send_notification <acpio.jsonrpc.Builder.on_send_notification>`.
        """
        self._send_observers = (*self._send_observers, observer)

    def statistics(self) -> dict[str, int]:
        """Counts for introspection: requests waiting for an answer each way, parked messages, tasks."""
        return {**self._outbox.statistics(), **self._chain.statistics(), "tasks": len(self._tasks)}

    # --- sending ----------------------------------------------------------------------------------

    @overload
    def send_request(self, message: str, params: object = None) -> SentRequest[JsonValue]: ...
    @overload
    def send_request(self, message: TypedRequest[R]) -> SentRequest[R]: ...
    @overload
    def send_request(self, message: UntypedMessage) -> SentRequest[JsonValue]: ...
    @overload  # a typed object whose class does not declare its result type: unknown to checkers
    def send_request(self, message: object, params: object = UNSET) -> SentRequest[Any]: ...

    def send_request(self, message: object, params: object = UNSET) -> SentRequest[Any]:
        """Send a request to the peer; the returned :class:`SentRequest` gives its answer.

        ``message`` is a typed request object (its class has ``METHOD``, and ``RESPONSE`` to parse
        the result into), an :class:`~acpio.jsonrpc.UntypedMessage`, or a method name with ``params``.
        The answer is the ``RESPONSE`` object for a typed request (its type, to type checkers, when the
        class is a :class:`~acpio.jsonrpc.TypedRequest`), the raw JSON (:data:`~acpio.jsonrpc.JsonValue`)
        otherwise. Raises :class:`~acpio.ConnectionClosed` at once if the connection no longer takes requests.
        """
        return self.send_request_to(None, message, params)

    @overload
    def send_request_to(
        self, peer: PeerLike | None, message: str, params: object = None
    ) -> SentRequest[JsonValue]: ...
    @overload
    def send_request_to(self, peer: PeerLike | None, message: TypedRequest[R]) -> SentRequest[R]: ...
    @overload
    def send_request_to(self, peer: PeerLike | None, message: UntypedMessage) -> SentRequest[JsonValue]: ...
    @overload
    def send_request_to(
        self, peer: PeerLike | None, message: object, params: object = UNSET
    ) -> SentRequest[Any]: ...

    def send_request_to(
        self, peer: PeerLike | None, message: object, params: object = UNSET
    ) -> SentRequest[Any]:
        """Send a request to ``peer``, one of the role's peers (``None``: the counterpart)."""
        method, params, parse = outgoing(message, params, request=True)
        if method in self._disabled:
            raise self.role.disabled_error(method, "send")
        return self._outbox.request(peer, method, params, parse)

    def send_notification(self, message: object, params: object = UNSET) -> None:
        """Send a notification (a typed object, an ``UntypedMessage``, or a method name with ``params``)."""
        self.send_notification_to(None, message, params)

    def send_notification_to(self, peer: PeerLike | None, message: object, params: object = UNSET) -> None:
        """Send a notification to ``peer``, one of the role's peers (``None``: the counterpart)."""
        method, params, _ = outgoing(message, params, request=False)
        if method in self._disabled:
            raise self.role.disabled_error(method, "send")
        if self._send_observers:
            if params is not None:  # serialized once, for the observers and the frame
                params = RawJson.of(params)
            # Observed before it is queued: what an observer schedules runs before the frame is
            # written (a session store commits an update before the client can have it).
            for observe in self._send_observers:
                observe(self, method, params)
        self._outbox.notify(peer, method, params)

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
        await self._outbox.drain(self.HIGH_WATER)

    def send_error_notification(self, error: RequestError) -> None:
        """Send an error that answers no request: a response with ``id: null``."""
        self._outbox.emit(encode_error(None, error))

    def send_cancel_request(self, request_id: RequestId, peer: PeerLike | None = None) -> None:
        """Send ``$/cancel_request`` for ``request_id`` (low level; prefer ``SentRequest.cancel``)."""
        self.send_notification_to(peer, CANCEL_METHOD, {"requestId": request_id})

    def send_proxied_message(self, message: Dispatch) -> None:
        """Forward an incoming request or notification to the counterpart, unvalidated.

        A request gets a fresh id here, and its answer goes back to the original responder
        (cancelling the original re-issues ``$/cancel_request`` with the new id). ``$/cancel_request``
        itself is never forwarded: its id means nothing on this connection.
        """
        self._outbox.forward(None, message)

    def send_proxied_message_to(self, peer: PeerLike | None, message: Dispatch) -> None:
        """Like :meth:`send_proxied_message`, to ``peer`` (one of the role's peers)."""
        self._outbox.forward(peer, message)

    # --- tasks ------------------------------------------------------------------------------------

    @overload
    def spawn(self, work: Coroutine[object, object, T]) -> asyncio.Task[T]: ...
    @overload
    def spawn(self, work: Callable[[*Ts], Coroutine[object, object, T]], *args: *Ts) -> asyncio.Task[T]: ...

    def spawn(self, work: Work, *args: object) -> asyncio.Task[object]:
        """Run ``work`` (a coroutine, or an async function called with ``*args``) beside the connection.

        The task is cancelled when the connection ends. What happens if it raises depends on where
        it was spawned:

        * from a request handler (or from a task spawned there, at any depth), it belongs to that
          request: the request is answered with the error if it has no answer yet (a
          :class:`~acpio.RequestError` as it is, anything else ``-32603`` with the message in
          ``data`` unless :attr:`error_details` is off), the exception is logged with its
          traceback, and the connection goes on: one failed turn does not end every session;
        * from anywhere else (``with_spawned``, ``connect_with``'s main, a response callback, a
          notification handler), the connection fails with that error (``serve`` and
          ``connect_with`` raise it).
        """
        return self._tasks.spawn(work, args, owned=True)

    async def spawn_connection(self, builder: ConnectionFactory, target: Target) -> Connection:
        """Start ``builder`` on ``target`` (a transport or component) beside this connection.

        Returns the new connection's handle; it is served by a task of this connection, whose
        failure fails this one too (even when started from a request handler: the new connection
        outlives the request).
        """
        child = await builder.open_connection(target)
        self._tasks.spawn_unowned(child.serve)
        return child

    # --- dynamic handlers -------------------------------------------------------------------------

    def add_dynamic_handler(self, handler: Handler | DispatchFunction) -> DynamicHandlerRegistration:
        """Add a handler after the builder's handlers and before the role's default one.

        Messages parked with ``Unhandled(..., retry=True)`` are offered to it first, in order, before
        the next incoming message. ``handler`` is a :class:`~acpio.jsonrpc.Handler` or an async
        function ``(message, cx)``. Use the returned registration to remove it (or as a context
        manager).
        """
        registration = self._chain.add(as_handler(handler))
        self._loop.handlers_added()
        return registration

    # --- life -------------------------------------------------------------------------------------

    def _fail_pending(self, make_error: Callable[[str], BaseException]) -> None:
        # the Lifecycle's hook: called on every phase change
        self._outbox.fail_pending(make_error)

    def close(self) -> None:
        """Stop the connection: pending requests fail with ``ConnectionClosed``, reading stops.

        ``serve`` then returns (after draining output); in ``connect_with``, the main function
        keeps running, but its requests fail at once. Calling it again does nothing.
        """
        self._ending.close(self._loop.reader)

    async def serve(self) -> None:
        """Serve until the input ends, :meth:`close` is called or the connection fails; then shut down.

        Raises the error that failed the connection. Builders call this (``serve``).
        """
        await self.run(None)

    async def run(self, main: Callable[[Self], Awaitable[T]] | None) -> T | None:
        """Serve while ``await main(self)`` runs (``None``: until serving stops), then shut down.

        Returns what ``main`` returned; raises the error that failed the connection (``main`` is
        then cancelled). Builders call this (``connect_with``).
        """
        loop = asyncio.get_running_loop()
        self._loop.start(self.name)
        main_task: asyncio.Task[T] | None = None
        try:
            for start in self._startup:
                self._tasks.spawn_unowned(start, self)
            if main is None:
                await self._life.stopped.wait()
                return None
            main_task = loop.create_task(_call(main, self), name=f"acpio main {self.name}")
            await asyncio.wait((main_task, self._life.failed), return_when=asyncio.FIRST_COMPLETED)
            if main_task.done():
                return main_task.result()
            return None  # failed: raised below
        finally:
            await self._ending.shutdown(main_task, self._loop.reader)


_C = TypeVar("_C", bound=Connection)


async def _call(main: Callable[[_C], Awaitable[T]], cx: _C) -> T:
    return await main(cx)
