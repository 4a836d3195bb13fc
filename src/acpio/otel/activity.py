"""Spans for the work between messages: a prompt turn and a tool call (GenAI's conventions).

:class:`~acpio.AgentApp` starts them itself; another agent can start them around its own turns and
tool calls. Each function returns ``None`` when tracing is off (:func:`acpio.otel.instrument` not
called), so the cost is one test. The span is current until :meth:`Activity.end`: the requests sent
meanwhile (a permission asked, a file written) are its children. Start and end it in one task.
"""

from __future__ import annotations

from typing import Protocol

from acpio.otel.instrumentation import instrumented

__all__ = ["Activity", "start_prompt_turn", "start_tool_call"]


class Activity(Protocol):
    """A span started by :func:`start_prompt_turn` or :func:`start_tool_call`, current until it ends."""

    def end(self, error: BaseException | None = None) -> None:
        """End the span, failed with ``error`` when one is given; it stops being current."""
        ...


def start_prompt_turn(session_id: str, agent_name: str) -> Activity | None:
    """Start the span of one prompt turn (``invoke_agent {agent_name}``) in session ``session_id``."""
    tracer = instrumented()
    return None if tracer is None else tracer.prompt_turn(session_id, agent_name)


def start_tool_call(session_id: str, call_id: str, title: str, kind: str | None = None) -> Activity | None:
    """Start the span of one tool call (``execute_tool {title}``) reported as ``call_id``."""
    tracer = instrumented()
    return None if tracer is None else tracer.tool_call(session_id, call_id, title, kind)
