"""OpenTelemetry traces of ACP traffic: a span per message, per prompt turn and per tool call.

``pip install 'acpio[otel]'`` (``opentelemetry-api`` only), then, before the connections are made::

    import acpio.otel

    acpio.otel.instrument()

Every connection made afterwards (agents, clients, proxies, the conductor's hops) reports a span
per request and notification it sends (``CLIENT``) or receives (``SERVER``), named after the
method, and carries the W3C trace context in ``params._meta`` (``traceparent``, ``tracestate``),
so a client, the proxies of a conductor and the agent give one trace. An ``AgentApp`` adds a span
per prompt turn (``invoke_agent``) and per tool call (``execute_tool``). Without an OpenTelemetry
SDK configured the spans are the API's no-ops. See ``docs/observability.md``.

Names are imported on first use: ``import acpio.otel`` loads no OpenTelemetry module.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from acpio._exports import lazy_exports

if TYPE_CHECKING:
    from acpio.otel.activity import Activity, start_prompt_turn, start_tool_call
    from acpio.otel.instrumentation import instrument, instrumented, uninstrument

__all__ = [
    "Activity",
    "instrument",
    "instrumented",
    "start_prompt_turn",
    "start_tool_call",
    "uninstrument",
]

if not TYPE_CHECKING:  # type checkers see the imports above, and no __getattr__ that would hide a typo
    __getattr__, __dir__ = lazy_exports(globals())
