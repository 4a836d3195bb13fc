"""AgentClient drives the agents written with the official SDKs: the full turn, collected as a TurnResult."""

from __future__ import annotations

from pathlib import Path

import pytest

from acpio.client import AgentClient

from ._support import INPUT_TEXT, PEER_PROMPT, PY_AGENT, TS_AGENT


@pytest.mark.parametrize("peer", ["typescript", "official_python"])
async def test_agent_client_collects_the_peer_agents_turn(
    peer: str, request: pytest.FixtureRequest, workdir: Path
) -> None:
    command = (
        [request.getfixturevalue("node"), str(TS_AGENT)]
        if peer == "typescript"
        else [request.getfixturevalue("official_python"), str(PY_AGENT)]
    )
    async with AgentClient(command, cwd=workdir, permissions="allow") as client:
        session = await client.new_session()
        result = await session.prompt(PEER_PROMPT)

    assert result.ok, (result.error, result.stderr_tail)
    assert result.text.startswith(PEER_PROMPT)
    assert "terminal said: terminal works (exit 0)" in result.text
    assert [(call.tool_call_id, call.kind, call.status) for call in result.tool_calls] == [
        ("edit-1", "edit", "completed"),
        ("run-1", "execute", "completed"),
    ]
    assert result.tool_calls[0].locations == [str(workdir / "input.txt"), str(workdir / "output.txt")]
    [write] = result.files_written
    assert (write.path, write.old_text, write.new_text) == (
        str(workdir / "output.txt"),
        None,
        INPUT_TEXT.upper(),
    )
    assert write.written_by == "client"
    assert (workdir / "output.txt").read_text() == INPUT_TEXT.upper()
    [run] = result.terminals
    assert (run.command, run.output, run.exit_code, run.owner) == (
        "echo terminal works",
        "terminal works\n",
        0,
        "client",
    )
    asked = [
        (ask.subject, ask.command or ask.tool_call.tool_call_id, ask.option_kind)
        for ask in result.permissions
    ]
    assert asked == [
        ("tool_call", "edit-1", "allow_once"),
        ("command", "echo terminal works", "allow_once"),  # the policy decides the command too
    ]
