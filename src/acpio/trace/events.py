"""Typed reading of conductor traces: newline-delimited JSON, one event per line.

A trace (written by ``acpio conductor --trace FILE``, format in ``docs/trace.md``) holds five kinds of
event: :class:`LanesEvent` (written first: a human name for each lane), the three message kinds,
:class:`RequestEvent`, :class:`ResponseEvent` and :class:`NotificationEvent`, and :class:`StderrEvent`
(a line a component wrote on its stderr). Reading is lenient, as the format asks: blank lines, lines
that are not JSON objects, events of an unknown ``type`` and events missing a required field are
skipped; unknown fields are ignored (and kept in each event's ``raw``). The lines of message logs
(``acpio prompt --json``, Tap recordings) are read as the events they stand for
(:mod:`acpio.trace.formats`).

>>> [event.method for event in iter_events(['{"type":"notification","ts":0.5,"from":"Agent",'
...     '"to":"Client","method":"session/update","params":{}}', "", "not json"])]
['session/update']

:func:`read_trace` loads a whole file; :class:`TraceFollower` reads a file that is still being written,
returning only the events added since its last call and noticing when the file starts over.
"""

from __future__ import annotations

import math
import os
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any, BinaryIO, ClassVar, TypeAlias

import orjson

__all__ = [
    "Lane",
    "LanesEvent",
    "MessageEvent",
    "NotificationEvent",
    "RequestEvent",
    "ResponseEvent",
    "StderrEvent",
    "TraceEvent",
    "TraceFollower",
    "iter_events",
    "parse_event",
    "parse_events",
    "parse_line",
    "read_trace",
]

#: How much of the last line read is kept (from its start, where ``type`` and ``ts`` are) to notice a
#: file rewritten from the start between two reads.
_SAMPLE_SIZE = 512


@dataclass(frozen=True, slots=True)
class Lane:
    """One column of the sequence diagram: a component of the chain."""

    lane: str
    """The lane's identifier, as used in ``from``/``to``: ``"Client"``, ``"Proxy(0)"``, ``"Agent"``..."""
    name: str
    """A human name: the component's command line, or the builder's name for an in-process component."""


@dataclass(frozen=True, slots=True, kw_only=True)
class LanesEvent:
    """Names the lanes, in order from the client to the agent; written first in a trace."""

    type: ClassVar[str] = "lanes"
    ts: float
    """Seconds since the trace started."""
    lanes: tuple[Lane, ...]
    """The lanes, client first."""
    raw: dict[str, Any] = field(default_factory=dict, compare=False, repr=False)
    """The event's JSON object as read, unknown fields included."""


@dataclass(frozen=True, slots=True, kw_only=True)
class RequestEvent:
    """A JSON-RPC request crossing one hop of the chain."""

    type: ClassVar[str] = "request"
    ts: float
    """Seconds since the trace started."""
    from_lane: str
    """The lane that sent it (the ``from`` field)."""
    to_lane: str
    """The lane that received it (the ``to`` field)."""
    id: Any
    """The JSON-RPC id on this hop: an integer, a string or ``None``."""
    method: str
    """The logical method (``proxy/successor`` and legacy ``_proxy/successor`` envelopes are unwrapped
    by the writer; a proxy's initialization shows as ``proxy/initialize``, or ``_proxy/initialize``
    in traces of older proxies and older writers)."""
    params: Any = None
    """The request's params, as JSON."""
    session: str | None = None
    """The ``sessionId`` the message belongs to, when known."""
    protocol: str = "acp"
    """``"acp"``, or ``"mcp"`` for MCP messages carried over ACP."""
    raw: dict[str, Any] = field(default_factory=dict, compare=False, repr=False)
    """The event's JSON object as read, unknown fields included."""


@dataclass(frozen=True, slots=True, kw_only=True)
class ResponseEvent:
    """The answer to a request, crossing the same hop the other way."""

    type: ClassVar[str] = "response"
    ts: float
    """Seconds since the trace started."""
    from_lane: str
    """The lane that answered (the request's ``to``)."""
    to_lane: str
    """The lane that receives the answer (the request's ``from``)."""
    id: Any
    """The id of the request it answers, on this hop."""
    is_error: bool = False
    """Whether the answer is an error."""
    payload: Any = None
    """The ``result``, or the error object ``{code, message, data?}`` when :attr:`is_error`."""
    method: str | None = None
    """The method of the request it answers (absent from traces written by the Rust SDK)."""
    session: str | None = None
    """The session of the request, or the ``sessionId`` a ``session/new`` created, when known."""
    raw: dict[str, Any] = field(default_factory=dict, compare=False, repr=False)
    """The event's JSON object as read, unknown fields included."""


@dataclass(frozen=True, slots=True, kw_only=True)
class NotificationEvent:
    """A JSON-RPC notification crossing one hop of the chain."""

    type: ClassVar[str] = "notification"
    ts: float
    """Seconds since the trace started."""
    from_lane: str
    """The lane that sent it."""
    to_lane: str
    """The lane that received it."""
    method: str
    """The logical method."""
    params: Any = None
    """The notification's params, as JSON."""
    session: str | None = None
    """The ``sessionId`` the message belongs to, when known."""
    protocol: str = "acp"
    """``"acp"``, or ``"mcp"`` for MCP messages carried over ACP."""
    raw: dict[str, Any] = field(default_factory=dict, compare=False, repr=False)
    """The event's JSON object as read, unknown fields included."""


@dataclass(frozen=True, slots=True, kw_only=True)
class StderrEvent:
    """A line a component wrote on its stderr (or, ``stream == "stdout"``, a non-JSON stdout line)."""

    type: ClassVar[str] = "stderr"
    ts: float
    """Seconds since the trace started."""
    from_lane: str
    """The component's lane."""
    to_lane: str
    """The same lane (a line goes nowhere: the field is there so every event has both)."""
    line: str
    """The line, without its newline."""
    stream: str = "stderr"
    """``"stderr"``, or ``"stdout"`` for a line of the protocol stream that was not JSON."""
    raw: dict[str, Any] = field(default_factory=dict, compare=False, repr=False)
    """The event's JSON object as read, unknown fields included."""


MessageEvent: TypeAlias = RequestEvent | ResponseEvent | NotificationEvent
"""An event that draws an arrow from one lane to another."""

TraceEvent: TypeAlias = LanesEvent | MessageEvent | StderrEvent
"""Any event a trace holds."""


def _timestamp(value: object) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    ts = float(value)
    return ts if math.isfinite(ts) else None


def _optional_str(value: object) -> str | None:
    return value if isinstance(value, str) else None


def _parse_lanes(obj: dict[str, Any], ts: float) -> LanesEvent | None:
    entries = obj.get("lanes")
    if not isinstance(entries, list):
        return None
    lanes = []
    for entry in entries:
        if isinstance(entry, dict) and isinstance(entry.get("lane"), str):
            name = entry.get("name")
            lanes.append(Lane(lane=entry["lane"], name=name if isinstance(name, str) else entry["lane"]))
    return LanesEvent(ts=ts, lanes=tuple(lanes), raw=obj)


def parse_event(obj: object) -> TraceEvent | None:
    """The event a decoded JSON value describes, or ``None`` when it is not a known, complete event.

    ``None`` is returned for anything that is not an object, an unknown ``type``, and an event missing one
    of its required fields (``ts``, ``from``, ``to``, and ``method`` for requests and notifications).
    Optional fields of the wrong JSON type are treated as absent.
    """
    if not isinstance(obj, dict):
        return None
    kind = obj.get("type")
    ts = _timestamp(obj.get("ts"))
    if ts is None:
        return None
    if kind == "lanes":
        return _parse_lanes(obj, ts)
    from_lane, to_lane = obj.get("from"), obj.get("to")
    if not isinstance(from_lane, str) or not isinstance(to_lane, str):
        return None
    session = _optional_str(obj.get("session"))
    if kind == "stderr":
        line = obj.get("line")
        if not isinstance(line, str):
            return None
        stream = _optional_str(obj.get("stream")) or "stderr"
        return StderrEvent(ts=ts, from_lane=from_lane, to_lane=to_lane, line=line, stream=stream, raw=obj)
    if kind == "response":
        is_error = obj.get("is_error")
        return ResponseEvent(
            ts=ts,
            from_lane=from_lane,
            to_lane=to_lane,
            id=obj.get("id"),
            is_error=is_error if isinstance(is_error, bool) else False,
            payload=obj.get("payload"),
            method=_optional_str(obj.get("method")),
            session=session,
            raw=obj,
        )
    method = obj.get("method")
    if not isinstance(method, str):
        return None
    protocol = _optional_str(obj.get("protocol")) or "acp"
    if kind == "request":
        return RequestEvent(
            ts=ts,
            from_lane=from_lane,
            to_lane=to_lane,
            id=obj.get("id"),
            method=method,
            params=obj.get("params"),
            session=session,
            protocol=protocol,
            raw=obj,
        )
    if kind == "notification":
        return NotificationEvent(
            ts=ts,
            from_lane=from_lane,
            to_lane=to_lane,
            method=method,
            params=obj.get("params"),
            session=session,
            protocol=protocol,
            raw=obj,
        )
    return None


def parse_events(obj: object) -> list[TraceEvent]:
    """The events a decoded line holds: the conductor event it is, or those of a message-log record.

    A message-log line (``acpio prompt --json``, a Tap recording; :mod:`acpio.trace.formats`) holds
    one event per message (a batch, several); anything else :func:`parse_event` reads, or nothing.
    """
    from acpio.trace.formats import convert_record

    converted = convert_record(obj)
    if converted is None:
        event = parse_event(obj)
        return [] if event is None else [event]
    return [event for record in converted if (event := parse_event(record)) is not None]


def parse_line(line: bytes | str) -> TraceEvent | None:
    """The (first) event on one line of a trace, or ``None`` for a blank, unparsable or unknown line."""
    if not line.strip():
        return None
    try:
        value = orjson.loads(line)
    except orjson.JSONDecodeError:
        return None
    events = parse_events(value)
    return events[0] if events else None


def iter_events(lines: Iterable[bytes | str]) -> Iterator[TraceEvent]:
    """The events on ``lines``, in order, skipping lines that hold none (message logs are read too)."""
    for line in lines:
        if not line.strip():
            continue
        try:
            value = orjson.loads(line)
        except orjson.JSONDecodeError:
            continue
        yield from parse_events(value)


def read_trace(path: str | os.PathLike[str]) -> list[TraceEvent]:
    """All the events of the trace file at ``path``, in order.

    A last line without its newline is read too. Raises :class:`OSError` when the file cannot be read.
    """
    with open(path, "rb") as file:
        return list(iter_events(file))


class TraceFollower:
    """Reads a trace file that may still be growing: each :meth:`read_new` returns the events added since.

    Only complete lines are read; a line still being written is kept until its newline arrives (or until
    it is a complete JSON object, so a last line without a newline is not lost). When the file starts over
    (it was truncated or replaced, as a conductor does when it starts), :attr:`generation` goes up by one
    and the next :meth:`read_new` returns the events of the new file from its beginning. A restart is
    noticed from the file's identity and size, and from the start of the last line read (its ``ts``),
    which a new run writing past the old size between two reads does not reproduce.
    """

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self._path = os.fspath(path)
        self._offset = 0
        self._pending = b""
        # Where the last complete line read starts, and its first bytes.
        self._sample_at = 0
        self._sample = b""
        self._identity: tuple[int, int] | None = None
        self._generation = 0

    @property
    def path(self) -> str:
        """The file being followed."""
        return self._path

    @property
    def generation(self) -> int:
        """How many times the file has started over since following began (0 at first)."""
        return self._generation

    def read_new(self) -> list[TraceEvent]:
        """The events added to the file since the last call (all of them on the first call).

        Raises :class:`OSError` when the file cannot be read (for example, it was deleted); following
        carries on when it can be read again.
        """
        with open(self._path, "rb") as file:
            stat = os.fstat(file.fileno())
            identity = (stat.st_dev, stat.st_ino)
            if self._identity is not None and (
                identity != self._identity or stat.st_size < self._offset or not self._sample_unchanged(file)
            ):
                self._restart()
            self._identity = identity
            file.seek(self._offset)
            data = file.read()
        if not data:
            return []
        base = self._offset - len(self._pending)
        self._offset += len(data)
        buffer = self._pending + data
        *complete, self._pending = buffer.split(b"\n")
        if complete:
            end = len(buffer) - len(self._pending) - 1  # the last complete line's newline
            start = buffer.rfind(b"\n", 0, end) + 1
            self._sample_at = base + start
            self._sample = buffer[start : min(end + 1, start + _SAMPLE_SIZE)]
        events = list(iter_events(complete))
        if self._pending.strip():
            try:
                last = orjson.loads(self._pending)
            except orjson.JSONDecodeError:
                return events  # a line still being written: wait for the rest
            self._pending = b""
            events.extend(parse_events(last))
        return events

    def _sample_unchanged(self, file: BinaryIO) -> bool:
        if not self._sample:
            return True
        file.seek(self._sample_at)
        return file.read(len(self._sample)) == self._sample

    def _restart(self) -> None:
        self._offset = 0
        self._pending = b""
        self._sample_at = 0
        self._sample = b""
        self._generation += 1
