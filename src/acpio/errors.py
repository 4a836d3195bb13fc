"""The acpio exception tree.

Every exception acpio raises derives from :class:`AcpError`::

    AcpError
    ├── RequestError                 a JSON-RPC error object (code, message, data): sent or received
    │   ├── ParseError               -32700  the peer sent text that is not JSON
    │   ├── InvalidRequest           -32600  the peer sent JSON that is not a JSON-RPC message
    │   ├── MethodNotFound           -32601  nobody handles that method
    │   ├── InvalidParams            -32602  the params do not match the method's schema
    │   ├── InternalError            -32603  a handler failed; its message in ``data``, traceback logged
    │   ├── RequestCancelled         -32800  the request was cancelled with ``$/cancel_request``
    │   ├── AuthRequired             -32000  the agent wants ``authenticate`` first
    │   ├── ResourceNotFound         -32002  a session, file or other resource does not exist
    │   └── UnsupportedProtocolVersionError  -32022  the agent speaks no version the client can use
    ├── ConnectionClosed             the connection ended while something still waited on it
    ├── DeadlockError                a handler awaited a response that only its own dispatch loop can read
    ├── NotInProtocolVersion         a feature the connection's negotiated ACP version does not have
    └── TransportError               the bytes could not be read or written (a broken pipe, a dead process)

Raise a :class:`RequestError` (or one of its subclasses) from a handler to answer the request with
that error; any other exception answers ``-32603 Internal error`` with its message in ``data``
(:meth:`InternalError.for_exception`) and is logged with its traceback. Errors received from a
peer are raised as the subclass matching their code (see :func:`error_from_wire`), so
``except MethodNotFound:`` works for both directions.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any, ClassVar

__all__ = [
    "AcpError",
    "AuthRequired",
    "ConnectionClosed",
    "DeadlockError",
    "InternalError",
    "InvalidParams",
    "InvalidRequest",
    "MethodNotFound",
    "NotInProtocolVersion",
    "ParseError",
    "RequestCancelled",
    "RequestError",
    "ResourceNotFound",
    "TransportError",
    "UnsupportedProtocolVersionError",
    "error_from_wire",
]


class AcpError(Exception):
    """Root of every exception acpio raises: ``except acpio.AcpError`` catches them all."""


class RequestError(AcpError):
    """A JSON-RPC error: a ``code``, a human ``message`` and optional ``data``.

    Raised by ``await sent_request`` when the peer answers with an error, and raised by handlers to
    answer a request with one. Build one with any code (``RequestError(-32050, "Quota exceeded")``) or
    use the subclass for a standard code (``MethodNotFound("session/foo")``).
    """

    CODE: ClassVar[int] = -32603
    MESSAGE: ClassVar[str] = "Internal error"

    def __init__(self, code: int, message: str | None = None, data: Any = None) -> None:
        self.code = code
        self.message = message if message is not None else _DEFAULT_MESSAGES.get(code, "Error")
        self.data = data
        super().__init__(self.code, self.message, self.data)

    def __str__(self) -> str:
        """``code message``, then ``: data`` when there is data: text as it is, anything else as JSON.

        ``-32602 Invalid params: {"path": "a.txt"}``, the way the peer sent it; data that JSON
        cannot hold (a Python object put there by hand) falls back to its ``repr``.
        """
        text = f"{self.code} {self.message}"
        if self.data is not None:
            text += f": {_format_data(self.data)}"
        return text

    def __repr__(self) -> str:
        return f"{type(self).__name__}(code={self.code!r}, message={self.message!r}, data={self.data!r})"

    def to_wire(self) -> dict[str, Any]:
        """The JSON-RPC ``error`` object for this error (``data`` only when set)."""
        error: dict[str, Any] = {"code": self.code, "message": self.message}
        if self.data is not None:
            error["data"] = self.data
        return error


def _format_data(data: Any) -> str:
    """An error's ``data`` as users read it: text as it is, anything else as one line of JSON.

    Non-ASCII text is kept as it is (``ensure_ascii=False``); data that is not JSON-serializable
    (a Python object put there by hand) falls back to its ``repr``.
    """
    if isinstance(data, str):
        return data
    try:
        return json.dumps(data, ensure_ascii=False)
    except (TypeError, ValueError):
        return repr(data)


class _StandardError(RequestError):
    """A :class:`RequestError` whose code is fixed by its class."""

    def __init__(self, data: Any = None, *, message: str | None = None) -> None:
        super().__init__(type(self).CODE, message if message is not None else type(self).MESSAGE, data)


class ParseError(_StandardError):
    """-32700: the peer sent a line that is not valid JSON (or not UTF-8). Fix the sender."""

    CODE = -32700
    MESSAGE = "Parse error"


class InvalidRequest(_StandardError):
    """-32600: the JSON is not a valid JSON-RPC 2.0 request, response or notification."""

    CODE = -32600
    MESSAGE = "Invalid request"


class MethodNotFound(_StandardError):
    """-32601: no handler takes this method. ``data`` names the method.

    Check the method name, or the capability that advertises it, before calling.
    """

    CODE = -32601
    MESSAGE = "Method not found"


class InvalidParams(_StandardError):
    """-32602: the params failed validation against the method's schema; ``data`` lists the errors."""

    CODE = -32602
    MESSAGE = "Invalid params"


class InternalError(_StandardError):
    """-32603: the handler failed. The traceback is logged locally; the peer sees at most its message."""

    CODE = -32603
    MESSAGE = "Internal error"

    @classmethod
    def for_exception(cls, exc: BaseException, *, details: bool = True) -> InternalError:
        """The answer to a request whose handler raised ``exc`` (not a :class:`RequestError`).

        With ``details`` the data is ``{"details": "no such file", "type": "ValueError"}``: the
        official TypeScript SDK sends ``{"details": message}``, and ``type`` (the exception's
        class, as :class:`acpio.app.AgentApp` sends it too) lets the peer tell a ``KeyError`` from
        a ``ValueError``. Without it there is no data at all, for agents whose error messages may
        hold secrets.
        """
        if not details:
            return cls()
        return cls({"details": str(exc), "type": type(exc).__name__})


class RequestCancelled(_StandardError):
    """-32800: the request was cancelled (``$/cancel_request``) before it completed."""

    CODE = -32800
    MESSAGE = "Request cancelled"


class AuthRequired(_StandardError):
    """-32000: the agent needs ``authenticate`` before it serves this request."""

    CODE = -32000
    MESSAGE = "Authentication required"


class ResourceNotFound(_StandardError):
    """-32002: the session, file or other resource named in the request does not exist."""

    CODE = -32002
    MESSAGE = "Resource not found"


class UnsupportedProtocolVersionError(_StandardError):
    """-32022: the agent speaks no protocol version at or below the one the client asked for.

    ``data`` is ``{"requested": 0, "supported": [1, 2]}`` (ACP v2's shape, as the TypeScript and
    Rust SDKs send it): :attr:`requested` and :attr:`supported` read it. The agent answers
    ``initialize`` with it and keeps the connection open, so the client may send ``initialize``
    again with one of the supported versions. Build one with :meth:`for_versions`.
    """

    CODE = -32022
    MESSAGE = "Unsupported protocol version"

    @classmethod
    def for_versions(cls, requested: int, supported: Iterable[int]) -> UnsupportedProtocolVersionError:
        """The error for a client that asked for ``requested`` when the agent speaks ``supported``."""
        spoken = sorted(supported)
        names = " and ".join(str(v) for v in spoken) or "none"
        return cls(
            {"requested": requested, "supported": spoken},
            message=f"Unsupported protocol version {requested}: this agent speaks ACP {names}; "
            "send initialize again with one of them",
        )

    @property
    def requested(self) -> int | None:
        """The version the client asked for (``None`` when the error's data does not say)."""
        value = self.data.get("requested") if isinstance(self.data, dict) else None
        return value if isinstance(value, int) and not isinstance(value, bool) else None

    @property
    def supported(self) -> tuple[int, ...]:
        """The versions the agent speaks (empty when the error's data does not say)."""
        value = self.data.get("supported") if isinstance(self.data, dict) else None
        if not isinstance(value, list):
            return ()
        return tuple(v for v in value if isinstance(v, int) and not isinstance(v, bool))


_STANDARD: dict[int, type[_StandardError]] = {
    cls.CODE: cls
    for cls in (
        ParseError,
        InvalidRequest,
        MethodNotFound,
        InvalidParams,
        InternalError,
        RequestCancelled,
        AuthRequired,
        ResourceNotFound,
        UnsupportedProtocolVersionError,
    )
}
_DEFAULT_MESSAGES = {code: cls.MESSAGE for code, cls in _STANDARD.items()}


def error_from_wire(error: object) -> RequestError:
    """Turn a received JSON-RPC ``error`` object into the matching :class:`RequestError` subclass.

    A malformed error object (not an object, a code that is not an integer) still gives a
    :class:`RequestError` that says what was received, so a bad peer never crashes the caller.
    """
    if not isinstance(error, dict):
        return InternalError(error, message="Malformed error object from peer")
    code = error.get("code")
    message = error.get("message")
    data = error.get("data")
    if not isinstance(code, int) or isinstance(code, bool):
        return InternalError(error, message="Malformed error object from peer")
    if not isinstance(message, str):
        message = _DEFAULT_MESSAGES.get(code, "Error")
    cls = _STANDARD.get(code)
    if cls is None:
        return RequestError(code, message, data)
    return cls(data, message=message)


class ConnectionClosed(AcpError):
    """The connection ended (the peer closed it, or it was closed here) while this waited on it.

    Raised by every request still pending at EOF, naming its method, and by any send attempted
    after the connection closed. Open a new connection to go on.
    """

    def __init__(self, message: str = "Connection closed", *, method: str | None = None) -> None:
        self.method = method
        if method is not None:
            message = f"{message} before a response to {method!r} arrived"
        super().__init__(message)


class DeadlockError(AcpError):
    """A handler awaited a response while running inside the dispatch loop.

    The response can only be read by that same loop, which is busy running the handler, so the
    await could never finish. Move the await into ``cx.spawn(...)``, or use
    ``sent.on_receiving_result(callback)`` instead of awaiting.
    """


class NotInProtocolVersion(AcpError):
    """A feature was used that the ACP version negotiated on this connection does not have.

    ``feature`` names it (``"client terminals (turn.run_command)"``), ``version`` is the negotiated
    version, ``instead`` what to use on that version. Raised before anything is sent: check
    ``turn.protocol_version`` first, or use what ``instead`` says.
    """

    def __init__(self, feature: str, version: int, instead: str) -> None:
        self.feature = feature
        self.version = version
        self.instead = instead
        super().__init__(f"{feature} does not exist in ACP v{version}: {instead}")

    def __repr__(self) -> str:
        return (
            f"NotInProtocolVersion(feature={self.feature!r}, version={self.version!r}, "
            f"instead={self.instead!r})"
        )


class TransportError(AcpError):
    """Bytes could not be read or written: a broken pipe, a reset socket, an agent process that died.

    Unlike a clean EOF (which raises :class:`ConnectionClosed` in waiting requests), this is a failure.
    ``stderr_tail`` holds the end of a spawned agent's stderr when there is one.
    """

    def __init__(self, message: str, *, stderr_tail: str | None = None) -> None:
        self.stderr_tail = stderr_tail
        if stderr_tail:
            message = f"{message}\n--- agent stderr (last lines) ---\n{stderr_tail}"
        super().__init__(message)
