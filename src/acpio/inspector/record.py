"""The record of one inspected connection: :class:`Inspection`, what the page is fed.

Each frame that crosses the connection is turned into the trace event the viewer draws
(:mod:`acpio.trace.formats`, with the method of the request a response answers), checked by the
:class:`~acpio.inspector.checks.FrameChecker`, kept in the run's :class:`~acpio.inspector.capture.Capture`
and sent to every page watching (:meth:`Inspection.subscribe`) as a JSON message::

    {"kind": "frame", "seq": 3, "ts": 0.0412, "sender": "agent", "held": false,
     "event": {...the trace event...},
     "findings": [{"rule": "...", "title": "...", "message": "...", "spec": "..."}]}

Other messages tell the page about the run: ``policies``,
``paused``, ``exit`` (the agent ended) and ``note`` (something the inspector has to say).
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

import orjson

from acpio.inspector.capture import Capture, CapturedFrame
from acpio.inspector.checks import Finding, FrameChecker, Side
from acpio.trace.formats import convert_record
from acpio.transports.base import OversizedFrame

__all__ = ["Inspection"]

#: A page that falls this many messages behind is dropped (it reconnects and gets the history again).
_QUEUE_LIMIT = 10_000
#: Frames are committed to the capture file this long after the first one not committed yet: one
#: commit per burst of streamed chunks, not one per frame (a commit costs about a millisecond).
_COMMIT_DELAY = 0.1


def _finding_json(finding: Finding) -> dict[str, str]:
    return {
        "rule": finding.rule.id,
        "title": finding.rule.title,
        "message": finding.message,
        "spec": finding.spec,
    }


class Inspection:
    """Everything one inspected run showed: its frames, as trace events with their warnings.

    ``info`` are the run's facts shown on the page (``command``, ``mode``, ``capture``...). Without a
    ``capture``, frames are kept in memory only.
    """

    def __init__(
        self, info: dict[str, str], *, capture: Capture | None = None, checker: FrameChecker | None = None
    ) -> None:
        self.info = dict(info)
        self.capture = capture
        self.checker = checker or FrameChecker()
        self.frames: list[CapturedFrame] = []
        self._start = time.monotonic()
        self._asked: dict[tuple[Side, Any], str] = {}
        self._pages: set[asyncio.Queue[bytes | None]] = set()
        self._held: set[Any] = set()
        self._commit_due: asyncio.TimerHandle | None = None
        if capture is not None:
            capture.set_info(**self.info)

    @classmethod
    def replay(cls, capture: Capture) -> Inspection:
        """The inspection of a run kept in ``capture``, to show again (nothing is added to the file)."""
        inspection = cls(capture.info())
        inspection.frames = list(capture.frames())
        return inspection

    def lanes(self) -> dict[str, Any]:
        """The trace's ``lanes`` event: the client (this page, or the editor) and the agent."""
        return {
            "type": "lanes",
            "ts": 0.0,
            "lanes": [
                {"lane": "Client", "name": self.info.get("client", "client")},
                {"lane": "Agent", "name": self.info.get("command", "agent")},
            ],
        }

    def history(self) -> list[bytes]:
        """The page messages of every frame so far, in order."""
        return [self._frame_message(frame, frame.seq in self._held) for frame in self.frames]

    def record(self, sender: Side, frame: bytes | OversizedFrame, *, held: bool = False) -> int:
        """Record one frame ``sender`` sent (``held``: a request the person must answer); its number."""
        ts = round(time.monotonic() - self._start, 6)
        findings = [_finding_json(f) for f in self.checker.observe(sender, frame)]
        for event in self._events(sender, frame, ts) or [self._stdout_event(sender, frame, ts)]:
            self._keep(
                CapturedFrame(len(self.frames), ts, sender, orjson.dumps(event), orjson.dumps(findings))
            )
            findings = []
        seq = self.frames[-1].seq
        if held:
            self._held.add(seq)
        self._send(self._frame_message(self.frames[-1], held))
        return seq

    def record_stderr(self, line: str) -> None:
        """Record a line the agent wrote on its stderr."""
        ts = round(time.monotonic() - self._start, 6)
        event = {"type": "stderr", "ts": ts, "from": "Agent", "to": "Agent", "line": line}
        self._keep(CapturedFrame(len(self.frames), ts, "stderr", orjson.dumps(event), b"[]"))
        self._send(self._frame_message(self.frames[-1], False))

    def announce(self, kind: str, **fields: Any) -> None:
        """Tell every page something about the run (``policies``, ``paused``, ``exit``, ``note``)."""
        self._send(orjson.dumps({"kind": kind, **fields}))

    def subscribe(self) -> asyncio.Queue[bytes | None]:
        """A queue of the page messages from now on (``None``: the page fell too far behind)."""
        queue: asyncio.Queue[bytes | None] = asyncio.Queue()
        self._pages.add(queue)
        return queue

    def unsubscribe(self, queue: asyncio.Queue[bytes | None]) -> None:
        """Stop feeding ``queue``."""
        self._pages.discard(queue)

    def _keep(self, frame: CapturedFrame) -> None:
        self.frames.append(frame)
        if self.capture is None:
            return
        self.capture.add(frame)
        if self._commit_due is not None:
            return
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:  # recording outside an event loop: no burst to wait for
            self.capture.commit()
            return
        self._commit_due = loop.call_later(_COMMIT_DELAY, self._commit)

    def _commit(self) -> None:
        self._commit_due = None
        if self.capture is not None:
            self.capture.commit()

    def _send(self, message: bytes) -> None:
        for queue in list(self._pages):
            if queue.qsize() >= _QUEUE_LIMIT:
                self._pages.discard(queue)
                queue.put_nowait(None)
            else:
                queue.put_nowait(message)

    @staticmethod
    def _frame_message(frame: CapturedFrame, held: bool) -> bytes:
        head = orjson.dumps({"kind": "frame", "seq": frame.seq, "ts": frame.ts, "sender": frame.sender})
        return b"".join(
            (
                head[:-1],
                b',"held":',
                b"true" if held else b"false",
                b',"event":',
                frame.event,
                b',"findings":',
                frame.findings,
                b"}",
            )
        )

    def _events(self, sender: Side, frame: bytes | OversizedFrame, ts: float) -> list[dict[str, Any]]:
        if isinstance(frame, OversizedFrame):
            return []
        try:
            message = orjson.loads(frame)
        except orjson.JSONDecodeError:
            return []
        direction = "send" if sender == "client" else "recv"
        events = convert_record({"direction": direction, "ts": ts, "message": message}) or []
        other: Side = "agent" if sender == "client" else "client"
        for event in events:
            if event["type"] == "request":
                self._asked[(sender, _key(event["id"]))] = event["method"]
            elif event["type"] == "response":
                method = self._asked.pop((other, _key(event["id"])), None)
                if method is not None:
                    event["method"] = method
        return events

    @staticmethod
    def _stdout_event(sender: Side, frame: bytes | OversizedFrame, ts: float) -> dict[str, Any]:
        if isinstance(frame, OversizedFrame):
            head = frame.head[:200].decode("utf-8", "replace")
            line = f"(a line of {frame.size} bytes, skipped unread) {head}"
        else:
            line = frame.decode("utf-8", "replace")
        lane = "Client" if sender == "client" else "Agent"
        return {"type": "stderr", "ts": ts, "from": lane, "to": lane, "line": line, "stream": "stdout"}

    def answered(self, seq_of_request: int) -> None:
        """The held request recorded as frame ``seq_of_request`` has been answered."""
        self._held.discard(seq_of_request)


def _key(id: Any) -> Any:
    return orjson.dumps(id)
