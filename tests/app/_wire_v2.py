"""A v2 editor for the app tests, in raw frames: initialize, open a session, run a turn to its idle state."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from acpio.schema import v2
from acpio.testing import WirePeer

INFO = {"name": "test-editor", "version": "1.0"}
#: Updates v1 has and v2 does not.
_V1_ONLY = {"tool_call", "plan", "current_mode_update"}


def _is_v1_chunk(update: dict[str, Any]) -> bool:
    return (
        str(update.get("sessionUpdate")).endswith("_chunk")
        and "messageId" not in update
        and "toolCallId" not in update
        and "terminalId" not in update
    )


async def initialize_v2(peer: WirePeer, capabilities: dict[str, Any] | None = None) -> dict[str, Any]:
    """``initialize`` as a v2 client (``info``, ``capabilities``); the answer's result."""
    asked = peer.request(
        "initialize", {"protocolVersion": 2, "info": INFO, "capabilities": capabilities or {}}
    )
    answer = await peer.response_to(asked)
    assert "result" in answer, answer
    result: dict[str, Any] = answer["result"]
    v2.InitializeResponse.model_validate(result)
    return result


async def open_session_v2(
    peer: WirePeer, cwd: Path, capabilities: dict[str, Any] | None = None
) -> tuple[str, dict[str, Any]]:
    """Initialize as a v2 client and open a session in ``cwd``: its id and the ``session/new`` result."""
    await initialize_v2(peer, capabilities)
    new = peer.request("session/new", {"cwd": str(cwd)})
    result: dict[str, Any] = (await peer.response_to(new))["result"]
    return str(result["sessionId"]), result


def prompt_v2(peer: WirePeer, session_id: str, text: str) -> Any:
    """Send a ``session/prompt`` of ``text``; its request id."""
    return peer.request(
        "session/prompt", {"sessionId": session_id, "prompt": [{"type": "text", "text": text}]}
    )


def is_idle(frame: Any) -> bool:
    """Whether ``frame`` is the ``state_update`` that ends a turn (``idle``)."""
    update = frame.get("params", {}).get("update", {}) if frame.get("method") == "session/update" else {}
    return bool(update.get("sessionUpdate") == "state_update" and update.get("state") == "idle")


async def run_turn(peer: WirePeer, session_id: str, text: str) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """Prompt ``text`` and read to the turn's idle ``state_update``: the prompt's answer and every update.

    The updates are the ``update`` objects in order, the idle one last; the answer must come first
    (v2 acknowledges the prompt at once).
    """
    asked = prompt_v2(peer, session_id, text)
    frames: list[Any] = []
    answer = await peer.response_to(asked, frames)
    v2.PromptResponse.model_validate(answer["result"])
    idle = await peer.until(is_idle, frames)
    frames.append(idle)
    assert all(f.get("method") == "session/update" for f in frames), frames
    assert all(f["params"]["sessionId"] == session_id for f in frames)
    return answer, [f["params"]["update"] for f in frames]


def check_v2(update: dict[str, Any]) -> None:
    """Fail unless ``update`` is a known variant of v2's session update union, valid as the models read it."""
    note = v2.UpdateSessionNotification.model_validate({"sessionId": "s", "update": update})
    parsed = note.update
    assert not type(parsed).__name__.startswith("Unknown"), update
    state = getattr(parsed, "state", None)
    assert state is None or not type(state).__name__.startswith("Unknown"), update


def kinds(updates: list[dict[str, Any]]) -> list[str]:
    """Each update's ``sessionUpdate`` (``state_update:<state>`` for states), checked by :func:`check_v2`.

    v1 updates (those without a v2 shape) are not checked.
    """
    for update in updates:
        if update.get("sessionUpdate") not in _V1_ONLY and not _is_v1_chunk(update):
            check_v2(update)
    return [
        f"state_update:{u['state']}" if u["sessionUpdate"] == "state_update" else u["sessionUpdate"]
        for u in updates
    ]
