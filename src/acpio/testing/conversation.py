"""A connection's messages as a conversation, and assertions that print it when they fail.

:func:`conversation_lines` turns messages into one line each, as ``acpio trace show`` labels them::

    client → agent  session/prompt  "one two three"
    agent ↝ client  session/update  agent_message_chunk "Your prompt has 3 words."
    agent → client  session/request_permission  Write count.txt
    client ⇢ agent  session/request_permission  selected deny
    agent ⇢ client  session/prompt  stopReason: end_turn

:class:`Conversation` collects a live connection's messages (it is a tap's observer) and checks
them: ``assert_said``, ``assert_request``, ``assert_no_request``, ``assert_stop_reason``. A failed
check raises :class:`ConversationError` (an ``AssertionError``) whose message is the conversation,
so pytest shows what was said rather than JSON.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import orjson

from acpio.trace.cassette import Entry, Sender, frame_messages
from acpio.trace.events import parse_event
from acpio.trace.formats import convert_record
from acpio.trace.show import build_rows
from acpio.transports.base import OversizedFrame
from acpio.transports.tap import Direction

__all__ = ["Conversation", "ConversationError", "conversation_lines"]

_MARKS = {"request": "→", "response": "⇢", "notification": "↝"}


def conversation_lines(entries: Iterable[Entry]) -> list[str]:
    """One line per message: who to whom, the method, and what it is about."""
    events = []
    for entry in entries:
        direction = "outgoing" if entry.sender == "client" else "incoming"
        for record in convert_record({"direction": direction, "message": entry.message}) or []:
            event = parse_event(record)
            if event is not None:
                events.append(event)
    lines = []
    for row in build_rows(events, collapse=False):
        who = "client → agent" if row.from_lane == "Client" else "agent → client"
        who = who.replace("→", _MARKS.get(row.kind, "→"))
        label = row.label
        if row.error is not None:
            label = f"error {row.error or ''} {label}".replace("  ", " ").strip()
        lines.append(f"{who}  {row.method or '(answer)'}  {label}".rstrip())
    return lines


class ConversationError(AssertionError):
    """A check of a conversation failed; the message says which and shows the conversation."""


class Conversation:
    """The messages of one connection, in order, as :class:`~acpio.trace.cassette.Entry` values.

    Give it to a :class:`~acpio.transports.Tap` as the observer (``side`` says where the tap is:
    ``"client"``, the default, or ``"agent"``), or :meth:`add` messages yourself.
    """

    def __init__(self, *, side: Sender = "client") -> None:
        self.entries: list[Entry] = []
        self._side = side

    def __call__(self, direction: Direction, frame: bytes | OversizedFrame) -> None:
        """Record a frame the tap moved (a tap's observer); frames that are not JSON are left out."""
        sender, messages = frame_messages(direction, frame, self._side)
        for message in messages:
            self.add(sender, message)

    def add(self, sender: Sender, message: dict[str, Any]) -> None:
        """Add one message sent by ``sender``."""
        self.entries.append(Entry(sender, message))

    def lines(self) -> list[str]:
        """The conversation, one line a message (:func:`conversation_lines`)."""
        return conversation_lines(self.entries)

    def __str__(self) -> str:
        return "\n".join(self.lines())

    # --- what was said ------------------------------------------------------------------------

    def agent_text(self) -> str:
        """The text of every ``agent_message_chunk`` (v1) and ``agent_message`` (v2), joined."""
        parts = []
        for entry in self.entries:
            update = _update(entry)
            if update is None:
                continue
            kind = update.get("sessionUpdate")
            content = update.get("content")
            if kind == "agent_message_chunk" and isinstance(content, dict):
                parts.append(str(content.get("text", "")))
            elif kind == "agent_message" and isinstance(content, list):
                parts.extend(str(b.get("text", "")) for b in content if isinstance(b, dict))
        return "".join(parts)

    def requests(self, method: str, sender: Sender = "agent") -> list[dict[str, Any]]:
        """The requests for ``method`` that ``sender`` (default the agent) sent, in order."""
        return [e.message for e in self.entries if e.sender == sender and e.is_request and e.method == method]

    def stop_reasons(self) -> list[str]:
        """The stop reason of each turn, in order: v1's ``session/prompt`` answers, v2's ``state_update``."""
        prompts = {
            _key(e.message.get("id"))
            for e in self.entries
            if e.sender == "client" and e.method == "session/prompt"
        }
        reasons = []
        for entry in self.entries:
            update = _update(entry)
            if update is not None and update.get("sessionUpdate") == "state_update":
                reason = update.get("stopReason")
            elif entry.sender == "agent" and entry.is_response and _key(entry.message.get("id")) in prompts:
                result = entry.message.get("result")
                reason = result.get("stopReason") if isinstance(result, dict) else None
            else:
                continue
            if isinstance(reason, str):
                reasons.append(reason)
        return reasons

    # --- checks -------------------------------------------------------------------------------

    def fail(self, what: str) -> ConversationError:
        """A :class:`ConversationError` saying ``what``, followed by the conversation."""
        shown = "\n".join(f"    {line}" for line in self.lines()) or "    (no message)"
        return ConversationError(f"{what}\n  the conversation:\n{shown}")

    def assert_said(self, text: str) -> None:
        """The agent's text contains ``text``."""
        if text not in self.agent_text():
            raise self.fail(f"the agent did not say {text!r}; it said {self.agent_text()!r}")

    def assert_request(self, method: str, sender: Sender = "agent") -> dict[str, Any]:
        """``sender`` sent at least one ``method`` request; the first is returned."""
        found = self.requests(method, sender)
        if not found:
            raise self.fail(f"the {sender} sent no {method} request")
        return found[0]

    def assert_no_request(self, method: str, sender: Sender = "agent") -> None:
        """``sender`` sent no ``method`` request."""
        found = self.requests(method, sender)
        if found:
            raise self.fail(f"the {sender} sent {len(found)} {method} request(s), expected none")

    def assert_stop_reason(self, reason: str) -> None:
        """The last prompt turn ended with ``reason``."""
        reasons = self.stop_reasons()
        if not reasons or reasons[-1] != reason:
            last = reasons[-1] if reasons else "no answered prompt"
            raise self.fail(f"the turn ended with {last}, expected {reason}")


def _update(entry: Entry) -> dict[str, Any] | None:
    if entry.sender != "agent" or entry.method != "session/update":
        return None
    params = entry.message.get("params")
    update = params.get("update") if isinstance(params, dict) else None
    return update if isinstance(update, dict) else None


def _key(value: Any) -> str:
    return orjson.dumps(value).decode()
