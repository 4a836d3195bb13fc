"""Traces: reading them (:mod:`acpio.trace.events`), showing them (:mod:`~acpio.trace.viewer`, ``show``).

A trace is the newline-delimited JSON file ``acpio conductor --trace FILE`` writes: one event per message
crossing a hop of the proxy chain (and per line a component wrote on its stderr). The message logs of
``acpio prompt --json`` and of a Tap are read as traces too (:mod:`acpio.trace.formats`).
``acpio trace view FILE`` draws one as a sequence diagram in a browser, ``acpio trace show FILE`` prints
it in a terminal. The format and the viewer are described in ``docs/trace.md``.

A cassette (:mod:`acpio.trace.cassette`) is a trace of one client's conversation, its secrets and local
paths redacted (:mod:`acpio.trace.redact`), that :mod:`acpio.testing` replays as the agent or as the
client (``docs/testing-clients.md``, ``docs/testing-agents.md``).
"""

from __future__ import annotations

from acpio.trace.cassette import Cassette, CassetteRecorder, Entry, Recording
from acpio.trace.events import (
    Lane,
    LanesEvent,
    MessageEvent,
    NotificationEvent,
    RequestEvent,
    ResponseEvent,
    StderrEvent,
    TraceEvent,
    TraceFollower,
    iter_events,
    parse_event,
    parse_events,
    parse_line,
    read_trace,
)
from acpio.trace.record import TapRecorder
from acpio.trace.redact import Redaction
from acpio.trace.viewer import TraceViewer

__all__ = [
    "Cassette",
    "CassetteRecorder",
    "Entry",
    "Lane",
    "LanesEvent",
    "MessageEvent",
    "NotificationEvent",
    "Recording",
    "Redaction",
    "RequestEvent",
    "ResponseEvent",
    "StderrEvent",
    "TapRecorder",
    "TraceEvent",
    "TraceFollower",
    "TraceViewer",
    "iter_events",
    "parse_event",
    "parse_events",
    "parse_line",
    "read_trace",
]
