"""The reference agent (``acpio agent --offline``) under the official TypeScript SDK client, the official
Python SDK client and acpx: each completes a turn (a file read, an edit with a permission, a command in a
real terminal) and continues the session in a second process, from the SQLite store."""

from __future__ import annotations

import os
import shlex
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from ._support import (
    PY_CLIENT,
    TS_CLIENT,
    client_argv,
    context,
    message_text,
    requests_of,
    run_client,
    run_program,
    updates_of,
)
from .test_acpx import answer_to, frames_of, requests_named

#: Slow (real processes end to end): run first, so that no worker is left with them at the end.
pytestmark = pytest.mark.slow

NOTES = "# Notes\n- buy milk\n"
TURN = "\n".join(
    [
        "think reading first",
        "read notes.txt",
        "edit notes.txt: - buy milk => - buy milk\\n- try acpio",
        "run echo terminal works",
        "say edited",
    ]
)
AGAIN = "read notes.txt\nsay continued"


def agent_command(workdir: Path) -> list[str]:
    """The reference agent with its offline model, its store and credentials beside the work directory."""
    state = workdir.parent
    return [
        sys.executable, "-m", "acpio", "agent", "--offline",
        "--store", f"sqlite:///{state / 'sessions.db'}", "--credentials", str(state / "credentials.json"),
    ]  # fmt: skip


def wait_until_no_process_mentions(marker: str, limit: float = 20.0) -> None:
    """Wait (bounded) until no process has ``marker`` in its command line."""
    deadline = time.monotonic() + limit
    while time.monotonic() < deadline:
        alive = []
        for entry in Path("/proc").iterdir():
            try:
                if entry.name.isdigit() and marker.encode() in (entry / "cmdline").read_bytes():
                    alive.append(entry.name)
            except OSError:
                continue
        if not alive:
            return
        time.sleep(0.2)
    raise AssertionError(f"processes still running with {marker} after {limit} s")


def complaints(summary: dict[str, Any]) -> list[str]:
    """What the SDK complained of, but the slash commands the agent offers right after session/new
    (the peer clients record any update outside a turn, which the spec allows for this one)."""
    return [
        error
        for error in summary["sdkErrors"]
        if not (error.startswith("session/update outside a turn") and "available_commands_update" in error)
    ]


def peer(request: pytest.FixtureRequest, which: str) -> list[str]:
    if which == "ts":
        return [request.getfixturevalue("node"), str(TS_CLIENT)]
    return [request.getfixturevalue("official_python"), str(PY_CLIENT)]


@pytest.mark.parametrize("which", ["ts", "py"])
def test_an_sdk_client_completes_a_turn_and_continues_the_session(
    request: pytest.FixtureRequest, which: str, workdir: Path
) -> None:
    (workdir / "notes.txt").write_text(NOTES)
    client = peer(request, which)
    first = run_client(
        client_argv(client, workdir, agent_command(workdir), prompts=[TURN], cancel_prompt=None)
    )
    assert first["fatal"] is None, context(first)
    assert complaints(first) == [], context(first)
    assert first["initialize"]["agentCapabilities"]["loadSession"] is True, context(first)
    [turn] = first["turns"]
    assert turn["stopReason"] == "end_turn", context(first)
    assert (workdir / "notes.txt").read_text() == "# Notes\n- buy milk\n- try acpio\n", context(first)
    permissions = requests_of(first, "session/request_permission")  # the edit, the command
    assert [p["params"]["toolCall"]["title"] for p in permissions] == [
        "Edit notes.txt",
        "Run `echo terminal works`",
    ]
    assert all(p["answer"]["outcome"] == "selected" for p in permissions), context(first)
    assert [r["method"] for r in first["requests"]][:2] == ["fs/read_text_file", "fs/read_text_file"]
    assert "- run_command: terminal works" in message_text(turn), context(first)
    diffs = [
        c for u in updates_of(turn, "tool_call_update") for c in u.get("content") or () if c["type"] == "diff"
    ]
    assert diffs[0]["newText"] == "# Notes\n- buy milk\n- try acpio\n", context(first)

    session = first["newSession"]["sessionId"]
    argv = client_argv(client, workdir, agent_command(workdir), prompts=[AGAIN], cancel_prompt=None)
    second = run_client([*argv[: len(client)], "--load", session, *argv[len(client) :]])
    assert second["fatal"] is None, context(second)
    assert complaints(second) == [], context(second)
    assert "loadSession" in second, context(second)
    replayed = [u["sessionUpdate"] for u in second["replay"]]
    assert "user_message_chunk" in replayed, context(second)
    assert "tool_call" in replayed, context(second)
    [again] = second["turns"]
    assert again["stopReason"] == "end_turn", context(second)
    assert message_text(again).endswith("continued\nDone. Tool results:\n- read_file: # Notes"), context(
        second
    )


def test_acpx_completes_a_turn_and_continues_the_session(acpx: list[str], workdir: Path) -> None:
    (workdir / "notes.txt").write_text(NOTES)
    home = workdir.parent / "home"
    home.mkdir()
    env = {**os.environ, "HOME": str(home)}
    base = [*acpx, "--agent", shlex.join(agent_command(workdir)), "--cwd", str(workdir), "--approve-all"]
    base += ["--ttl", "0.5", "--format", "json"]

    def run(*words: str) -> list[dict[str, Any]]:
        done = run_program([*base, *words], cwd=workdir, env=env)
        assert done.returncode == 0, (
            f"acpx exit {done.returncode}\n{done.stdout[-4000:]}\n{done.stderr[-4000:]}"
        )
        return frames_of(done.stdout)

    run("sessions", "new")
    first = run("prompt", TURN)
    [prompt] = requests_named(first, "session/prompt")
    assert answer_to(first, prompt)["result"]["stopReason"] == "end_turn", first
    assert (workdir / "notes.txt").read_text() == "# Notes\n- buy milk\n- try acpio\n"
    assert requests_named(first, "session/request_permission"), first

    # acpx's queue owner keeps the agent for --ttl after a prompt: the next run must find it gone
    wait_until_no_process_mentions(str(workdir.parent / "sessions.db"))
    second = run("prompt", AGAIN)  # a new agent process: acpx resumes the stored session
    [resume] = requests_named(second, "session/resume")
    assert resume["params"]["sessionId"] == prompt["params"]["sessionId"]
    assert "result" in answer_to(second, resume), second
    [prompt] = requests_named(second, "session/prompt")
    assert answer_to(second, prompt)["result"]["stopReason"] == "end_turn", second
    text = "".join(
        f["params"]["update"]["content"]["text"]
        for f in second
        if f.get("method") == "session/update"
        and f["params"]["update"]["sessionUpdate"] == "agent_message_chunk"
    )
    assert text.endswith("continued\nDone. Tool results:\n- read_file: # Notes")
