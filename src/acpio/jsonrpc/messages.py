"""JSON-RPC 2.0 envelopes: decode one incoming frame, build outgoing frames. No I/O, no asyncio.

Decoding reads the *envelope* only: ``method``, ``id`` and the kind of message. ``params`` and
``result`` stay the JSON values orjson decoded (``dict``/``list``/scalars); typed handlers validate
them later, and only when they take the message. One frame decodes to one of:

* :class:`Request`, :class:`Notification`, :class:`Response`: a well-formed message;
* :class:`Invalid`: something to answer with an error (``id: null``), or to ignore when it was
  shaped like a response (answering a bad response could loop between two peers);
* :class:`Batch`: a JSON array, each entry decoded as above, in order;
* :class:`OversizedBatch`: an array of more than :data:`MAX_BATCH_ENTRIES` entries, refused whole;
* ``None``: a blank frame, which is skipped.

Outgoing frames are built with orjson; request ids are echoed with their exact JSON type.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Final, TypeAlias, TypeGuard

import orjson

from acpio.errors import InvalidRequest, ParseError, RequestError, error_from_wire

__all__ = [
    "CANCEL_METHOD",
    "Batch",
    "Entry",
    "Frame",
    "Invalid",
    "JsonValue",
    "Notification",
    "NOTIFICATION_HEAD",
    "NestedTooDeeply",
    "OversizedBatch",
    "PARAMS_AFTER_METHOD",
    "RawJson",
    "Request",
    "RequestId",
    "Response",
    "UntypedMessage",
    "cancel_target",
    "classify",
    "decode",
    "decode_response",
    "encode_error",
    "encode_errors",
    "encode_notification",
    "encode_request",
    "encode_result",
    "encode_value",
    "error_response_object",
    "head_request_id",
    "line_head",
    "method_at",
    "notification_from_bytes",
    "notification_head",
    "params_from",
    "result_object",
]

#: Any value orjson decodes: ``dict``, ``list``, ``str``, ``int``, ``float``, ``bool`` or ``None``.
JsonValue: TypeAlias = "bool | int | float | str | list[JsonValue] | dict[str, JsonValue] | None"
#: A JSON-RPC id as it appears on the wire: an integer, a string, or ``null`` (``None``).
RequestId: TypeAlias = int | str | None

#: The protocol-level notification that asks the peer to cancel one of the requests it received.
CANCEL_METHOD: Final = "$/cancel_request"

#: How much of a bad line is echoed back in an error's ``data`` (characters).
HEAD_CHARS: Final = 200


@dataclass(slots=True)
class UntypedMessage:
    """A request or notification as a method name and raw params, validated by nobody.

    Send one with ``cx.send_request(UntypedMessage("x/y", {...}))``; proxies forward them as they are,
    so fields the proxy does not know survive.
    """

    method: str
    params: JsonValue = None


@dataclass(slots=True)
class Request:
    """An incoming request: ``method``, raw ``params`` (``dict``, ``list`` or ``None``) and ``id``."""

    method: str
    params: JsonValue
    id: RequestId


@dataclass(slots=True)
class Notification:
    """An incoming notification: ``method`` and raw ``params``; it gets no reply."""

    method: str
    params: JsonValue


@dataclass(slots=True)
class Response:
    """An incoming response: ``id`` and either ``result`` or ``error`` (a :class:`RequestError`)."""

    id: RequestId
    result: JsonValue
    error: RequestError | None


@dataclass(slots=True)
class Invalid:
    """A frame that is not a usable message.

    ``error`` is what to answer (always with ``id: null``). ``answer`` is false for a malformed
    *response-shaped* object, which is logged and ignored instead.
    """

    error: RequestError
    answer: bool = True


#: One message of a frame (or of a batch).
Entry: TypeAlias = Request | Notification | Response | Invalid


#: The most entries of one batch; a longer batch is refused whole (:class:`OversizedBatch`).
MAX_BATCH_ENTRIES = 1000


@dataclass(slots=True)
class Batch:
    """A JSON-RPC batch: a non-empty array of at most :data:`MAX_BATCH_ENTRIES` entries, in order."""

    entries: list[Entry]


@dataclass(slots=True)
class OversizedBatch:
    """An array of more than :data:`MAX_BATCH_ENTRIES` entries: none is dispatched, or even classified.

    ``size`` is how many entries it had; ``ids`` are the ids of the requests among them (objects
    with a ``method`` and a string or integer ``id``), each answered with an error so that no caller
    waits for an answer that will never come (a 1 MB line can hold 500,000 entries: they are only
    looked at, never decoded into messages).
    """

    size: int
    ids: list[str | int]


#: What :func:`decode` returns for one frame.
Frame: TypeAlias = Entry | Batch | OversizedBatch | None


#: ``"id": <string or integer>`` among a message's first keys, before any ``"params"`` (whose values
#: may hold other ids); and ``"method"`` in the same start.
_HEAD_ID = re.compile(rb'^\s*\{(?:(?!"params")[^{}\[\]])*?"id"\s*:\s*("(?:[^"\\]|\\.)*"|-?\d{1,18})[\s,}]')


def head_request_id(head: bytes) -> str | int | None:
    """The id of the request a too-long line starts, when its start shows one; ``None`` otherwise.

    Lets the answer to a message skipped for its size name the request, so that the peer's call
    fails instead of waiting forever.
    """
    if b'"method"' not in head:
        return None
    match = _HEAD_ID.match(head)
    if match is None:
        return None
    try:
        value = orjson.loads(match.group(1))
    except orjson.JSONDecodeError:
        return None
    return value if isinstance(value, str | int) and not isinstance(value, bool) else None


def line_head(frame: bytes | str) -> str:
    """The start of a frame as text (invalid UTF-8 replaced), short enough to put in an error."""
    if isinstance(frame, bytes):
        frame = frame[: HEAD_CHARS * 4].decode("utf-8", "replace")
    return frame[:HEAD_CHARS]


# --- notifications read from their bytes ----------------------------------------------------------

#: How a notification frame starts when written the way JSON-RPC peers write them (acpio, the
#: TypeScript SDK): ``{"jsonrpc":"2.0","method":"<name>","params":<params>}``. Such a frame can be
#: read without decoding it whole: its method from its bytes, its params cut out as JSON text (the
#: conductor's relay passes notifications on this way; the dispatch loop decodes only the params).
NOTIFICATION_HEAD: Final = b'{"jsonrpc":"2.0","method":"'
#: What follows a message's method name, before its params.
PARAMS_AFTER_METHOD: Final = b'","params":'
#: Method names met so far, checked (printable ASCII, no ``\\``: JSON string text as it is).
_METHOD_NAMES: dict[bytes, str] = {}


def method_at(frame: bytes, at: int) -> tuple[str, int] | None:
    """The method name that starts at ``at`` in ``frame``, and where the params after it start.

    ``None`` unless the name is followed by :data:`PARAMS_AFTER_METHOD` and is JSON string text that
    reads as itself (printable ASCII without escapes): the name is then what decoding would give.
    """
    close = frame.find(b'"', at)
    if not frame.startswith(PARAMS_AFTER_METHOD, close):
        return None
    raw = frame[at:close]
    name = _METHOD_NAMES.get(raw)
    if name is None:
        name = raw.decode("ascii", "replace")
        if not raw or not raw.isascii() or "\\" in name or not name.isprintable():
            return None
        if len(_METHOD_NAMES) < 256:  # method names are few; never grow without bound
            _METHOD_NAMES[raw] = name
    return name, close + len(PARAMS_AFTER_METHOD)


def notification_head(method: str) -> bytes | None:
    """How a ``method`` notification frame starts, up to its params; ``None`` for a name read otherwise.

    A frame that starts with it and ends with ``}`` has its params' JSON text between the two, if
    that text is one JSON value (what :func:`method_at` reads, for one known method).
    """
    head = NOTIFICATION_HEAD + method.encode() + PARAMS_AFTER_METHOD
    return head if method_at(head, len(NOTIFICATION_HEAD)) == (method, len(head)) else None


def notification_from_bytes(frame: bytes, head: bytes, method: str) -> Notification | None:
    """``frame`` as the notification :func:`decode` gives, if it starts with ``head`` (``method``'s).

    Only the params are decoded (the envelope's object and its classification are skipped), with
    the same reader, into the same value. ``None`` when the frame is not exactly ``head``, one
    JSON value and ``}``, or its params are not an object, an array or ``null``: :func:`decode`
    then reads it (and answers what is wrong with it).
    """
    if not frame.startswith(head):
        return None
    try:
        return Notification(method, params_from(frame, len(head)))
    except ValueError:
        return None


def params_from(frame: bytes, start: int) -> JsonValue:
    """The params of a notification ``frame`` whose head (up to its params) is ``start`` bytes long.

    What :func:`notification_from_bytes` reads, without the head check and without building the
    :class:`Notification` (the dispatch loop's own path). Raises ``ValueError`` when the frame is
    not read so: :func:`decode` reads it then.
    """
    if frame[-1] != 0x7D:  # }
        raise ValueError("the frame does not end right after its params")
    params = orjson.loads(frame[start:-1])  # orjson.JSONDecodeError is a ValueError
    if params is None or type(params) is dict or type(params) is list:
        return params
    raise ValueError("the params are no object, array or null")


def decode(frame: bytes | str) -> Frame:
    """Decode one frame (one line, without its newline) into a message, a batch, or an error.

    Never raises for bad input: invalid JSON or UTF-8 gives ``Invalid(ParseError)``, a value that is
    not a JSON-RPC message gives ``Invalid(InvalidRequest)``. A blank frame gives ``None``.
    """
    try:
        value = orjson.loads(frame)
    except orjson.JSONDecodeError:
        if not frame.strip():
            return None
        return Invalid(ParseError({"line": line_head(frame)}))
    if type(value) is dict:
        return classify(value)
    if type(value) is list:
        if not value:
            return Invalid(InvalidRequest({"reason": "empty batch"}))
        if len(value) > MAX_BATCH_ENTRIES:
            return OversizedBatch(len(value), _request_ids(value))
        return Batch([classify(item) for item in value])
    return Invalid(InvalidRequest({"reason": "a JSON-RPC message must be an object"}))


def decode_response(frame: bytes) -> tuple[RequestId, JsonValue | RequestError] | None:
    """The id and outcome of the response ``frame`` holds, or ``None`` for anything else (a request...).

    The outcome is the result, or the error (a :class:`RequestError`) that replaced it: what
    :func:`decode`'s :class:`Response` holds. A plain success response (``jsonrpc``, an integer
    ``id`` and ``result``, nothing else: the answer to one of our requests) is read without
    classifying its keys, and without a :class:`Response` (a lone response settles its request
    with these two values).
    """
    try:
        value = orjson.loads(frame)
    except orjson.JSONDecodeError:
        return None
    if (
        type(value) is dict
        and len(value) == 3
        and type(request_id := value.get("id")) is int
        and "result" in value
        and value.get("jsonrpc") == "2.0"
    ):
        return request_id, value["result"]
    entry = classify(value)
    if type(entry) is not Response:
        return None
    return entry.id, entry.result if entry.error is None else entry.error


def _request_ids(entries: list[Any]) -> list[str | int]:
    """The ids of the requests among ``entries`` (a ``bool`` is no id)."""
    ids: list[str | int] = []
    for entry in entries:
        if type(entry) is dict and "method" in entry:
            request_id = entry.get("id")
            if type(request_id) is int or type(request_id) is str:
                ids.append(request_id)
    return ids


def _invalid(reason: str) -> Invalid:
    return Invalid(InvalidRequest({"reason": reason}))


def _ignored(reason: str) -> Invalid:
    return Invalid(InvalidRequest({"reason": reason}), answer=False)


def _valid_id(value: object) -> TypeGuard[RequestId]:
    kind = type(value)
    return kind is int or kind is str or value is None


def classify(value: JsonValue) -> Entry:
    """Classify one decoded JSON value by the keys present (the envelope rules of JSON-RPC 2.0).

    ``method`` + ``id`` is a request, ``method`` alone a notification, ``id`` + exactly one of
    ``result``/``error`` a response; ``"jsonrpc": "2.0"`` is required, and params must be an
    object, an array or absent.
    """
    if type(value) is not dict:
        return _invalid("a JSON-RPC message must be an object")
    method = value.get("method")
    # Fast path: a well-formed request or notification.
    is_call = "result" not in value and "error" not in value
    if type(method) is str and is_call and value.get("jsonrpc") == "2.0":
        params = value.get("params")
        if params is None or type(params) is dict or type(params) is list:
            if "id" not in value:
                return Notification(method, params)
            request_id = value["id"]
            if type(request_id) is int or type(request_id) is str or request_id is None:
                return Request(method, params, request_id)
    if method is not None:
        if value.get("jsonrpc") != "2.0":
            return _invalid('"jsonrpc" must be "2.0"')
        if type(method) is not str:
            return _invalid('"method" must be a string')
        if "result" in value or "error" in value:
            return _invalid("a request or notification cannot carry a result or an error")
        params = value.get("params")
        if params is not None and type(params) is not dict and type(params) is not list:
            return _invalid('"params" must be an object or an array')
        if "id" not in value:
            return Notification(method, params)
        request_id = value["id"]
        if not _valid_id(request_id):
            return _invalid('"id" must be an integer, a string or null')
        return Request(method, params, request_id)
    has_result = "result" in value
    has_error = "error" in value
    if has_result or has_error:
        if has_result and has_error:
            return _ignored("a response cannot carry both a result and an error")
        if value.get("jsonrpc") != "2.0":
            return _ignored('"jsonrpc" must be "2.0"')
        if "id" not in value or not _valid_id(value["id"]):
            return _ignored('a response needs an integer, string or null "id"')
        if has_result:
            return Response(value["id"], value["result"], None)
        return Response(value["id"], None, error_from_wire(value["error"]))
    if "method" in value:
        return _invalid('"method" must be a string')
    return _invalid("not a request, notification or response")


def cancel_target(params: JsonValue) -> tuple[bool, RequestId]:
    """The id a ``$/cancel_request`` names: ``(True, id)``, or ``(False, None)`` if params are malformed."""
    if type(params) is dict and "requestId" in params:
        target = params["requestId"]
        if _valid_id(target):
            return True, target
    return False, None


# --- outgoing -------------------------------------------------------------------------------------


_SERIALIZERS: dict[type, Callable[[Any], Any]] = {}


class NestedTooDeeply(TypeError):
    """A value nested too deeply for any JSON encoder (about 900 levels and more)."""


class RawJson:
    """Params serialized already: the frame carries :attr:`json` as it is, never encoded again.

    ``source`` is what the JSON was made from (a typed object, a dict), when known. The engine makes
    one when a connection has send observers, so that they and the frame share one serialization
    (:meth:`Builder.on_send_notification <acpio.jsonrpc.Builder.on_send_notification>`); a sender
    may pass one too, for JSON it writes or holds as text: what the observers need to know of it
    without parsing it (an :class:`~acpio.app.AgentApp` turn passes its session's update writer,
    whose ``session_id`` the session store's recorder reads).
    """

    __slots__ = ("json", "source")

    def __init__(self, json: bytes, source: object = None) -> None:
        self.json = json
        self.source = source

    @classmethod
    def of(cls, value: object) -> RawJson:
        """``value`` serialized (with the frames' rules), or ``value`` itself if it is a ``RawJson``."""
        if type(value) is cls:
            return value
        typed = _typed_json(value)  # a typed object's own serializer: what the frame would use
        return cls(typed if typed is not None else _dumps(value), value)

    def to_wire_json(self) -> bytes:
        """The JSON text, spliced into the frame."""
        return self.json

    def to_wire(self) -> orjson.Fragment:
        """The JSON text for orjson, inside another value (a proxy's envelope)."""
        return orjson.Fragment(self.json)

    def __repr__(self) -> str:
        return f"RawJson({self.json[:60]!r}{'...' if len(self.json) > 60 else ''})"


def _serializer_for(kind: type) -> Callable[[Any], Any]:
    """How to turn objects of ``kind`` into JSON values (looked up once per class)."""
    to_wire = getattr(kind, "to_wire", None)
    if callable(to_wire):
        return lambda obj: obj.to_wire()
    if callable(getattr(kind, "model_dump", None)):
        return lambda obj: obj.model_dump(mode="json", by_alias=True, exclude_unset=True)

    def refuse(obj: Any) -> Any:
        raise TypeError(f"{kind.__name__} is not JSON serializable: give it to_wire() or model_dump()")

    return refuse


def _to_json(obj: Any) -> Any:
    """The orjson ``default`` hook: typed objects are written with ``to_wire()`` or ``model_dump``."""
    kind = type(obj)
    serializer = _SERIALIZERS.get(kind)
    if serializer is None:
        serializer = _SERIALIZERS[kind] = _serializer_for(kind)
    return serializer(obj)


def _dumps(value: Any) -> bytes:
    """``orjson.dumps`` with acpio's hook, falling back to the standard library for deep JSON.

    orjson writes at most 254 levels (it reads 1024): a forwarded message is never refused for its
    depth alone.
    """
    try:
        return orjson.dumps(value, default=_to_json)
    except orjson.JSONEncodeError as exc:
        if "recursion" not in str(exc).lower():
            raise
    try:
        return json.dumps(value, default=_to_json, ensure_ascii=False, separators=(",", ":")).encode()
    except RecursionError:
        raise NestedTooDeeply("the message is nested too deeply to be written as JSON") from None


def _serialization_error() -> type[Exception]:
    # looked up only when a serializer raised: the engine imports no pydantic for untyped messages
    from pydantic_core import PydanticSerializationError

    return PydanticSerializationError


def _typed_json(value: Any) -> bytes | None:
    """The JSON text of a typed object whose class serializes itself in one step (``to_wire_json``).

    Splicing that text into the envelope skips building the intermediate dict: the common case of
    sending generated models costs one serializer call instead of a dump and an encode.
    """
    kind = type(value)
    try:
        write = _WIRE_JSON[kind]
    except KeyError:
        write = _wire_json_of(kind)
    if write is None:
        return None
    try:
        return write(value)
    except _serialization_error() as exc:  # the same error as the generic path raises
        raise TypeError(f"{kind.__name__} is not JSON serializable: {exc}") from exc


def _wire_json_of(kind: type) -> Callable[[Any], bytes] | None:
    """The ``to_wire_json`` function of class ``kind``, or ``None`` if it has none (remembered per class)."""
    write = None if kind is dict or kind is list else getattr(kind, "to_wire_json", None)
    if len(_WIRE_JSON) < 1024:  # typed classes are few; a program making them by the thousand is not cached
        _WIRE_JSON[kind] = write
    return write


#: Each class's ``to_wire_json`` function, read once: reading a pydantic model's attributes (its
#: class's, through its metaclass) goes through their ``__getattr__`` hooks, each time.
_WIRE_JSON: dict[type, Callable[[Any], bytes] | None] = {}


# The integers orjson writes.
_INT64_MIN = -(2**63)
_UINT64_MAX = 2**64 - 1


def encode_request(request_id: RequestId, method: str, params: object) -> bytes:
    """One request frame. ``params`` may be a dict, a list, ``None`` (omitted) or a typed object."""
    if params is None:
        return orjson.dumps({"jsonrpc": "2.0", "id": request_id, "method": method}, default=_to_json)
    typed = _typed_json(params)
    if typed is not None:
        if type(request_id) is int and _INT64_MIN <= request_id <= _UINT64_MAX:
            # our own ids: the envelope written directly, as orjson writes it (it refuses wider ints)
            method_json = _METHODS_JSON.get(method)
            if method_json is None:
                method_json = orjson.dumps(method)
                if len(_METHODS_JSON) < 256:  # method names are few; never grow without bound
                    _METHODS_JSON[method] = method_json
            return b'{"jsonrpc":"2.0","id":%d,"method":%b,"params":%b}' % (request_id, method_json, typed)
        head = orjson.dumps({"jsonrpc": "2.0", "id": request_id, "method": method})
        return b"".join((head[:-1], b',"params":', typed, b"}"))
    return _dumps({"jsonrpc": "2.0", "id": request_id, "method": method, "params": params})


# Methods of typed requests as JSON strings (typed classes are few, so this stays small).
_METHODS_JSON: dict[str, bytes] = {}


def encode_notification(method: str, params: object) -> bytes:
    """One notification frame; ``params`` as for :func:`encode_request`."""
    if params is None:
        return orjson.dumps({"jsonrpc": "2.0", "method": method}, default=_to_json)
    typed = _typed_json(params)
    if typed is not None:
        head = _NOTIFICATION_HEADS.get(method)
        if head is None:
            head = orjson.dumps({"jsonrpc": "2.0", "method": method})[:-1]
            if len(_NOTIFICATION_HEADS) < 256:  # method names are few; never grow without bound
                _NOTIFICATION_HEADS[method] = head
        return b"".join((head, b',"params":', typed, b"}"))
    return _dumps({"jsonrpc": "2.0", "method": method, "params": params})


# Envelope starts of typed notifications, by method (typed classes are few, so this stays small).
_NOTIFICATION_HEADS: dict[str, bytes] = {}


def result_object(request_id: RequestId, result: object) -> dict[str, object]:
    """The response object for a successful result (``result`` may be a typed object)."""
    return {"jsonrpc": "2.0", "id": request_id, "result": result}


def error_response_object(request_id: RequestId, error: RequestError) -> dict[str, object]:
    """The response object for an error."""
    return {"jsonrpc": "2.0", "id": request_id, "error": error.to_wire()}


def encode_result(request_id: RequestId, result: object) -> bytes:
    """One success response frame. Raises ``TypeError`` if ``result`` cannot be serialized."""
    typed = _typed_json(result)
    if typed is not None:
        if type(request_id) is int and _INT64_MIN <= request_id <= _UINT64_MAX:
            # the envelope written directly, as orjson writes it (it refuses ints beyond 64 bits)
            return b'{"jsonrpc":"2.0","id":%d,"result":%b}' % (request_id, typed)
        head = orjson.dumps({"jsonrpc": "2.0", "id": request_id})
        return b"".join((head[:-1], b',"result":', typed, b"}"))
    return _dumps({"jsonrpc": "2.0", "id": request_id, "result": result})


def encode_error(request_id: RequestId, error: RequestError) -> bytes:
    """One error response frame (``id`` may be ``None`` for errors that answer no known request)."""
    try:
        return orjson.dumps({"jsonrpc": "2.0", "id": request_id, "error": error.to_wire()}, default=_to_json)
    except TypeError:
        # The error's data is not serializable: send the code and message, drop the data.
        return orjson.dumps(
            {"jsonrpc": "2.0", "id": request_id, "error": {"code": error.code, "message": error.message}}
        )


def encode_errors(request_ids: list[str | int], error: RequestError) -> bytes:
    """One array of error responses, ``error`` for each of ``request_ids``, in order.

    Built in one buffer: a frame per id from orjson would keep about 4 KB allocated each (answering
    500,000 ids that way took 2 GB).
    """
    tail = b',"error":' + orjson.dumps(error.to_wire(), default=_to_json) + b"},"
    out = bytearray(b"[")
    for request_id in request_ids:
        out += orjson.dumps({"jsonrpc": "2.0", "id": request_id})[:-1]
        out += tail
    out[-1:] = b"]"
    return bytes(out)


def encode_value(value: object) -> bytes:
    """Serialize any JSON value or typed object with the same rules as the frames above."""
    return _dumps(value)
