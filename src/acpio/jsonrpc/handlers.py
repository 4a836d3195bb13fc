"""Typed handlers: a function taking one message class, registered with ``on_request``/``on_notification``.

:class:`RequestHandler` and :class:`NotificationHandler` take the messages of one method (and,
with ``peer=``, from one peer only), validate the params into the function's message class and
call it; a bad params object answers ``-32602`` with the validation errors. Both define
``accepts``, so the chain skips them without a call for other methods. A message class that names
its protocol version (``PROTOCOL_VERSION``, as acpio's ACP models do) is only for connections that
negotiated that version (a connection's ``protocol_version``, ``None`` until known): on another,
the handler passes the message on unparsed, so that a v1 proxy forwards v2 messages whole. The untyped
:class:`~acpio.jsonrpc.DispatchHandler` and the :class:`~acpio.jsonrpc.Handler` protocol are in
:mod:`acpio.jsonrpc.dispatch`.
"""

from __future__ import annotations

import inspect
import typing
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, cast

from acpio.errors import InvalidParams
from acpio.jsonrpc.connection import Connection
from acpio.jsonrpc.dispatch import (
    Dispatch,
    NotificationDispatch,
    RequestDispatch,
    Unhandled,
    peer_suffix,
    positional_count,
    require_async,
)
from acpio.jsonrpc.typed import (
    fast_validator,
    message_method,
    message_protocol_version,
    validation_error,
    validation_errors,
)

if TYPE_CHECKING:
    from acpio.jsonrpc.role import Role

__all__ = [
    "NOTIFICATION_SHAPES",
    "REQUEST_SHAPES",
    "NotificationHandler",
    "RequestHandler",
    "message_type_from",
    "speaks",
]


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


#: The shapes a request handler may have (shown when a registration is refused).
REQUEST_SHAPES = """    async def handler(req: MyRequest) -> MyResponse
    async def handler(req: MyRequest, responder: Responder[MyResponse]) -> None
    async def handler(req: MyRequest, cx: Connection) -> MyResponse
    async def handler(req: MyRequest, responder: Responder[MyResponse], cx: Connection) -> MyResponse"""
#: The shapes a notification handler may have.
NOTIFICATION_SHAPES = """    async def handler(notification: MyNotification) -> None
    async def handler(notification: MyNotification, cx: Connection) -> None"""


def _second_is_connection(fn: Callable[..., Any]) -> bool:
    """Whether the second parameter is the connection; ``TypeError`` when it is not annotated.

    With two parameters the second may be the responder or the connection, and only its
    annotation tells which: an unannotated one is refused at registration rather than guessed.
    """
    annotations = _param_annotations(fn)
    if len(annotations) < 2:
        return False
    second = annotations[1]
    if second is inspect.Parameter.empty:
        name = getattr(fn, "__qualname__", None) or repr(fn)
        raise TypeError(
            f"Cannot tell what the second parameter of {name} is, the responder or the connection: "
            f"annotate it (responder: Responder[...], or cx: Connection). Accepted shapes:\n{REQUEST_SHAPES}"
        )
    if isinstance(second, str):
        return second.rsplit(".", 1)[-1].split("[", 1)[0] == "Connection"
    return isinstance(second, type) and issubclass(second, Connection)


def speaks(cx: Connection, version: int) -> bool:
    """Whether ``cx`` may carry messages of protocol ``version``: it negotiated it, or nothing yet."""
    negotiated = getattr(cx, "protocol_version", None)
    return negotiated is None or negotiated == version


class RequestHandler:
    """Takes requests of one typed message class, validating params into it.

    The function is called as ``fn(req, responder, cx)`` (or with fewer arguments: ``fn(req)``,
    ``fn(req, responder)``, ``fn(req, cx)`` when the second parameter is annotated ``Connection``).
    A plain ``def``, or two parameters whose second is not annotated, is refused with ``TypeError``
    at once (:data:`REQUEST_SHAPES` lists what is accepted).
    It may return the result, answer through the responder and return ``None``, or return
    :class:`Unhandled`. With ``peer`` (a role instance), only requests from that peer are taken.
    """

    __slots__ = ("_arity", "_validate", "cls", "fn", "method", "peer", "version")

    def __init__(self, cls: type, fn: Callable[..., Awaitable[object]], peer: Role | None = None) -> None:
        require_async(fn, REQUEST_SHAPES)
        self.cls = cls
        self.method = message_method(cls)
        #: The protocol version of the message class (``None``: any), see the module docstring.
        self.version = message_protocol_version(cls)
        self.fn = fn
        self.peer = peer
        self._validate: Callable[[Any], Any] | None = None
        count = positional_count(fn)
        if count <= 1:
            self._arity = 1
        elif count == 2:
            self._arity = 0 if _second_is_connection(fn) else 2
        else:
            self._arity = 3

    def __repr__(self) -> str:
        name = getattr(self.fn, "__name__", self.fn)
        return f"RequestHandler({self.method!r}, {name!r}{peer_suffix(self.peer)})"

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
        if self.version is not None and not speaks(cx, self.version):
            return Unhandled(message)
        responder = message.responder
        validate = self._validate
        if validate is None:
            validate = self._validate = fast_validator(self.cls)
        try:
            request = validate({} if message.params is None else message.params)
        except validation_error() as exc:
            responder.respond_with_error(
                InvalidParams({"method": self.method, "errors": validation_errors(exc)})
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
        if issubclass(type(result), Unhandled):  # not isinstance: it asks a model for __class__ (slow)
            return cast("Unhandled", result)
        responder.respond(result)
        return None


class NotificationHandler:
    """Takes notifications of one typed message class: ``fn(notification, cx)`` or ``fn(notification)``.

    With ``peer`` (a role instance), only notifications from that peer are taken.
    """

    __slots__ = ("_validate", "_with_cx", "cls", "fn", "method", "peer", "version")

    def __init__(self, cls: type, fn: Callable[..., Awaitable[object]], peer: Role | None = None) -> None:
        require_async(fn, NOTIFICATION_SHAPES)
        self.cls = cls
        self.method = message_method(cls)
        #: The protocol version of the message class (``None``: any), see the module docstring.
        self.version = message_protocol_version(cls)
        self.fn = fn
        self.peer = peer
        self._with_cx = positional_count(fn) >= 2
        self._validate: Callable[[Any], Any] | None = None

    def __repr__(self) -> str:
        name = getattr(self.fn, "__name__", self.fn)
        return f"NotificationHandler({self.method!r}, {name!r}{peer_suffix(self.peer)})"

    def accepts(self, message: Dispatch) -> bool:
        """Notifications with this handler's method (from its peer, when it has one)."""
        return (
            message.method == self.method
            and type(message) is NotificationDispatch
            and (self.peer is None or message.peer == self.peer)
        )

    async def handle(self, message: Dispatch, cx: Connection) -> Unhandled | None:
        """Validate the params and call the function (bad params are logged by the connection)."""
        if self.version is not None and not speaks(cx, self.version):
            return Unhandled(message)
        validate = self._validate
        if validate is None:
            validate = self._validate = fast_validator(self.cls)
        try:
            notification = validate({} if message.params is None else message.params)
        except validation_error() as exc:
            raise InvalidParams({"method": self.method, "errors": validation_errors(exc)}) from exc
        if self._with_cx:
            result = await self.fn(notification, cx)
        else:
            result = await self.fn(notification)
        return result if isinstance(result, Unhandled) else None
