"""Conductor traces: reading them (:mod:`acpio.trace.events`) and viewing them (:mod:`acpio.trace.viewer`).

A trace is the newline-delimited JSON file ``acpio conductor --trace FILE`` writes: one event per message
crossing a hop of the proxy chain. ``acpio trace view FILE`` draws it as a sequence diagram in a browser.
The format and the viewer are described in ``docs/trace.md``.
"""

from __future__ import annotations

from acpio.trace.events import (
    Lane,
    LanesEvent,
    MessageEvent,
    NotificationEvent,
    RequestEvent,
    ResponseEvent,
    TraceEvent,
    TraceFollower,
    iter_events,
    parse_event,
    parse_line,
    read_trace,
)
from acpio.trace.viewer import TraceViewer

__all__ = [
    "Lane",
    "LanesEvent",
    "MessageEvent",
    "NotificationEvent",
    "RequestEvent",
    "ResponseEvent",
    "TraceEvent",
    "TraceFollower",
    "TraceViewer",
    "iter_events",
    "parse_event",
    "parse_line",
    "read_trace",
]
