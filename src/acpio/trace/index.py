"""An index of a trace file's events by number, for reading windows of them out of a file of any size.

The viewer serves a trace in windows (``/events?start=N&limit=L``) and never holds the whole file.
:class:`TraceIndex` reads the file once, in chunks, and keeps only the byte offset of every
:data:`CHECKPOINT_EVERY`-th event, how many events there are so far, and the ``lanes`` event; a window
is then read from the checkpoint before it. The file may still be growing (each :meth:`TraceIndex.refresh`
reads what was added) or start over (a conductor truncates it when it starts: the index is rebuilt and
its :attr:`~TraceIndex.epoch` goes up).

An event is a line that :func:`acpio.trace.parse_event` accepts (blank lines, lines that are not JSON and
unknown events are skipped, and not counted). A line of a message log (``acpio prompt --json``, a Tap
recording) is served as the events it stands for (:mod:`acpio.trace.formats`; a batch, several).

Two kinds of line are served as a placeholder rather than as
written, the fields the viewer needs (``type``, ``ts``, ``from``, ``to``, ``id``, ``method``, ``session``)
taken from the start of the line, with an ``omitted`` field saying why:

* a line longer than :data:`MAX_EVENT_BYTES` (it is never held whole, here or in the page);
* a line nested deeper than orjson reads (1024 levels).

Lines are served as the text they are in the file, never re-encoded: a message nested deeper than orjson
writes (254 levels) is served as it is.
"""

from __future__ import annotations

import math
import os
import re
import threading
import time
from array import array
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, BinaryIO

import orjson

from acpio.jsonrpc.messages import encode_value
from acpio.trace.formats import convert_record

__all__ = ["CHECKPOINT_EVERY", "MAX_EVENT_BYTES", "TraceIndex", "Window", "event_type"]

#: One event in this many has its byte offset kept: a window starts reading at most this many events early.
CHECKPOINT_EVERY = 256
#: A line longer than this is served as a placeholder (and never read whole).
MAX_EVENT_BYTES = 8 << 20
#: How much of an over-long line is kept to make its placeholder from.
_HEAD_BYTES = 4096
#: The file is read this much at a time.
_CHUNK = 1 << 20
#: How much of the last line read is kept (from its start) to notice a file rewritten from the start.
_SAMPLE_SIZE = 512

_KINDS = frozenset({"lanes", "request", "response", "notification", "stderr"})


def event_type(value: object) -> str | None:
    """The ``type`` of the event a decoded line is, or ``None`` when readers skip it.

    The same rules as :func:`acpio.trace.parse_event` (which builds the event; this only says whether
    there is one, quickly): an object with a known ``type``, a finite number ``ts``, string ``from`` and
    ``to`` (a list ``lanes`` for a ``lanes`` event), and a string ``method`` except for responses.
    """
    if type(value) is not dict:
        return None
    kind = value.get("type")
    if type(kind) is not str or kind not in _KINDS:
        return None
    ts = value.get("ts")
    if isinstance(ts, bool) or not isinstance(ts, (int, float)) or not math.isfinite(ts):
        return None
    if kind == "lanes":
        return kind if isinstance(value.get("lanes"), list) else None
    if not isinstance(value.get("from"), str) or not isinstance(value.get("to"), str):
        return None
    if kind == "stderr":
        return kind if isinstance(value.get("line"), str) else None
    if kind != "response" and not isinstance(value.get("method"), str):
        return None
    return kind


# --- placeholders ---------------------------------------------------------------------------------

_STRING_FIELD = re.compile(
    rb'"(type|from|to|method|session|protocol)"\s*:\s*("[^"\\]*(?:\\.[^"\\]*)*")', re.DOTALL
)
_NUMBER_FIELD = re.compile(rb'"(ts)"\s*:\s*(-?\d+(?:\.\d+)?(?:[eE][+-]?\d+)?)')
_ID_FIELD = re.compile(rb'"(id)"\s*:\s*(-?\d+|null|"[^"\\]*(?:\\.[^"\\]*)*")', re.DOTALL)
_FLAG_FIELD = re.compile(rb'"(is_error)"\s*:\s*(true|false)')


def placeholder(head: bytes, reason: str) -> bytes | None:
    """An event standing for a line that cannot be served as written, from the start of that line.

    Its fields are the first of each found in ``head`` (a trace writer puts them before the message),
    ``params``/``payload`` are ``null`` and ``omitted`` says why. ``None`` when ``head`` does not
    start like an event.
    """
    if not head.lstrip().startswith(b"{"):
        return None
    fields: dict[str, Any] = {}
    for pattern in (_STRING_FIELD, _NUMBER_FIELD, _ID_FIELD, _FLAG_FIELD):
        for match in pattern.finditer(head):
            name = match.group(1).decode()
            if name not in fields:
                try:
                    fields[name] = orjson.loads(match.group(2))
                except orjson.JSONDecodeError:
                    continue
    kind = event_type(fields)
    if kind is None:
        return None
    fields["payload" if kind == "response" else "params"] = None
    fields["omitted"] = reason
    return orjson.dumps(fields)


def _size(size: int) -> str:
    if size >= 1 << 30:
        return f"{size / (1 << 30):.1f} GB"
    return f"{size / (1 << 20):.1f} MB"


#: One line of the file: where it starts, its text (or, when over-long, the start of it), its size, and
#: whether its newline was read.
_Line = tuple[int, bytes, int, bool]


def _grow(text: bytes, size: int, piece: bytes) -> tuple[bytes, int]:
    """A line so far (``text``, ``size`` bytes) followed by ``piece``: kept whole while it fits."""
    grown = size + len(piece)
    if grown <= MAX_EVENT_BYTES:
        return text + piece, grown
    if size > MAX_EVENT_BYTES:
        return text, grown  # already only its start
    return (text[:_HEAD_BYTES] + piece[:_HEAD_BYTES])[:_HEAD_BYTES], grown


def _lines(file: BinaryIO, start: int, stop: int) -> Iterator[_Line]:
    """The lines of ``file`` between the offsets ``start`` (a line start) and ``stop``.

    Reads :data:`_CHUNK` bytes at a time; a line longer than :data:`MAX_EVENT_BYTES` is yielded as its
    first :data:`_HEAD_BYTES` bytes. The last line is yielded even without its newline.
    """
    file.seek(start)
    at = line_start = start
    text, size = b"", 0  # the line being read
    while at < stop:
        chunk = file.read(min(_CHUNK, stop - at))
        if not chunk:
            break
        at += len(chunk)
        if b"\n" not in chunk:
            text, size = _grow(text, size, chunk)
            continue
        pieces = chunk.split(b"\n")
        text, size = _grow(text, size, pieces[0])
        yield line_start, text, size, True
        line_start += size + 1
        for piece in pieces[1:-1]:
            size = len(piece)
            yield line_start, (piece if size <= MAX_EVENT_BYTES else piece[:_HEAD_BYTES]), size, True
            line_start += size + 1
        text = pieces[-1]
        size = len(text)
    if size:
        yield line_start, text, size, False


def _blank(text: bytes) -> bool:
    return not text or text.isspace()


def _served(text: bytes, size: int) -> tuple[str | None, list[bytes]]:
    """The event type of a line (``None``: not an event) and the text of each event to serve for it."""
    if len(text) != size:
        reason = (
            f"this event's line is {_size(size)}, more than the viewer shows "
            f"({_size(MAX_EVENT_BYTES)}): read it with acpio.trace.read_trace"
        )
        served = placeholder(text, reason)
        return (None, []) if served is None else ("placeholder", [served])
    try:
        value = orjson.loads(text)
    except orjson.JSONDecodeError as exc:
        if "depth" not in str(exc):
            return None, []
        reason = "this event is nested deeper than the viewer reads (1024 levels): read it with a JSON tool"
        served = placeholder(text[:_HEAD_BYTES], reason)
        return (None, []) if served is None else ("placeholder", [served])
    kind = event_type(value)
    if kind is not None:
        return kind, [text]
    converted = convert_record(value)
    if not converted:
        return None, []
    events = [_encoded(event) for event in converted if event_type(event) is not None]
    return ("record" if events else None), events


def _encoded(event: dict[str, Any]) -> bytes:
    """A converted event's text: as the engine writes frames (past orjson's 254 levels, json's encoder)."""
    try:
        return encode_value(event)
    except TypeError:  # NestedTooDeeply: too deep for any encoder
        kept = {key: value for key, value in event.items() if key not in ("params", "payload")}
        kept["params" if "params" in event else "payload"] = None
        kept["omitted"] = "this message is nested too deeply to show: read the log with a JSON tool"
        return orjson.dumps(kept)


@dataclass(frozen=True, slots=True)
class Window:
    """Events ``start`` to ``next`` (excluded) of a trace, each as its JSON text, and the index's state."""

    epoch: int
    start: int
    next: int
    events: list[bytes]
    total: int
    size: int
    scanned: int
    caught_up: bool
    lanes: bytes | None


class TraceIndex:
    """Finds a trace file's events by number without holding the file; safe to share between threads.

    :meth:`refresh` reads what was added to the file since (or, if it started over, the new file from its
    start); :meth:`window` reads events by number, up to what was indexed. Raises ``OSError`` when the file
    cannot be read (following carries on when it can be read again).
    """

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = os.fspath(path)
        self._lock = threading.Lock()
        self._reset()
        self._epoch = 0
        self._size = 0
        self._caught_up = False

    def _reset(self) -> None:
        self._scanned = 0  # bytes indexed: the events before this offset are counted
        self._count = 0
        #: Where the line holding event ``k * CHECKPOINT_EVERY`` starts, and that line's first event number.
        self._checkpoints = array("q")
        self._checkpoint_numbers = array("q")
        self._lanes: bytes | None = None
        self._identity: tuple[int, int] | None = None
        self._sample_at = 0
        self._sample = b""

    @property
    def epoch(self) -> int:
        """How many times the file has started over."""
        return self._epoch

    @property
    def total(self) -> int:
        """How many events were found so far."""
        return self._count

    @property
    def size(self) -> int:
        """The file's size when it was last looked at, in bytes."""
        return self._size

    @property
    def scanned(self) -> int:
        """How many of the file's bytes are indexed."""
        return self._scanned

    @property
    def caught_up(self) -> bool:
        """Whether the last :meth:`refresh` indexed all there was (but a last line still being written)."""
        return self._caught_up

    def refresh(self, budget: float = 0.1) -> bool:
        """Index what the file gained, for up to about ``budget`` seconds.

        Returns whether it is all indexed (but a last line still being written).
        """
        deadline = time.monotonic() + budget
        while True:
            with self._lock:
                done = self._caught_up = self._step()
            if done or time.monotonic() >= deadline:
                return done

    def _step(self) -> bool:
        """Index up to one chunk of new lines; whether nothing is left to read for now."""
        with open(self.path, "rb") as file:
            stat = os.fstat(file.fileno())
            identity = (stat.st_dev, stat.st_ino)
            if self._identity is not None and (
                identity != self._identity or stat.st_size < self._scanned or not self._sample_unchanged(file)
            ):
                self._reset()
                self._epoch += 1
            self._identity = identity
            self._size = stat.st_size
            if self._scanned >= stat.st_size:
                return True
            stop = min(stat.st_size, self._scanned + _CHUNK)
            for offset, text, size, ended in _lines(file, self._scanned, stat.st_size):
                if not ended:
                    # A line still being written: taken only once it is complete JSON (a last line
                    # without its newline); its newline, when it comes, is then a blank line.
                    if len(text) != size:
                        return True
                    try:
                        orjson.loads(text)
                    except orjson.JSONDecodeError:
                        return True
                if not _blank(text):
                    self._index(offset, text, size)
                self._scanned = offset + size + ended
                if self._scanned >= stop:
                    break
        return self._scanned >= self._size

    def _index(self, offset: int, text: bytes, size: int) -> None:
        kind, served = _served(text, size)
        if kind is not None and served:
            first = self._count
            self._count += len(served)
            while len(self._checkpoints) * CHECKPOINT_EVERY < self._count:
                self._checkpoints.append(offset)
                self._checkpoint_numbers.append(first)
            if kind == "lanes":
                self._lanes = served[0]
        self._sample_at = offset
        self._sample = text[:_SAMPLE_SIZE]

    def _sample_unchanged(self, file: BinaryIO) -> bool:
        if not self._sample:
            return True
        file.seek(self._sample_at)
        return file.read(len(self._sample)) == self._sample

    def window(self, start: int, limit: int, max_bytes: int) -> Window:
        """Events ``start`` on (at most ``limit`` of them, and about ``max_bytes``), as indexed so far.

        At least one event is returned when there is one, whatever its size. ``start`` past the events
        indexed gives none.
        """
        with self._lock:
            epoch, total, scanned, lanes = self._epoch, self._count, self._scanned, self._lanes
            file_size, caught_up = self._size, self._caught_up
            first = min(start, total)
            checkpoint = first // CHECKPOINT_EVERY
            if checkpoint < len(self._checkpoints):
                offset, number = self._checkpoints[checkpoint], self._checkpoint_numbers[checkpoint]
            else:
                offset, number = scanned, total
        events: list[bytes] = []
        if limit > 0 and first < total:
            size = 0
            with open(self.path, "rb") as file:
                for _, text, line_size, _ in _lines(file, offset, scanned):
                    if _blank(text):
                        continue
                    kind, served = _served(text, line_size)
                    if kind is None:
                        continue
                    full = False
                    for one in served:
                        if number >= first:
                            if events and size + len(one) > max_bytes:
                                full = True
                                break
                            events.append(one)
                            size += len(one)
                            if len(events) >= limit:
                                full = True
                                break
                        number += 1
                        if number >= total:
                            full = True
                            break
                    if full:
                        break
        return Window(epoch, first, first + len(events), events, total, file_size, scanned, caught_up, lanes)
