"""``acpio prompt`` end to end: the real command against ``acpio testy``, both as processes.

Covers a full turn rendered as plain text, the same with ``--json`` parsed back message by message,
reads refused outside ``--cwd``, writes inside it, ``--deny`` and ``--ask`` (answered on stdin),
failing terminal commands, Ctrl-C (SIGINT) once and twice, and the mistakes a user can make.
"""

from __future__ import annotations

import asyncio
import os
import shlex
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from ._support import until

pytest.importorskip("acpio.agents.testy", reason="the testy agent (acpio.agents.testy) is not available")

TESTY = shlex.join([sys.executable, "-m", "acpio", "testy"])
TIMEOUT = 60


def environment() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("ACPIO_AGENT", "NO_COLOR")}
    env["PYTHONUNBUFFERED"] = "1"
    return env


def prompt(
    cwd: Path, *args: str, agent: str | None = TESTY, stdin: str = ""
) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "acpio", "prompt"]
    if agent is not None:
        command += ["--agent", agent]
    return subprocess.run(
        [*command, *args],
        cwd=cwd,
        input=stdin,
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
        env=environment(),
        check=False,
    )


def script(*lines: str) -> str:
    return "\n".join(lines)


def json_lines(done: subprocess.CompletedProcess[str]) -> list[dict[str, Any]]:
    import json

    return [json.loads(line) for line in done.stdout.splitlines()]


def one_error_line(done: subprocess.CompletedProcess[str]) -> str:
    assert "Traceback" not in done.stderr, done.stderr
    lines = done.stderr.splitlines()
    assert len(lines) == 1, done.stderr
    assert lines[0].startswith("acpio: error: "), done.stderr
    return lines[0]


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "project"
    root.mkdir()
    (root / "notes.txt").write_text("first note\nsecond note\n")
    (tmp_path / "secret.txt").write_text("top secret\n")
    return root


# --- a whole turn ----------------------------------------------------------------------------------


def test_a_full_turn_rendered_as_plain_text(project: Path) -> None:
    done = prompt(
        project,
        script(
            "think Let me look",
            "plan Read; Edit",
            "echo Reading now",
            "read notes.txt",
            "progress 1",
            "tool Check things",
            "echo All done",
        ),
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout == (
        "(thinking) Let me look\n"
        "Plan:\n"
        "  [ ] Read\n"
        "  [ ] Edit\n"
        "Reading now\n"
        "[in progress] Read notes.txt (read)\n"
        "[completed] Read notes.txt (read)\n"
        "    first note\n"
        "    second note\n"
        "Plan:\n"
        "  [x] Read\n"
        "  [>] Edit\n"
        "[pending] Check things\n"
        "[in progress] Check things\n"
        "[completed] Check things\n"
        "    Check things: done\n"
        "All done\n"
        "[stop reason: end_turn]\n"
    )
    assert done.stderr == "acpio: session testy-1 (it ends with the agent's process)\n"  # testy in memory


def test_json_prints_every_message_both_ways_in_order(project: Path) -> None:
    text = script("echo hi", "read notes.txt")
    done = prompt(project, "--json", text)
    assert done.returncode == 0, done.stderr
    lines = json_lines(done)
    assert all(set(line) == {"direction", "message"} for line in lines)
    messages = [(line["direction"], line["message"]) for line in lines]

    direction, initialize = messages[0]
    assert direction == "send"
    assert initialize["method"] == "initialize"
    capabilities = initialize["params"]["clientCapabilities"]
    assert capabilities == {
        "fs": {"readTextFile": True, "writeTextFile": True},
        "terminal": True,
        "session": {"notices": {}, "compaction": {}, "configOptions": {"boolean": {}}},
        "auth": {"terminal": True},  # the agent is a command acpio can run again for a terminal login
    }  # no elicitation: piped, with no --answer, --urls or --decline-elicitations, nobody could answer
    assert messages[1] == ("recv", messages[1][1])
    assert messages[1][1]["id"] == initialize["id"]
    assert messages[1][1]["result"]["protocolVersion"] == 1

    direction, new = messages[2]
    assert (direction, new["method"]) == ("send", "session/new")
    assert new["params"] == {"cwd": str(project.resolve()), "mcpServers": []}
    assert messages[3][0] == "recv"
    assert messages[3][1]["result"]["sessionId"] == "testy-1"

    direction, sent_prompt = messages[4]
    assert (direction, sent_prompt["method"]) == ("send", "session/prompt")
    assert sent_prompt["params"] == {"sessionId": "testy-1", "prompt": [{"type": "text", "text": text}]}

    turn = messages[5:]
    kinds = [
        message["params"]["update"]["sessionUpdate"]
        if message.get("method") == "session/update"
        else message.get("method") or ("answer" if direction == "send" else "prompt answer")
        for direction, message in turn
    ]
    assert kinds == [
        "agent_message_chunk",
        "agent_message_chunk",
        "tool_call",
        "fs/read_text_file",
        "answer",
        "tool_call_update",
        "prompt answer",
    ]
    read_request, read_answer = turn[3][1], turn[4][1]
    assert turn[3][0] == "recv"
    assert turn[4][0] == "send"
    assert read_request["params"]["path"] == str(project.resolve() / "notes.txt")
    assert read_answer == {
        "jsonrpc": "2.0",
        "id": read_request["id"],
        "result": {"content": "first note\nsecond note\n"},
    }
    assert turn[-1] == (
        "recv",
        {"jsonrpc": "2.0", "id": sent_prompt["id"], "result": {"stopReason": "end_turn"}},
    )


def test_a_read_outside_cwd_is_refused_with_an_error_the_agent_sees(project: Path) -> None:
    secret = project.parent / "secret.txt"
    done = prompt(project, "--json", script(f"read {secret}", "read ../secret.txt", "echo still here"))
    assert done.returncode == 0, done.stderr
    messages = [line["message"] for line in json_lines(done)]
    errors = [m["error"] for m in messages if "error" in m]
    assert len(errors) == 2
    for error in errors:
        assert error["code"] == -32602
        assert str(secret) in error["message"]
        assert str(project.resolve()) in error["message"]
    failed = [
        m["params"]["update"]
        for m in messages
        if m.get("method") == "session/update" and m["params"]["update"].get("status") == "failed"
    ]
    assert len(failed) == 2
    assert "top secret" not in done.stdout
    assert any("still here" in str(m) for m in messages)


def test_the_refusal_is_shown_in_plain_text_too(project: Path) -> None:
    done = prompt(project, "read ../secret.txt")
    assert done.returncode == 0, done.stderr
    secret = project.resolve().parent / "secret.txt"
    assert (
        f"[fs/read_text_file failed] Refused to read {secret}: it is outside {project.resolve()}"
        in done.stdout
    )
    assert "[failed] Read ../secret.txt (read)" in done.stdout
    assert "top secret" not in done.stdout


def test_a_write_inside_cwd_changes_the_file_and_shows_the_diff(project: Path) -> None:
    done = prompt(project, "write notes.txt first note\\nchanged note\\n")
    assert done.returncode == 0, done.stderr
    assert (project / "notes.txt").read_text() == "first note\nchanged note\n"
    assert "-second note\n" in done.stdout.replace("    ", "")
    assert "+changed note\n" in done.stdout.replace("    ", "")


def test_deny_refuses_the_permission(project: Path) -> None:
    done = prompt(project, "--deny", "--json", script("permission Delete files", "echo not reached"))
    assert done.returncode == 0, done.stderr
    messages = [(line["direction"], line["message"]) for line in json_lines(done)]
    request_id = next(m["id"] for d, m in messages if m.get("method") == "session/request_permission")
    answer = next(m for d, m in messages if d == "send" and m.get("id") == request_id and "result" in m)
    assert answer["result"] == {"outcome": {"outcome": "selected", "optionId": "reject-once"}}
    said = "".join(
        m["params"]["update"]["content"]["text"]
        for d, m in messages
        if m.get("method") == "session/update"
        and m["params"]["update"]["sessionUpdate"] == "agent_message_chunk"
    )
    assert said == "permission: reject-once\nPermission denied: stopping.\n"


def test_deny_in_plain_text(project: Path) -> None:
    done = prompt(project, "--deny", script("permission Delete files", "echo not reached"))
    assert "[permission] Delete files: Reject (reject-once)" in done.stdout
    assert "Permission denied: stopping." in done.stdout
    assert "not reached" not in done.stdout


def test_ask_takes_the_answer_from_stdin(project: Path) -> None:
    done = prompt(project, "--ask", script("permission Edit notes", "echo went ahead"), stdin="nonsense\n1\n")
    assert done.returncode == 0, done.stderr
    assert "The agent asks for permission: Edit notes (edit)" in done.stderr
    assert "'nonsense' is not one of the choices." in done.stderr
    assert "[permission] Edit notes: Allow once (allow-once)" in done.stdout
    assert "permission: allow-once" in done.stdout
    assert "went ahead" in done.stdout


@pytest.mark.parametrize(
    ("command", "status"), [("false", "exit status 1"), ('sh -c "echo failing; exit 3"', "exit status 3")]
)
def test_a_failing_terminal_command(project: Path, command: str, status: str) -> None:
    done = prompt(project, "--allow", f"run {command}")
    assert done.returncode == 0, done.stderr
    assert status in done.stdout  # testy's report of terminal/wait_for_exit
    title = shlex.join(shlex.split(command))
    assert f"[failed] {title} (execute)" in done.stdout
    assert f"    [{status}]" in done.stdout  # the client's own view of the terminal


def test_a_terminal_command_runs_in_cwd(project: Path) -> None:
    done = prompt(project, "--allow", "run pwd")
    assert done.returncode == 0, done.stderr
    assert f"    {project.resolve()}\n" in done.stdout
    assert "[completed] pwd (execute)" in done.stdout


def test_prompt_text_from_stdin(project: Path) -> None:
    done = prompt(project, "-", stdin="echo from stdin\n")
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("from stdin\n")


# --- Ctrl-C --------------------------------------------------------------------------------------------


async def start(cwd: Path, *args: str) -> asyncio.subprocess.Process:
    return await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "acpio",
        "prompt",
        *args,
        cwd=cwd,
        stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        env=environment(),
    )


async def wait_for_line(stream: asyncio.StreamReader | None, wanted: str) -> None:
    assert stream is not None
    async with asyncio.timeout(TIMEOUT):
        while True:
            line = (await stream.readline()).decode()
            assert line, f"the output ended before {wanted!r}"
            if wanted in line:
                return


async def test_sigint_cancels_the_turn_and_exits_130(project: Path) -> None:
    process = await start(project, "--agent", TESTY, script("echo started", "sleep 30", "echo never"))
    try:
        await wait_for_line(process.stdout, "started")
        began = time.monotonic()
        process.send_signal(signal.SIGINT)
        async with asyncio.timeout(TIMEOUT):
            out, err = await process.communicate()
        elapsed = time.monotonic() - began
    finally:
        if process.returncode is None:
            process.kill()
            await process.wait()
    assert process.returncode == 130, err.decode()
    assert elapsed < 10  # far less than the 30 s sleep: the turn was cancelled, not waited out
    assert out.decode().endswith("[stop reason: cancelled]\n")
    assert "never" not in out.decode()
    assert "acpio: cancelling the turn (press Ctrl-C again to stop at once)" in err.decode()
    assert "Traceback" not in err.decode()


async def test_sigint_during_a_command_cancels_the_turn_and_ends_the_command(project: Path) -> None:
    pid_file = project / "command.pid"
    process = await start(
        project, "--agent", TESTY, "--allow", f"run sh -c 'echo $$ > {pid_file}; exec sleep 30'"
    )
    try:
        await until(lambda: pid_file.exists() and bool(pid_file.read_text().strip()))
        command_pid = int(pid_file.read_text())
        process.send_signal(signal.SIGINT)
        async with asyncio.timeout(TIMEOUT):
            out, _ = await process.communicate()
    finally:
        if process.returncode is None:
            process.kill()
            await process.wait()
    assert process.returncode == 130
    assert "[cancelled] sh -c" in out.decode()
    with pytest.raises(ProcessLookupError):
        os.kill(command_pid, 0)


# An agent that ignores session/cancel, the end of its stdin and SIGTERM, and says so in its log:
# only SIGKILL ends it, and only an ``acpio prompt`` that killed it at once leaves its log clean.
STUBBORN_AGENT = """
import asyncio, os, signal, sys, time
from acpio import Agent
from acpio import schema as acp
from acpio.transports import Stdio

app = Agent.builder(name="stubborn")
kept = []

@app.on_request
async def initialize(req: acp.InitializeRequest) -> acp.InitializeResponse:
    return acp.InitializeResponse(protocol_version=1)

@app.on_request
async def new_session(req: acp.NewSessionRequest) -> acp.NewSessionResponse:
    return acp.NewSessionResponse(session_id="stubborn-1")

@app.on_request
async def prompt(req: acp.PromptRequest, responder, cx) -> None:
    kept.append(responder)  # never answered, cancelled or not
    chunk = acp.AgentMessageChunk(content=acp.TextContent(text="working\\n"))
    cx.send_notification(acp.SessionNotification(session_id=req.session_id, update=chunk))

@app.on_notification
async def cancel(note: acp.CancelNotification) -> None:
    with open(sys.argv[1], "a") as log:
        log.write("cancel ignored\\n")

def note(text):
    with open(sys.argv[1], "a") as log:
        log.write(text + "\\n")

signal.signal(signal.SIGTERM, lambda *_: note("SIGTERM ignored"))
note(str(os.getpid()))
asyncio.run(app.serve(Stdio()))
note("stdin closed, staying")
while True:
    time.sleep(1)
"""


async def test_a_second_sigint_stops_at_once_and_kills_the_agent(project: Path, tmp_path: Path) -> None:
    agent_script, agent_log = tmp_path / "stubborn.py", tmp_path / "stubborn.log"
    agent_script.write_text(STUBBORN_AGENT)
    agent = shlex.join([sys.executable, str(agent_script), str(agent_log)])
    process = await start(project, "--agent", agent, "do something")
    try:
        await wait_for_line(process.stdout, "working")
        agent_pid = int(agent_log.read_text().split()[0])
        process.send_signal(signal.SIGINT)
        await wait_for_line(process.stderr, "cancelling the turn")
        await until(lambda: "cancel ignored" in agent_log.read_text())
        assert process.returncode is None  # the agent ignores the cancellation: still waiting
        began = time.monotonic()
        process.send_signal(signal.SIGINT)
        async with asyncio.timeout(TIMEOUT):
            _, err = await process.communicate()
        elapsed = time.monotonic() - began
    finally:
        if process.returncode is None:
            process.kill()
            await process.wait()
    assert process.returncode == 130
    assert elapsed < 10
    assert agent_log.read_text().splitlines()[1:] == ["cancel ignored"]  # SIGKILL, not a polite close
    assert "acpio: stopped: the agent was killed" in err.decode()
    assert "Traceback" not in err.decode()
    with pytest.raises(ProcessLookupError):
        os.kill(agent_pid, 0)


# --- mistakes ----------------------------------------------------------------------------------------------


def test_missing_agent_is_one_line(project: Path) -> None:
    done = prompt(project, "hello", agent=None)
    assert done.returncode == 2
    assert "--agent" in one_error_line(done)


def test_agent_command_not_found_is_one_line(project: Path) -> None:
    done = prompt(project, "hello", agent="no-such-agent-for-acpio --flag")
    assert done.returncode == 3
    assert "'no-such-agent-for-acpio': command not found" in one_error_line(done)


def test_a_proxy_that_cannot_start_is_exit_code_3_naming_it(project: Path) -> None:
    done = prompt(project, "--proxy", "no-such-proxy-for-acpio", "hello")
    assert done.returncode == 3, done.stderr
    assert "Traceback" not in done.stderr
    error = done.stderr.splitlines()[-1]
    assert error.startswith("acpio: error: Cannot start the proxy 'no-such-proxy-for-acpio' (Proxy(0))")
    assert "command not found" in error


def test_missing_prompt_and_missing_cwd_are_one_line(project: Path) -> None:
    done = prompt(project)
    assert done.returncode == 2
    assert "no prompt" in one_error_line(done)
    done = prompt(project, "--cwd", "does/not/exist", "hi")
    assert done.returncode == 2
    assert "does/not/exist" in one_error_line(done)


def test_an_unparsable_agent_command_is_one_line(project: Path) -> None:
    done = prompt(project, "hi", agent="python 'unclosed")
    assert done.returncode == 2
    assert "--agent" in one_error_line(done)


def test_an_agent_that_exits_early_shows_its_stderr(project: Path) -> None:
    dying = shlex.join(
        [sys.executable, "-c", "import sys; sys.stderr.write('fatal: no API key set\\n'); sys.exit(3)"]
    )
    done = prompt(project, "hello", agent=dying)
    assert done.returncode == 3
    assert "Traceback" not in done.stderr
    first, *rest = done.stderr.splitlines()
    assert first.startswith("acpio: error: The agent ")
    assert "exited with exit code 3" in first
    assert rest == ["  | fatal: no API key set"]


def test_a_session_the_agent_does_not_know_is_one_line(project: Path) -> None:
    done = prompt(project, "--session", "testy-41", "hello")
    assert done.returncode == 4
    line = one_error_line(done)
    assert "session/load" in line
    assert "testy-41" in line


def test_no_continue_hint_for_an_agent_that_can_neither_load_nor_resume(project: Path) -> None:
    """Following the hint gave exit 2 'cannot continue session': it is offered only when it works."""
    agent = f"{TESTY} --no-load-session --no-session-resume"
    done = prompt(project, "hello", agent=agent)
    assert done.returncode == 0, done.stderr
    assert done.stderr == "acpio: session testy-1\n"


def test_no_agent_says_how_to_give_one(project: Path) -> None:
    """``acpio prompt -- my-agent "text"`` made the command part of the prompt: the error shows the form."""
    done = prompt(project, "--", "python", "my_agent.py", "hello", agent=None)
    assert done.returncode == 2
    assert "--agent 'python my_agent.py'" in done.stderr
    assert "the other words are the prompt" in done.stderr
