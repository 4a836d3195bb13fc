"""Judging a connection's whole transcript: every line the agent wrote, against the requirements.

What one line can break (transport, schema, the JSON-RPC envelope, a request the client did not
advertise) is judged line by line; the order rules (a turn's updates name its session, nothing of
a session follows a cancelled turn's or a load's answer) on the sequence.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from tests.conformance._driver import Frame, ScriptedClient
from tests.conformance._requirements import Verdicts, clip
from tests.conformance._schema import AgentSchema

_CLIENT_METHODS = {
    "fs": "ACP-CLIENTCAP-001",
    "terminal": "ACP-CLIENTCAP-002",
    "elicitation": "ACP-CLIENTCAP-003",
}


def is_request(message: Any) -> bool:
    """Whether ``message`` is a request (a method and an id)."""
    return isinstance(message, dict) and "method" in message and "id" in message


def is_update(message: Any) -> bool:
    """Whether ``message`` is a ``session/update`` notification with params."""
    return (
        isinstance(message, dict)
        and message.get("method") == "session/update"
        and isinstance(message.get("params"), dict)
    )


def updates(frames: Sequence[Frame], session_id: str, start: int, end: int) -> list[dict[str, Any]]:
    """The ``update`` of each ``session/update`` for ``session_id`` among ``frames[start:end]``."""
    return [
        m["params"].get("update") or {}
        for m in (f.message for f in frames[start:end])
        if is_update(m) and m["params"].get("sessionId") == session_id
    ]


class Transcript:
    """The lines of one connection, judged into ``verdicts``."""

    def __init__(
        self, frames: Sequence[Frame], schema: AgentSchema, client: ScriptedClient, verdicts: Verdicts
    ) -> None:
        self.frames = frames
        self.schema = schema
        self.client = client
        self.v = verdicts

    def judge(
        self, turns: Sequence[tuple[str, int, int]], quiet_after: Sequence[tuple[str, str, int]]
    ) -> None:
        """Judge every line; ``turns`` and ``quiet_after`` (see ``Exchange``) place the order rules."""
        frames = self.frames
        requested = {
            f.message["id"]: f.message["method"]
            for f in frames
            if f.direction == "out" and is_request(f.message)
        }
        answered: set[Any] = set()
        for frame in (f for f in frames if f.direction == "in"):
            self._frame(frame, requested, answered)
        self.v.check("ACP-TRANSPORT-001", True, "")
        for requirement in ("ACP-JSONRPC-003", "ACP-CLIENTCAP-001", "ACP-CLIENTCAP-002", "ACP-CLIENTCAP-003"):
            self.v.check(requirement, True, "")  # met unless a frame above broke it
        known = {
            (f.message.get("result") or {}).get("sessionId")
            for f in frames
            if f.direction == "in" and isinstance(f.message, dict)
        }
        for session_id, start, end in turns:
            strays = [
                f.message
                for f in frames[start:end]
                if is_update(f.message) and f.message["params"].get("sessionId") not in known | {session_id}
            ]
            self.v.check(
                "ACP-PROMPT-002",
                not strays,
                f"updates naming no session during a turn of {session_id}: {clip(strays)}",
            )
        for requirement, session_id, answered_at in quiet_after:
            late = []
            for frame in frames[answered_at + 1 :]:
                params = (frame.message or {}).get("params") if isinstance(frame.message, dict) else None
                concerns = isinstance(params, dict) and params.get("sessionId") == session_id
                if frame.direction == "out" and concerns:
                    break
                if frame.direction == "in" and is_update(frame.message) and concerns:
                    late.append(frame.message["params"]["update"])
            self.v.check(requirement, not late, f"sent after the answer: {clip(late)}")

    def _frame(self, frame: Frame, requested: dict[Any, str], answered: set[Any]) -> None:
        message = frame.message
        if frame.problem is not None:
            requirement = "ACP-TRANSPORT-002" if "UTF-8" in frame.problem else "ACP-TRANSPORT-001"
            self.v.check(requirement, False, f"{frame.problem}: {frame.raw[:200]!r}")
            return
        self.v.check("ACP-TRANSPORT-002", True, "")
        method = None if "method" in message else requested.get(message.get("id"))
        problems = self.schema.problems(message, method)
        self.v.check("ACP-SCHEMA-001", not problems, f"{clip(message)}: {problems}")
        typed = self.schema.typed_part(message, method)
        if typed is not None:
            unknown = self.schema.unknown_keys(*typed)
            if typed[0] == "SessionNotification":
                unknown += self.schema.unknown_keys("SessionUpdate", (typed[1] or {}).get("update"))
            self.v.check("ACP-SCHEMA-002", not unknown, f"keys {unknown} in {clip(message)}")
        if "method" in message:
            if "id" in message:
                self._agent_request(message)
            return
        if message.get("id") not in requested:
            self.v.check(
                "ACP-JSONRPC-003",
                False,
                f"an answer to no request of ours (a notification?): {clip(message)}",
            )
            return
        self.v.check("ACP-JSONRPC-001", message["id"] not in answered, f"answered twice: {clip(message)}")
        answered.add(message["id"])
        error = message.get("error")
        well_formed = ("result" in message) != ("error" in message) and (
            error is None or (type(error.get("code")) is int and isinstance(error.get("message"), str))
        )
        self.v.check("ACP-JSONRPC-002", well_formed, clip(message))
        if isinstance(error, dict):
            text = error.get("message")
            self.v.check("ACP-ERROR-001", bool(text) and "\n" not in str(text), f"error message {text!r}")

    def _agent_request(self, message: Mapping[str, Any]) -> None:
        method = str(message["method"])
        requirement = _CLIENT_METHODS.get(method.split("/")[0])
        if requirement is not None:
            allowed = self.client.advertises(method)
            self.v.check(
                requirement, allowed, f"{method} to a client advertising {dict(self.client.capabilities)}"
            )
