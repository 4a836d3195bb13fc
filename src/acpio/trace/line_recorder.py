"""The file a recorder writes line by line without ever breaking what it records: :class:`LineRecorder`.

:class:`~acpio.trace.TapRecorder` (a tap's frames) and :class:`~acpio.trace.CassetteRecorder` (a
client's conversation, redacted) are recorders: they run inside a tap's observer, so a full disk
or a closed file must not fail the connection. Writing stops at the first error, reported once on
stderr (``acpio: recording to PATH stopped: ...``); what comes later is dropped.
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path
from types import TracebackType
from typing import BinaryIO, Self

__all__ = ["LineRecorder"]


class LineRecorder:
    """A file at ``path`` (created, or truncated, now), written a line at a time, each flushed as written.

    Raises ``OSError`` when the file cannot be opened. A context manager: leaving it closes the file.
    """

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)
        self._file: BinaryIO | None = self.path.open("wb")
        self._start = time.monotonic()

    @property
    def recording(self) -> bool:
        """Whether lines are still written: ``False`` once closed, or after a write failed."""
        return self._file is not None

    def elapsed(self) -> float:
        """Seconds since the file was opened: the time stamp of a line written now."""
        return time.monotonic() - self._start

    def write(self, lines: bytes) -> None:
        """Write ``lines`` (whole lines, each with its newline) and flush them; nothing once stopped."""
        if self._file is None:
            return
        try:
            self._file.write(lines)
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

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()
