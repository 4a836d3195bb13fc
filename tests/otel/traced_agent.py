"""An AgentApp that exports its spans, one JSON object per line, to the file named by ``ACPIO_TEST_SPANS``.

The cross-process test runs it as a subprocess: its spans must continue the client's trace.
"""

import os

from opentelemetry import trace
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import ConsoleSpanExporter, SimpleSpanProcessor

import acpio.otel
from acpio import AgentApp, StopReasonName, Turn


def _line(span: ReadableSpan) -> str:
    return span.to_json(indent=None) + "\n"


out = open(os.environ["ACPIO_TEST_SPANS"], "a", buffering=1)  # noqa: SIM115 (open for the process's life)
provider = TracerProvider()
provider.add_span_processor(SimpleSpanProcessor(ConsoleSpanExporter(out=out, formatter=_line)))
trace.set_tracer_provider(provider)
acpio.otel.instrument()

app = AgentApp("traced", version="1.0")


@app.prompt
async def prompt(turn: Turn) -> StopReasonName:
    async with turn.tool_call("count", kind="other") as call:
        await call.update(text=str(len(turn.text.split())))
    await turn.say("counted")
    return "end_turn"


if __name__ == "__main__":
    app.run()
