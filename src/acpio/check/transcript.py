"""Rules judged on the whole transcript of a connection, once it ended (v1 and v2 alike).

Each function reads :attr:`~acpio.check.wire.AgentUnderTest.frames` and records one requirement:
stdout purity, the shape of every response and error, no answer to a notification, and requests
only for what the client advertised.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from acpio.check.verdicts import Verdicts
from acpio.check.wire import AgentUnderTest, Frame

__all__ = ["clip", "judge_envelopes", "judge_requests", "judge_stdout", "updates_of"]


def clip(value: Any, limit: int = 300) -> str:
    """``value`` as text, cut at ``limit`` characters (a detail shows what came back, not all of it)."""
    text = value.decode("utf-8", "replace") if isinstance(value, bytes) else repr(value)
    return text if len(text) <= limit else text[:limit] + "..."


def judge_stdout(cx: AgentUnderTest, v: Verdicts, requirement: str) -> None:
    """Every line the agent wrote is one JSON-RPC 2.0 message."""
    for frame in _incoming(cx.frames):
        v.check(
            requirement,
            frame.problem is None,
            f"the agent wrote {clip(frame.raw, 120)!r} on its stdout, {frame.problem}: only ACP's "
            "JSON-RPC messages go there, one a line; write logs and banners to stderr",
        )
    v.check(requirement, True, "")


def judge_envelopes(
    cx: AgentUnderTest, v: Verdicts, shape: str, unasked: str | None, error_text: str | None
) -> None:
    """Responses have result xor error, errors a code and message (``shape``); each answers a request.

    ``unasked``: the requirement that no response answers a notification (an id never sent);
    ``error_text``: the one that each error message is a single non-empty line.
    """
    sent = {f.message.get("id") for f in cx.frames if f.direction == "out" and _is_request(f.message)}
    for frame in _incoming(cx.frames):
        message = frame.message
        if not isinstance(message, dict) or "method" in message:
            continue
        error = message.get("error")
        ok = ("result" in message) != ("error" in message) and (
            error is None
            or (
                isinstance(error, dict)
                and type(error.get("code")) is int
                and isinstance(error.get("message"), str)
            )
        )
        v.check(shape, ok, f"response {clip(message)}")
        if unasked is not None:
            v.check(
                unasked, message.get("id") in sent, f"a response to no request of the client: {clip(message)}"
            )
        if error_text is not None and isinstance(error, dict):
            text = error.get("message")
            ok = isinstance(text, str) and bool(text.strip()) and "\n" not in text
            v.check(error_text, ok, f"error message {text!r}")
    v.check(shape, True, "")
    if unasked is not None:
        v.check(unasked, True, "")
    if error_text is not None:
        v.check(error_text, True, "")


def judge_requests(cx: AgentUnderTest, v: Verdicts, requirement: str, allowed: Callable[[str], bool]) -> None:
    """Every request of the agent is one ``allowed(method)`` accepts."""
    for frame in _incoming(cx.frames):
        message = frame.message
        if _is_request(message):
            v.check(requirement, allowed(str(message.get("method"))), f"the agent sent {clip(message, 200)}")
    v.check(requirement, True, "")


def updates_of(frames: list[Frame], session_id: str, start: int, end: int) -> list[dict[str, Any]]:
    """The ``update`` of each ``session/update`` of ``session_id`` the agent sent in ``frames[start:end]``."""
    found = []
    for frame in frames[start:end]:
        message = frame.message
        if (
            frame.direction == "in"
            and isinstance(message, dict)
            and message.get("method") == "session/update"
        ):
            params = message.get("params") or {}
            if params.get("sessionId") == session_id:
                found.append(params.get("update") or {})
    return found


def _incoming(frames: list[Frame]) -> list[Frame]:
    return [f for f in frames if f.direction == "in"]


def _is_request(message: Any) -> bool:
    return isinstance(message, dict) and "method" in message and "id" in message
