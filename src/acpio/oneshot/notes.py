"""What ``acpio prompt`` writes on stderr beside the turn: its notes, acpio's log, the agent's stderr.

Everything here goes through one :class:`Notes`, which first lets the renderer finish its line (and
any in-place display), so that a note never lands in the middle of the agent's text:

* notes (``acpio: session testy-1 ...``);
* the records of the ``acpio`` loggers (:class:`NotesLogHandler`), as ``acpio: warning: ...``, when
  the program did not configure logging itself;
* with ``--verbose``, each line the agent writes on its stderr, as it comes, dimmed on a terminal
  (``agent| ...``), and each extension notification the agent sends.

:class:`StdoutWatch` keeps the first line the agent wrote on stdout that is not JSON (a banner, a
usage message), and notices a program that echoes acpio's messages back: an agent that does not
answer ``initialize`` is usually not speaking ACP, and that line says so better than any guess.
"""

from __future__ import annotations

import contextlib
import logging
import warnings
from collections.abc import Callable, Iterator
from typing import Final, TextIO

import orjson

from acpio.oneshot.sanitize import sanitize
from acpio.profiles.warning import AcpSpecificationWarning
from acpio.transports.base import OversizedFrame
from acpio.transports.tap import Direction

__all__ = ["Notes", "NotesLogHandler", "StdoutWatch", "logging_to", "specification_warnings_to"]

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


@contextlib.contextmanager
def specification_warnings_to(note: Callable[[str], None]) -> Iterator[None]:
    """While inside: each :class:`~acpio.AcpSpecificationWarning` (``--as zed``) is a note, every time.

    Other warnings are shown as Python shows them.
    """
    with warnings.catch_warnings():
        warnings.simplefilter("always", AcpSpecificationWarning)
        shown = warnings.showwarning

        def show(message: Warning | str, category: type[Warning], *args: object, **kwargs: object) -> None:
            if issubclass(category, AcpSpecificationWarning):
                note(f"warning: {message}")
            else:
                shown(message, category, *args, **kwargs)  # type: ignore[arg-type]

        warnings.showwarning = show
        yield


class StdoutWatch:
    """Looks at what the agent writes on its stdout until it answered ``initialize`` (:meth:`stop`).

    A tap observer (:class:`~acpio.transports.Tap`). It keeps the first line that is not JSON (a
    banner, a usage message) and counts them, and it notices a program that sends acpio's own
    messages back (``cat``): ``echoed``, also when shown only what the agent writes (its echoed
    ``initialize`` request). Either says "this is no ACP agent" better than any guess.
    """

    def __init__(self) -> None:
        self.first_non_json: str | None = None
        #: How many lines that are not JSON the agent wrote.
        self.non_json_lines = 0
        #: Whether the agent sent back a message exactly as acpio had sent it.
        self.echoed = False
        #: Whether the agent answered ``initialize`` (set by the code that sent it).
        self.answered = False
        self._sent: set[bytes] = set()
        self._watching = True

    def stop(self) -> None:
        """Look at no more frames."""
        self._watching = False
        self._sent.clear()

    def __call__(self, direction: Direction, frame: bytes | OversizedFrame) -> None:
        """Look at one frame (the tap's observer)."""
        if not self._watching:
            return
        if type(frame) is not bytes:
            if direction is Direction.INCOMING:
                self._not_json("(a line too long to read)")
            return
        if direction is Direction.OUTGOING:
            self._sent.add(frame)
            return
        if frame in self._sent:
            self.echoed = True
            return
        try:
            message = orjson.loads(frame)
        except orjson.JSONDecodeError:
            self._not_json(sanitize(frame.decode("utf-8", "replace"), single_line=True).strip())
            return
        # No agent asks its client to initialize: that request is acpio's own, sent back. Seen this
        # way, an echo is noticed by a watch that is shown only what the agent writes.
        if isinstance(message, dict) and message.get("method") == "initialize" and "id" in message:
            self.echoed = True

    def _not_json(self, text: str) -> None:
        if not text:
            return
        self.non_json_lines += 1
        if self.first_non_json is None:
            self.first_non_json = text if len(text) <= _LINE_KEPT else text[:_LINE_KEPT] + "…"

    @contextlib.contextmanager
    def holding_back_warnings(self) -> Iterator[None]:
        """While inside and watching, the engine's warning for each line that is not JSON is held back.

        A program that is no agent (``ls``) writes many: one line saying what went wrong, quoting
        the first, says it better (:meth:`summary` after a successful start).
        """
        engine = logging.getLogger("acpio.jsonrpc")
        engine.addFilter(self._let_through)
        try:
            yield
        finally:
            engine.removeFilter(self._let_through)

    def _let_through(self, record: logging.LogRecord) -> bool:
        held_back = isinstance(record.msg, str) and record.msg.startswith(_NON_JSON_WARNING)
        return not (held_back and self._watching)

    def summary(self) -> str | None:
        """One line about the lines that are not JSON (held back while watching), if there were any."""
        if not self.non_json_lines:
            return None
        lines = "a line" if self.non_json_lines == 1 else f"{self.non_json_lines} lines"
        return (
            f"The agent wrote {lines} that {'is' if self.non_json_lines == 1 else 'are'} not JSON on its "
            f"stdout before answering initialize (answered with -32700 Parse error), the first: "
            f"{self.first_non_json!r}. Over stdio an agent must write only JSON-RPC messages to its stdout, "
            "and its logs to stderr."
        )


#: The start of the engine's warning about a line that is not JSON (see acpio.jsonrpc.loop).
_NON_JSON_WARNING: Final = "The peer sent a line that is not JSON"
