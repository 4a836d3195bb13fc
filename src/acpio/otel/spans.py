"""The OpenTelemetry tracer behind :func:`acpio.otel.instrument`: spans, attributes, ``_meta`` propagation.

Spans follow the JSON-RPC and GenAI semantic conventions where they fit (ACP has none of its own):
a span per message named after its method (``CLIENT`` sent, ``SERVER`` received) with
``rpc.system.name``, ``rpc.method``, ``jsonrpc.request.id`` and the session as
``gen_ai.conversation.id``; ``session/prompt`` and the prompt turn are ``invoke_agent``, a tool call
is ``execute_tool`` with ``gen_ai.tool.name``. The trace context travels in ``params._meta`` under the
keys the ACP spec reserves for it (``traceparent``, ``tracestate``, ``baggage``), written by the
global propagator: in the inner message of a ``proxy/successor`` envelope, so that it survives the
unwrapping at each hop.
"""

from __future__ import annotations

from typing import Any, Final

import orjson
from opentelemetry import context as otel_context
from opentelemetry import propagate, trace
from opentelemetry.trace import Span, SpanKind, Status, StatusCode, TracerProvider
from opentelemetry.util.types import AttributeValue

import acpio
from acpio.errors import RequestError
from acpio.jsonrpc.dispatch import Dispatch, RequestDispatch
from acpio.jsonrpc.messages import RawJson, RequestId
from acpio.jsonrpc.tracing import RequestEnded
from acpio.roles import LEGACY_SUCCESSOR_METHOD, SUCCESSOR_METHOD

__all__ = ["OtelTracer"]

_ENVELOPES = frozenset((SUCCESSOR_METHOD, LEGACY_SUCCESSOR_METHOD))
#: GenAI's name for what a method does, where one fits.
_OPERATIONS = {"session/prompt": "invoke_agent"}


class OtelTracer:
    """The engine's :class:`~acpio.jsonrpc.tracing.MessageTracer`, reporting OpenTelemetry spans."""

    def __init__(self, provider: TracerProvider | None = None) -> None:
        self._tracer = trace.get_tracer("acpio", acpio.__version__, tracer_provider=provider)

    def __repr__(self) -> str:
        return f"<OtelTracer {self._tracer!r}>"

    # --- messages ---------------------------------------------------------------------------------

    def sending_request(
        self, connection: str, method: str, request_id: RequestId, params: object
    ) -> tuple[object, RequestEnded]:
        """Start a ``CLIENT`` span, a child of the current one, and carry it in the params."""
        inner_method, inner = _inner(method, params)
        span = self._tracer.start_span(
            inner_method,
            kind=SpanKind.CLIENT,
            attributes=_attributes(connection, inner_method, inner, request_id),
        )

        if not span.get_span_context().is_valid:
            return params, _ignore  # the API's no-op span (no SDK, no context to pass on)

        def ended(outcome: object) -> None:
            if isinstance(outcome, BaseException):
                _fail(span, outcome)
            span.end()

        return _carrying(span, method, params), ended

    def sending_notification(self, connection: str, method: str, params: object) -> object:
        """A ``CLIENT`` span of no duration, carried in the params."""
        inner_method, inner = _inner(method, params)
        span = self._tracer.start_span(
            inner_method, kind=SpanKind.CLIENT, attributes=_attributes(connection, inner_method, inner, None)
        )
        params = _carrying(span, method, params)
        span.end()
        return params

    def receiving(self, connection: str, message: Dispatch) -> Received | Ignored:
        """A ``SERVER`` span, a child of the context the message carries (a new trace without one)."""
        method, inner = _inner(message.method, message.params)
        is_request = type(message) is RequestDispatch
        meta = inner.get("_meta") if type(inner) is dict else None
        # a new trace when the message carries none (extracting from nothing costs as much as from something)
        parent = (
            propagate.extract(meta, context=otel_context.Context())
            if isinstance(meta, dict) and meta
            else otel_context.Context()
        )
        span = self._tracer.start_span(
            method,
            context=parent,
            kind=SpanKind.SERVER,
            attributes=_attributes(connection, method, inner, message.id if is_request else None),
        )
        if not span.get_span_context().is_valid:
            return _IGNORED  # the API's no-op span (no SDK, no context to pass on)
        return Received(span, is_request)

    # --- work between messages --------------------------------------------------------------------

    def prompt_turn(self, session_id: str, agent_name: str) -> Current:
        """The span of a prompt turn, current until it ends."""
        attributes: dict[str, AttributeValue] = {
            "gen_ai.operation.name": "invoke_agent",
            "gen_ai.agent.name": agent_name,
            "gen_ai.conversation.id": session_id,
        }
        span = self._tracer.start_span(
            f"invoke_agent {agent_name}", kind=SpanKind.INTERNAL, attributes=attributes
        )
        return Current(span)

    def tool_call(self, session_id: str, call_id: str, title: str, kind: str | None) -> Current:
        """The span of a tool call, current until it ends."""
        attributes: dict[str, AttributeValue] = {
            "gen_ai.operation.name": "execute_tool",
            "gen_ai.tool.name": title,
            "gen_ai.tool.call.id": call_id,
            "gen_ai.conversation.id": session_id,
        }
        if kind is not None:
            attributes["acp.tool_call.kind"] = kind
        span = self._tracer.start_span(f"execute_tool {title}", kind=SpanKind.INTERNAL, attributes=attributes)
        return Current(span)


class Current:
    """A span made current at once (an :class:`~acpio.otel.Activity`); :meth:`end` restores the context."""

    __slots__ = ("_span", "_token")

    def __init__(self, span: Span) -> None:
        self._span = span
        self._token = otel_context.attach(trace.set_span_in_context(span))

    def end(self, error: BaseException | None = None) -> None:
        """End the span (failed with ``error``) and make the one before it current again."""
        if error is not None:
            _fail(self._span, error)
        otel_context.detach(self._token)
        self._span.end()


class Received:
    """The span of one incoming message: current while its handlers run, ended by its answer (a request)."""

    __slots__ = ("_request", "_span", "_token")

    def __init__(self, span: Span, request: bool) -> None:
        self._span = span
        self._request = request
        self._token: object = None

    def __enter__(self) -> None:
        self._token = otel_context.attach(trace.set_span_in_context(self._span))

    def __exit__(self, kind: object, error: BaseException | None, traceback: object) -> None:
        otel_context.detach(self._token)  # type: ignore[arg-type]
        if not self._request:
            if error is not None:
                _fail(self._span, error)
            self._span.end()

    def answered(self, error: RequestError | None) -> None:
        """The request was answered (with ``error``): its span ends."""
        if error is not None:
            _fail(self._span, error)
        self._span.end()


class Ignored:
    """The record of a message the API does not trace (no SDK): nothing to do."""

    __slots__ = ()

    def __enter__(self) -> None:
        return None

    def __exit__(self, kind: object, error: BaseException | None, traceback: object) -> None:
        return None

    def answered(self, error: RequestError | None) -> None:
        """Nothing to end."""


_IGNORED: Final = Ignored()


def _ignore(outcome: object) -> None:
    """The end of a request the API does not trace."""


def _inner(method: str, params: object) -> tuple[str, object]:
    """The logical message: unwrapped from a ``proxy/successor`` envelope, its params as they are."""
    if method in _ENVELOPES:
        envelope = _as_object(params)
        if envelope is not None and isinstance(envelope.get("method"), str):
            return envelope["method"], envelope.get("params")
    return method, params


def _as_object(params: object) -> dict[str, Any] | None:
    """``params`` as a JSON object (``None`` when they are none, or an array)."""
    if params is None or type(params) is list:
        return None
    if type(params) is dict:
        return params
    value = orjson.loads(RawJson.of(params).json)
    return value if type(value) is dict else None


def _session_of(params: object) -> object:
    """The ``sessionId`` of ``params`` (raw or typed), without serializing a typed object."""
    if type(params) is dict:
        return params.get("sessionId")
    if type(params) is RawJson:
        value = _as_object(params)
        return None if value is None else value.get("sessionId")
    return getattr(params, "session_id", None)


def _carrying(span: Span, method: str, params: object) -> object:
    """``params`` with ``span``'s context in ``_meta`` (in the inner message of an envelope)."""
    if not span.get_span_context().is_valid:
        return params  # the API's no-op span (no SDK): nothing to carry, nothing serialized
    if method in _ENVELOPES:
        envelope = _as_object(params)
        if envelope is None or not isinstance(envelope.get("method"), str):
            return params
        inner = envelope.get("params")
        return {**envelope, "params": _carrying(span, "", inner)} if inner is not None else envelope
    value = _as_object(params)
    if value is None:
        return params  # no params (or an array): nowhere to carry it
    carrier: dict[str, str] = {}
    propagate.inject(carrier, context=trace.set_span_in_context(span))
    if not carrier:
        return params
    meta = value.get("_meta")
    return {**value, "_meta": {**meta, **carrier} if isinstance(meta, dict) else carrier}


def _attributes(
    connection: str, method: str, params: object, request_id: RequestId | None
) -> dict[str, AttributeValue]:
    attributes: dict[str, AttributeValue] = {
        "rpc.system.name": "jsonrpc",
        "rpc.method": method,
        "acpio.connection": connection,
    }
    if request_id is not None:
        attributes["jsonrpc.request.id"] = str(request_id)
    session_id = _session_of(params)
    if isinstance(session_id, str):
        attributes["gen_ai.conversation.id"] = session_id
    operation = _OPERATIONS.get(method)
    if operation is not None:
        attributes["gen_ai.operation.name"] = operation
    return attributes


def _fail(span: Span, error: BaseException) -> None:
    """Mark ``span`` failed: a JSON-RPC error by its code, anything else by its class (and recorded)."""
    if isinstance(error, RequestError):
        span.set_attribute("error.type", str(error.code))
        span.set_attribute("rpc.response.status_code", str(error.code))
        span.set_status(Status(StatusCode.ERROR, error.message))
    else:
        span.set_attribute("error.type", type(error).__qualname__)
        span.record_exception(error)
        span.set_status(Status(StatusCode.ERROR, str(error)))
