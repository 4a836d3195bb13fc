"""Typed messages: how a message class names its method, validates its params and parses its result.

A *typed message* is any class with a ``METHOD`` class attribute (its wire method) and, for a
request, ``RESPONSE`` (the type its result is parsed into). The generated ACP models are typed
messages; so is any pydantic model given those two attributes. Nothing here does I/O.

* :func:`message_method`, :func:`to_params`: the method and params to send a typed object with;
* :func:`parse_params`, :func:`fast_validator`: params validated into a class, with ``-32602``
  carrying the validation errors;
* :func:`result_parser`: the parser of a request's result (``-32700``-style :class:`~acpio.ParseError`
  when the peer's answer does not match);
* :func:`outgoing`: method, params and result parser of a message in any form a sender accepts;
* :func:`typed_method_of`: the method of a typed message object, ``None`` for any other;
* :data:`UNSET`: the "argument not given" marker of the senders.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Final, Protocol, TypeAlias, TypeVar, cast

import orjson

from acpio.errors import InvalidParams, ParseError
from acpio.jsonrpc.messages import JsonValue, UntypedMessage, encode_value

if TYPE_CHECKING:
    from pydantic import ValidationError

__all__ = [
    "UNSET",
    "Parser",
    "TypedRequest",
    "fast_validator",
    "identity",
    "message_method",
    "message_protocol_version",
    "outgoing",
    "parse_params",
    "result_parser",
    "to_params",
    "typed_method",
    "typed_method_of",
    "validation_errors",
]


_R = TypeVar("_R", covariant=True)
_M = TypeVar("_M")
_M_co = TypeVar("_M_co", covariant=True)

#: A parser of results or params: the raw JSON in, the typed value (or the JSON itself) out.
Parser: TypeAlias = Callable[["JsonValue"], object]


class _Validating(Protocol[_M_co]):
    """A class with ``model_validate`` (a pydantic model, or any class that validates like one)."""

    def model_validate(self, obj: Any, /) -> _M_co: ...


class TypedRequest(Protocol[_R]):
    """A request object whose class tells type checkers what its result parses into.

    The generated ACP requests are (``PromptRequest`` is a ``TypedRequest[PromptResponse]``), so
    ``await cx.send_request(PromptRequest(...))`` is a ``PromptResponse`` to pyright and mypy. Only
    for type checkers: at run time the class's ``RESPONSE`` says the same.
    """

    def __acpio_response__(self) -> _R:
        """Never called: names the result type."""
        ...


class _Unset:
    """The type of :data:`UNSET`."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "UNSET"


#: "Not given": the default of ``params=`` in the senders (``None`` is a valid params value).
UNSET: Final[Any] = _Unset()


def identity(raw: JsonValue) -> JsonValue:
    """The result parser of an untyped request: the raw JSON as it came."""
    return raw


def message_method(cls: object) -> str:
    """The wire method of a typed message class (its ``METHOD``); a clear error when it has none."""
    method = getattr(cls, "METHOD", None)
    if not isinstance(method, str):
        name = getattr(cls, "__name__", repr(cls))
        raise TypeError(
            f"{name} is not a typed message: give it a class attribute METHOD = '<wire method>' "
            "(and RESPONSE = <result type> for a request)"
        )
    return method


def message_protocol_version(cls: object) -> int | None:
    """The protocol version a typed message class belongs to (its ``PROTOCOL_VERSION``); ``None``: any."""
    version = getattr(cls, "PROTOCOL_VERSION", None)
    return version if type(version) is int else None


def to_params(message: object) -> JsonValue:
    """The params of a typed message object, as the JSON value to send."""
    to_wire = getattr(message, "to_wire", None)
    params: JsonValue
    if to_wire is not None:
        params = to_wire()
    elif (dump := getattr(message, "model_dump", None)) is not None:
        params = dump(mode="json", by_alias=True, exclude_unset=True)
    else:
        params = orjson.loads(encode_value(message))
    return params


def validation_error() -> type[ValidationError]:
    """Pydantic's ``ValidationError``, imported when first needed.

    The engine serves untyped messages without pydantic: it is imported by the first typed message
    class (whose module imports it anyway) or the first failed validation, as in
    ``except validation_error() as exc``, whose class is looked up only when something was raised.
    """
    from pydantic import ValidationError

    return ValidationError


def validation_errors(exc: ValidationError) -> list[dict[str, JsonValue]]:
    """The errors of a failed validation as JSON: where, what, and the error type."""
    return [
        {"loc": list(e["loc"]), "msg": e["msg"], "type": e["type"]}
        for e in exc.errors(include_url=False, include_context=False, include_input=False)
    ]


def fast_validator(cls: type) -> Callable[[object], object]:
    """``cls.model_validate`` without its Python wrapper: the compiled validator, built on first use.

    Classes that are not pydantic models (any class with ``model_validate``) keep their own method.
    """
    from pydantic import BaseModel  # once per class: the caller keeps what this returns

    if isinstance(cls, type) and issubclass(cls, BaseModel):
        if not cls.__pydantic_complete__:
            cls.model_rebuild()
        if cls.__pydantic_complete__:
            return cls.__pydantic_validator__.validate_python
    return cast("_Validating[object]", cls).model_validate


def parse_params(cls: type[_M], method: str, params: JsonValue) -> _M:
    """Validate ``params`` into ``cls``; a failure raises ``InvalidParams`` with the errors in ``data``."""
    try:
        return cast("_Validating[_M]", cls).model_validate({} if params is None else params)
    except validation_error() as exc:
        raise InvalidParams({"method": method, "errors": validation_errors(exc)}) from exc


def result_parser(response_type: type, method: str) -> Parser:
    """The parser for results of a typed request: ``RESPONSE`` validation with a clear error.

    A type without ``model_validate`` leaves results raw. A failure raises
    :class:`~acpio.ParseError` naming the method, the expected type and the JSON received.
    """
    if getattr(response_type, "model_validate", None) is None:
        return identity
    validate = fast_validator(response_type)
    # ``"result": null`` answers a request whose result has no required field: read it as ``{}``
    # (the spec's own examples send null for fs/write_text_file, and SDKs do). A root model (any
    # JSON, as extension results) keeps a null as null.
    null_as_empty = not getattr(response_type, "__pydantic_root_model__", False)

    def parse(raw: JsonValue) -> object:
        try:
            return validate({} if raw is None and null_as_empty else raw)
        except Exception as exc:  # pydantic.ValidationError, or a custom model_validate's error
            raise ParseError(
                {"method": method, "error": str(exc), "json": raw, "phase": "deserialization"},
                message=f"The result of {method!r} does not match {response_type.__name__}",
            ) from exc

    return parse


#: Method and result parser per typed class, looked up once per class (the streaming path).
_TYPED: dict[type, tuple[str, Parser]] = {}


def typed_method(kind: type) -> tuple[str, Parser]:
    """Method and result parser of a typed message class (cached per class)."""
    found = _TYPED.get(kind)
    if found is None:
        method = message_method(kind)
        response_type = getattr(kind, "RESPONSE", None)
        parse = result_parser(response_type, method) if response_type is not None else identity
        found = _TYPED[kind] = (method, parse)
    return found


def typed_method_of(message: object) -> str | None:
    """The wire method of a typed message object (its class's ``METHOD``); ``None`` for anything else."""
    found = _TYPED.get(type(message))
    if found is not None:  # a typed class seen before: its attributes are not read again
        return found[0]
    method = getattr(type(message), "METHOD", None)
    return method if isinstance(method, str) else None


def outgoing(message: object, params: object, *, request: bool) -> tuple[str, object, Parser]:
    """Method, params and result parser for an outgoing message in any of the accepted forms.

    ``message`` is a typed object, an :class:`~acpio.jsonrpc.UntypedMessage`, or a method name
    with ``params`` (:data:`UNSET`: none). A typed object's params stay the object itself: the
    encoder writes its wire JSON.
    """
    found = _TYPED.get(type(message))
    if found is not None and params is UNSET:  # a typed object whose class was seen before
        return found[0], message, found[1] if request else identity
    if isinstance(message, str):
        return message, (None if params is UNSET else params), identity
    if params is not UNSET:
        raise TypeError("params= is only for a method name; a message object carries its own params")
    if isinstance(message, UntypedMessage):
        return message.method, message.params, identity
    method, parse = typed_method(type(message))
    return method, message, parse if request else identity
