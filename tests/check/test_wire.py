"""``acpio.check.wire``: the scripted client's answers, and the agent process started where asked."""

from __future__ import annotations

import sys
from pathlib import Path

from acpio.check.wire import AgentUnderTest, ScriptedClient

OPTIONS = [
    {"optionId": "reject", "name": "No", "kind": "reject_once"},
    {"optionId": "allow", "name": "Yes", "kind": "allow_once"},
]


def permission(session_id: str) -> dict[str, object]:
    params = {"sessionId": session_id, "toolCall": {"toolCallId": "t1"}, "options": OPTIONS}
    return {"jsonrpc": "2.0", "id": 7, "method": "session/request_permission", "params": params}


def test_permission_is_granted_except_in_a_session_whose_turn_was_cancelled(tmp_path: Path) -> None:
    client = ScriptedClient({}, tmp_path)
    client.cancelled.add("s-2")
    assert client.answer(permission("s-1")) == {
        "jsonrpc": "2.0",
        "id": 7,
        "result": {"outcome": {"outcome": "selected", "optionId": "allow"}},
    }
    assert client.answer(permission("s-2")) == {
        "jsonrpc": "2.0",
        "id": 7,
        "result": {"outcome": {"outcome": "cancelled"}},
    }
    client.hold_permissions = True  # held comes first: the check cancels the turn under it itself
    assert client.answer(permission("s-2")) is None
    assert client.held == [permission("s-2")]


async def test_the_agent_runs_in_the_directory_and_environment_given(tmp_path: Path) -> None:
    work = tmp_path / "work"
    work.mkdir()
    script = "import os, sys; print(os.getcwd()); print(os.environ['CHECK_MARK']); sys.stdin.read()"
    cx = await AgentUnderTest.start(
        (sys.executable, "-c", script),
        ScriptedClient({}, work),
        stderr=tmp_path / "stderr.log",
        answer_within=30.0,
        cwd=work,
        env={"CHECK_MARK": "marked", "PATH": "/usr/bin:/bin"},
    )
    try:
        await cx.finish(30.0)
    finally:
        await cx.kill()
    assert [(f.direction, f.raw, f.problem) for f in cx.frames] == [
        ("in", str(work).encode(), "not JSON"),
        ("in", b"marked", "not JSON"),
    ]
    assert cx.exit_code == 0


ASKING_AGENT = f"""
import json, sys
asked = 100
for line in sys.stdin:
    message = json.loads(line)
    if message.get("method") == "session/cancel" or message.get("id") == 2:
        asked += 1
        params = {{"sessionId": "s-1", "toolCall": {{"toolCallId": "t1"}}, "options": {OPTIONS!r}}}
        ask = {{"jsonrpc": "2.0", "id": asked, "method": "session/request_permission", "params": params}}
        print(json.dumps(ask), flush=True)
"""


async def test_a_permission_is_answered_cancelled_after_a_cancel_until_the_next_prompt(
    tmp_path: Path,
) -> None:
    # The agent asks right after session/cancel (a turn winding down), then in the next turn.
    cx = await AgentUnderTest.start(
        (sys.executable, "-c", ASKING_AGENT),
        ScriptedClient({}, tmp_path),
        stderr=tmp_path / "stderr.log",
        answer_within=30.0,
        cwd=tmp_path,
        env={},
    )
    try:
        prompt = {"sessionId": "s-1", "prompt": [{"type": "text", "text": "go"}]}
        assert cx.request("session/prompt", prompt) == 1
        cx.notify("session/cancel", {"sessionId": "s-1"})
        await cx.until(30.0, stop=lambda frame: frame.message.get("id") == 101)
        assert cx.request("session/prompt", prompt) == 2
        await cx.until(30.0, stop=lambda frame: frame.message.get("id") == 102)
        await cx.finish(30.0)
    finally:
        await cx.kill()
    answers = {
        f.message["id"]: f.message["result"]["outcome"]
        for f in cx.frames
        if f.direction == "out" and "result" in f.message
    }
    assert answers == {101: {"outcome": "cancelled"}, 102: {"outcome": "selected", "optionId": "allow"}}
