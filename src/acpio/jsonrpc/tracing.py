"""The engine's tracing hook: one object told of each message a connection sends or receives.

A :class:`MessageTracer` installed with :func:`install_tracer` is read by every
:class:`~acpio.jsonrpc.Connection` made afterwards (connections made before keep what they had);
:func:`acpio.otel.instrument` installs the OpenTelemetry one. The engine calls it at its single
points: an outgoing request (:meth:`Outbox.request <acpio.jsonrpc.outbox.Outbox.request>`, which
forwarding goes through too), an outgoing notification, and each incoming request or notification
around its handlers. With none installed each of these points costs one ``is None`` test.

The hook may rewrite the params it is given (to carry a trace context in them); it sees them
before a proxy's envelope wraps them and after an incoming one was unwrapped.
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from acpio.errors import RequestError
    from acpio.jsonrpc.dispatch import Dispatch
    from acpio.jsonrpc.messages import RequestId

__all__ = ["MessageTracer", "ReceivedMessage", "install_tracer", "installed_tracer"]

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
