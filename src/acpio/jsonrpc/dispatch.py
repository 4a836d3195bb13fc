"""Incoming messages on their way through the handler chain, and what a handler is.

Messages travel as :class:`Dispatch` objects: :class:`RequestDispatch` (with its
:class:`~acpio.jsonrpc.Responder`), :class:`NotificationDispatch` and :class:`ResponseDispatch`
(with its :class:`~acpio.jsonrpc.ResponseRouter`). Params stay raw JSON: a typed handler validates
them into its model only when the method is its own. Each dispatch records the ``peer`` (a
:class:`~acpio.jsonrpc.Role`) it came from, as the connection's role decided
(:meth:`~acpio.jsonrpc.Role.route_incoming`).

A :class:`Handler` *claims* a message by returning ``None`` or *declines* it by returning
:class:`Unhandled` with the (possibly changed) message, which goes on to the next handler
(:func:`passed_on` builds what the next one sees). ``Unhandled(message, retry=True)`` asks for the
message to be kept and offered to every dynamic handler added later. :class:`DispatchHandler`
turns an async function into a handler that sees every message.
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, Protocol, TypeAlias, TypeVar, cast, runtime_checkable

from acpio.errors import RequestError
from acpio.jsonrpc.messages import JsonValue, RequestId, UntypedMessage
from acpio.jsonrpc.typed import message_method, parse_params, to_params

if TYPE_CHECKING:
    from acpio.jsonrpc.connection import Connection
    from acpio.jsonrpc.responses import Responder, ResponseRouter
    from acpio.jsonrpc.role import Role

_M = TypeVar("_M")

__all__ = [
    "Dispatch",
    "DISPATCH_SHAPES",
    "DispatchFunction",
    "DispatchHandler",
    "Forward",
    "Handler",
    "NotificationDispatch",
    "RequestDispatch",
    "ResponseDispatch",
    "Unhandled",
    "as_handler",
    "passed_on",
    "peer_suffix",
    "positional_count",
    "require_async",
]


class Dispatch:
    """An incoming message on its way through the handler chain (base of the three kinds)."""

    __slots__ = ()

    method: str
    params: JsonValue
    id: RequestId
    #: The role the message came from (``None`` when unknown, e.g. a dispatch built by hand).
    peer: Role | None

    def is_from(self, peer: Role | type[Role]) -> bool:
        """Whether the message came from ``peer`` (a role class such as ``Agent``, or an instance)."""
        mine = self.peer
        if mine is None:
            return False
        return type(mine) is peer if isinstance(peer, type) else mine == peer

    @property
    def session_id(self) -> str | None:
        """The ``sessionId`` in the params, if there is a string one."""
        params = self.params
        if type(params) is dict:
            value = params.get("sessionId")
            if type(value) is str:
                return value
        return None

    def has_field(self, name: str) -> bool:
        """Whether the params are an object with a ``name`` member."""
        params = self.params
        return type(params) is dict and name in params

    def parse(self, cls: type[_M]) -> _M:
        """The params validated into ``cls`` (``cls.model_validate``); raises ``InvalidParams`` (-32602)."""
        return parse_params(cls, self.method, self.params)

    def to_untyped(self) -> UntypedMessage:
        """The method and params as an :class:`~acpio.jsonrpc.UntypedMessage` (requests and notifications)."""
        return UntypedMessage(self.method, self.params)


class RequestDispatch(Dispatch):
    """An incoming request: ``method``, raw ``params``, ``id`` and the ``responder`` that answers it."""

    __slots__ = ("id", "method", "params", "peer", "responder")

    def __init__(
        self,
        method: str,
        params: JsonValue,
        request_id: RequestId,
        responder: Responder[Any],
        peer: Role | None = None,
    ):
        self.method = method
        self.params = params
        self.id = request_id
        self.responder = responder
        self.peer = peer

    def __repr__(self) -> str:
        return f"RequestDispatch(method={self.method!r}, id={self.id!r}, params={self.params!r})"


class NotificationDispatch(Dispatch):
    """An incoming notification: ``method`` and raw ``params``."""

    __slots__ = ("method", "params", "peer")

    def __init__(self, method: str, params: JsonValue, peer: Role | None = None):
        self.method = method
        self.params = params
        self.peer = peer

    @property
    def id(self) -> RequestId:  # type: ignore[override]
        """Always ``None``: notifications have no id."""
        return None

    def __repr__(self) -> str:
        return f"NotificationDispatch(method={self.method!r}, params={self.params!r})"


class ResponseDispatch(Dispatch):
    """A response to one of our requests: ``result`` or ``error``, and the ``router`` that delivers it.

    ``method`` is the method of our request and ``peer`` the peer it was sent to. A handler that
    claims it should deliver something with the router (now or later), or the caller waits until
    the connection closes.
    """

    __slots__ = ("error", "id", "method", "peer", "result", "router")

    def __init__(
        self,
        method: str,
        request_id: RequestId,
        result: JsonValue,
        error: RequestError | None,
        router: ResponseRouter[Any],
        peer: Role | None = None,
    ):
        self.method = method
        self.id = request_id
        self.result = result
        self.error = error
        self.router = router
        self.peer = peer

    @property
    def params(self) -> JsonValue:  # type: ignore[override]
        """Always ``None``: a response has a result, not params."""
        return None

    def to_untyped(self) -> UntypedMessage:
        """Responses have no untyped-message form."""
        raise TypeError("A response cannot be turned into a request or notification")

    def __repr__(self) -> str:
        outcome = f"error={self.error!r}" if self.error is not None else f"result={self.result!r}"
        return f"ResponseDispatch(method={self.method!r}, id={self.id!r}, {outcome})"


class Unhandled:
    """Returned by a handler to decline a message; the chain goes on with ``message``.

    ``message`` may be the dispatch itself, a changed typed message or an
    :class:`~acpio.jsonrpc.UntypedMessage` (the next handlers see that instead). With ``retry=True``
    the message is kept, if nobody claims it, and offered to each dynamic handler added later.
    """

    __slots__ = ("message", "retry")

    def __init__(self, message: object, retry: bool = False) -> None:
        self.message = message
        self.retry = retry

    def __repr__(self) -> str:
        return f"Unhandled({self.message!r}, retry={self.retry!r})"


class Forward(Unhandled):
    """Returned by a proxy's handler: send ``message`` (changed or not) on to the other side, now.

    The rest of the chain is skipped: the message goes straight to the role's default handler,
    which for a :class:`~acpio.Proxy` forwards what came from the client to the agent and what
    came from the agent to the client. ``message`` may be the dispatch, a changed typed message
    or an :class:`~acpio.jsonrpc.UntypedMessage`, as for :class:`Unhandled`. A role without a
    default handler answers a forwarded request with ``-32603`` saying so.
    """

    __slots__ = ()

    def __init__(self, message: object) -> None:
        super().__init__(message)

    def __repr__(self) -> str:
        return f"Forward({self.message!r})"


@runtime_checkable
class Handler(Protocol):
    """Anything with ``async handle(message, cx)``: returns ``None`` to claim, :class:`Unhandled` to decline.

    A handler may also define ``accepts(message) -> bool``; the chain then skips it, without a call,
    for messages it does not accept (the typed handlers use this, so a long chain costs little).
    Responses to this side's requests go straight to their callers unless a handler without
    ``accepts`` is in the chain: one that wants to intercept them has no ``accepts``.
    An exception answers a request with that error (``RequestError``) or -32603 (anything else).
    """

    async def handle(self, message: Dispatch, cx: Connection) -> Unhandled | None:
        """Claim (return ``None``) or decline (return :class:`Unhandled`) ``message``."""
        ...


def positional_count(fn: Callable[..., object]) -> int:
    """How many positional arguments ``fn`` requires (3 when it takes ``*args`` or cannot be inspected)."""
    try:
        sig = inspect.signature(fn)
    except (TypeError, ValueError):
        return 3
    count = 0
    for p in sig.parameters.values():
        if p.kind is p.VAR_POSITIONAL:
            return 3
        if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD) and p.default is p.empty:
            count += 1
    return count


def require_async(fn: Callable[..., object], shapes: str) -> None:
    """Raise ``TypeError`` at registration unless ``fn`` is an async function (or async callable).

    A plain ``def`` would be called and its return value awaited, failing only when the first
    message arrives; ``shapes`` lists the signatures the handler may have, for the message.
    """
    call = type(fn).__call__ if callable(fn) else None  # an object with an async __call__
    if inspect.iscoroutinefunction(fn) or inspect.iscoroutinefunction(call):
        return
    name = getattr(fn, "__qualname__", None) or repr(fn)
    raise TypeError(
        f"{name} is not an async function: handlers are awaited, so define it with 'async def' "
        "(a decorator's wrapper too: 'async def wrapper(...): return await fn(...)'). "
        f"Accepted shapes:\n{shapes}"
    )


#: An untyped handler function: ``async fn(message, cx)`` or ``async fn(message)``; returning
#: :class:`Unhandled` declines the message, anything else claims it (see :data:`DISPATCH_SHAPES`).
DispatchFunction: TypeAlias = (
    "Callable[[Dispatch, Connection], Awaitable[object]] | Callable[[Dispatch], Awaitable[object]]"
)

#: The shapes an untyped handler (``on_dispatch``, a dynamic handler function) may have.
DISPATCH_SHAPES = """    async def handler(message: Dispatch) -> Unhandled | None
    async def handler(message: Dispatch, cx: Connection) -> Unhandled | None"""


class DispatchHandler:
    """Sees every message, untyped: ``fn(message, cx)`` or ``fn(message)``.

    With ``peer`` (a role instance) it sees only messages from that peer (requests, notifications,
    and responses to requests sent to it) and declines the others without calling ``fn``.
    """

    __slots__ = ("_with_cx", "fn", "peer")

    def __init__(self, fn: DispatchFunction, peer: Role | None = None) -> None:
        require_async(fn, DISPATCH_SHAPES)
        self.fn: Callable[..., Awaitable[object]] = fn
        self.peer = peer
        self._with_cx = positional_count(fn) >= 2

    def __repr__(self) -> str:
        return f"DispatchHandler({getattr(self.fn, '__name__', self.fn)!r}{peer_suffix(self.peer)})"

    async def handle(self, message: Dispatch, cx: Connection) -> Unhandled | None:
        """Call the function with the message (if it comes from this handler's peer, when set)."""
        if self.peer is not None and message.peer != self.peer:
            return Unhandled(message)
        if self._with_cx:
            result = await self.fn(message, cx)
        else:
            result = await self.fn(message)
        return result if isinstance(result, Unhandled) else None


def peer_suffix(peer: Role | None) -> str:
    """``", peer=..."`` for a handler's repr when it takes messages from one peer only."""
    return "" if peer is None else f", peer={peer!r}"


def as_handler(handler: Handler | DispatchFunction) -> Handler:
    """``handler`` itself if it has ``handle``; a plain async function becomes a :class:`DispatchHandler`."""
    if callable(getattr(handler, "handle", None)):
        return cast(Handler, handler)
    if callable(handler):
        return DispatchHandler(handler)
    raise TypeError(
        f"{handler!r} is not a handler: give it 'async def handle(self, message, cx)', "
        "or pass an async function taking (message, cx)"
    )


def passed_on(original: Dispatch, declined: Unhandled) -> Dispatch:
    """The dispatch the next handler sees after a decline (the same one unless it was changed)."""
    message = declined.message
    if message is original or isinstance(message, Dispatch):
        return message
    if isinstance(message, UntypedMessage):
        method, params = message.method, message.params
    else:
        method, params = message_method(type(message)), to_params(message)
    if type(original) is RequestDispatch:
        assert isinstance(original, RequestDispatch)
        return RequestDispatch(method, params, original.id, original.responder, original.peer)
    if type(original) is NotificationDispatch:
        return NotificationDispatch(method, params, original.peer)
    raise TypeError("A declined response must be passed on as the ResponseDispatch itself")
