"""RedactingSink: trace events redacted, a secret split across chunk events included, order kept."""

from __future__ import annotations

from typing import Any

from acpio.conductor import MemorySink, RedactingSink
from acpio.redaction import Redactor

KEY = r"sk-[A-Za-z0-9]{8,}"


def chunk(text: str, source: str = "Agent", session: str = "s1") -> dict[str, Any]:
    update = {"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": text}}
    return {
        "type": "notification",
        "from": source,
        "to": "Proxy(0)",
        "method": "session/update",
        "params": {"sessionId": session, "update": update},
        "session": session,
    }


def texts(sink: MemorySink) -> list[str | None]:
    return [
        event["params"]["update"]["content"]["text"] if event.get("method") == "session/update" else None
        for event in sink.events
    ]


def test_a_split_key_is_redacted_and_later_events_wait_in_order() -> None:
    memory = MemorySink()
    sink = RedactingSink(memory, Redactor([KEY]))
    sink.write(chunk("key: sk-"))
    sink.write({"type": "stderr", "from": "Agent", "to": "Agent", "line": "working"})
    sink.write(chunk("abc123"))
    assert memory.events == []  # "sk-abc123" may still become a key: nothing is written yet
    sink.write(chunk("456789 done"))
    assert texts(memory) == ["key: ", None, "", "[REDACTED] done"]
    assert memory.events[1]["line"] == "working"


def test_a_non_chunk_event_of_the_session_flushes_into_the_last_chunk() -> None:
    memory = MemorySink()
    sink = RedactingSink(memory, Redactor([KEY]))
    for piece in ("sk-", "abc123", "456789"):
        sink.write(chunk(piece))
    response = {"type": "response", "from": "Agent", "to": "Proxy(0)", "payload": {"stopReason": "end_turn"}}
    sink.write({**response, "session": "s1"})
    assert texts(memory) == ["", "", "[REDACTED]", None]


def test_every_string_of_every_event_is_redacted_and_close_flushes() -> None:
    memory = MemorySink()
    sink = RedactingSink(memory, Redactor([KEY]))
    prompt = {"sessionId": "s1", "prompt": [{"type": "text", "text": "use sk-abc123456789 please"}]}
    sink.write({"type": "request", "method": "session/prompt", "params": prompt, "session": "s1"})
    sink.write(chunk("sk-abc1", session="s2"))  # held: it may become a key
    assert len(memory.events) == 1
    assert memory.events[0]["params"]["prompt"][0]["text"] == "use [REDACTED] please"
    sink.close()  # the end: held text goes out (no key after all)
    assert texts(memory)[1] == "sk-abc1"
