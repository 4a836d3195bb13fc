"""A trace sink that redacts: no copy of a secret reaches the trace, even one split across chunks.

The conductor records each hop of a message: the agent's raw chunks on their way to a redacting
proxy are in the trace too. :class:`RedactingSink` wraps the real sink: every string of every
event goes through the :class:`~acpio.redaction.Redactor`, and the text of the agent's message and
thought chunks goes through one lookahead stream per hop, session and message, as a redacting
proxy does it. While a stream holds back text that may still grow into a secret, the events
after it wait (in order) and are written once it is settled: the event whose text completes a
secret carries the replacement, the events before it the text that was not part of it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from acpio.conductor.tracing import TraceSink
from acpio.redaction import LookaheadStream, Redactor

__all__ = ["RedactingSink"]

_CHUNKS: Final = frozenset({"agent_message_chunk", "agent_thought_chunk"})
_StreamKey = tuple[object, ...]


class RedactingSink:
    """Redacts each event with ``redactor`` before ``sink`` writes it (see the module docstring)."""

    def __init__(self, sink: TraceSink, redactor: Redactor) -> None:
        self.sink = sink
        self.redactor = redactor
        self._streams: dict[_StreamKey, LookaheadStream] = {}
        #: The last event of each stream holding text back: where flushed text is added.
        self._last: dict[_StreamKey, dict[str, Any]] = {}
        #: Events waiting for the held text to settle, in order.
        self._waiting: list[dict[str, Any]] = []

    def __repr__(self) -> str:
        return f"RedactingSink({self.sink!r}, {self.redactor!r})"

    def write(self, event: Mapping[str, object]) -> None:
        """Redact ``event`` and write it, or keep it in order until the held text settles."""
        redacted: dict[str, Any] = self._redacted(dict(event))
        chunk = _chunk_text(redacted)
        if chunk is not None:
            key, content = chunk
            stream = self._streams.setdefault(key, self.redactor.stream())
            content["text"] = stream.feed(content["text"])
            self._last[key] = content
        else:
            self._flush_session(redacted.get("session"))
        self._waiting.append(redacted)
        if not any(stream.held for stream in self._streams.values()):
            self._write_waiting()

    def close(self) -> None:
        """Flush every stream, write what waits, close the sink."""
        self._flush_session(None, every=True)
        self._write_waiting()
        self.sink.close()

    def _flush_session(self, session: object, *, every: bool = False) -> None:
        for key in [key for key in self._streams if every or key[0] == session]:
            rest = self._streams.pop(key).flush()
            content = self._last.pop(key, None)
            if content is not None:
                content["text"] += rest

    def _write_waiting(self) -> None:
        waiting, self._waiting = self._waiting, []
        self._last.clear()
        for event in waiting:
            self.sink.write(event)

    def _redacted(self, value: Any) -> Any:
        """``value`` with every string redacted (chunk texts too: a whole secret in one chunk)."""
        if isinstance(value, str):
            return self.redactor.redact(value)
        if isinstance(value, dict):
            return {key: self._redacted(item) for key, item in value.items()}
        if isinstance(value, list):
            return [self._redacted(item) for item in value]
        return value


def _chunk_text(event: dict[str, Any]) -> tuple[_StreamKey, dict[str, Any]] | None:
    """The stream key and the text content of an agent message or thought chunk event, else ``None``."""
    if event.get("type") != "notification" or event.get("method") != "session/update":
        return None
    params = event.get("params")
    update = params.get("update") if isinstance(params, dict) else None
    if not isinstance(update, dict) or update.get("sessionUpdate") not in _CHUNKS:
        return None
    content = update.get("content")
    if (
        not isinstance(content, dict)
        or content.get("type") != "text"
        or not isinstance(content.get("text"), str)
    ):
        return None
    key = (
        event.get("session"),
        event.get("from"),
        event.get("to"),
        update["sessionUpdate"],
        update.get("messageId"),
    )
    return key, content
