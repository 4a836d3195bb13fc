"""``acpio prompt -i`` without a terminal: prompts read line by line, acpio's ``:`` commands, the end."""

from __future__ import annotations

import asyncio
import io
import json
import os
from pathlib import Path

import pytest

from acpio.oneshot import ExitCode, LineInput, PromptOptions, run_prompt
from acpio.oneshot.interactive import PipeReader

testy = pytest.importorskip(
    "acpio.agents.testy", reason="the testy agent (acpio.agents.testy) is not available"
)


async def converse(tmp_path: Path, first: str, typed: str) -> tuple[int, str, str]:
    read_end, write_end = os.pipe()
    os.write(write_end, typed.encode())
    os.close(write_end)
    out, err = io.StringIO(), io.StringIO()
    lines = LineInput(read_end, name="typed", owned=True)
    try:
        options = PromptOptions(agent=testy.testy_agent(), prompt=first, cwd=tmp_path, interactive=True)
        async with asyncio.timeout(30):
            code = await run_prompt(
                options, stdout=out, stderr=err, handle_sigint=False, lines=PipeReader(lines, out)
            )
    finally:
        lines.close()
    return code, out.getvalue(), err.getvalue()


async def test_a_conversation_of_several_turns_in_one_session(tmp_path: Path) -> None:
    code, out, err = await converse(tmp_path, "echo one", "echo two\n\nusage\n")
    assert code == ExitCode.OK
    assert out.splitlines() == [
        "one",
        "[stop reason: end_turn]",
        "you> two",
        "[stop reason: end_turn]",
        # one session: its history holds both turns before (echo one, one, echo two, two, usage)
        "you> you> [usage: 7 of 200000 tokens]",
        "[stop reason: end_turn]",
        "you> ",
    ]
    assert err.count("acpio: session testy-1") == 1


async def test_modes_and_options_are_switched_with_acpio_commands(tmp_path: Path) -> None:
    typed = ":mode plan\n:modes\n:mode nope\n:option verbosity brief\n:option shout on\n:options\n:bogus\n"
    typed += ":quit\necho never\n"
    code, out, err = await converse(tmp_path, "", typed)
    assert code == ExitCode.OK
    notes = [line for line in err.splitlines() if not line.startswith("acpio: session")]
    assert notes[:6] == [
        "acpio: mode: plan",
        "acpio: modes: chat, plan (now plan)",
        "acpio: mode 'nope': the agent's modes are chat, plan",
        "acpio: option verbosity: brief",
        "acpio: option shout: on",
        "acpio: options: verbosity=brief, shout=on",
    ]
    assert notes[6].startswith("acpio: acpio's commands: :mode ID")
    assert "never" not in out  # :quit ended it
    assert "[stop reason" not in out  # no prompt was sent: no turn


async def test_with_json_output_stdout_holds_only_the_messages(tmp_path: Path) -> None:
    read_end, write_end = os.pipe()
    os.write(write_end, b"echo two\n")
    os.close(write_end)
    out, err = io.StringIO(), io.StringIO()
    lines = LineInput(read_end, name="typed", owned=True)
    try:
        options = PromptOptions(
            agent=testy.testy_agent(), prompt="echo one", cwd=tmp_path, interactive=True, output="json"
        )
        async with asyncio.timeout(30):
            code = await run_prompt(
                options, stdout=out, stderr=err, handle_sigint=False, lines=PipeReader(lines, err)
            )
    finally:
        lines.close()
    assert code == ExitCode.OK
    messages = [json.loads(line) for line in out.getvalue().splitlines()]  # every line is JSON
    prompts = [m["message"] for m in messages if m["message"].get("method") == "session/prompt"]
    assert [p["params"]["prompt"][0]["text"] for p in prompts] == ["echo one", "echo two"]
    assert err.getvalue().count("you> ") == 2


async def test_a_turn_the_agent_answers_with_an_error_is_told_and_the_conversation_goes_on(
    tmp_path: Path,
) -> None:
    code, out, err = await converse(tmp_path, "fail -32603 it broke", "echo still here\n")
    assert err.splitlines()[1:] == [
        "acpio: error: The agent answered session/prompt with an error: -32603 it broke "
        "(the conversation goes on; it will exit with 4)"
    ]
    assert out.splitlines() == ["you> still here", "[stop reason: end_turn]", "you> "]
    assert code == ExitCode.AGENT_ERROR  # a script feeding the prompts learns that one failed
