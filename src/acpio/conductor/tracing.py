"""The conductor's trace: every ACP message between the client, each proxy and the agent, as NDJSON.

A trace is newline-delimited JSON, one event per line. It follows the Rust SDK's conductor trace
format (``request``, ``response`` and ``notification`` events), with these differences: the final
agent is the lane ``"Agent"`` and the traffic to it is recorded; ``session`` is filled in whenever
the message carries a ``sessionId`` (a response gets its request's session, or the ``sessionId`` of
its result); responses carry their request's ``method``; and a ``lanes`` event, written first, maps
each lane to a human name::

    {"type":"lanes","ts":0.0,"lanes":[{"lane":"Client","name":"client"},{"lane":"Agent","name":"..."}]}
    {"type":"request","ts":0.01,"protocol":"acp","from":"Client","to":"Agent","id":1,"method":"...",
     "params":{...},"session":"s1"}
    {"type":"response","ts":0.02,"from":"Agent","to":"Client","id":1,"method":"...","is_error":false,
     "payload":{...},"session":"s1"}
    {"type":"notification","ts":0.015,"protocol":"acp","from":"Agent","to":"Client","method":"...",
     "params":{...},"session":"s1"}
    {"type":"stderr","ts":0.016,"from":"Agent","to":"Agent","line":"DEBUG prompt received"}

A ``stderr`` event (an acpio addition) is a line a component the conductor started from a command
wrote to its stderr: ``from`` and ``to`` are that component's lane.

* ``ts``: seconds since the trace started (monotonic clock).
* ``from``/``to``: ``"Client"``, ``"Proxy(0)"``, ``"Proxy(1)"``... and ``"Agent"`` (agent mode) or
  ``"Successor"`` (proxy mode: the conductor's own successor).
* ``method``/``params``: the logical message, ``proxy/successor`` envelopes (and legacy
  ``_proxy/successor`` ones) unwrapped; ``proxy/initialize`` is recorded as such (it is what the
  proxy received), and so is ``_proxy/initialize`` when an older proxy was initialized with it.
* ``id``: the JSON-RPC id on the hop, as the receiving side sees it; a response has its request's id.
* ``payload``: the result, or the error object ``{code, message, data?}`` when ``is_error``.

Events go to a *sink*: :class:`FileSink` (the file is truncated when the conductor starts, each
line is written within 50 ms; :func:`encode_event` says how messages
nested deeper than orjson writes are written; the params of a notification the conductor passed on
as bytes are written as those bytes), :class:`MemorySink` (a list, for tests) or
:class:`CallbackSink` (a function called with each event). Tracing never breaks the conductor:
the first write error is reported once on stderr and tracing stops.
"""

from __future__ import annotations

import asyncio
import os
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, BinaryIO, Protocol, runtime_checkable

import orjson

from acpio.jsonrpc.messages import NestedTooDeeply, RequestId, encode_value
from acpio.transports.base import OversizedFrame
from acpio.transports.tap import Direction, TapObserver

__all__ = ["CallbackSink", "ChainTrace", "FileSink", "MemorySink", "TraceSink", "TraceWriter", "encode_event"]

#: The ``protocol`` of every event this writer records (MCP-over-ACP would be ``"mcp"``).
_ACP = "acp"
#: How a request or notification starts as acpio and most peers write them: no response, not decoded.
_CALL_HEAD = b'{"jsonrpc":"2.0","method":'
#: How a notification event's line starts, up to its ``ts``.
_NOTIFICATION_TS = b'{"type":"notification","ts":'
#: The fields of an event that hold a message's JSON (the rest are the writer's own).
_MESSAGE_FIELDS = ("params", "payload")


def encode_event(event: Mapping[str, object]) -> bytes:
    """One trace line (without its newline) for ``event``, whatever the nesting of its message.

    Written as the engine writes frames (:func:`acpio.jsonrpc.messages.encode_value`: orjson, and
    the standard library's encoder past orjson's 254 levels). What even that cannot write (about
    900 levels and more) is left out: the event is written with that field ``null`` and an
    ``omitted`` field saying why, so that the trace stays readable and goes on.
    """
    try:
        return encode_value(event)
    except NestedTooDeeply:
        reason = "nested too deeply to write"
    except TypeError as exc:
        reason = f"not writable ({exc})"
    kept = {key: value for key, value in event.items() if key not in _MESSAGE_FIELDS}
    omitted = [key for key in _MESSAGE_FIELDS if key in event]
    kept.update(dict.fromkeys(omitted))
    kept["omitted"] = f"{' and '.join(omitted) or 'the event'} {reason}; written as null"
    return orjson.dumps(kept)


@runtime_checkable
class TraceSink(Protocol):
    """Where trace events go: ``write`` takes one event (a JSON object), ``close`` ends the trace."""

    def write(self, event: Mapping[str, object]) -> None:
        """Record one event; raising stops tracing (the error is reported once)."""
        ...

    def close(self) -> None:
        """The trace is over: release what the sink holds."""
        ...


class FileSink:
    """Writes events to a file as NDJSON, one line per event, at most :attr:`FLUSH_DELAY` late.

    Inside an event loop the lines are written and flushed together :attr:`FLUSH_DELAY` seconds
    after the first of them (without a running loop, each line is written as it comes), and when
    the sink closes: a reader following the file sees each message a moment after it went through,
    and a busy conductor does not pay a system call per message. The file is created, or truncated,
    when the sink is made (when the conductor starts). Raises ``OSError`` if it cannot be opened.
    """

    #: Seconds a line may wait before it is written (a conductor killed outright loses at most these).
    FLUSH_DELAY: float = 0.05

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)
        self._file: BinaryIO | None = self.path.open("wb")
        #: Lines not written yet (the current turn of the event loop's).
        self._lines: list[bytes] = []
        self._failure: OSError | None = None

    def __repr__(self) -> str:
        return f"FileSink({str(self.path)!r})"

    def write(self, event: Mapping[str, object]) -> None:
        """Append one line (written and flushed as the class says)."""
        self.write_line(encode_event(event))

    def write_line(self, line: bytes) -> None:
        """Append ``line``, one event's JSON text written already (without its newline).

        Raises ``ValueError`` once the sink is closed, and the ``OSError`` of a failed write.
        """
        if self._file is None:
            raise ValueError(f"The trace file {str(self.path)!r} is closed")
        if self._failure is not None:
            raise self._failure
        lines = self._lines
        lines.append(line)
        if len(lines) == 1:
            try:
                loop = asyncio.get_running_loop()
            except RuntimeError:
                self._write_lines()
                return
            loop.call_later(self.FLUSH_DELAY, self._flush)

    def _write_lines(self) -> None:
        assert self._file is not None
        lines, self._lines = self._lines, []
        self._file.write(b"\n".join(lines))
        self._file.write(b"\n")
        self._file.flush()

    def _flush(self) -> None:
        if self._file is not None and self._lines and self._failure is None:
            try:
                self._write_lines()
            except OSError as exc:  # raised by the next write, which stops the trace
                self._failure = exc

    def close(self) -> None:
        """Write what is left and close the file (calling it again does nothing)."""
        if self._file is not None:
            try:
                if self._lines and self._failure is None:
                    self._write_lines()
            finally:
                self._file.close()
                self._file = None


class MemorySink:
    """Keeps events in :attr:`events`, in order: for tests and for a live view in the same process."""

    def __init__(self) -> None:
        #: The events recorded so far.
        self.events: list[dict[str, Any]] = []

    def __repr__(self) -> str:
        return f"MemorySink({len(self.events)} events)"

    def write(self, event: Mapping[str, object]) -> None:
        """Append a copy of ``event``."""
        self.events.append(dict(event))

    def close(self) -> None:
        """Nothing to release: the events stay readable."""


class CallbackSink:
    """Calls ``callback(event)`` for each event (``event`` is a fresh dict the callback may keep)."""

    def __init__(self, callback: Callable[[dict[str, object]], object]) -> None:
        self.callback = callback

    def __repr__(self) -> str:
        return f"CallbackSink({self.callback!r})"

    def write(self, event: Mapping[str, object]) -> None:
        """Pass the event on."""
        self.callback(dict(event))

    def close(self) -> None:
        """Nothing to release."""


class TraceWriter:
    """Stamps events with ``ts`` and hands them to a sink; stops for good at the first sink error.

    The clock starts when the writer is made. A failing sink is reported once on stderr, then
    every later event is dropped: the conductor never fails because of its trace.
    """

    def __init__(self, sink: TraceSink) -> None:
        self.sink = sink
        #: The sink when it is a :class:`FileSink`: it takes events written already as JSON text
        #: (:meth:`FileSink.write_line`), from JSON the conductor has.
        self.file_sink = sink if type(sink) is FileSink else None
        self._start = time.monotonic()
        self._active = True

    def __repr__(self) -> str:
        return f"TraceWriter({self.sink!r}{'' if self._active else ', stopped'})"

    @property
    def active(self) -> bool:
        """Whether events are still written (false after a sink error or :meth:`close`)."""
        return self._active

    def now(self) -> float:
        """Seconds since the trace started."""
        return round((time.monotonic() - self._start) * 1e6) / 1e6  # round(x, 6), in a tenth of the time

    def write(self, event: dict[str, object]) -> None:
        """Give ``event`` (whose ``ts`` the caller set with :meth:`now`) to the sink."""
        if not self._active:
            return
        try:
            self.sink.write(event)
        except Exception as exc:
            self._stop(exc)

    def _stop(self, exc: Exception) -> None:
        self._active = False
        print(
            f"acpio conductor: tracing stopped, the trace sink {self.sink!r} failed: {exc}", file=sys.stderr
        )

    def close(self) -> None:
        """Stop writing and close the sink (a failure to close is reported like a write error)."""
        was_active, self._active = self._active, False
        try:
            self.sink.close()
        except Exception as exc:
            if was_active:
                print(f"acpio conductor: closing the trace sink {self.sink!r} failed: {exc}", file=sys.stderr)


def _session_of(params: Any) -> str | None:
    if type(params) is dict:
        session = params.get("sessionId")
        if type(session) is str:
            return session
    return None


class ChainTrace:
    """The trace of one conductor run: records what it forwards, and pairs responses with requests.

    The conductor calls :meth:`request` and :meth:`notification` as it delivers each logical message
    (with the lanes it goes between), and shows it the frames each link brings in
    (:meth:`responses_on`, or :meth:`watch` for a :class:`~acpio.transports.Tap`): they go to
    :meth:`frame_received`, which picks out the responses to recorded requests. A *link* is
    any hashable key naming one physical connection; request ids are unique per link.
    """

    def __init__(self, writer: TraceWriter) -> None:
        self.writer = writer
        #: Requests recorded and not yet answered, per link: id -> (from, to, method, session).
        self._pending: dict[object, dict[Any, tuple[str, str, str, str | None]]] = {}
        #: The JSON between ``ts`` and the params of a notification line, per (from, to, method).
        self._heads: dict[tuple[str, str, str], bytes] = {}
        #: What follows the params in a notification line, per session.
        self._ends: dict[str | None, bytes] = {}

    @property
    def active(self) -> bool:
        """Whether events are still recorded."""
        return self.writer.active

    def lanes(self, lanes: Sequence[tuple[str, str]]) -> None:
        """Write the ``lanes`` event: each lane (``"Proxy(0)"``) with its human name."""
        self.writer.write(
            {
                "type": "lanes",
                "ts": self.writer.now(),
                "lanes": [{"lane": lane, "name": name} for lane, name in lanes],
            }
        )

    def request(
        self, link: object, request_id: RequestId, source: str, target: str, method: str, params: object
    ) -> None:
        """Record a request delivered to ``target`` with ``request_id`` on ``link``."""
        if not self.writer.active:
            return
        session = _session_of(params)
        event: dict[str, Any] = {
            "type": "request",
            "ts": self.writer.now(),
            "protocol": _ACP,
            "from": source,
            "to": target,
            "id": request_id,
            "method": method,
            "params": params,
        }
        if session is not None:
            event["session"] = session
        self._pending.setdefault(link, {})[request_id] = (source, target, method, session)
        self.writer.write(event)

    def notification(
        self, source: str, target: str, method: str, params: object, params_json: bytes | None = None
    ) -> None:
        """Record a notification delivered to ``target``.

        ``params_json``, the params' JSON text when the conductor has it (it passed the message on
        as bytes), is written as it is by a :class:`FileSink` instead of encoding ``params`` again.
        """
        writer = self.writer
        if not writer._active:
            return
        session = params.get("sessionId") if type(params) is dict else None  # _session_of, inline
        if type(session) is not str:
            session = None
        file_sink = writer.file_sink
        if params_json is not None and file_sink is not None:
            # The line encode_event would write for this event, from its parts' JSON; this runs
            # twice per message through one proxy, so the pieces are kept and the calls inline.
            key = (source, target, method)
            middle = self._heads.get(key) or self._middle(key)
            end = self._ends.get(session) or self._end(session)
            ts = round((time.monotonic() - writer._start) * 1e6) / 1e6  # writer.now()
            line = b"".join((_NOTIFICATION_TS, orjson.dumps(ts), middle, params_json, end))
            try:
                file_sink.write_line(line)
            except Exception as exc:
                writer._stop(exc)
            return
        event: dict[str, Any] = {
            "type": "notification",
            "ts": writer.now(),
            "protocol": _ACP,
            "from": source,
            "to": target,
            "method": method,
            "params": params,
        }
        if session is not None:
            event["session"] = session
        writer.write(event)

    def _end(self, session: str | None) -> bytes:
        """How a notification line with ``session`` ends after its params, kept per session."""
        end = b"}" if session is None else b',"session":' + orjson.dumps(session) + b"}"
        if len(self._ends) < 1024:
            self._ends[session] = end
        return end

    def _middle(self, key: tuple[str, str, str]) -> bytes:
        """``,"protocol":...,"params":`` of a notification line, kept per (from, to, method)."""
        source, target, method = key
        middle = orjson.dumps({"protocol": _ACP, "from": source, "to": target, "method": method})
        middle = b"," + middle[1:-1] + b',"params":'
        if len(self._heads) < 1024:
            self._heads[key] = middle
        return middle

    def stderr(self, lane: str, line: str) -> None:
        """Record a line the component on ``lane`` wrote to its stderr."""
        if not self.writer.active:
            return
        self.writer.write({"type": "stderr", "ts": self.writer.now(), "from": lane, "to": lane, "line": line})

    def watch(self, link: object) -> TapObserver:
        """The observer of the :class:`~acpio.transports.Tap` on ``link``: it finds the responses there."""
        incoming = Direction.INCOMING

        def observe(direction: Direction, frame: bytes | OversizedFrame) -> None:
            if (
                direction is incoming
                and type(frame) is bytes
                and not frame.startswith(_CALL_HEAD)
                and self.expects_responses(link)
            ):
                self.frame_received(link, frame)

        return observe

    def responses_on(self, link: object) -> Callable[[bytes], None]:
        """What to call with each frame that arrives on ``link``: it finds the responses there.

        As :meth:`watch`, for a caller that sees only incoming frames (the conductor's relay).
        """

        def received(frame: bytes) -> None:
            if not frame.startswith(_CALL_HEAD) and self.expects_responses(link):
                self.frame_received(link, frame)

        return received

    def expects_responses(self, link: object) -> bool:
        """Whether a request recorded on ``link`` still waits (a cheap check before decoding frames)."""
        return bool(self._pending.get(link)) and self.writer.active

    def frame_received(self, link: object, frame: bytes) -> None:
        """Look in a frame that arrived on ``link`` for responses to recorded requests; record them."""
        try:
            value = orjson.loads(frame)
        except orjson.JSONDecodeError:
            return
        if type(value) is list:
            for entry in value:
                self._maybe_response(link, entry)
        else:
            self._maybe_response(link, value)

    def _maybe_response(self, link: object, message: Any) -> None:
        if type(message) is not dict or "method" in message or "id" not in message:
            return
        is_error = "error" in message
        if not is_error and "result" not in message:
            return
        pending = self._pending.get(link)
        request_id = message["id"]
        found = pending.pop(request_id, None) if pending and type(request_id) in (int, str) else None
        if found is None:
            return
        source, target, method, session = found
        payload = message["error"] if is_error else message["result"]
        if session is None and not is_error:
            session = _session_of(payload)
        event: dict[str, Any] = {
            "type": "response",
            "ts": self.writer.now(),
            "from": target,
            "to": source,
            "id": request_id,
            "method": method,
            "is_error": is_error,
            "payload": payload,
        }
        if session is not None:
            event["session"] = session
        self.writer.write(event)
