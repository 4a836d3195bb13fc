"""The commands the page sends over its WebSocket, one JSON object each, and what they do.

``{"op": "send", "method": M, "params": P, "notification": false, "tag": T}``
    Send a request (answered ``{"kind": "sent", "tag": T, "id": ID}``) or a notification to the agent.
``{"op": "raw", "text": LINE}``
    Send a line as it is (to see how the agent takes a malformed message).
``{"op": "answer", "id": ID, "result": R}`` (or ``"error": E``, or ``"perform": true``)
    Answer the agent's held request ``ID``; ``perform`` does what it asks (a file read or write, a
    command run), inside the root.
``{"op": "policies", "permission": ..., "files": ..., "terminals": ..., "elicitation": ...}``
    Change how the agent's requests are answered (every page is told: ``{"kind": "policies", ...}``).
``{"op": "pause", "paused": true}``
    Hold the traffic, or let it pass again.

A command that cannot be carried out is answered ``{"kind": "note", "level": "error", "text": ...}``.
"""

from __future__ import annotations

from typing import Any, get_args

import orjson

from acpio.inspector.answers import Choice
from acpio.inspector.connection import InspectedConnection
from acpio.inspector.record import Inspection

__all__ = ["run_command"]

_CHOICES = {
    "permission": get_args(Choice),
    "files": get_args(Choice),
    "terminals": get_args(Choice),
    "elicitation": ("ask", "decline"),
}


class _Refused(Exception):
    pass


def _note(text: str) -> bytes:
    return orjson.dumps({"kind": "note", "level": "error", "text": text})


async def run_command(
    inspection: Inspection, connection: InspectedConnection | None, text: str
) -> bytes | None:
    """Carry out one command of the page; the reply for that page alone, if any."""
    try:
        command = orjson.loads(text)
        if not isinstance(command, dict) or not isinstance(command.get("op"), str):
            raise _Refused("a command is a JSON object with an op")
        if connection is None:
            raise _Refused("this run is a recording: reopen it live to drive an agent")
        if connection.ended.is_set():
            raise _Refused("the agent has ended: start acpio inspect again to drive it")
        return await _carry_out(inspection, connection, command)
    except orjson.JSONDecodeError:
        return _note("the page sent a command that is not JSON")
    except (_Refused, LookupError) as exc:
        return _note(str(exc).strip("'\""))


async def _carry_out(
    inspection: Inspection, connection: InspectedConnection, command: dict[str, Any]
) -> bytes | None:
    op = command["op"]
    if op == "send":
        method = command.get("method")
        if not isinstance(method, str) or not method:
            raise _Refused("send needs a method")
        notification = bool(command.get("notification"))
        id = connection.send(method, command.get("params"), notification=notification)
        return orjson.dumps({"kind": "sent", "tag": command.get("tag"), "id": id, "method": method})
    if op == "raw":
        connection.send_raw(str(command.get("text", "")))
        return None
    if op == "answer":
        if "id" not in command:
            raise _Refused("answer needs the id of the agent's request")
        await connection.answer(
            command["id"],
            result=command.get("result"),
            error=command.get("error"),
            perform=bool(command.get("perform")),
        )
        return None
    if op == "policies":
        if connection.answers is None:
            raise _Refused("in proxy mode the editor answers the agent's requests")
        policies = connection.answers.policies
        for name, allowed in _CHOICES.items():
            value = command.get(name)
            if value is None:
                continue
            if value not in allowed:
                raise _Refused(f"{name} must be one of {', '.join(allowed)}, not {value!r}")
            setattr(policies, name, value)
        inspection.announce("policies", policies=policies.to_json())
        return None
    if op == "pause":
        connection.pause(bool(command.get("paused")))
        return None
    raise _Refused(f"unknown op {op!r}: send, raw, answer, policies or pause")
