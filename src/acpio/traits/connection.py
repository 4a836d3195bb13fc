"""The two connections of the trait-style API: :class:`AgentSideConnection` and :class:`ClientSideConnection`.

Each serves an implementation of one trait and *is* the other trait, whose methods call the peer::

    class Echo(AgentTrait):
        def __init__(self, client: AgentSideConnection) -> None:
            self.client = client

        async def prompt(self, params: PromptRequest) -> PromptResponse:
            await self.client.session_update(SessionNotification(...))
            return PromptResponse(stop_reason=StopReason.END_TURN)

    await AgentSideConnection(Echo, Stdio()).serve()

The implementation gets the connection in one of two ways: pass a *factory* (a class or function
taking the connection, as above), or pass an instance, whose ``on_connect(conn)`` is called before
anything is served. The client side mirrors this::

    async with ClientSideConnection(MyClient(), AcpAgent(["my-agent"])) as agent:
        await agent.initialize(InitializeRequest(protocol_version=1))

How messages run (the engine's dispatch loop reads one message at a time):

* each incoming request runs in its own task, started before the next message is dispatched, so a
  long ``prompt()`` can await the peer and still see ``cancel()``; ``$/cancel_request`` for it
  cancels that task and answers ``-32800``;
* incoming notifications run in arrival order inside the dispatch loop, each before the next
  message is read: on a client, every ``session_update`` of a turn has been handled when
  ``prompt()`` returns. Keep them short; they must not await a response from the peer
  (:class:`~acpio.DeadlockError`) nor wait for a request handler that does;
* a request method that raises answers that request (``-32603`` with the message in ``data``
  unless ``error_details=False``, or the :class:`~acpio.RequestError` raised); the connection and
  its other sessions go on;
* a request the implementation does not define answers ``-32601``; an unknown ``_vendor/x``
  request goes to ``ext_method("vendor/x", params)``; unknown notifications are ignored;
* unstable methods (``fork_session``, ``list_providers``, ``mcp_message``...) are off unless the
  connection is made with ``use_unstable_protocol=True`` (the official SDK's flag): while they are
  off, an incoming one answers ``-32601`` even if the implementation defines it (a warning says so
  when the connection is made), and calling one raises
  :class:`~acpio.roles.UnstableMethodNotEnabled` without sending anything.
"""

from __future__ import annotations

import asyncio
import inspect
import logging
from collections.abc import Callable
from types import TracebackType
from typing import Any, ClassVar, Self, TypeVar, cast

from pydantic import ValidationError

from acpio.acp_connection import AcpConnection
from acpio.capabilities import AgentFeatures, ClientFeatures
from acpio.errors import (
    AcpError,
    InternalError,
    InvalidParams,
    MethodNotFound,
    RequestError,
)
from acpio.jsonrpc import (
    CANCEL_METHOD,
    Builder,
    Connection,
    Dispatch,
    JsonValue,
    NotificationDispatch,
    RequestDispatch,
    Responder,
    ResponseDispatch,
    Target,
    Unhandled,
    open_transport,
)
from acpio.jsonrpc.typed import result_parser
from acpio.peer import InitializeFirst, PeerState
from acpio.roles import Agent as AgentRole
from acpio.roles import Client as ClientRole
from acpio.schema import InitializeRequest, InitializeResponse
from acpio.schema.base import AcpJson, AcpNotification, AcpRequest
from acpio.traits.bases import AgentTrait, ClientTrait
from acpio.traits.stream import StreamHub, Subscription
from acpio.traits.table import TraitMethod, trait_methods
from acpio.transports.tap import Tap

__all__ = ["AGENT_METHODS", "CLIENT_METHODS", "AgentSideConnection", "ClientSideConnection"]

_log = logging.getLogger("acpio.traits")

R = TypeVar("R")
T = TypeVar("T")

#: The protocol methods an agent receives, read off :class:`~acpio.traits.AgentTrait`.
AGENT_METHODS: tuple[TraitMethod, ...] = trait_methods(AgentTrait)
#: The protocol methods a client receives, read off :class:`~acpio.traits.ClientTrait`.
CLIENT_METHODS: tuple[TraitMethod, ...] = trait_methods(ClientTrait)


async def _call(fn: Callable[..., Any], *args: Any) -> Any:
    result = fn(*args)
    if inspect.isawaitable(result):
        result = await result
    return result


def _wire_result(entry: TraitMethod | None, result: Any) -> Any:
    """What to answer for ``result``: ``None`` becomes an empty result when the type allows one."""
    if result is not None or entry is None or entry.result is None or issubclass(entry.result, AcpJson):
        return result
    try:
        return entry.result()
    except ValidationError:
        raise InternalError(
            {"method": entry.method},
            message=f"{entry.name}() returned None; it must return a {entry.result.__name__}",
        ) from None


def _stop_work(work: asyncio.Task[Any]) -> None:
    """Cancel ``work`` whose answer is no longer awaited; an outcome nobody will read is dropped."""
    if not work.done():
        work.cancel()
    elif not work.cancelled():
        work.exception()  # mark it retrieved: asyncio would log it as never retrieved


def _ext_params(method: str, params: JsonValue) -> dict[str, Any]:
    if params is None:
        return {}
    if isinstance(params, dict):
        return params
    raise InvalidParams({"method": method, "reason": "extension params must be an object"})


def _make(factory: Callable[[Any], Any], conn: _Endpoint) -> Any:
    """``factory(conn)``; a factory that cannot take the connection gets a clear error."""
    try:
        inspect.signature(factory).bind(conn)
    except TypeError:
        name = getattr(factory, "__name__", repr(factory))
        raise TypeError(
            f"{name} cannot be called with the connection: pass an instance ({name}()) whose "
            f"on_connect(conn) receives it, or a factory taking the connection "
            f"(a class whose __init__ takes it, or a function)"
        ) from None
    except ValueError:  # no signature to check (a builtin): just call it
        pass
    return factory(conn)


def _handler(impl: object, trait: type, name: str) -> Callable[..., Any] | None:
    """``impl``'s method ``name``, or ``None`` when it has none or keeps the trait's default.

    A connection used as an implementation (a proxy) implements everything: its trait methods
    call its own peer.
    """
    fn: Callable[..., Any] | None = getattr(impl, name, None)
    if not callable(fn):
        return None
    if getattr(type(impl), name, None) is getattr(trait, name, None) and not isinstance(impl, _Endpoint):
        return None
    return fn


class _Dispatcher:
    """The handler of a trait-style connection: routes each message to the implementation's method.

    Only the methods the implementation defines are routed; a request for any other answers
    ``-32601`` before its params are even read, and any other notification is ignored.
    """

    __slots__ = ("_endpoint", "_ext_method", "_ext_notification", "_impl", "_notifications", "_requests")

    def __init__(
        self,
        endpoint: _Endpoint,
        impl: object,
        trait: type,
        methods: tuple[TraitMethod, ...],
        disabled: frozenset[str],
    ) -> None:
        self._endpoint = endpoint
        self._impl = impl
        self._requests: dict[str, tuple[TraitMethod, Callable[..., Any]]] = {}
        self._notifications: dict[str, tuple[TraitMethod, Callable[..., Any]]] = {}
        off: list[str] = []
        for entry in methods:
            fn = _handler(impl, trait, entry.name)
            if fn is not None:
                table = self._requests if entry.kind == "request" else self._notifications
                table[entry.method] = (entry, fn)
                if entry.method in disabled:
                    off.append(entry.name)
        if off and not isinstance(impl, _Endpoint):  # a connection (a pass-through) defines everything
            _log.warning(
                "%s defines %s: unstable methods, answered -32601 while unstable methods are off. "
                "Pass use_unstable_protocol=True to %s to turn them on.",
                type(impl).__name__,
                ", ".join(f"{name}()" for name in off),
                type(endpoint).__name__,
            )
        self._ext_method = _handler(impl, trait, "ext_method")
        self._ext_notification = _handler(impl, trait, "ext_notification")

    def accepts(self, message: Dispatch) -> bool:
        """Requests and notifications (responses go straight to the caller waiting for them)."""
        return type(message) is not ResponseDispatch

    async def handle(self, message: Dispatch, cx: Connection) -> Unhandled | None:
        """Claim every request and notification; pass responses on."""
        self._endpoint._attach(cx)
        if type(message) is RequestDispatch:
            await self._on_request(message, cx)
            return None
        if type(message) is NotificationDispatch:
            await self._on_notification(message)
            return None
        return Unhandled(message)

    async def _on_request(self, message: RequestDispatch, cx: Connection) -> None:
        method = message.method
        found = self._requests.get(method)
        entry: TraitMethod | None = None
        args: tuple[Any, ...]
        if found is not None:
            entry, fn = found
            params = message.parse(entry.params)
            args = (params,)
        elif method.startswith("_") and len(method) > 1 and self._ext_method is not None:
            fn = self._ext_method
            args = (method[1:], _ext_params(method, message.params))
        else:
            raise MethodNotFound(method)
        # The implementation runs in its own task; the connection's task answers with its outcome
        # (and cancels it on $/cancel_request, or when the connection ends).
        work = asyncio.get_running_loop().create_task(_call(fn, *args), name=f"acpio trait {method}")
        answering = cx.spawn(self._answer(message.responder, entry, work, details=cx.error_details))
        answering.add_done_callback(lambda _: _stop_work(work))
        # Let the work start before the next message is dispatched: a session/cancel that follows
        # a session/prompt then finds the prompt turn already running.
        await asyncio.sleep(0)

    async def _answer(
        self, responder: Responder[Any], entry: TraitMethod | None, work: asyncio.Task[Any], *, details: bool
    ) -> None:
        """Answer with what ``work`` returns or raises; the connection goes on either way.

        An exception other than a :class:`~acpio.RequestError` answers ``-32603`` with its message
        in ``data`` (``{"details": "...", "type": "ValueError"}``) unless ``details`` is off
        (``error_details=False`` on the connection).
        """
        name = entry.name if entry is not None else "ext_method"
        try:
            result = await responder.run_until_cancelled(work)
            responder.respond(_wire_result(entry, result))
        except RequestError as exc:
            responder.respond_with_error(exc)
        except AcpError as exc:  # ConnectionClosed and the like: the peer is probably gone
            _log.debug("%s() failed: %s", name, exc)
            responder.respond_with_error(InternalError.for_exception(exc, details=details))
        except Exception as exc:
            _log.exception("%s() failed", name, exc_info=exc)
            responder.respond_with_error(InternalError.for_exception(exc, details=details))

    async def _on_notification(self, message: NotificationDispatch) -> None:
        method = message.method
        found = self._notifications.get(method)
        if found is not None:
            entry, fn = found
            try:
                params = message.parse(entry.params)
            except InvalidParams as exc:
                _log.warning("Ignoring %s with invalid params: %s", method, exc.data)
                return
            await _call(fn, params)
        elif method.startswith("_") and len(method) > 1 and self._ext_notification is not None:
            await _call(self._ext_notification, method[1:], _ext_params(method, message.params))
        elif method != CANCEL_METHOD:  # the engine acted on $/cancel_request already
            _log.debug("Ignoring notification %r: not implemented", method)


class _Endpoint:
    """What both connections share: serving, closing, subscribing, and sending the trait calls.

    The trait calls override the hooks of the traits (``_request``, ``_notify``...), which refuse
    or ignore a call nobody implements, to send it to the peer instead.
    """

    #: The ACP role this side plays.
    _ROLE: ClassVar[type[AgentRole] | type[ClientRole]]
    #: The methods this side receives.
    _METHODS: ClassVar[tuple[TraitMethod, ...]]
    #: The trait the served implementation has.
    _TRAIT: ClassVar[type]
    #: What :meth:`~acpio.peer.PeerState.check` refuses before ``initialize`` when capabilities are required.
    _INITIALIZE_FIRST: ClassVar[InitializeFirst]

    def __init__(
        self,
        impl_or_factory: object,
        target: Target,
        *,
        name: str,
        require_capabilities: bool,
        use_unstable_protocol: bool,
        error_details: bool,
    ) -> None:
        self._target = target
        self._require_capabilities = require_capabilities
        self._hub = StreamHub()
        self._cx: Connection | None = None
        self._started = False
        self._task: asyncio.Task[None] | None = None
        self._ready = asyncio.Event()
        self._stop = asyncio.Event()
        self._done = asyncio.Event()
        self._builder: Builder = self._ROLE.builder(
            name=name, unstable=use_unstable_protocol, error_details=error_details
        )
        # A factory is called with the connection once its state exists (it may subscribe...).
        if isinstance(impl_or_factory, self._TRAIT) or not callable(impl_or_factory):
            impl = impl_or_factory
        else:
            impl = _make(impl_or_factory, self)
        self._impl: Any = impl
        disabled = self._builder.role.disabled_methods()
        self._builder.with_handler(_Dispatcher(self, impl, self._TRAIT, self._METHODS, disabled))
        on_connect = getattr(impl, "on_connect", None)
        if callable(on_connect):
            on_connect(self)

    def __repr__(self) -> str:
        state = "open" if self._cx is not None and not self._cx.closed else "not connected"
        if self._done.is_set():
            state = "closed"
        return f"<{type(self).__name__} {self._builder.name!r} {state}>"

    # --- serving ----------------------------------------------------------------------------------

    @property
    def connection(self) -> Connection:
        """The engine connection underneath (to send typed extension messages, spawn tasks...).

        Raises ``RuntimeError`` before the connection is served (:meth:`serve` or ``async with``).
        """
        cx = self._cx
        if cx is None:
            raise RuntimeError(
                f"{type(self).__name__} is not connected yet: serve it with 'await conn.serve()' "
                f"or 'async with conn:' before calling the peer"
            )
        return cx

    @property
    def closed(self) -> bool:
        """Whether serving has ended."""
        return self._done.is_set()

    def _attach(self, cx: Connection) -> None:
        if self._cx is None:
            self._cx = cx
            if isinstance(cx, AcpConnection):  # a typed request sent on it directly obeys the option
                cx.require_capabilities = self._require_capabilities

    async def serve(self) -> None:
        """Serve the connection until the peer closes it or :meth:`close` is called.

        Raises what failed the connection (a :class:`~acpio.TransportError`, for example).
        """
        if self._started:
            raise RuntimeError(f"{type(self).__name__} is already served; a connection is served once")
        self._started = True
        try:
            transport = Tap(await open_transport(self._target), self._hub.publish)
            await self._builder.connect_with(transport, self._main)
        finally:
            self._hub.close()
            self._done.set()

    async def _main(self, cx: Connection) -> None:
        self._attach(cx)
        self._ready.set()
        waits = [asyncio.ensure_future(self._stop.wait()), asyncio.ensure_future(cx.wait_closed())]
        try:
            await asyncio.wait(waits, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for wait in waits:
                wait.cancel()

    async def __aenter__(self) -> Self:
        task = asyncio.get_running_loop().create_task(self.serve(), name=f"acpio trait {self!r}")
        self._task = task
        ready = asyncio.ensure_future(self._ready.wait())
        try:
            await asyncio.wait((ready, task), return_when=asyncio.FIRST_COMPLETED)
        finally:
            ready.cancel()
        if task.done() and not self._ready.is_set():
            task.result()  # raises what prevented the connection
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        try:
            await self.close()
        except Exception:
            if exc is None:
                raise
            _log.debug("The connection failed while closing after an error", exc_info=True)

    async def close(self) -> None:
        """Stop serving and wait until the connection is closed (a spawned agent is terminated).

        Requests still waiting for an answer fail with :class:`~acpio.ConnectionClosed`. Raises
        what failed the connection, if it failed. Calling it again does nothing more.
        """
        self._stop.set()
        if self._task is not None:
            await asyncio.shield(self._task)
        elif self._started:
            await self._done.wait()

    def subscribe(self) -> Subscription:
        """Every message sent or received from now on, with its direction (see :mod:`acpio.traits.stream`)."""
        return self._hub.subscribe()

    # --- calling the peer ---------------------------------------------------------------------------

    @property
    def peer_state(self) -> PeerState:
        """What the peer said at ``initialize``: what every trait call to it is checked against."""
        raise NotImplementedError

    def _checked(self, method: str, params: T) -> T:
        """``params`` as they may be sent (see :meth:`~acpio.peer.PeerState.check`)."""
        require = self._require_capabilities
        return self.peer_state.check(
            method,
            params,
            require_capabilities=require,
            initialize_first=self._INITIALIZE_FIRST if require else None,
        )

    async def _request(self, params: AcpRequest[Any], result: type[R]) -> R:
        method = params.METHOD
        raw = await self.connection.send_request(method, self._checked(method, params))
        return cast(R, result_parser(result, method)(raw))  # RESPONSE parses into ``result``

    async def _notify(self, params: AcpNotification) -> None:
        method = params.METHOD
        self.connection.send_notification(method, self._checked(method, params))
        await self.connection.drain()  # backpressure: a slow peer slows the sender down

    async def _ext_request(self, method: str, params: dict[str, Any]) -> JsonValue:
        return await self.connection.send_request("_" + method, params)

    async def _ext_notify(self, method: str, params: dict[str, Any]) -> None:
        self.connection.send_notification("_" + method, params)
        await self.connection.drain()


class AgentSideConnection(_Endpoint, ClientTrait):
    """Serves an :class:`~acpio.traits.AgentTrait`; its ``ClientTrait`` methods call the client.

    ``agent`` is an ``AgentTrait`` instance (its ``on_connect(conn)`` receives this connection) or a
    factory called with this connection (a class whose ``__init__`` takes it, or a function).
    ``target`` is a transport (``Stdio()`` for an agent started by an editor, one end of
    ``Channel.duplex()``) or a component. Serve with :meth:`serve` (until the client closes) or
    ``async with``. ``client_features`` tells what the client advertised at ``initialize``; with
    ``require_capabilities=True`` calling a method the client did not advertise (``fs/...``,
    ``terminal/...``) raises :class:`~acpio.capabilities.CapabilityNotAdvertised` instead of sending it.
    ``use_unstable_protocol=True`` turns the unstable methods on (``fork_session``, ``mcp_message``...):
    without it they answer ``-32601`` and cannot be called (see the module docstring).
    A method of ``agent`` that raises answers its request only: a :class:`~acpio.RequestError` as it
    is, anything else ``-32603`` with its message in ``data`` (``{"details": "...", "type": "ValueError"}``,
    the official TypeScript SDK's shape); ``error_details=False`` leaves the message out.
    """

    _ROLE = AgentRole
    _METHODS = AGENT_METHODS
    _TRAIT = AgentTrait
    _INITIALIZE_FIRST = None  # a client that did not initialize yet advertised nothing

    def __init__(
        self,
        agent: AgentTrait | Callable[[AgentSideConnection], AgentTrait],
        target: Target,
        *,
        name: str | None = None,
        require_capabilities: bool = False,
        use_unstable_protocol: bool = False,
        error_details: bool = True,
    ) -> None:
        super().__init__(
            agent,
            target,
            name=name or "agent",
            require_capabilities=require_capabilities,
            use_unstable_protocol=use_unstable_protocol,
            error_details=error_details,
        )

    @property
    def agent(self) -> AgentTrait:
        """The agent this connection serves."""
        return cast(AgentTrait, self._impl)

    @property
    def client_features(self) -> ClientFeatures | None:
        """What the client advertised in ``initialize`` (``None`` before it arrived)."""
        return self.peer_state.client_features if self._cx is not None else None

    @property
    def peer_state(self) -> PeerState:
        """What the client said at ``initialize``: the :attr:`connection`'s own record.

        Recorded by the connection when the request arrives, before this side's ``initialize``
        runs. Raises ``RuntimeError`` before the connection is served.
        """
        return _acp_connection(self.connection).peer_state


class ClientSideConnection(_Endpoint, AgentTrait):
    """Serves a :class:`~acpio.traits.ClientTrait`; its ``AgentTrait`` methods call the agent.

    ``client`` is a ``ClientTrait`` instance (its ``on_connect(conn)`` receives this connection) or a
    factory called with this connection. ``target`` is the agent: an
    :class:`~acpio.transports.AcpAgent` to spawn, a transport, or a component. Use it as
    ``async with ClientSideConnection(client, AcpAgent(...)) as agent:``, then call
    ``await agent.initialize(...)``, ``new_session``, ``prompt``...

    :meth:`initialize` checks the protocol version the agent answers: one this side does not speak
    closes the connection and raises :class:`~acpio.capabilities.UnsupportedProtocolVersion`.
    ``agent_features`` then tells what the agent advertised; with ``require_capabilities=True``,
    calling a method the agent did not advertise (``session/load``, ``session/list``...), or
    sending what it did not advertise (an image in a prompt, an HTTP MCP server,
    ``additionalDirectories``) raises :class:`~acpio.capabilities.CapabilityNotAdvertised` instead
    of sending it, and any method but ``initialize`` and ``authenticate`` called before
    ``initialize`` raises ``RuntimeError`` (the checks of :attr:`peer_state`). A
    relative ``cwd`` or ``additionalDirectories`` entry is always refused with ``ValueError``, and
    ``resume_session`` and ``fork_session`` without ``mcp_servers`` send ``mcpServers: []`` (the
    spec requires it).
    ``use_unstable_protocol=True`` turns the unstable methods on (``fork_session``,
    ``list_providers``...): without it calling one raises
    :class:`~acpio.roles.UnstableMethodNotEnabled` and the agent's unstable requests answer ``-32601``.
    ``error_details`` is as for :class:`AgentSideConnection`.
    """

    _ROLE = ClientRole
    _METHODS = CLIENT_METHODS
    _TRAIT = ClientTrait
    _INITIALIZE_FIRST = "all"

    def __init__(
        self,
        client: ClientTrait | Callable[[ClientSideConnection], ClientTrait],
        target: Target,
        *,
        name: str | None = None,
        require_capabilities: bool = False,
        use_unstable_protocol: bool = False,
        error_details: bool = True,
    ) -> None:
        super().__init__(
            client,
            target,
            name=name or "client",
            require_capabilities=require_capabilities,
            use_unstable_protocol=use_unstable_protocol,
            error_details=error_details,
        )

    @property
    def client(self) -> ClientTrait:
        """The client this connection serves."""
        return cast(ClientTrait, self._impl)

    @property
    def agent_features(self) -> AgentFeatures | None:
        """What the agent advertised in its ``initialize`` response (``None`` before it)."""
        return self.peer_state.agent_features if self._cx is not None else None

    async def initialize(self, params: InitializeRequest) -> InitializeResponse:
        """``initialize``: send it, check the agent's protocol version, record its capabilities.

        Raises :class:`~acpio.capabilities.UnsupportedProtocolVersion` (after closing the
        connection, as the spec asks) when the agent answers with a version this side does not speak.
        The answer is recorded in the connection's :attr:`~acpio.acp_connection.AcpConnection.peer_state`,
        so typed requests sent on :attr:`connection` directly are checked against it too.
        """
        response: InitializeResponse = await self.connection.send_request(params)
        return response

    @property
    def peer_state(self) -> PeerState:
        """What the agent said at ``initialize``: the :attr:`connection`'s own record.

        Raises ``RuntimeError`` before the connection is served.
        """
        return _acp_connection(self.connection).peer_state


def _acp_connection(cx: Connection) -> AcpConnection:
    assert isinstance(cx, AcpConnection), "the ACP roles' builders make ACP connections"
    return cx
