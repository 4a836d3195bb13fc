"""Handlers and the chain an incoming message walks through.

A message is offered to handlers in order: the builder's handlers (registration order), then the
dynamic handlers, then the role's default handler. A handler *claims* the message by returning
``None`` or *declines* it by returning :class:`Unhandled` with the (possibly changed) message, which
goes on to the next handler. ``Unhandled(message, retry=True)`` asks for the message to be kept and
offered to every dynamic handler added later. What nobody claims falls back to the connection:
``-32601 Method not found`` for a request, nothing for a notification, delivery to the waiting
caller for a response.

Messages travel as :class:`Dispatch` objects: :class:`RequestDispatch` (with its
:class:`~acpio.jsonrpc.Responder`), :class:`NotificationDispatch` and :class:`ResponseDispatch`
(with its :class:`~acpio.jsonrpc.ResponseRouter`). Params stay raw JSON: a typed handler validates
them into its model only when the method is its own. Each dispatch records the ``peer`` (a
:class:`~acpio.jsonrpc.Role`) it came from, as the connection's role decided
(:meth:`~acpio.jsonrpc.Role.route_incoming`); typed handlers registered with ``peer=`` take only
messages from that peer.
"""

from __future__ import annotations

import inspect
import typing
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

import orjson
from pydantic import BaseModel, ValidationError

from acpio.errors import InvalidParams, RequestError
from acpio.jsonrpc.messages import JsonValue, RequestId, UntypedMessage, encode_value

if TYPE_CHECKING:
    from acpio.jsonrpc.builder import Role
    from acpio.jsonrpc.connection import Connection
    from acpio.jsonrpc.responses import Responder, ResponseRouter

__all__ = [
    "Dispatch",
    "DispatchHandler",
    "DynamicHandlerRegistration",
    "Handler",
    "NotificationDispatch",
    "NotificationHandler",
    "RequestDispatch",
    "RequestHandler",
    "ResponseDispatch",
    "Unhandled",
    "message_method",
    "to_params",
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

    def parse(self, cls: type[Any]) -> Any:
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
    def params(self) -> JsonValue:
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

    def __init__(self, message: Any, retry: bool = False) -> None:
        self.message = message
        self.retry = retry

    def __repr__(self) -> str:
        return f"Unhandled({self.message!r}, retry={self.retry!r})"


@runtime_checkable
class Handler(Protocol):
    """Anything with ``async handle(message, cx)``: returns ``None`` to claim, :class:`Unhandled` to decline.

    A handler may also define ``accepts(message) -> bool``; the chain then skips it, without a call,
    for messages it does not accept (the typed handlers use this, so a long chain costs little).
    An exception answers a request with that error (``RequestError``) or -32603 (anything else).
    """

    async def handle(self, message: Dispatch, cx: Connection) -> Unhandled | None:
        """Claim (return ``None``) or decline (return :class:`Unhandled`) ``message``."""
        ...


# --- typed messages -----------------------------------------------------------------------------


def message_method(cls: Any) -> str:
    """The wire method of a typed message class (its ``METHOD``); a clear error when it has none."""
    method = getattr(cls, "METHOD", None)
    if not isinstance(method, str):
        name = getattr(cls, "__name__", repr(cls))
        raise TypeError(
            f"{name} is not a typed message: give it a class attribute METHOD = '<wire method>' "
            "(and RESPONSE = <result type> for a request)"
        )
    return method


def to_params(message: Any) -> JsonValue:
    """The params of a typed message object, as the JSON value to send."""
    to_wire = getattr(message, "to_wire", None)
    if to_wire is not None:
        return to_wire()
    dump = getattr(message, "model_dump", None)
    if dump is not None:
        return dump(mode="json", by_alias=True, exclude_unset=True)
    return orjson.loads(encode_value(message))


def _validation_errors(exc: ValidationError) -> list[dict[str, Any]]:
    """The errors of a failed validation as JSON: where, what, and the error type."""
    return [
        {"loc": list(e["loc"]), "msg": e["msg"], "type": e["type"]}
        for e in exc.errors(include_url=False, include_context=False, include_input=False)
    ]


def fast_validator(cls: Any) -> Callable[[Any], Any]:
    """``cls.model_validate`` without its Python wrapper: the compiled validator, built on first use.

    Classes that are not pydantic models (any class with ``model_validate``) keep their own method.
    """
    if isinstance(cls, type) and issubclass(cls, BaseModel):
        if not cls.__pydantic_complete__:
            cls.model_rebuild()
        if cls.__pydantic_complete__:
            return cls.__pydantic_validator__.validate_python
    return cls.model_validate  # type: ignore[no-any-return]


def parse_params(cls: Any, method: str, params: JsonValue) -> Any:
    """Validate ``params`` into ``cls``; a failure raises ``InvalidParams`` with the errors in ``data``."""
    try:
        return cls.model_validate({} if params is None else params)
    except ValidationError as exc:
        raise InvalidParams({"method": method, "errors": _validation_errors(exc)}) from exc


def _positional_count(fn: Callable[..., Any]) -> int:
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


def _param_annotations(fn: Callable[..., Any]) -> list[Any]:
    """The annotations of ``fn``'s positional parameters, resolved where possible (else strings)."""
    try:
        hints = typing.get_type_hints(fn)
    except Exception:
        hints = {}
    try:
        params = list(inspect.signature(fn).parameters.values())
    except (TypeError, ValueError):
        return []
    return [hints.get(p.name, p.annotation) for p in params]


def message_type_from(fn: Callable[..., Any], what: str) -> Any:
    """The typed message class a handler takes: the annotation of its first parameter."""
    annotations = _param_annotations(fn)
    name = getattr(fn, "__name__", repr(fn))
    if not annotations or annotations[0] is inspect.Parameter.empty:
        raise TypeError(
            f"Cannot tell which {what} {name}() handles: annotate its first parameter with the message "
            f"type, or pass the type explicitly: @app.on_{what}(MyType)"
        )
    cls = annotations[0]
    if isinstance(cls, str):
        raise TypeError(
            f"Cannot resolve the annotation {cls!r} of {name}(): define the type at module level, "
            f"or pass it explicitly: @app.on_{what}({cls})"
        )
    message_method(cls)
    return cls


def _second_is_connection(fn: Callable[..., Any]) -> bool:
    annotations = _param_annotations(fn)
    if len(annotations) < 2:
        return False
    second = annotations[1]
    if isinstance(second, str):
        return second.rsplit(".", 1)[-1].split("[", 1)[0] == "Connection"
    from acpio.jsonrpc.connection import Connection

    return isinstance(second, type) and issubclass(second, Connection)


class RequestHandler:
    """Takes requests of one typed message class, validating params into it.

    The function is called as ``fn(req, responder, cx)`` (or with fewer arguments: ``fn(req)``,
    ``fn(req, responder)``, ``fn(req, cx)`` when the second parameter is annotated ``Connection``).
    It may return the result, answer through the responder and return ``None``, or return
    :class:`Unhandled`. With ``peer`` (a role instance), only requests from that peer are taken.
    """

    __slots__ = ("_arity", "_validate", "cls", "fn", "method", "peer")

    def __init__(self, cls: Any, fn: Callable[..., Awaitable[Any]], peer: Role | None = None) -> None:
        self.cls = cls
        self.method = message_method(cls)
        self.fn = fn
        self.peer = peer
        self._validate: Callable[[Any], Any] | None = None
        count = _positional_count(fn)
        if count <= 1:
            self._arity = 1
        elif count == 2:
            self._arity = 0 if _second_is_connection(fn) else 2
        else:
            self._arity = 3

    def __repr__(self) -> str:
        return f"RequestHandler({self.method!r}, {getattr(self.fn, '__name__', self.fn)!r}{_from(self.peer)})"

    def accepts(self, message: Dispatch) -> bool:
        """Requests with this handler's method (from its peer, when it has one)."""
        return (
            message.method == self.method
            and type(message) is RequestDispatch
            and (self.peer is None or message.peer == self.peer)
        )

    async def handle(self, message: Dispatch, cx: Connection) -> Unhandled | None:
        """Validate the params, call the function, answer with what it returns."""
        assert isinstance(message, RequestDispatch)
        responder = message.responder
        validate = self._validate
        if validate is None:
            validate = self._validate = fast_validator(self.cls)
        try:
            request = validate({} if message.params is None else message.params)
        except ValidationError as exc:
            responder.respond_with_error(
                InvalidParams({"method": self.method, "errors": _validation_errors(exc)})
            )
            return None
        arity = self._arity
        if arity == 3:
            result = await self.fn(request, responder, cx)
        elif arity == 1:
            result = await self.fn(request)
        elif arity == 2:
            result = await self.fn(request, responder)
        else:
            result = await self.fn(request, cx)
        if result is None:
            return None
        if type(result) is Unhandled:
            return result
        responder.respond(result)
        return None


class NotificationHandler:
    """Takes notifications of one typed message class: ``fn(notification, cx)`` or ``fn(notification)``.

    With ``peer`` (a role instance), only notifications from that peer are taken.
    """

    __slots__ = ("_validate", "_with_cx", "cls", "fn", "method", "peer")

    def __init__(self, cls: Any, fn: Callable[..., Awaitable[Any]], peer: Role | None = None) -> None:
        self.cls = cls
        self.method = message_method(cls)
        self.fn = fn
        self.peer = peer
        self._with_cx = _positional_count(fn) >= 2
        self._validate: Callable[[Any], Any] | None = None

    def __repr__(self) -> str:
        name = getattr(self.fn, "__name__", self.fn)
        return f"NotificationHandler({self.method!r}, {name!r}{_from(self.peer)})"

    def accepts(self, message: Dispatch) -> bool:
        """Notifications with this handler's method (from its peer, when it has one)."""
        return (
            message.method == self.method
            and type(message) is NotificationDispatch
            and (self.peer is None or message.peer == self.peer)
        )

    async def handle(self, message: Dispatch, cx: Connection) -> Unhandled | None:
        """Validate the params and call the function (bad params are logged by the connection)."""
        validate = self._validate
        if validate is None:
            validate = self._validate = fast_validator(self.cls)
        try:
            notification = validate({} if message.params is None else message.params)
        except ValidationError as exc:
            raise InvalidParams({"method": self.method, "errors": _validation_errors(exc)}) from exc
        if self._with_cx:
            result = await self.fn(notification, cx)
        else:
            result = await self.fn(notification)
        return result if type(result) is Unhandled else None


class DispatchHandler:
    """Sees every message, untyped: ``fn(message, cx)`` or ``fn(message)``.

    With ``peer`` (a role instance) it sees only messages from that peer (requests, notifications,
    and responses to requests sent to it) and declines the others without calling ``fn``.
    """

    __slots__ = ("_with_cx", "fn", "peer")

    def __init__(self, fn: Callable[..., Awaitable[Any]], peer: Role | None = None) -> None:
        self.fn = fn
        self.peer = peer
        self._with_cx = _positional_count(fn) >= 2

    def __repr__(self) -> str:
        return f"DispatchHandler({getattr(self.fn, '__name__', self.fn)!r}{_from(self.peer)})"

    async def handle(self, message: Dispatch, cx: Connection) -> Unhandled | None:
        """Call the function with the message (if it comes from this handler's peer, when set)."""
        if self.peer is not None and message.peer != self.peer:
            return Unhandled(message)
        if self._with_cx:
            result = await self.fn(message, cx)
        else:
            result = await self.fn(message)
        return result if type(result) is Unhandled else None


def _from(peer: Role | None) -> str:
    return "" if peer is None else f", peer={peer!r}"


def as_handler(handler: Any) -> Handler:
    """``handler`` itself if it has ``handle``; a plain async function becomes a :class:`DispatchHandler`."""
    if callable(getattr(handler, "handle", None)):
        return handler  # type: ignore[no-any-return]
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
    elif isinstance(message, RequestHandler | NotificationHandler):  # pragma: no cover - defensive
        raise TypeError("Unhandled() takes a message, not a handler")
    else:
        method, params = message_method(type(message)), to_params(message)
    if type(original) is RequestDispatch:
        assert isinstance(original, RequestDispatch)
        return RequestDispatch(method, params, original.id, original.responder, original.peer)
    if type(original) is NotificationDispatch:
        return NotificationDispatch(method, params, original.peer)
    raise TypeError("A declined response must be passed on as the ResponseDispatch itself")


class DynamicHandlerRegistration:
    """A handler added to a running connection with :meth:`Connection.add_dynamic_handler`.

    It stays in the chain until :meth:`remove` is called or the ``with`` block it was used in ends.
    :meth:`run_indefinitely` keeps it for the connection's lifetime (``remove`` then does nothing).
    """

    __slots__ = ("_accepts", "_active", "_connection", "_kept", "handler")

    def __init__(self, connection: Connection, handler: Handler) -> None:
        self._connection = connection
        self.handler = handler
        self._accepts: Callable[[Dispatch], bool] | None = getattr(handler, "accepts", None)
        self._active = True
        self._kept = False

    @property
    def active(self) -> bool:
        """Whether the handler is still in the chain (or about to be)."""
        return self._active

    def remove(self) -> None:
        """Take the handler out of the chain; it declines every message from now on."""
        if self._kept or not self._active:
            return
        self._active = False
        self._connection._remove_dynamic(self)

    def run_indefinitely(self) -> None:
        """Keep the handler for the connection's lifetime: later :meth:`remove` calls do nothing."""
        self._kept = True

    def __enter__(self) -> DynamicHandlerRegistration:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.remove()

    async def _handle(self, message: Dispatch, cx: Connection) -> Unhandled | None:
        if not self._active:
            return Unhandled(message)
        accepts = self._accepts
        if accepts is not None and not accepts(message):
            return Unhandled(message)
        return await self.handler.handle(message, cx)
