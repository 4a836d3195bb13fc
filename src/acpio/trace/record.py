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

import os
import sys
import time
from pathlib import Path
from types import TracebackType
from typing import BinaryIO

import orjson

from acpio.transports.base import OversizedFrame
from acpio.transports.tap import Direction

__all__ = ["TapRecorder"]


class TapRecorder:
    """Writes each frame a tap shows it to ``path`` (created, or truncated, now); see the module docstring.

    Raises ``OSError`` when the file cannot be opened.
    """

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)
        self._file: BinaryIO | None = self.path.open("wb")
        self._start = time.monotonic()

    def __repr__(self) -> str:
        return f"TapRecorder({str(self.path)!r})"

    def __call__(self, direction: Direction, frame: bytes | OversizedFrame) -> None:
        """Record one frame (the tap's observer); a frame too long to read is noted by its size."""
        if self._file is None:
            return
        stamp = orjson.dumps({"direction": direction.value, "ts": round(time.monotonic() - self._start, 6)})
        if isinstance(frame, OversizedFrame):
            note = orjson.dumps(f"(a line of {frame.size} bytes, skipped unread)")
            line = stamp[:-1] + b',"invalid":' + note + b"}"
        elif _is_json(frame):
            line = stamp[:-1] + b',"message":' + frame + b"}"  # the frame's own text, never encoded again
        else:
            line = stamp[:-1] + b',"invalid":' + orjson.dumps(frame.decode("utf-8", "replace")) + b"}"
        try:
            self._file.write(line + b"\n")
            self._file.flush()
        except (OSError, ValueError) as exc:
            print(f"acpio: recording to {self.path} stopped: {exc}", file=sys.stderr)
            self.close()

    def close(self) -> None:
        """Stop recording and close the file (calling it again does nothing)."""
        file, self._file = self._file, None
        if file is not None:
            try:
                file.close()
            except OSError as exc:
                print(f"acpio: closing {self.path} failed: {exc}", file=sys.stderr)

    def __enter__(self) -> TapRecorder:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()


def _is_json(frame: bytes) -> bool:
    try:
        orjson.loads(frame)
    except orjson.JSONDecodeError:
        return False
    return True
