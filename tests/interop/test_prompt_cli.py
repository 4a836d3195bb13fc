"""``acpio prompt`` drives agents written with the official SDKs (issue 5 §5, pairing 6).

``acpio prompt --agent CMD TEXT`` spawns the agent, opens a session in ``--cwd``, sends one prompt and shows
the turn. Against the TypeScript SDK agent (and the official Python SDK agent) the tests check what a user
sees: the rendered turn in plain text, the ``--json`` message log, a refused permission, and Ctrl-C
cancelling the turn with ``session/cancel``.
"""

from __future__ import annotations

import asyncio
import json
import shlex
import signal
import sys
from pathlib import Path
from typing import Any

import pytest

from ._support import INPUT_TEXT, PEER_PROMPT, PEER_WAIT, PY_AGENT, TS_AGENT, run_program

#: Bound on waiting for one line of ``acpio prompt``'s output in the Ctrl-C test.
LINE_TIMEOUT = 30.0


def acpio_prompt(agent: list[str], workdir: Path, *options: str) -> list[str]:
    """The command line of ``acpio prompt`` on ``agent`` in ``workdir``."""
    return [
        sys.executable,
        "-m",
        "acpio",
        "prompt",
        "--agent",
        shlex.join(agent),
        "--cwd",
        str(workdir),
        *options,
    ]


def json_lines(stdout: str) -> list[dict[str, Any]]:
    """``acpio prompt --json`` output: one ``{"direction", "message"}`` object per line."""
    return [json.loads(line) for line in stdout.splitlines() if line.strip()]


@pytest.mark.parametrize("which", ["ts", "py"], ids=["typescript-sdk-agent", "official-python-agent"])
def test_acpio_prompt_renders_the_agent_turn(
    request: pytest.FixtureRequest, which: str, workdir: Path
) -> None:
    if which == "ts":
        agent = [request.getfixturevalue("node"), str(TS_AGENT)]
    else:
        agent = [request.getfixturevalue("official_python"), str(PY_AGENT)]
    done = run_program(acpio_prompt(agent, workdir, "--allow", "--no-color", PEER_PROMPT))

    why = f"exit {done.returncode}\nstdout:\n{done.stdout}\nstderr:\n{done.stderr}"
    assert done.returncode == 0, why
    lines = done.stdout.splitlines()
    assert lines[0] == PEER_PROMPT, why
    out = done.stdout
    assert "Copy input.txt to output.txt in upper case" in out, why
    assert "allow-once" in out, why
    # The diff of the written file, as the agent reported it.
    assert f"+++ {workdir / 'output.txt'}" in out, why
    for written in INPUT_TEXT.upper().splitlines():
        assert f"+{written}" in out, why
    # The terminal's output, and the agent's closing words, then the stop reason.
    assert "terminal works" in out, why
    closing = f"done: read {len(INPUT_TEXT)} chars, wrote output.txt, terminal said: terminal works (exit 0)"
    assert closing in out, why
    assert "end_turn" in lines[-1], why
    assert (workdir / "output.txt").read_text() == INPUT_TEXT.upper(), why
    assert "\x1b[" not in out, why


def test_acpio_prompt_json_logs_every_message(node: str, workdir: Path) -> None:
    done = run_program(acpio_prompt([node, str(TS_AGENT)], workdir, "--allow", "--json", PEER_PROMPT))

    why = f"exit {done.returncode}\nstdout:\n{done.stdout[-6000:]}\nstderr:\n{done.stderr}"
    assert done.returncode == 0, why
    entries = json_lines(done.stdout)
    assert {entry["direction"] for entry in entries} == {"send", "recv"}, why
    sent = [entry["message"] for entry in entries if entry["direction"] == "send"]
    received = [entry["message"] for entry in entries if entry["direction"] == "recv"]
    assert [message.get("method") for message in sent if "method" in message] == [
        "initialize",
        "session/new",
        "session/prompt",
    ], why
    agent_requests = [message["method"] for message in received if "method" in message and "id" in message]
    assert agent_requests == [
        "session/request_permission",
        "fs/read_text_file",
        "fs/write_text_file",
        "terminal/create",
        "terminal/wait_for_exit",
        "terminal/output",
        "terminal/release",
    ], why
    # The TypeScript SDK numbers its requests from 0; acpio answers each by its id, in order.
    answers = [message for message in sent if "method" not in message]
    assert [answer["id"] for answer in answers] == list(range(len(agent_requests))), why
    assert answers[0]["result"] == {"outcome": {"outcome": "selected", "optionId": "allow-once"}}, why
    assert answers[1]["result"] == {"content": INPUT_TEXT}, why
    prompt_id = next(message["id"] for message in sent if message.get("method") == "session/prompt")
    (end,) = [message for message in received if "method" not in message and message["id"] == prompt_id]
    assert end["result"] == {"stopReason": "end_turn"}, why


def test_acpio_prompt_deny_refuses_the_permission(node: str, workdir: Path) -> None:
    done = run_program(acpio_prompt([node, str(TS_AGENT)], workdir, "--deny", "--no-color", PEER_PROMPT))

    why = f"exit {done.returncode}\nstdout:\n{done.stdout}\nstderr:\n{done.stderr}"
    assert done.returncode == 0, why
    assert "permission denied" in done.stdout, why
    assert "terminal works" not in done.stdout, why
    assert not (workdir / "output.txt").exists(), why


async def test_acpio_prompt_ctrl_c_cancels_the_turn(node: str, workdir: Path) -> None:
    argv = acpio_prompt([node, str(TS_AGENT)], workdir, "--allow", "--json", PEER_WAIT)
    process = await asyncio.create_subprocess_exec(
        *argv,
        stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    assert process.stdout is not None
    assert process.stderr is not None
    seen: list[dict[str, Any]] = []
    try:
        # Wait for the agent's first chunk: the turn is running, the agent waits to be cancelled.
        while not any(entry["message"].get("method") == "session/update" for entry in seen):
            line = await asyncio.wait_for(process.stdout.readline(), LINE_TIMEOUT)
            assert line, f"acpio prompt ended before the turn started: {seen}"
            seen.append(json.loads(line))
        process.send_signal(signal.SIGINT)
        rest, stderr = await asyncio.wait_for(process.communicate(), LINE_TIMEOUT)
    finally:
        if process.returncode is None:
            process.kill()
            await process.wait()

    seen += json_lines(rest.decode())
    why = f"exit {process.returncode}\nmessages: {seen}\nstderr: {stderr.decode()}"
    assert process.returncode == 130, why
    sent = [entry["message"] for entry in seen if entry["direction"] == "send"]
    assert any(message.get("method") == "session/cancel" for message in sent), why
    prompt_id = next(message["id"] for message in sent if message.get("method") == "session/prompt")
    received = [entry["message"] for entry in seen if entry["direction"] == "recv"]
    (end,) = [message for message in received if "method" not in message and message["id"] == prompt_id]
    assert end["result"] == {"stopReason": "cancelled"}, why
