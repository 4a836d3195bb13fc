"""The conductor's debug log (``acpio conductor --debug DIR``): one line log per component.

:class:`DebugLog` writes, in a directory, one file per lane of a run, truncated when the run starts::

    DIR/0-client.log      the conductor's own upstream (its client; in proxy mode, its successor too)
    DIR/1-proxy0.log      the first proxy
    DIR/2-agent.log       the agent (agent mode) ...

Each file starts with a header (``# Proxy(0): python proxy.py``) and then has one line per line
that crossed that component's stdin, stdout or stderr, exactly as it crossed (not re-encoded)::

    +12.345ms → {"jsonrpc":"2.0","id":1,"method":"proxy/initialize",...}     sent to the component
    +20.101ms ← {"jsonrpc":"2.0","id":1,"result":{...}}                      received from it
    +20.300ms ! DEBUG starting up                                            written on its stderr

For the client file, ``←`` is what the client sent and ``→`` what the conductor answered. Times are
milliseconds since the run started. A line too long to read shows as ``(a line of N bytes, skipped
unread)``. Writing never breaks the conductor: the first error is reported once on stderr and the
log stops.
"""

from __future__ import annotations

import contextlib
import os
import re
import sys
import time
from pathlib import Path
from typing import TextIO

from acpio.transports.base import OversizedFrame
from acpio.transports.tap import Direction, TapObserver

__all__ = ["DebugLog"]

_ARROWS = {Direction.OUTGOING: "→", Direction.INCOMING: "←"}
_UNSAFE = re.compile(r"[^a-z0-9]+")


def file_name(number: int, lane: str) -> str:
    """The log file of a lane: ``0-client.log``, ``1-proxy0.log``, ``2-agent.log``."""
    return f"{number}-{_UNSAFE.sub('', lane.lower())}.log"


class DebugLog:
    """The per-component line logs of one conductor run, in ``directory`` (created if missing).

    Raises ``OSError`` when the directory cannot be created.
    """

    def __init__(self, directory: str | os.PathLike[str]) -> None:
        self.directory = Path(directory)
        self.directory.mkdir(parents=True, exist_ok=True)
        self._start = time.monotonic()
        self._files: dict[str, TextIO] = {}
        self._active = True

    def __repr__(self) -> str:
        return f"DebugLog({str(self.directory)!r})"

    def open_lane(self, number: int, lane: str, name: str) -> None:
        """Create (or truncate) the file of ``lane``, the ``number``-th from the client, with its header."""
        if lane in self._files or not self._active:
            return
        try:
            file = (self.directory / file_name(number, lane)).open("w", encoding="utf-8")
            file.write(f"# {lane}: {name}\n")
            file.flush()
        except OSError as exc:
            self._stop(exc)
            return
        self._files[lane] = file

    def observer(self, lane: str) -> TapObserver:
        """The observer of the tap on ``lane``'s link: writes each frame with its arrow."""

        def observe(direction: Direction, frame: bytes | OversizedFrame) -> None:
            if type(frame) is bytes:
                text = frame.decode("utf-8", "replace")
            else:
                text = f"(a line of {getattr(frame, 'size', '?')} bytes, skipped unread)"
            self.write(lane, _ARROWS[direction], text)

        return observe

    def stderr(self, lane: str, line: str) -> None:
        """Write a line the component on ``lane`` wrote to its stderr."""
        self.write(lane, "!", line)

    def write(self, lane: str, mark: str, text: str) -> None:
        """Append one line to ``lane``'s file (dropped if the lane has no file)."""
        file = self._files.get(lane)
        if file is None or not self._active:
            return
        elapsed = (time.monotonic() - self._start) * 1000
        try:
            file.write(f"+{elapsed:.3f}ms {mark} {text}\n")
            file.flush()
        except (OSError, ValueError) as exc:
            self._stop(exc)

    def _stop(self, exc: Exception) -> None:
        self._active = False
        print(f"acpio conductor: the debug log in {self.directory} stopped: {exc}", file=sys.stderr)

    def close(self) -> None:
        """Close every file (calling it again does nothing)."""
        files, self._files = self._files, {}
        for file in files.values():
            with contextlib.suppress(OSError):
                file.close()
