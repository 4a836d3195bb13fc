"""run_prompt against testy served in-process: session load and resume, stop reasons, agent errors.

One testy builder keeps its sessions across connections, so a second run can continue the session
the first one created (as two ``acpio prompt`` calls would with an agent that persists sessions).
"""

from __future__ import annotations

import asyncio
import io
import json
import os
from pathlib import Path
from typing import Any

import pytest

from acpio.oneshot import (
    ExitCode,
    LineInput,
    OutputMode,
    PolicyName,
    PromptFailed,
    PromptOptions,
    opening,
    run_prompt,
)

testy = pytest.importorskip(
    "acpio.agents.testy", reason="the testy agent (acpio.agents.testy) is not available"
)


@pytest.fixture
def real(tmp_path: Path) -> Path:
    """``tmp_path`` with symbolic links resolved, as the session's cwd is sent."""
    return tmp_path.resolve()


class Run:
    """The outcome of one run_prompt call: exit code, stdout and stderr."""

    def __init__(self, code: int, out: str, err: str) -> None:
        self.code = code
        self.out = out
        self.err = err

    def messages(self) -> list[dict[str, Any]]:
        return [json.loads(line) for line in self.out.splitlines()]


async def run(
    agent: Any,
    prompt: str,
    cwd: Path,
    *,
    session_id: str | None = None,
    output: OutputMode = "plain",
    permissions: PolicyName = "deny",
    answers: LineInput | None = None,
) -> Run:
    out, err = io.StringIO(), io.StringIO()
    options = PromptOptions(
        agent=agent, prompt=prompt, cwd=cwd, session_id=session_id, output=output, permissions=permissions
    )
    code = await run_prompt(options, stdout=out, stderr=err, answers=answers, handle_sigint=False)
    return Run(code, out.getvalue(), err.getvalue())


async def test_a_turn_ends_with_end_turn_and_names_the_session(tmp_path: Path) -> None:
    done = await run(testy.testy_agent(), "hello there", tmp_path)
    assert done.code == ExitCode.OK
    assert done.out == "hello there\n[stop reason: end_turn]\n"
    # testy keeps its sessions in memory: no --session hint (a later process would not find the session)
    assert "session testy-1 (it ends with the agent's process)" in done.err


async def test_the_session_hint_names_a_session_the_agent_keeps(tmp_path: Path) -> None:
    from acpio.store import SqliteStore

    done = await run(testy.testy_agent(store=SqliteStore(tmp_path / "s.db")), "hello there", tmp_path)
    assert done.code == ExitCode.OK
    assert "session testy-1 (continue it with --session testy-1)" in done.err


async def test_session_load_replays_the_history_dimmed_then_runs_the_turn(tmp_path: Path) -> None:
    agent = testy.testy_agent()
    first = await run(agent, "echo first answer", tmp_path)
    assert first.code == ExitCode.OK
    second = await run(agent, "echo second answer", tmp_path, session_id="testy-1")
    assert second.code == ExitCode.OK
    lines = second.out.splitlines()
    start, end = lines.index("--- history of session testy-1 ---"), lines.index("--- end of history ---")
    history = "\n".join(lines[start + 1 : end])
    assert "you> echo first answer" in history
    assert "first answer" in history.replace("you> echo first answer", "")
    assert "second answer" not in history
    assert lines[end + 1 :] == ["second answer", "[stop reason: end_turn]"]
    assert "session testy-1" in second.err


async def test_session_load_on_the_wire(tmp_path: Path, real: Path) -> None:
    agent = testy.testy_agent()
    await run(agent, "echo remembered", tmp_path)
    done = await run(agent, "echo again", tmp_path, session_id="testy-1", output="json")
    sent = [m["message"] for m in done.messages() if m["direction"] == "send" and "method" in m["message"]]
    assert [m["method"] for m in sent] == ["initialize", "session/load", "session/prompt"]
    assert sent[1]["params"] == {"sessionId": "testy-1", "cwd": str(real), "mcpServers": []}


async def test_without_load_session_the_session_is_resumed(tmp_path: Path) -> None:
    agent = testy.testy_agent(testy.TestyOptions(load_session=False))
    await run(agent, "echo one", tmp_path)
    done = await run(agent, "echo two", tmp_path, session_id="testy-1", output="json")
    methods = [m["message"].get("method") for m in done.messages() if m["direction"] == "send"]
    assert "session/resume" in methods
    assert "session/load" not in methods
    plain = await run(agent, "echo three", tmp_path, session_id="testy-1")
    assert plain.out == "three\n[stop reason: end_turn]\n"  # resume replays nothing


async def test_a_session_the_agent_cannot_continue_is_a_usage_error(tmp_path: Path) -> None:
    agent = testy.testy_agent(testy.TestyOptions(load_session=False, session_resume=False))
    with pytest.raises(PromptFailed) as caught:
        await run(agent, "hi", tmp_path, session_id="testy-1")
    assert caught.value.exit_code == ExitCode.USAGE
    assert "neither loadSession" in caught.value.message


async def test_an_unknown_session_is_the_agent_refusing(tmp_path: Path) -> None:
    with pytest.raises(PromptFailed) as caught:
        await run(testy.testy_agent(), "hi", tmp_path, session_id="nope-7")
    assert caught.value.exit_code == ExitCode.AGENT_ERROR
    assert "session/load" in caught.value.message
    assert "nope-7" in caught.value.message


@pytest.mark.parametrize("reason", ["max_tokens", "max_turn_requests", "refusal"])
async def test_other_stop_reasons_exit_with_stopped(tmp_path: Path, reason: str) -> None:
    done = await run(testy.testy_agent(), f"stop {reason}", tmp_path)
    assert done.code == ExitCode.STOPPED
    assert done.out.endswith(f"[stop reason: {reason}]\n")


async def test_an_error_answer_to_the_prompt_is_reported(tmp_path: Path) -> None:
    with pytest.raises(PromptFailed) as caught:
        await run(testy.testy_agent(), "fail -32050 quota exceeded", tmp_path)
    assert caught.value.exit_code == ExitCode.AGENT_ERROR
    assert "-32050 quota exceeded" in caught.value.message


async def test_an_agent_requiring_authentication_is_explained(tmp_path: Path) -> None:
    with pytest.raises(PromptFailed) as caught:
        await run(testy.testy_agent(testy.TestyOptions(auth=True)), "hi", tmp_path)
    assert caught.value.exit_code == ExitCode.AGENT_ERROR
    assert "authentication" in caught.value.message
    assert "testy-login" in caught.value.message


async def test_ask_reads_the_answer_and_sends_the_chosen_option(tmp_path: Path) -> None:
    read_end, write_end = os.pipe()
    try:
        os.write(write_end, b"allow-always\n")
        done = await run(
            testy.testy_agent(),
            "permission Touch the file\necho went on",
            tmp_path,
            permissions="ask",
            answers=LineInput(read_end, name="pipe"),
        )
    finally:
        os.close(read_end)
        os.close(write_end)
    assert "The agent asks for permission: Touch the file (edit)" in done.err
    assert "[permission] Touch the file: Allow always (allow-always)" in done.out
    assert "permission: allow-always" in done.out
    assert "went on" in done.out


async def test_rich_output_colours_the_turn(tmp_path: Path) -> None:
    (tmp_path / "f.txt").write_text("old\n")
    done = await run(testy.testy_agent(), "write f.txt new", tmp_path, output="rich")
    assert "\x1b[32m+new" in done.out
    assert "\x1b[31m-old" in done.out
    assert (tmp_path / "f.txt").read_text() == "new"


async def test_a_missing_cwd_is_a_usage_error(tmp_path: Path) -> None:
    with pytest.raises(PromptFailed) as caught:
        await run(testy.testy_agent(), "hi", tmp_path / "missing")
    assert caught.value.exit_code == ExitCode.USAGE


async def test_an_agent_refusing_initialize_is_reported(tmp_path: Path) -> None:
    from acpio import Agent
    from acpio.errors import InvalidParams
    from acpio.schema import InitializeRequest

    refusing = Agent.builder(name="refusing")

    @refusing.on_request(InitializeRequest)
    async def initialize(request: InitializeRequest) -> None:
        raise InvalidParams(message="this agent speaks to nobody")

    with pytest.raises(PromptFailed) as caught:
        await run(refusing, "hi", tmp_path)
    assert caught.value.exit_code == ExitCode.AGENT_ERROR
    assert caught.value.message == "The agent refused initialize: -32602 this agent speaks to nobody"


class ClosedPipe(io.StringIO):
    """Output whose reader went away after ``lines`` lines (``acpio prompt --json | head``)."""

    def __init__(self, lines: int) -> None:
        super().__init__()
        self.lines = lines

    def write(self, text: str) -> int:
        if self.getvalue().count("\n") >= self.lines:
            raise BrokenPipeError(32, "Broken pipe")
        return super().write(text)


async def test_json_output_that_cannot_be_written_ends_the_run_with_that_error(tmp_path: Path) -> None:
    out = ClosedPipe(lines=1)
    options = PromptOptions(agent=testy.testy_agent(), prompt="hello", cwd=tmp_path, output="json")
    with pytest.raises(BrokenPipeError):
        await run_prompt(options, stdout=out, stderr=io.StringIO(), handle_sigint=False)
    assert [json.loads(line)["message"]["method"] for line in out.getvalue().splitlines()] == ["initialize"]


def silent_agent() -> Any:
    """An in-process agent that takes ``initialize`` and never answers it."""
    from acpio import Agent
    from acpio.schema import InitializeRequest

    silent = Agent.builder(name="silent")

    @silent.on_request(InitializeRequest)
    async def initialize(request: InitializeRequest) -> None:
        await asyncio.Event().wait()

    return silent


async def wait_for_silence(
    monkeypatch: pytest.MonkeyPatch, note_after: float, init_timeout: float, cwd: Path
) -> tuple[PromptFailed, str]:
    """A prompt to :func:`silent_agent`, noting the wait after ``note_after`` s: the failure, the stderr."""
    monkeypatch.setattr(opening, "STILL_WAITING_AFTER", note_after)
    err = io.StringIO()
    options = PromptOptions(agent=silent_agent(), prompt="hi", cwd=cwd, init_timeout=init_timeout)
    with pytest.raises(PromptFailed) as caught:
        await run_prompt(options, stdout=io.StringIO(), stderr=err, handle_sigint=False)
    return caught.value, err.getvalue()


async def test_an_agent_slow_to_initialize_is_said_to_be_waited_for(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    failure, err = await wait_for_silence(monkeypatch, 0.2, 1.5, tmp_path)
    assert "did not answer initialize within 1.5 s" in failure.message
    [note] = [line for line in err.splitlines() if "still waiting" in line]
    assert note.startswith("acpio: still waiting for the agent to answer initialize (0.2 s so far)")
    assert "not be an ACP agent, may need a flag such as --acp, or may be waiting for a login" in note
    assert "acpio gives up after 1.5 s (--init-timeout SECONDS changes that), Ctrl-C stops now" in note


async def test_no_still_waiting_note_when_the_timeout_comes_first(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    failure, err = await wait_for_silence(monkeypatch, 0.5, 0.5, tmp_path)
    assert "did not answer initialize within 0.5 s" in failure.message
    assert "still waiting" not in err
