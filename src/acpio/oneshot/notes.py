"""What ``acpio prompt`` writes on stderr beside the turn: its notes, acpio's log, the agent's stderr.

Everything here goes through one :class:`Notes`, which first lets the renderer finish its line (and
any in-place display), so that a note never lands in the middle of the agent's text:

* notes (``acpio: session testy-1 ...``);
* the records of the ``acpio`` loggers (:class:`NotesLogHandler`), as ``acpio: warning: ...``, when
  the program did not configure logging itself;
* with ``--verbose``, each line the agent writes on its stderr, as it comes, dimmed on a terminal
  (``agent| ...``), and each extension notification the agent sends.

:class:`StdoutWatch` keeps the first line the agent wrote on stdout that is not JSON (a banner, a
usage message): an agent that never answers ``initialize`` is usually not speaking ACP, and that
line says so better than any guess.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Callable, Iterator
from typing import Final, TextIO

import orjson

from acpio.oneshot.sanitize import sanitize
from acpio.transports.base import OversizedFrame
from acpio.transports.tap import Direction

__all__ = ["Notes", "NotesLogHandler", "StdoutWatch", "logging_to"]

#: How much of a non-JSON line of the agent's stdout is kept for the hint.
_LINE_KEPT: Final = 200
_DIM: Final = "\x1b[2m"
_RESET: Final = "\x1b[0m"


class Notes:
    """Lines on stderr, each written once the renderer settled (``settle``); dimmed lines with ``dim``."""

    def __init__(self, err: TextIO, settle: Callable[[], None], *, colour: bool) -> None:
        self._err = err
        self._settle = settle
        self._colour = colour

    def note(self, text: str, *, fresh_line: bool = False) -> None:
        """``acpio: TEXT``; ``fresh_line`` starts it on a new line (after a ``^C`` echoed mid-line)."""
        self.write(f"{chr(10) if fresh_line else ''}acpio: {sanitize(text, single_line=True)}")

    def agent_stderr(self, line: str) -> None:
        """One line the agent wrote on its stderr, dimmed on a terminal."""
        self.write(f"agent| {sanitize(line, single_line=True)}", dim=True)

    def write(self, line: str, *, dim: bool = False) -> None:
        """Write ``line`` (already clean) and a newline on stderr, after the renderer settled.

        A terminal that is gone (the window closed: SIGHUP) cannot be told anything: the note is
        dropped rather than fail what wanted to say it (such as ending the run in order).
        """
        if dim and self._colour:
            line = f"{_DIM}{line}{_RESET}"
        with contextlib.suppress(OSError, ValueError):
            self._settle()
            self._err.write(line + "\n")
            self._err.flush()


class NotesLogHandler(logging.Handler):
    """A log record as a note: ``acpio: warning: MESSAGE`` (``acpio: MESSAGE`` below warnings)."""

    def __init__(self, notes: Notes, level: int = logging.NOTSET) -> None:
        super().__init__(level)
        self._notes = notes

    def emit(self, record: logging.LogRecord) -> None:
        """Write the record through the notes; a failure to format it goes to ``handleError``."""
        try:
            text = record.getMessage()
            if record.exc_info:
                text += "\n" + logging.Formatter().formatException(record.exc_info)
            level = f"{record.levelname.lower()}: " if record.levelno >= logging.WARNING else ""
            lines = text.splitlines() or [""]
            self._notes.note(f"{level}{lines[0]}")
            for line in lines[1:]:
                self._notes.write(f"  {sanitize(line, single_line=True)}")
        except Exception:
            self.handleError(record)


@contextlib.contextmanager
def logging_to(notes: Notes, *, verbose: bool) -> Iterator[None]:
    """While inside: acpio's log records go to ``notes`` (warnings; with ``verbose`` also info).

    Nothing changes when the program configured logging itself (the root logger or the ``acpio``
    logger has a handler): its configuration decides.
    """
    logger = logging.getLogger("acpio")
    if logging.getLogger().handlers or logger.handlers:
        yield
        return
    handler = NotesLogHandler(notes)
    saved_level, saved_propagate = logger.level, logger.propagate
    logger.addHandler(handler)
    logger.propagate = False
    if verbose:
        logger.setLevel(logging.INFO)
    elif logger.level == logging.NOTSET:
        logger.setLevel(logging.WARNING)
    try:
        yield
    finally:
        logger.removeHandler(handler)
        logger.setLevel(saved_level)
        logger.propagate = saved_propagate


class StdoutWatch:
    """Keeps the first line the agent wrote on stdout that is not JSON, until it is told to stop.

    A tap observer (:class:`~acpio.transports.Tap`): only incoming frames are looked at, and only
    until :meth:`stop` (once ``initialize`` was answered there is no more need to look).
    """

    def __init__(self) -> None:
        self.first_non_json: str | None = None
        self._watching = True

    def stop(self) -> None:
        """Look at no more frames."""
        self._watching = False

    def __call__(self, direction: Direction, frame: bytes | OversizedFrame) -> None:
        """Look at one frame (the tap's observer)."""
        if not self._watching or direction is not Direction.INCOMING or self.first_non_json is not None:
            return
        if type(frame) is not bytes:
            self.first_non_json = "(a line too long to read)"
            return
        try:
            orjson.loads(frame)
        except orjson.JSONDecodeError:
            text = sanitize(frame.decode("utf-8", "replace"), single_line=True).strip()
            if text:
                self.first_non_json = text if len(text) <= _LINE_KEPT else text[:_LINE_KEPT] + "…"
