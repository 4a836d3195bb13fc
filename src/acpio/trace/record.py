"""Recording a connection's frames to a file that the trace tools read: :class:`TapRecorder`.

A :class:`TapRecorder` is the observer of a :class:`~acpio.transports.Tap`: each frame the tap moves
becomes one line ``{"direction": "outgoing" | "incoming", "ts": 0.0123, "message": ...}`` (the
frame's own text, a batch as its array; a line that is not JSON as ``"invalid"``), flushed as
written. ``acpio trace view`` and ``acpio trace show`` read it as a trace
(:mod:`acpio.trace.formats`): what this side sent goes from the ``Client`` lane to the ``Agent``
lane, with its time::

    with TapRecorder("session.jsonl") as record:
        agent = Tap(await AcpAgent("my-agent --acp").open(), record)
        await Client.builder().connect_with(agent, main)

Recording never breaks the connection: the first write error is reported once on stderr and the
recorder stops.
"""

from __future__ import annotations

import orjson

from acpio.trace.line_recorder import LineRecorder
from acpio.transports.base import OversizedFrame
from acpio.transports.tap import Direction

__all__ = ["TapRecorder"]


class TapRecorder(LineRecorder):
    """Writes each frame a tap shows it to ``path`` (created, or truncated, now); see the module docstring.

    Raises ``OSError`` when the file cannot be opened.
    """

    def __repr__(self) -> str:
        return f"TapRecorder({str(self.path)!r})"

    def __call__(self, direction: Direction, frame: bytes | OversizedFrame) -> None:
        """Record one frame (the tap's observer); a frame too long to read is noted by its size."""
        if not self.recording:
            return
        stamp = orjson.dumps({"direction": direction.value, "ts": round(self.elapsed(), 6)})
        if isinstance(frame, OversizedFrame):
            note = orjson.dumps(f"(a line of {frame.size} bytes, skipped unread)")
            line = stamp[:-1] + b',"invalid":' + note + b"}"
        elif _is_json(frame):
            line = stamp[:-1] + b',"message":' + frame + b"}"  # the frame's own text, never encoded again
        else:
            line = stamp[:-1] + b',"invalid":' + orjson.dumps(frame.decode("utf-8", "replace")) + b"}"
        self.write(line + b"\n")


def _is_json(frame: bytes) -> bool:
    try:
        orjson.loads(frame)
    except orjson.JSONDecodeError:
        return False
    return True
