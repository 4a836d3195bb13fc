"""The engine's tracing hook: one object told of each message a connection sends or receives.

A :class:`MessageTracer` installed with :func:`install_tracer` is read by every
:class:`~acpio.jsonrpc.Connection` made afterwards (connections made before keep what they had);
:func:`acpio.otel.instrument` installs the OpenTelemetry one. The engine calls it at its single
points: an outgoing request (:meth:`Outbox.request <acpio.jsonrpc.outbox.Outbox.request>`, which
forwarding goes through too), an outgoing notification, and each incoming request or notification
around its handlers. With none installed each of these points costs one ``is None`` test.

The hook may rewrite the params it is given (to carry a trace context in them); it sees them
before a proxy's envelope wraps them and after an incoming one was unwrapped. A tracer that
raises is logged and left out of that message: tracing never breaks the traffic it watches.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from contextlib import AbstractContextManager
from types import TracebackType
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from acpio.errors import RequestError
    from acpio.jsonrpc.dispatch import Dispatch
    from acpio.jsonrpc.messages import RequestId

__all__ = ["MessageTracer", "ReceivedMessage", "guarded", "install_tracer", "installed_tracer"]

_log = logging.getLogger("acpio.jsonrpc")

#: Told how one of our requests ended: its raw result, or the exception that replaced it.
RequestEnded = Callable[[object], None]


class ReceivedMessage(AbstractContextManager[None], Protocol):
    """What a tracer makes of one incoming message: entered around its handlers, told of its answer.

    For a notification, leaving the ``with`` block ends it; a request ends when :meth:`answered`
    is called (its answer may come later than the handler returns).
    """

    def answered(self, error: RequestError | None) -> None:
        """The request was answered: with ``error``, or with a result when ``None``."""
        ...


class MessageTracer(Protocol):
    """What the engine tells of its traffic (see the module docstring); called inline: keep it quick."""

    def sending_request(
        self, connection: str, method: str, request_id: RequestId, params: object
    ) -> tuple[object, RequestEnded]:
        """A request is about to go out: the params to send instead, and what to call when it ends."""
        ...

    def sending_notification(self, connection: str, method: str, params: object) -> object:
        """A notification is about to go out: the params to send instead."""
        ...

    def receiving(self, connection: str, message: Dispatch) -> ReceivedMessage:
        """A request or notification came in and is about to be offered to the handlers."""
        ...


_installed: MessageTracer | None = None


def install_tracer(tracer: MessageTracer | None) -> None:
    """Make ``tracer`` the one connections made from now on report to (``None``: none)."""
    global _installed
    _installed = tracer


def installed_tracer() -> MessageTracer | None:
    """The tracer new connections report to, if any."""
    return _installed


def guarded(tracer: MessageTracer | None) -> MessageTracer | None:
    """``tracer`` with its failures logged instead of raised into the engine (``None`` stays ``None``)."""
    return None if tracer is None else _Guarded(tracer)


def _failed(tracer: object, step: str) -> None:
    _log.exception("The message tracer %r failed in %s: the message goes on untraced", tracer, step)


def _untraced(_: object) -> None:
    pass


class _Guarded:
    """A :class:`MessageTracer` that keeps another's exceptions out of the engine."""

    __slots__ = ("_tracer",)

    def __init__(self, tracer: MessageTracer) -> None:
        self._tracer = tracer

    def sending_request(
        self, connection: str, method: str, request_id: RequestId, params: object
    ) -> tuple[object, RequestEnded]:
        try:
            params, ended = self._tracer.sending_request(connection, method, request_id, params)
        except Exception:
            _failed(self._tracer, "sending_request")
            return params, _untraced
        tracer = self._tracer

        def guarded_ended(result: object) -> None:
            try:
                ended(result)
            except Exception:
                _failed(tracer, "a request's end")

        return params, guarded_ended

    def sending_notification(self, connection: str, method: str, params: object) -> object:
        try:
            return self._tracer.sending_notification(connection, method, params)
        except Exception:
            _failed(self._tracer, "sending_notification")
            return params

    def receiving(self, connection: str, message: Dispatch) -> ReceivedMessage:
        try:
            return _GuardedReceived(self._tracer, self._tracer.receiving(connection, message))
        except Exception:
            _failed(self._tracer, "receiving")
            return _GuardedReceived(self._tracer, None)


class _GuardedReceived:
    """A :class:`ReceivedMessage` whose failures are logged (``None``: the tracer made none)."""

    __slots__ = ("_received", "_tracer")

    def __init__(self, tracer: object, received: ReceivedMessage | None) -> None:
        self._tracer = tracer
        self._received = received

    def __enter__(self) -> None:
        if self._received is not None:
            try:
                self._received.__enter__()
            except Exception:
                _failed(self._tracer, "entering a received message")
                self._received = None

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        if self._received is not None:
            try:
                self._received.__exit__(exc_type, exc, tb)
            except Exception:
                _failed(self._tracer, "leaving a received message")

    def answered(self, error: RequestError | None) -> None:
        if self._received is not None:
            try:
                self._received.answered(error)
            except Exception:
                _failed(self._tracer, "a request's answer")
