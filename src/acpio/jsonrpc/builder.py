"""Builders: declare the handlers of a connection, then connect it; the engine's own role.

A :class:`Builder` collects handlers and tasks, then serves one connection per ``serve`` or
``connect_with`` call::

    app = UntypedRole.builder(name="echo")

    @app.on_request
    async def hello(req: Hello, responder: Responder[HelloResult], cx: Connection) -> HelloResult:
        return HelloResult(greeting=f"hello, {req.name}")

    await app.serve(transport)

A builder is itself a :class:`~acpio.transports.base.Component`: another builder can connect to it
in-process. :class:`UntypedRole` is the engine's protocol-neutral role; a role of your own (a
:class:`~acpio.jsonrpc.Role` subclass) is served with ``Builder(MyRole())``.
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import logging
from collections.abc import Awaitable, Callable, Coroutine
from typing import Any, Generic, TypeAlias, TypeVar, overload

from typing_extensions import TypeVar as DefaultTypeVar

from acpio.jsonrpc.connection import Connection, SendObserver
from acpio.jsonrpc.dispatch import DispatchFunction, DispatchHandler, Handler, as_handler
from acpio.jsonrpc.handlers import NotificationHandler, RequestHandler, message_type_from
from acpio.jsonrpc.role import PeerLike, Role
from acpio.transports.base import Component, Transport
from acpio.transports.channel import Channel, ServedChannel
from acpio.transports.listener import Listener

__all__ = ["Builder", "ServeTarget", "Target", "UntypedRole", "open_transport", "serve_listener"]

_log = logging.getLogger("acpio.jsonrpc")
#: Seconds ``serve()`` waits after a failed ``accept()``, first and at most.
_ACCEPT_RETRY = 0.1
_ACCEPT_RETRY_MAX = 2.0

T = TypeVar("T")
F = TypeVar("F", bound=Callable[..., Awaitable[Any]])
#: A typed handler function, before its message type is read from its first parameter's annotation.
_Function: TypeAlias = Callable[..., Awaitable[object]]
#: The connection handle (``cx``) a builder's connections get: ``Connection`` or a role's subclass.
C = DefaultTypeVar("C", bound=Connection, default=Connection, covariant=True)

#: What a connection is made on: a :class:`~acpio.transports.base.Transport` as it is, or a
#: :class:`~acpio.transports.base.Component` (another builder, an ``AcpAgent``, a conductor) opened.
Target: TypeAlias = Transport | Component
#: What :meth:`Builder.serve` serves: one connection's :data:`Target`, or a
#: :class:`~acpio.transports.listener.Listener` whose every accepted transport becomes a connection.
ServeTarget: TypeAlias = Target | Listener


class UntypedRole(Role):
    """A protocol-neutral role: its own counterpart, no default handler, no envelopes."""

    NAME = "untyped"

    @classmethod
    def builder(cls, *, name: str | None = None, error_details: bool = True) -> Builder[Connection]:
        """A new :class:`Builder` for a connection playing this role.

        ``error_details=False`` answers a handler's unexpected exception ``-32603`` without its
        message (see :class:`Builder`).
        """
        return Builder(cls(), name=name, error_details=error_details)


async def open_transport(target: Target) -> Transport:
    """``target`` as a transport: a :class:`Transport` as it is, a ``Component`` opened."""
    if isinstance(target, Transport):
        return target
    opener = getattr(target, "open", None)
    if opener is None or not callable(opener):
        raise TypeError(
            f"Cannot connect to {target!r}: pass a Transport (receive/send/drain/aclose) "
            "or a Component (async open() -> Transport), such as another Builder"
        )
    transport: Transport = await opener()
    return transport


class Builder(Generic[C]):
    """Collects the handlers, tasks and close callbacks of a connection, then connects it.

    Handlers are offered each message in registration order. Register with the decorators
    :meth:`on_request`, :meth:`on_notification`, :meth:`on_dispatch`, or add any handler object
    with :meth:`with_handler`. Serve with :meth:`serve` (one connection, or every one a listener
    accepts), or drive one with :meth:`connect_with`.

    ``C`` is the class of the connection handle the role makes (``Client.builder()`` is a
    ``Builder[SessionConnection]``), so ``connect_with(target, main)`` types ``main``'s ``cx``.

    A request handler that raises a :class:`~acpio.RequestError` answers with it; any other
    exception answers ``-32603`` with its message in ``data`` (``{"details": "...", "type": "ValueError"}``,
    the official TypeScript SDK's shape) and is logged with its traceback. ``error_details=False``
    answers ``-32603`` with no data, for handlers whose messages may hold what the peer must not see.
    """

    def __init__(
        self,
        role: Role | None = None,
        *,
        name: str | None = None,
        connection_class: type[C] | None = None,
        error_details: bool = True,
    ) -> None:
        self.role: Role = role if role is not None else UntypedRole()
        self.name: str = name if name is not None else type(self.role).NAME
        #: Whether a handler's unexpected exception answers ``-32603`` with its message in ``data``
        #: (``{"details": "...", "type": "ValueError"}``) or with no data
        #: (see :attr:`Connection.error_details`).
        self.error_details = error_details
        #: The class of the handle each connection gets (``Connection`` unless a subclass is given).
        self.connection_class: type[Connection] = (
            connection_class if connection_class is not None else Connection
        )
        self._handlers: list[Handler] = []
        self._spawned: list[Callable[[Any], Awaitable[object]]] = []
        self._close: list[Callable[[Any], Awaitable[object]]] = []
        self._send_observers: list[SendObserver] = []
        #: Connections served in-process by :meth:`open`, until they end.
        self._opened: set[asyncio.Task[None]] = set()

    def __repr__(self) -> str:
        return f"<Builder {self.name!r} {type(self.role).__name__} handlers={len(self._handlers)}>"

    # --- handlers ---------------------------------------------------------------------------------

    @overload
    def on_request(self, message_type: F, fn: None = None, *, peer: PeerLike | None = None) -> F: ...
    @overload
    def on_request(
        self, message_type: type | None = None, fn: None = None, *, peer: PeerLike | None = None
    ) -> Callable[[F], F]: ...
    @overload
    def on_request(self, message_type: type[object], fn: F, *, peer: PeerLike | None = None) -> F: ...

    def on_request(
        self,
        message_type: type[object] | _Function | None = None,
        fn: _Function | None = None,
        *,
        peer: PeerLike | None = None,
    ) -> object:
        """Register a typed request handler.

        Usable as ``@app.on_request``, ``@app.on_request(Type)``, ``@app.on_request(peer=Agent)``,
        ``@app.on_request(Type, peer=Agent)`` or ``app.on_request(Type, fn)``. The message type
        comes from the first parameter's annotation unless given. With ``peer`` (a role class or
        instance, one of the role's peers) only requests from that peer reach the handler. The
        function is called as ``fn(req, responder, cx)`` and may return the result, answer through
        ``responder`` and return ``None``, or return ``Unhandled(req)`` to pass the request on.
        """
        return self._register(message_type, fn, RequestHandler, "request", peer)

    @overload
    def on_notification(self, message_type: F, fn: None = None, *, peer: PeerLike | None = None) -> F: ...
    @overload
    def on_notification(
        self, message_type: type | None = None, fn: None = None, *, peer: PeerLike | None = None
    ) -> Callable[[F], F]: ...
    @overload
    def on_notification(self, message_type: type[object], fn: F, *, peer: PeerLike | None = None) -> F: ...

    def on_notification(
        self,
        message_type: type[object] | _Function | None = None,
        fn: _Function | None = None,
        *,
        peer: PeerLike | None = None,
    ) -> object:
        """Register a typed notification handler, called as ``fn(notification, cx)``.

        Used as ``@app.on_notification`` (type from the annotation), ``@app.on_notification(Type)``,
        and with ``peer=`` to take notifications from that peer only, as for :meth:`on_request`.
        """
        return self._register(message_type, fn, NotificationHandler, "notification", peer)

    def _register(self, message_type: Any, fn: Any, kind: type[Any], what: str, peer: Any) -> Any:
        source = None if peer is None else self._peer(peer, what)
        if fn is not None:
            self._add_typed(kind(message_type, fn, source))
            return fn
        if message_type is None or hasattr(message_type, "METHOD"):

            def decorator(function: F) -> F:
                cls = message_type if message_type is not None else message_type_from(function, what)
                self._add_typed(kind(cls, function, source))
                return function

            return decorator
        if not callable(message_type):
            raise TypeError(f"on_{what}() takes a message type or a handler function, not {message_type!r}")
        function = message_type
        self._add_typed(kind(message_type_from(function, what), function, source))
        return function

    def _add_typed(self, handler: RequestHandler | NotificationHandler) -> None:
        """Append a typed handler; one for a method the role disabled is refused at once."""
        self._check_enabled(handler)
        self._handlers.append(handler)

    def _check_enabled(self, handler: RequestHandler | NotificationHandler) -> None:
        if handler.method in self.role.disabled_methods():
            raise self.role.disabled_error(handler.method, "handle")

    def _peer(self, peer: PeerLike, what: str) -> Role:
        try:
            return self.role.resolve_peer(peer)
        except ValueError as exc:
            raise ValueError(f"on_{what}(peer=...): {exc}") from None

    @overload
    def on_dispatch(self, fn: F, *, peer: PeerLike | None = None) -> F: ...
    @overload
    def on_dispatch(self, fn: None = None, *, peer: PeerLike | None = None) -> Callable[[F], F]: ...

    def on_dispatch(self, fn: DispatchFunction | None = None, *, peer: PeerLike | None = None) -> object:
        """Register a handler for every message, untyped: ``fn(message: Dispatch, cx)``.

        It sees requests, notifications and responses to our own requests; it returns ``None`` to
        claim the message or ``Unhandled(message)`` to pass it on. ``@app.on_dispatch(peer=Agent)``
        sees only the messages from that peer (and the responses to requests sent to it).
        """
        source = None if peer is None else self._peer(peer, "dispatch")
        if fn is None:

            def decorator(function: F) -> F:
                self._handlers.append(DispatchHandler(function, source))
                return function

            return decorator
        self._handlers.append(DispatchHandler(fn, source))
        return fn

    def with_handler(self, handler: Handler | DispatchFunction) -> Builder[C]:
        """Append a handler object (``async handle(message, cx)``); returns the builder."""
        self._handlers.append(as_handler(handler))
        return self

    def with_spawned(self, fn: Callable[[C], Awaitable[object]]) -> Builder[C]:
        """Start ``fn(cx)`` as a task when the connection starts; its failure fails the connection.

        (Unlike a task spawned by a request handler, which only fails its request: see
        :meth:`Connection.spawn`.)
        """
        self._spawned.append(fn)
        return self

    def on_close(self, callback: F) -> F:
        """Run ``await callback(cx)`` when the connection ends cleanly (usable as a decorator).

        Callbacks run in registration order, all of them, after pending requests failed; the first
        error fails the connection.
        """
        self._close.append(_with_cx(callback))
        return callback

    def on_send_notification(self, observer: SendObserver) -> SendObserver:
        """Call ``observer(cx, method, params)`` for each notification a connection of this builder sends.

        It is called right before the notification is queued (so what it schedules with
        ``call_soon`` runs before the frame is written), with the params serialized once for it and
        for the frame: a :class:`~acpio.jsonrpc.RawJson` whose ``json`` is the text the frame
        carries and whose ``source`` is what the sender gave (a typed object, a dict; for a
        ``RawJson`` sent as it is, the ``source`` it was made with, which may be ``None``), or
        ``None`` for a notification without params. It runs on the sender's path, so it must be
        quick and must not raise; a session store records ``session/update`` this way
        (:func:`acpio.store.serve_sessions`). Usable as a decorator; returns ``observer``.
        """
        self._send_observers.append(observer)
        return observer

    def merge(self, other: Builder[Connection]) -> Builder[C]:
        """Append ``other``'s handlers, tasks and close callbacks after this builder's; returns ``self``.

        A typed handler of ``other`` for a method this builder's role disabled is refused, as when
        it is registered here.
        """
        for handler in other._handlers:
            if isinstance(handler, RequestHandler | NotificationHandler):
                self._check_enabled(handler)
        self._handlers.extend(other._handlers)
        self._spawned.extend(other._spawned)
        self._close.extend(other._close)
        self._send_observers.extend(other._send_observers)
        return self

    # --- connecting -------------------------------------------------------------------------------

    async def open_connection(self, target: Target) -> C:
        """A connection to ``target`` (a transport or component), made but not served yet.

        Serve it with :meth:`Connection.serve` or :meth:`Connection.run`; :meth:`serve` and
        :meth:`connect_with` do both steps.
        """
        transport = await open_transport(target)
        role = self.role.for_connection()
        connection = self.connection_class(
            role,
            transport,
            name=self.name,
            handlers=self._handlers,
            startup=self._spawned,
            close_callbacks=self._close,
        )
        connection.error_details = self.error_details
        for observer in self._send_observers:
            connection.add_send_observer(observer)
        return connection  # type: ignore[return-value]  # connection_class is C's class

    async def _serve_one(self, target: Target) -> None:
        await (await self.open_connection(target)).serve()

    async def connect_with(self, target: Target, main: Callable[[C], Awaitable[T]]) -> T:
        """Connect to ``target``, run ``await main(cx)`` while serving, then close; returns its value.

        If the connection fails first, ``main`` is cancelled and the failure is raised. If the peer
        closes first, ``main`` goes on (its pending and new requests fail with ConnectionClosed).
        """
        connection = await self.open_connection(target)
        result = await connection.run(main)
        return result  # type: ignore[return-value]  # None only when main is None

    async def serve(
        self, target: ServeTarget, *, on_error: Callable[[BaseException], object] | None = None
    ) -> None:
        """Serve ``target``: one connection (a transport or component), or every connection of a listener.

        *One connection* (a :class:`~acpio.transports.base.Transport`, or a component such as
        another builder or ``AcpAgent``): until the peer closes it. Returns once the input ended,
        the close callbacks ran and queued output was written; raises the error that failed the
        connection (a read error, a failed ``with_spawned`` task: see :meth:`Connection.spawn`
        for the tasks whose failure only fails their request).

        *A* :class:`~acpio.transports.listener.Listener`: each transport it accepts becomes a
        connection of its own, until the listener closes. The connections run side by side in
        tasks this call owns. One that fails is reported (``on_error(exc)``; by default logged
        with its traceback) and the others go on. An error from ``listener.accept()`` is reported
        too, and accepting resumes after a pause (0.1 s, doubling up to 2 s). When the listener
        closes, or this call is cancelled, the connections still open are ended (their tasks
        cancelled, their transports closed) before it returns.

        To drive the connection from code of your own instead (a client), use :meth:`connect_with`.
        """
        if not isinstance(target, Listener):
            if on_error is not None:
                raise TypeError("on_error= is for serving a listener; one connection raises its failure")
            await self._serve_one(target)
            return
        await serve_listener(target, self._serve_one, name=self.name, on_error=on_error)

    async def open(self) -> Transport:
        """Serve this builder in-process and return the transport that talks to it (Component protocol)."""
        ours, theirs = Channel.duplex()
        task = asyncio.get_running_loop().create_task(
            self._serve_one(ours), name=f"acpio builder {self.name}"
        )
        # the builder keeps the task referenced while it runs, even if the transport is dropped
        self._opened.add(task)
        task.add_done_callback(self._opened.discard)
        return ServedChannel(theirs, task)

    def statistics(self) -> dict[str, int]:
        """Counts of what is registered."""
        return {"handlers": len(self._handlers), "spawned": len(self._spawned), "on_close": len(self._close)}


async def serve_listener(
    listener: Listener,
    serve_one: Callable[[Transport], Coroutine[Any, Any, None]],
    *,
    name: str,
    on_error: Callable[[BaseException], object] | None = None,
) -> None:
    """Run ``serve_one(transport)`` for each transport ``listener`` accepts, side by side, until it closes.

    What :meth:`Builder.serve` does with a listener (and :class:`acpio.VersionRouter` too): a
    connection that fails is reported (``on_error(exc)``; by default logged with its traceback)
    and the others go on; an error from ``accept()`` is reported and accepting resumes after a
    pause (0.1 s, doubling up to 2 s). When the listener closes, or this call is cancelled, the
    connections still open are ended (their tasks cancelled, their transports closed) before it
    returns. ``name`` names the connections' tasks.
    """
    report = on_error if on_error is not None else _log_failed_connection
    running: dict[asyncio.Task[None], Transport] = {}

    def finished(task: asyncio.Task[None]) -> None:
        running.pop(task, None)
        failure = None if task.cancelled() else task.exception()
        if failure is not None:
            report(failure)

    loop = asyncio.get_running_loop()
    pause = _ACCEPT_RETRY
    try:
        while True:
            try:
                transport = await listener.accept()
            except Exception as exc:  # too many open files...: report, wait, accept again
                report(exc)
                await asyncio.sleep(pause)
                pause = min(2 * pause, _ACCEPT_RETRY_MAX)
                continue
            if transport is None:
                break
            pause = _ACCEPT_RETRY
            task = loop.create_task(serve_one(transport), name=f"acpio {name} connection")
            running[task] = transport
            task.add_done_callback(finished)
    finally:
        await listener.aclose()
        tasks = list(running.items())
        for task, _ in tasks:
            task.cancel()
        await asyncio.gather(*(task for task, _ in tasks), return_exceptions=True)
        for _, transport in tasks:  # a task cancelled before it ran never closed its transport
            with contextlib.suppress(Exception):
                await transport.aclose()


def _log_failed_connection(exc: BaseException) -> None:
    _log.error("A served connection failed; the others go on", exc_info=exc)


def _with_cx(callback: Callable[..., Awaitable[object]]) -> Callable[[Connection], Awaitable[object]]:
    try:
        count = len(
            [
                p
                for p in inspect.signature(callback).parameters.values()
                if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD, p.VAR_POSITIONAL)
            ]
        )
    except (TypeError, ValueError):
        count = 1
    if count >= 1:
        return callback

    async def call(cx: Connection) -> object:
        return await callback()

    return call
