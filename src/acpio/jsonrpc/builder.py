"""Roles and builders: declare the handlers of a connection, then connect it.

A :class:`Role` says who this side is: its name, its counterpart, the *default handler* it adds at
the end of the chain, how a message addressed to one of its peers is sent
(:meth:`Role.route_outgoing`) and which peer an incoming message came from
(:meth:`Role.route_incoming`). The engine has only :class:`UntypedRole` (its own counterpart, no
default handler); the ACP roles in :mod:`acpio.roles` subclass :class:`Role`.

A :class:`Builder` collects handlers and tasks, then serves one connection per ``connect_to`` or
``connect_with`` call::

    app = UntypedRole.builder(name="echo")

    @app.on_request
    async def hello(req: Hello, responder: Responder[HelloResult], cx: Connection) -> HelloResult:
        return HelloResult(greeting=f"hello, {req.name}")

    await app.connect_to(transport)

A builder is itself a :class:`~acpio.transports.base.Component`: another builder can connect to it
in-process.
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import logging
from collections.abc import Awaitable, Callable
from typing import Any, ClassVar, Generic, TypeAlias, TypeVar, overload

from typing_extensions import TypeVar as DefaultTypeVar

from acpio.errors import MethodNotFound, RequestError
from acpio.jsonrpc.connection import Connection
from acpio.jsonrpc.handlers import (
    DispatchHandler,
    Handler,
    NotificationHandler,
    RequestDispatch,
    RequestHandler,
    as_handler,
    message_type_from,
)
from acpio.jsonrpc.messages import JsonValue
from acpio.jsonrpc.parking import ParkingLimits
from acpio.transports.base import Transport
from acpio.transports.channel import Channel, ServedChannel
from acpio.transports.listener import Listener

__all__ = ["Builder", "PeerLike", "Role", "UntypedRole", "open_transport"]

_log = logging.getLogger("acpio.jsonrpc")
_PARKING = ParkingLimits()
#: Seconds ``serve()`` waits after a failed ``accept()``, first and at most.
_ACCEPT_RETRY = 0.1
_ACCEPT_RETRY_MAX = 2.0

T = TypeVar("T")
F = TypeVar("F", bound=Callable[..., Awaitable[Any]])
#: The connection handle (``cx``) a builder's connections get: ``Connection`` or a role's subclass.
C = DefaultTypeVar("C", bound=Connection, default=Connection, covariant=True)


class Role:
    """Who one side of a connection is.

    Subclasses set :attr:`NAME` and :attr:`COUNTERPART`, and may override :meth:`peers`,
    :meth:`default_handler` (the handler placed after the dynamic handlers),
    :meth:`route_outgoing` (how a message for one of :meth:`peers` is sent, for example wrapped in
    an envelope) and :meth:`route_incoming` (which peer an incoming message came from, and what the
    handlers see of it, for example the message unwrapped from its envelope).
    """

    #: A short name for logs.
    NAME: ClassVar[str] = "role"
    #: The role of the other side; ``None`` means the role is its own counterpart.
    COUNTERPART: ClassVar[type[Role] | None] = None

    def __repr__(self) -> str:
        return f"{type(self).__name__}()"

    def __eq__(self, other: object) -> bool:
        return type(other) is type(self)

    def __hash__(self) -> int:
        return hash(type(self))

    @classmethod
    def builder(cls, *, name: str | None = None) -> Builder[Connection]:
        """A new :class:`Builder` for a connection playing this role."""
        return Builder(cls(), name=name)

    def counterpart(self) -> Role:
        """The role at the other end of the connection."""
        return (self.COUNTERPART or type(self))()

    def peers(self) -> tuple[Role, ...]:
        """The roles this side can address; by default only the counterpart."""
        return (self.counterpart(),)

    def connection_class(self) -> type[Connection]:
        """The class of the connection handle (``cx``) this role's builder makes.

        ACP roles return a subclass with protocol helpers (``cx.build_session(...)``).
        """
        return Connection

    def default_handler(self) -> Handler | None:
        """The handler placed after the dynamic handlers, or ``None`` (the base has none)."""
        return None

    def parking_limits(self) -> ParkingLimits:
        """How many messages a connection parks for handlers added later, and for how long."""
        return _PARKING

    def unclaimed_error(self, message: RequestDispatch) -> RequestError:
        """The answer to a parked request no handler claimed in time (by default ``-32601``)."""
        return MethodNotFound(message.method)

    def for_connection(self) -> Role:
        """The role instance one new connection plays (by default: this one, shared).

        A builder may serve several connections with one role. A role whose routing keeps state
        per connection (the ACP ``Proxy`` remembers which names its conductor uses for the
        proxy-chain methods) returns a copy here, so connections never share that state.
        """
        return self

    def disabled_methods(self) -> frozenset[str]:
        """Methods of the protocol this side does not speak (by default: none).

        The connection enforces them, so a role can switch off part of its protocol (the ACP roles
        switch off the unstable methods unless asked for them):

        * sending one with ``send_request``/``send_notification`` raises :meth:`disabled_error`
          before anything is written; forwarding with ``send_proxied_message`` is not checked
          (passing a message on is not speaking it);
        * an incoming request or notification for one never reaches the builder's or the dynamic
          handlers: it goes to :meth:`disabled_handler`, or, when there is none, to the fallback
          (``-32601`` with the method in ``data`` for a request, as for any unknown method; a
          notification is dropped); the response to a forwarded one goes straight to its caller;
        * registering a typed handler for one raises :meth:`disabled_error` at once.

        Called once per connection (and per typed-handler registration); return the same set.
        """
        return frozenset()

    def disabled_error(self, method: str, action: str) -> Exception:
        """The error for trying to ``action`` (``"send"`` or ``"handle"``) a disabled ``method``."""
        return ValueError(f"Cannot {action} {method!r}: {type(self).__name__} connections do not speak it")

    def disabled_handler(self) -> Handler | None:
        """The handler that takes incoming messages for :meth:`disabled_methods`, or ``None``.

        The base has none, so they get the fallback; a proxy role returns its forwarding handler, so
        that what it does not speak still passes through it unchanged.
        """
        return None

    def resolve_peer(self, peer: Any) -> Role:
        """``peer`` (a role class or instance) as the instance from :meth:`peers`.

        Raises ``ValueError`` naming the peers this role has when ``peer`` is not one of them.
        """
        wanted = peer() if isinstance(peer, type) and issubclass(peer, Role) else peer
        for known in self.peers():
            if known == wanted:
                return known
        names = ", ".join(type(p).__name__ for p in self.peers())
        name = peer.__name__ if isinstance(peer, type) else repr(peer)
        raise ValueError(
            f"{name} is not a peer of a {type(self).__name__} connection; its peers are: {names}"
        )

    def route_outgoing(self, peer: Any, method: str, params: Any) -> tuple[str, Any]:
        """The method and params to send a message for ``peer`` with (by default: unchanged).

        ``peer`` is a role (class or instance) from :meth:`peers`; anything else is an error.
        """
        self._check_send(peer)
        return method, params

    def _check_send(self, peer: Any) -> Role:
        """:meth:`resolve_peer` for sending: the error says that sending is what failed."""
        try:
            return self.resolve_peer(peer)
        except ValueError as exc:
            name = peer.__name__ if isinstance(peer, type) else repr(peer)
            raise ValueError(f"{type(self).__name__} cannot send to {name}: {exc}") from None

    def route_incoming(self, method: str, params: JsonValue) -> tuple[Role, str, JsonValue]:
        """The peer an incoming request or notification came from, and its method and params.

        Called once per incoming request or notification, before the handler chain. The default:
        it came from the counterpart, unchanged. A role that receives messages from several peers
        over one connection (a proxy) overrides this to tell them apart and unwrap them.
        """
        return self.counterpart(), method, params


class UntypedRole(Role):
    """A protocol-neutral role: its own counterpart, no default handler, no envelopes."""

    NAME = "untyped"


#: A peer as handlers and senders name it: a role class (``Agent``) or instance (``Agent()``).
PeerLike: TypeAlias = Role | type[Role]


async def open_transport(target: Any) -> Transport:
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
    with :meth:`with_handler`. Serve with :meth:`connect_to` or :meth:`connect_with`.

    ``C`` is the class of the connection handle the role makes (``Client.builder()`` is a
    ``Builder[SessionConnection]``), so ``connect_with(target, main)`` types ``main``'s ``cx``.
    """

    def __init__(self, role: Role | None = None, *, name: str | None = None) -> None:
        self.role: Role = role if role is not None else UntypedRole()
        self.name: str = name if name is not None else type(self.role).NAME
        self._handlers: list[Handler] = []
        self._spawned: list[Callable[[Any], Awaitable[object]]] = []
        self._close: list[Callable[[Any], Awaitable[object]]] = []
        #: Connections served in-process by :meth:`open`, until they end.
        self._opened: set[asyncio.Task[None]] = set()

    def __repr__(self) -> str:
        return f"<Builder {self.name!r} {type(self.role).__name__} handlers={len(self._handlers)}>"

    # --- handlers ---------------------------------------------------------------------------------

    @overload
    def on_request(self, message_type: F, fn: None = None, *, peer: PeerLike | None = None) -> F: ...
    @overload
    def on_request(
        self, message_type: type[Any] | None = None, fn: None = None, *, peer: PeerLike | None = None
    ) -> Callable[[F], F]: ...
    @overload
    def on_request(self, message_type: type[Any], fn: F, *, peer: PeerLike | None = None) -> F: ...

    def on_request(self, message_type: Any = None, fn: Any = None, *, peer: PeerLike | None = None) -> Any:
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
        self, message_type: type[Any] | None = None, fn: None = None, *, peer: PeerLike | None = None
    ) -> Callable[[F], F]: ...
    @overload
    def on_notification(self, message_type: type[Any], fn: F, *, peer: PeerLike | None = None) -> F: ...

    def on_notification(
        self, message_type: Any = None, fn: Any = None, *, peer: PeerLike | None = None
    ) -> Any:
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
        if handler.method in self.role.disabled_methods():
            raise self.role.disabled_error(handler.method, "handle")
        self._handlers.append(handler)

    def _peer(self, peer: Any, what: str) -> Role:
        try:
            return self.role.resolve_peer(peer)
        except ValueError as exc:
            raise ValueError(f"on_{what}(peer=...): {exc}") from None

    @overload
    def on_dispatch(self, fn: F, *, peer: PeerLike | None = None) -> F: ...
    @overload
    def on_dispatch(self, fn: None = None, *, peer: PeerLike | None = None) -> Callable[[F], F]: ...

    def on_dispatch(self, fn: Any = None, *, peer: PeerLike | None = None) -> Any:
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

    def with_handler(self, handler: Any) -> Builder[C]:
        """Append a handler object (``async handle(message, cx)``); returns the builder."""
        self._handlers.append(as_handler(handler))
        return self

    def with_spawned(self, fn: Callable[[C], Awaitable[object]]) -> Builder[C]:
        """Start ``fn(cx)`` as a task when the connection starts; its failure fails the connection."""
        self._spawned.append(fn)
        return self

    def on_close(self, callback: F) -> F:
        """Run ``await callback(cx)`` when the connection ends cleanly (usable as a decorator).

        Callbacks run in registration order, all of them, after pending requests failed; the first
        error fails the connection.
        """
        self._close.append(_with_cx(callback))
        return callback

    def merge(self, other: Builder[Connection]) -> Builder[C]:
        """Append ``other``'s handlers, tasks and close callbacks after this builder's; returns ``self``.

        A typed handler of ``other`` for a method this builder's role disabled is refused, as when
        it is registered here.
        """
        disabled = self.role.disabled_methods()
        for handler in other._handlers:
            if isinstance(handler, RequestHandler | NotificationHandler) and handler.method in disabled:
                raise self.role.disabled_error(handler.method, "handle")
        self._handlers.extend(other._handlers)
        self._spawned.extend(other._spawned)
        self._close.extend(other._close)
        return self

    # --- connecting -------------------------------------------------------------------------------

    def _make_connection(self, transport: Transport) -> C:
        role = self.role.for_connection()
        return role.connection_class()(  # type: ignore[return-value]  # the role's class is C
            role,
            transport,
            name=self.name,
            handlers=self._handlers,
            startup=self._spawned,
            close_callbacks=self._close,
        )

    async def connect_to(self, target: Any) -> None:
        """Serve a connection to ``target`` (a transport or component) until the peer closes it.

        Returns once the input ended, the close callbacks ran and queued output was written.
        Raises the error that failed the connection (a read error, a failed spawned task).
        """
        transport = await open_transport(target)
        await self._make_connection(transport)._serve(None)

    async def connect_with(self, target: Any, main: Callable[[C], Awaitable[T]]) -> T:
        """Connect to ``target``, run ``await main(cx)`` while serving, then close; returns its value.

        If the connection fails first, ``main`` is cancelled and the failure is raised. If the peer
        closes first, ``main`` goes on (its pending and new requests fail with ConnectionClosed).
        """
        transport = await open_transport(target)
        result = await self._make_connection(transport)._serve(main)
        return result  # type: ignore[return-value]  # None only when main is None

    async def serve(
        self, listener: Listener, *, on_error: Callable[[BaseException], object] | None = None
    ) -> None:
        """Serve each transport ``listener`` accepts as its own connection, until the listener closes.

        The connections run side by side in tasks this call owns. One that fails is reported
        (``on_error(exc)``; by default logged with its traceback) and the others go on. An error
        from ``listener.accept()`` is reported too, and accepting resumes after a pause (0.1 s,
        doubling up to 2 s). When the listener closes, or this call is cancelled, the connections
        still open are ended (their tasks cancelled, their transports closed) before it returns.
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
                task = loop.create_task(self.connect_to(transport), name=f"acpio {self.name} connection")
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

    async def open(self) -> Transport:
        """Serve this builder in-process and return the transport that talks to it (Component protocol)."""
        ours, theirs = Channel.duplex()
        task = asyncio.get_running_loop().create_task(
            self.connect_to(ours), name=f"acpio builder {self.name}"
        )
        # the builder keeps the task referenced while it runs, even if the transport is dropped
        self._opened.add(task)
        task.add_done_callback(self._opened.discard)
        return ServedChannel(theirs, task)

    def statistics(self) -> dict[str, int]:
        """Counts of what is registered."""
        return {"handlers": len(self._handlers), "spawned": len(self._spawned), "on_close": len(self._close)}


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
