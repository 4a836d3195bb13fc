"""Cassettes: a recorded ACP conversation, redacted, that tests replay.

A cassette is a trace (:mod:`acpio.trace.formats`' message log, seen from the client) with a first
line that names it::

    {"type": "cassette", "version": 1, "placeholders": ["<cwd>", "<home>"]}
    {"direction": "outgoing", "ts": 0.0012, "message": {"jsonrpc": "2.0", "id": 1, "method": ...}}
    {"direction": "incoming", "ts": 0.0310, "message": {"jsonrpc": "2.0", "id": 1, "result": {...}}}

``outgoing`` went from the client to the agent, ``incoming`` the other way. Secrets and local paths
are replaced as the :class:`~acpio.trace.redact.Redaction` says before anything is written, and
the trace tools read the file as they read any trace (``acpio trace show cassette.jsonl``).

:class:`CassetteRecorder` writes one (the observer of a :class:`~acpio.transports.Tap`);
:class:`Recording` is any component with a recorder on its transport; ``acpio prompt --record
FILE`` records its run. :meth:`Cassette.load` reads a cassette, and also any other trace acpio
writes (``acpio prompt --json``'s log, a conductor's ``--trace``: the messages on the client's
hop), which :meth:`Cassette.save` can then write redacted. Replaying one is
:mod:`acpio.testing`'s part: as an agent (:class:`acpio.testing.ReplayAgent`, ``acpio replay``)
or as a client (:func:`acpio.testing.client_replay`).
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final, Literal, TypeAlias

import orjson

from acpio.trace.events import NotificationEvent, RequestEvent, ResponseEvent, parse_event
from acpio.trace.line_recorder import LineRecorder
from acpio.trace.redact import Redaction
from acpio.transports.base import Component, OversizedFrame, Transport
from acpio.transports.tap import Direction, Tap

__all__ = [
    "CASSETTE_VERSION",
    "Cassette",
    "CassetteRecorder",
    "Entry",
    "Recording",
    "Sender",
    "frame_messages",
]

#: The version of the cassette format this acpio writes.
CASSETTE_VERSION: Final = 1

#: Who sent a message: the client (``outgoing`` in the file) or the agent (``incoming``).
Sender: TypeAlias = Literal["client", "agent"]

_DIRECTIONS: Final[dict[str, Sender]] = {
    "outgoing": "client",
    "send": "client",
    "incoming": "agent",
    "recv": "agent",
}


@dataclass(frozen=True)
class Entry:
    """One message of a cassette: who sent it, the JSON-RPC message, and when (seconds, if known)."""

    sender: Sender
    message: dict[str, Any]
    ts: float | None = None

    @property
    def method(self) -> str | None:
        """The method of a request or notification; ``None`` for a response."""
        method = self.message.get("method")
        return method if isinstance(method, str) else None

    @property
    def is_request(self) -> bool:
        """Whether the message is a request (it has a method and an id)."""
        return self.method is not None and "id" in self.message

    @property
    def is_response(self) -> bool:
        """Whether the message answers a request."""
        return self.method is None and "id" in self.message


@dataclass(frozen=True)
class Cassette:
    """A recorded conversation: its :class:`Entry` list, in the order the client saw the messages.

    ``placeholders`` are the path placeholders its messages use (``<cwd>``, ``<home>``), which a
    replay replaces by its own directories.
    """

    entries: tuple[Entry, ...]
    placeholders: tuple[str, ...] = ()
    path: Path | None = field(default=None, compare=False)

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> Cassette:
        """Read a cassette, or any trace acpio writes (see the module docstring).

        Raises ``OSError`` when the file cannot be read and ``ValueError`` when it holds no message
        between a client and an agent, or a cassette of a later format.
        """
        with open(path, "rb") as file:
            entries, placeholders = _read(file)
        if not entries:
            raise ValueError(
                f"{path}: no ACP message between a client and an agent; record one with "
                "`acpio prompt --record FILE`, CassetteRecorder, or `acpio conductor --trace FILE`"
            )
        return cls(tuple(entries), placeholders, Path(path))

    def save(self, path: str | os.PathLike[str], redaction: Redaction | None = None) -> None:
        """Write the cassette to ``path``, redacted by ``redaction`` (default: :meth:`Redaction.default`)."""
        redaction = redaction if redaction is not None else Redaction.default()
        placeholders = sorted({*self.placeholders, *redaction.paths})
        with open(path, "wb") as file:
            file.write(_header(placeholders))
            for entry in self.entries:
                file.write(_line(entry.sender, entry.ts, redaction.apply(entry.message)))

    def __iter__(self) -> Iterator[Entry]:
        return iter(self.entries)

    def __len__(self) -> int:
        return len(self.entries)


def _header(placeholders: Iterable[str]) -> bytes:
    header = {"type": "cassette", "version": CASSETTE_VERSION, "placeholders": list(placeholders)}
    return orjson.dumps(header) + b"\n"


def _line(sender: Sender, ts: float | None, message: Any) -> bytes:
    record: dict[str, Any] = {"direction": "outgoing" if sender == "client" else "incoming"}
    if ts is not None:
        record["ts"] = round(ts, 6)
    record["message"] = message
    return orjson.dumps(record) + b"\n"


def _read(lines: Iterable[bytes]) -> tuple[list[Entry], tuple[str, ...]]:
    entries: list[Entry] = []
    placeholders: tuple[str, ...] = ()
    for line in lines:
        if not line.strip():
            continue
        try:
            value = orjson.loads(line)
        except orjson.JSONDecodeError:
            continue
        if not isinstance(value, dict):
            continue
        if value.get("type") == "cassette":
            version = value.get("version")
            if isinstance(version, int) and version > CASSETTE_VERSION:
                raise ValueError(
                    f"a cassette of format {version}, written by a later acpio (this one reads "
                    f"{CASSETTE_VERSION}): upgrade acpio, or record it again"
                )
            found = value.get("placeholders")
            if isinstance(found, list):
                placeholders = tuple(p for p in found if isinstance(p, str))
            continue
        entries.extend(_entries_of(value))
    return entries, placeholders


def _entries_of(value: dict[str, Any]) -> list[Entry]:
    sender = _DIRECTIONS.get(value.get("direction"))  # type: ignore[arg-type]
    ts = value.get("ts")
    stamp = float(ts) if isinstance(ts, int | float) and not isinstance(ts, bool) else None
    if sender is not None:
        message = value.get("message")
        messages = message if isinstance(message, list) else [message]
        return [Entry(sender, m, stamp) for m in messages if isinstance(m, dict) and _is_message(m)]
    event = parse_event(value)  # a conductor trace: the messages on the client's hop
    if isinstance(event, RequestEvent | NotificationEvent | ResponseEvent) and "Client" in (
        event.from_lane,
        event.to_lane,
    ):
        return [Entry("client" if event.from_lane == "Client" else "agent", _rebuilt(event), stamp)]
    return []


def _is_message(message: dict[str, Any]) -> bool:
    return isinstance(message.get("method"), str) or (
        "id" in message and ("result" in message or "error" in message)
    )


def _rebuilt(event: RequestEvent | NotificationEvent | ResponseEvent) -> dict[str, Any]:
    message: dict[str, Any] = {"jsonrpc": "2.0"}
    if isinstance(event, ResponseEvent):
        message["id"] = event.id
        message["error" if event.is_error else "result"] = event.payload
        return message
    if isinstance(event, RequestEvent):
        message["id"] = event.id
    method = event.method
    message["method"] = "initialize" if method in ("proxy/initialize", "_proxy/initialize") else method
    if event.params is not None:
        message["params"] = event.params
    return message


class CassetteRecorder(LineRecorder):
    """Writes the frames a tap shows it to a cassette at ``path`` (created, or truncated, now).

    ``side`` is where the tap sits: ``"client"`` (the default: what the tap sends went to the agent)
    or ``"agent"`` (a tap on an agent's transport: what it sends went to the client). Each message is
    redacted by ``redaction`` (default :meth:`Redaction.default`) before it is written. Without a
    ``<cwd>`` path the recorder takes the ``cwd`` of the first ``session/new`` (or ``load``,
    ``resume``) it sees. Lines that are not JSON are left out. Recording never breaks the
    connection: the first write error is reported once on stderr and the recorder stops.
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        redaction: Redaction | None = None,
        side: Literal["client", "agent"] = "client",
    ) -> None:
        super().__init__(path)
        self.redaction = redaction if redaction is not None else Redaction.default()
        self._side = side
        self.write(_header(sorted({*self.redaction.paths, "<cwd>"})))

    def __repr__(self) -> str:
        return f"CassetteRecorder({str(self.path)!r})"

    def __call__(self, direction: Direction, frame: bytes | OversizedFrame) -> None:
        """Record one frame (the tap's observer)."""
        if not self.recording:
            return
        sender, messages = frame_messages(direction, frame, self._side)
        for message in messages:
            if _is_message(message):
                self._learn_cwd(message)
                self.write(_line(sender, self.elapsed(), self.redaction.apply(message)))

    def _learn_cwd(self, message: dict[str, Any]) -> None:
        params = message.get("params")
        if "<cwd>" in self.redaction.paths or not isinstance(params, dict):
            return
        cwd = params.get("cwd")
        if isinstance(cwd, str) and str(message.get("method", "")).startswith("session/"):
            self.redaction = self.redaction.with_path("<cwd>", cwd)


def frame_messages(
    direction: Direction, frame: bytes | OversizedFrame, side: Sender
) -> tuple[Sender, list[dict[str, Any]]]:
    """Who sent a frame a tap moved, and its JSON objects (a batch's, in order); none if it is not JSON.

    ``side`` is where the tap sits: on the ``"client"``'s transport, what it sends went to the agent.
    """
    outgoing = direction is Direction.OUTGOING
    sender: Sender = "client" if outgoing == (side == "client") else "agent"
    if isinstance(frame, OversizedFrame):
        return sender, []
    try:
        value = orjson.loads(frame)
    except orjson.JSONDecodeError:
        return sender, []
    return sender, [m for m in (value if isinstance(value, list) else [value]) if isinstance(m, dict)]


class Recording:
    """``component`` (an agent to connect to), recorded to a cassette at ``path`` as a client sees it.

    ``await Recording(AcpAgent("my-agent"), "run.jsonl").open()`` opens the agent and returns its
    transport wrapped in a tap whose recorder writes the cassette (closed with the transport).
    """

    def __init__(
        self,
        component: Component | Transport,
        path: str | os.PathLike[str],
        *,
        redaction: Redaction | None = None,
    ) -> None:
        self.component = component
        self.path = Path(path)
        self.redaction = redaction

    def __repr__(self) -> str:
        return f"Recording({self.component!r}, {str(self.path)!r})"

    async def open(self) -> Transport:
        """Open the component; its transport, recorded."""
        from acpio.jsonrpc.builder import open_transport

        inner = await open_transport(self.component)
        recorder = CassetteRecorder(self.path, redaction=self.redaction)
        return _RecordedTransport(inner, recorder)


class _RecordedTransport(Tap):
    """A tap that closes its recorder with the transport."""

    __slots__ = ("_recorder",)

    def __init__(self, inner: Transport, recorder: CassetteRecorder) -> None:
        super().__init__(inner, recorder)
        self._recorder = recorder

    async def aclose(self) -> None:
        """Close the transport, then the cassette."""
        try:
            await super().aclose()
        finally:
            self._recorder.close()
