r"""Every trace format acpio writes, read as conductor trace events.

Three kinds of line file hold ACP traffic, and the readers of :mod:`acpio.trace` (and so the viewer
and ``acpio trace show``) take all of them, line by line, in the same file or not:

* **Conductor traces** (``acpio conductor --trace FILE``): events as they are (``docs/trace.md``).
* **Message logs**: ``acpio prompt --json`` writes ``{"direction": "send" | "recv", "message": {...}}``
  per message (``{"direction": "recv", "invalid": "text"}`` for a line of the agent's stdout that is
  not JSON). A Tap recording (:class:`acpio.trace.TapRecorder`, the observer of a
  :class:`~acpio.transports.Tap`) is the same with the tap's own words, ``"outgoing"`` and
  ``"incoming"``, and a ``ts``; its ``message`` may be a whole batch (a list).

  What was sent (``send``, ``outgoing``) goes from the ``Client`` lane to the ``Agent`` lane, what was
  received the other way: the side that wrote the log is the client (a tap on an agent's side reads
  mirrored; the diagram is the same). A line's ``ts`` (seconds, optional) is kept; a log without
  one, such as ``--json``'s, has no times: its events get ``ts`` 0 and ``"untimed": true``, and no
  durations are drawn for them. A non-JSON stdout line becomes a ``stderr`` event with
  ``"stream": "stdout"``.

Session stores are not traces (they keep a session's updates for replay, not the messages of a
connection): they are not read here.
"""

from __future__ import annotations

import math
from typing import Any

__all__ = ["convert_record"]

#: A message log's direction word -> (from, to).
_DIRECTIONS = {
    "send": ("Client", "Agent"),
    "outgoing": ("Client", "Agent"),
    "recv": ("Agent", "Client"),
    "incoming": ("Agent", "Client"),
}


def _session(params: Any) -> str | None:
    if type(params) is dict:
        session = params.get("sessionId")
        if type(session) is str:
            return session
    return None


def _message_event(message: Any, source: str, target: str, stamp: dict[str, Any]) -> dict[str, Any] | None:
    if type(message) is not dict:
        return None
    method = message.get("method")
    event: dict[str, Any]
    if isinstance(method, str):
        params = message.get("params")
        kind = "request" if "id" in message else "notification"
        event = {"type": kind, **stamp, "protocol": "acp", "from": source, "to": target}
        if kind == "request":
            event["id"] = message["id"]
        event["method"] = method
        event["params"] = params
        session = _session(params)
    elif "id" in message and ("result" in message or "error" in message):
        is_error = "error" in message
        payload = message["error"] if is_error else message["result"]
        event = {"type": "response", **stamp, "from": source, "to": target, "id": message["id"]}
        event["is_error"] = is_error
        event["payload"] = payload
        session = None if is_error else _session(payload)
    else:
        return None
    if session is not None:
        event["session"] = session
    return event


def convert_record(value: Any) -> list[dict[str, Any]] | None:
    """The conductor trace events for one decoded line of a message log (see the module docstring).

    ``None`` when the line is no message-log record (a conductor event, or anything else); a record
    whose message is not a JSON-RPC message gives no events (``[]``).
    """
    if type(value) is not dict or "type" in value:
        return None
    lanes = _DIRECTIONS.get(value.get("direction"))  # type: ignore[arg-type]
    if lanes is None:
        return None
    source, target = lanes
    ts = value.get("ts")
    stamp: dict[str, Any] = {"ts": 0.0, "untimed": True}
    if not isinstance(ts, bool) and isinstance(ts, int | float) and math.isfinite(ts):
        stamp = {"ts": float(ts)}
    if "message" in value:
        message = value["message"]
        events = []
        for entry in message if type(message) is list else [message]:
            event = _message_event(entry, source, target, stamp)
            if event is not None:
                events.append(event)
        return events
    invalid = value.get("invalid")
    if isinstance(invalid, str):
        line = {"type": "stderr", **stamp, "from": source, "to": source, "line": invalid, "stream": "stdout"}
        return [line]
    return None
