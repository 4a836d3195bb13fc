"""Turning the OpenTelemetry tracing of acpio's connections on and off."""

from __future__ import annotations

from typing import TYPE_CHECKING

from acpio.jsonrpc.tracing import install_tracer, installed_tracer

if TYPE_CHECKING:
    from opentelemetry.trace import TracerProvider

    from acpio.otel.spans import OtelTracer

__all__ = ["instrument", "instrumented", "uninstrument"]

_current: OtelTracer | None = None


def instrument(tracer_provider: TracerProvider | None = None) -> None:
    """Trace every connection made from now on with OpenTelemetry (``docs/observability.md``).

    ``tracer_provider`` defaults to the global one (``opentelemetry.trace.set_tracer_provider``):
    with no SDK installed its spans are no-ops. Call it before the agent, client or conductor makes
    its connections: those made earlier are not traced. Calling it again replaces the provider.
    Raises :class:`ImportError` when ``opentelemetry-api`` is missing, and :class:`RuntimeError`
    when another tracer is installed in the engine already.
    """
    global _current
    try:
        from acpio.otel.spans import OtelTracer
    except ImportError as exc:
        raise ImportError(
            "acpio.otel.instrument() needs the OpenTelemetry API: pip install 'acpio[otel]' "
            f"(and an OpenTelemetry SDK to export the spans): {exc}"
        ) from exc
    other = installed_tracer()
    if other is not None and other is not _current:
        raise RuntimeError(
            f"Another tracer is installed in acpio's engine ({other!r}): "
            "call acpio.jsonrpc.tracing.install_tracer(None) first to replace it"
        )
    _current = OtelTracer(tracer_provider)
    install_tracer(_current)


def uninstrument() -> None:
    """Stop tracing the connections made from now on (those open keep reporting until they end)."""
    global _current
    if _current is not None and installed_tracer() is _current:
        install_tracer(None)
    _current = None


def instrumented() -> OtelTracer | None:
    """The tracer :func:`instrument` installed, ``None`` when tracing is off."""
    return _current
