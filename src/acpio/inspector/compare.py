"""Two runs side by side: :func:`diff_runs`, what one run exchanged that the other did not.

Each run is read as the rows ``acpio trace show`` prints (one per message, runs of streamed chunks as
one, with what each message is about), without times or ids, so two runs of the same conversation
compare equal however fast they went; :func:`diff_runs` is a unified diff of those rows.
"""

from __future__ import annotations

import difflib

import orjson

from acpio.inspector.capture import Capture
from acpio.trace.events import TraceEvent, parse_event
from acpio.trace.show import build_rows

__all__ = ["diff_runs", "run_lines"]


def run_lines(capture: Capture) -> list[str]:
    """One line per row of the run: who sent what to whom, and what it is about."""
    events: list[TraceEvent] = []
    for frame in capture.frames():
        event = parse_event(orjson.loads(frame.event))
        if event is not None:
            events.append(event)
    lines = []
    for row in build_rows(events):
        what = f"{row.kind} {row.method}" if row.kind != "stderr" else row.method
        error = f" error {row.error}" if row.error is not None else ""
        lines.append(f"{row.from_lane} -> {row.to_lane}: {what}{error} {row.label}".rstrip())
    return lines


def diff_runs(before: Capture, after: Capture) -> list[str]:
    """The unified diff of the two runs' rows (no lines: they exchanged the same messages)."""
    return list(
        difflib.unified_diff(
            run_lines(before), run_lines(after), str(before.path), str(after.path), lineterm="", n=2
        )
    )
