"""AgentClient against real agent processes: acpio testy over ACP v1 and v2, and scripted agents that fail."""

from __future__ import annotations

import asyncio
import gc
import json
import sys
import weakref
from collections.abc import Callable
from pathlib import Path

import pytest

from acpio.client import (
    AgentClient,
    AgentFailed,
    AgentSession,
    FileWritten,
    PermissionDecided,
    TextAdded,
    ToolCallChanged,
    ToolCallView,
    UsageChanged,
)
from acpio.transports import AgentCommand, AgentProcess, OversizedFrame
from tests.oneshot._agents import agent_script


def run_testy(protocol: int, *options: str) -> list[str]:
    return [sys.executable, "-m", "acpio", "testy", "--protocol", str(protocol), *options]


TURN = """think Let me see
plan Write; Ask; Run
write notes.txt Buy milk
permission Publish the notes
run echo out
usage"""


@pytest.mark.parametrize("protocol", [1, 2])
async def test_a_turn_gives_text_thoughts_tool_calls_files_commands_permissions_plan_and_usage(
    tmp_path: Path, protocol: int
) -> None:
    async with AgentClient(run_testy(protocol), cwd=tmp_path, permissions="allow") as client:
        assert client.protocol_version == protocol
        session = await client.new_session()
        result = await session.prompt(TURN)

    assert result.ok, result.error
    assert result.stop_reason == "end_turn"
    assert result.protocol_version == protocol
    assert result.session_id == session.session_id
    assert result.thoughts == "Let me see"
    assert "permission: allow-once\n" in result.text
    assert "out\n" in result.text
    assert [entry.content for entry in result.plan] == ["Write", "Ask", "Run"]
    assert [(c.title, c.kind, c.status) for c in result.tool_calls] == [
        ("Write notes.txt", "edit", "completed"),
        ("Publish the notes", "edit", "completed"),
        ("echo out", "execute", "completed"),
    ]
    notes = str(tmp_path / "notes.txt")
    assert (tmp_path / "notes.txt").read_text() == "Buy milk"
    [written] = result.files_written
    assert written.path == notes
    assert written.tool_call_id == result.tool_calls[0].tool_call_id
    assert "+Buy milk" in (written.patch or "")
    # v1: the client wrote the file (fs/write_text_file); v2: the agent did, and reported its git patch
    assert written.written_by == ("client" if protocol == 1 else "agent")
    [run] = result.terminals
    assert (run.command, run.output, run.exit_code) == ("echo out", "out\n", 0)
    assert run.owner == ("client" if protocol == 1 else "agent")
    asked = [(ask.subject, ask.tool_call.title, ask.option_id, ask.allowed) for ask in result.permissions]
    expected = [("tool_call", "Publish the notes", "allow-once", True)]
    if protocol == 1:  # the client runs the command, once its policy allowed it
        expected.append(("command", "Run echo out", "run", True))
    assert asked == expected
    assert result.usage is not None
    assert result.usage.context_size == 200000
    assert result.usage.context_used
    assert result.usage.sources == ("usage_update",)
    assert result.duration > 0
    assert json.loads(result.to_json())["tool_calls"][0]["content"][0]["type"] == "diff"


@pytest.mark.parametrize("protocol", [1, 2])
async def test_the_stream_gives_each_event_as_it_comes_then_the_same_result(
    tmp_path: Path, protocol: int
) -> None:
    async with AgentClient(run_testy(protocol), cwd=tmp_path, permissions="allow") as client:
        session = await client.new_session()
        stream = session.stream("write notes.txt hi\npermission Go on\necho done\nusage")
        events = [event async for event in stream]
        result = await stream.result()

    kinds = [type(event).__name__ for event in events]
    first_call = next(i for i, e in enumerate(events) if isinstance(e, ToolCallChanged))
    decided = next(i for i, e in enumerate(events) if isinstance(e, PermissionDecided))
    assert first_call < decided  # the tool call is shown before its permission is decided
    asked = events[decided]
    assert isinstance(asked, PermissionDecided)
    assert asked.ask.allowed
    assert isinstance(events[decided - 1], ToolCallChanged)  # the request merged into the call's view
    assert any(isinstance(e, FileWritten) for e in events) == (protocol == 1)
    assert isinstance(events[-1], UsageChanged) or "UsageChanged" in kinds
    text = "".join(e.text for e in events if isinstance(e, TextAdded) and e.message.role == "agent")
    assert text == result.text
    assert result.ok
    assert len(result.permissions) == 1


async def test_by_default_permissions_and_commands_are_refused(tmp_path: Path) -> None:
    async with AgentClient(run_testy(1), cwd=tmp_path) as client:
        session = await client.new_session()
        refused_command = await session.prompt("run touch made.txt")
        refused_permission = await session.prompt("permission Delete everything\necho not reached")

    assert not (tmp_path / "made.txt").exists()
    [command] = refused_command.permissions
    assert (command.subject, command.command, command.option_id, command.allowed) == (
        "command",
        "touch made.txt",
        "refuse",
        False,
    )
    assert refused_command.terminals == ()
    assert refused_command.tool_calls[0].status == "failed"
    [ask] = refused_permission.permissions
    assert (ask.option_id, ask.option_kind, ask.allowed) == ("reject-once", "reject_once", False)
    assert "Permission denied: stopping." in refused_permission.text
    assert "not reached" not in refused_permission.text


async def test_files_outside_the_session_directory_are_refused(tmp_path: Path) -> None:
    inside = tmp_path / "project"
    inside.mkdir()
    async with AgentClient(run_testy(1), cwd=inside, permissions="allow") as client:
        session = await client.new_session()
        result = await session.prompt("write ../outside.txt leaked\nread /etc/hostname")

    assert not (tmp_path / "outside.txt").exists()
    assert result.files_written == ()
    assert [call.status for call in result.tool_calls] == ["failed", "failed"]
    for call in result.tool_calls:  # the agent was told why: ConfinedFiles' refusal names the root
        assert any(isinstance(item, str) and str(inside) in item for item in call.content), call.content


async def test_an_error_answer_is_a_failed_result(tmp_path: Path) -> None:
    async with AgentClient(run_testy(1), cwd=tmp_path) as client:
        session = await client.new_session()
        result = await session.prompt("echo before\nfail -32042 no luck")
        after = await session.prompt("echo still here")

    assert not result.ok
    assert result.stop_reason is None
    assert result.error_code == -32042
    assert result.error is not None
    assert "no luck" in result.error
    assert result.text == "before\n"
    assert after.ok
    assert after.text == "still here\n"


async def test_an_agent_dying_mid_turn_gives_its_stderr(tmp_path: Path) -> None:
    body = """
say(cx, "working")
await asyncio.sleep(0.1)
sys.stderr.write("fatal: out of cheese\\n")
sys.stderr.flush()
import os
os._exit(7)
"""
    async with AgentClient(agent_script(tmp_path, body), cwd=tmp_path) as client:
        session = await client.new_session()
        result = await session.prompt("go")

    assert not result.ok
    assert result.stop_reason is None
    assert result.error is not None
    assert "exited with exit code 7" in result.error
    assert result.stderr_tail is not None
    assert "fatal: out of cheese" in result.stderr_tail
    assert result.text == "working"
    assert result.to_dict()["stderr_tail"] == result.stderr_tail


async def test_an_agent_that_cannot_start_says_why(tmp_path: Path) -> None:
    body_never_runs = agent_script(tmp_path, "pass").replace(
        str(tmp_path / "agent.py"), str(tmp_path / "missing.py")
    )
    with pytest.raises(AgentFailed) as failed:
        async with AgentClient(body_never_runs, cwd=tmp_path):
            pass
    assert "missing.py" in str(failed.value)
    assert "exit code" in str(failed.value)


async def test_a_program_that_is_no_agent_is_told_apart_by_what_it_printed(tmp_path: Path) -> None:
    # A CLI started without its ACP flag prints its usage or a banner, then exits or waits for a person.
    usage = [sys.executable, "-c", "print('usage: mytool [--acp]')"]
    with pytest.raises(AgentFailed) as failed:
        async with AgentClient(usage, cwd=tmp_path):
            pass
    assert "exited with exit code 0 before answering initialize, after writing 'usage: mytool [--acp]' " in (
        str(failed.value)
    )
    assert "check that the command starts an ACP agent (some need a flag such as --acp)" in str(failed.value)

    banner = [sys.executable, "-c", "import time; print('Welcome!', flush=True); time.sleep(30)"]
    with pytest.raises(AgentFailed) as failed:
        async with AgentClient(banner, cwd=tmp_path, init_timeout=1):
            pass
    assert "did not answer initialize within 1 s, and wrote 'Welcome!' on its stdout, which is not ACP" in (
        str(failed.value)
    )


async def test_an_agent_command_that_cannot_start_is_named(tmp_path: Path) -> None:
    command = AgentCommand.from_args([str(tmp_path / "no-such-agent"), "--acp"])
    with pytest.raises(AgentFailed) as failed:
        async with AgentClient(command, cwd=tmp_path):
            pass
    assert f"The agent '{tmp_path / 'no-such-agent'} --acp' could not be started" in str(failed.value)


async def test_closed_sessions_are_not_held_by_the_client(tmp_path: Path) -> None:
    async with AgentClient(run_testy(1), cwd=tmp_path) as client:
        closed: list[weakref.ref[AgentSession]] = []
        for _ in range(30):
            session = await client.new_session()
            await session.prompt("echo hi")
            await session.aclose()
            closed.append(weakref.ref(session))
        kept = await client.new_session()
        del session
        gc.collect()
        assert [ref for ref in closed if ref() is not None] == []
        assert (await kept.prompt("echo still open")).ok


@pytest.mark.parametrize("protocol", [1, 2])
async def test_cancel_ends_the_turn_cancelled(tmp_path: Path, protocol: int) -> None:
    async with AgentClient(run_testy(protocol), cwd=tmp_path) as client:
        session = await client.new_session()
        stream = session.stream("echo started\nsleep 30\necho never")
        async for event in stream:
            if isinstance(event, TextAdded) and "started" in event.message.text:
                stream.cancel()
        result = await stream.result()

    assert result.stop_reason == "cancelled"
    assert result.error is None
    assert "never" not in result.text


@pytest.mark.slow  # three agent processes, one after the other
async def test_a_session_is_loaded_by_another_process(tmp_path: Path) -> None:
    store = f"sqlite:///{tmp_path / 'sessions.db'}"
    async with AgentClient(run_testy(1, "--store", store), cwd=tmp_path) as client:
        first = await client.new_session()
        await first.prompt("echo remember me")
    async with AgentClient(run_testy(1, "--store", store), cwd=tmp_path) as client:
        loaded = await client.load_session(first.session_id)
        assert any("remember me" in (message.text or "") for message in loaded.history)
        result = await loaded.prompt("echo again")
    async with AgentClient(run_testy(1, "--store", store), cwd=tmp_path) as client:
        resumed = await client.resume_session(first.session_id)
        assert resumed.history == []
        resumed_result = await resumed.prompt("echo resumed")
    assert result.ok
    assert resumed_result.text == "resumed\n"


async def test_closing_ends_the_agent_and_what_it_started(tmp_path: Path) -> None:
    body = """
import subprocess
child = subprocess.Popen(["sleep", "60"])
say(cx, str(child.pid))
"""
    async with AgentClient(agent_script(tmp_path, body), cwd=tmp_path) as client:
        session = await client.new_session()
        result = await session.prompt("start a child")
        process = client.process
    pid = int(result.text)
    assert process is not None
    assert process.returncode is not None
    assert not _running(pid)


def _running(pid: int) -> bool:
    """Whether ``pid`` runs (a zombie nobody reaped yet has ended)."""
    try:
        status = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return False
    return status.rsplit(")", 1)[1].split()[0] != "Z"


def test_a_tool_call_view_copy_is_not_changed_by_later_updates() -> None:
    view = ToolCallView("t-1", title="Edit", kind="edit", locations=["/a"])
    copy = view.copy()
    view.locations.append("/b")
    view.status = "completed"
    assert copy.locations == ["/a"]
    assert copy.status is None


@pytest.mark.parametrize(("allow_env", "runs"), [((), False), (("PYTHONPATH",), True)])
async def test_allowing_commands_does_not_allow_changing_what_runs(
    tmp_path: Path, allow_env: tuple[str, ...], runs: bool
) -> None:
    body = """
create = acp.CreateTerminalRequest(
    session_id="s-1", command="true", env=[acp.EnvVariable(name="PYTHONPATH", value="/elsewhere")]
)
try:
    created = await cx.send_request(create)
except RequestError as exc:
    say(cx, f"refused: {exc.message}")
else:
    await cx.send_request(acp.WaitForTerminalExitRequest(session_id="s-1", terminal_id=created.terminal_id))
    say(cx, "ran")
"""
    async with AgentClient(
        agent_script(tmp_path, body), cwd=tmp_path, permissions="allow", allow_env=allow_env
    ) as client:
        session = await client.new_session()
        result = await session.prompt("go")

    if runs:
        assert result.text == "ran"
        assert [run.exit_code for run in result.terminals] == [0]
    else:
        assert result.text.startswith(
            "refused: Refused to run PYTHONPATH=/elsewhere true: it sets PYTHONPATH"
        )
        assert "AgentClient(allow_env=...)" in result.text
        assert result.terminals == ()


async def test_a_prompt_to_an_agent_gone_since_the_last_turn_is_a_failed_result(tmp_path: Path) -> None:
    body = """
say(cx, "bye")
sys.stderr.write("shutting down for good\\n")
sys.stderr.flush()
import os
asyncio.get_running_loop().call_later(0.2, os._exit, 3)
"""
    async with AgentClient(agent_script(tmp_path, body), cwd=tmp_path) as client:
        session = await client.new_session()
        first = await session.prompt("first")
        process = client.process
        assert process is not None
        await process.wait()
        second = await session.prompt("second")

    assert first.ok
    assert not second.ok
    assert second.error is not None
    assert "exited with exit code 3" in second.error
    assert second.stderr_tail is not None
    assert "shutting down for good" in second.stderr_tail


async def test_closing_the_client_ends_a_turn_read_elsewhere(tmp_path: Path) -> None:
    async with AgentClient(run_testy(1), cwd=tmp_path) as client:
        session = await client.new_session()
        stream = session.stream("echo started\nsleep 30")
        async for event in stream:
            if isinstance(event, TextAdded):
                break
        reading = asyncio.ensure_future(stream.result())
        await client.aclose()
        result = await reading
    assert result.error is not None
    assert "AgentClient was closed before the turn ended" in result.error
    assert result.text.startswith("started")


async def test_a_process_agent_keeps_the_transports_fast_paths_after_initialize(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The watch of what the agent prints before initialize must not hide, for the connection's whole
    # life, the process transport's burst reads and lone-response settling from the connection.
    taken: list[object] = []
    read_at_once: list[object] = []
    take_lone_frames = AgentProcess.take_lone_frames
    receive_nowait = AgentProcess.receive_nowait

    def spy_take(self: AgentProcess, take: Callable[[bytes], bool] | None) -> None:
        taken.append(take)
        take_lone_frames(self, take)

    def spy_nowait(self: AgentProcess) -> bytes | OversizedFrame | None:
        frame = receive_nowait(self)
        read_at_once.append(frame)
        return frame

    monkeypatch.setattr(AgentProcess, "take_lone_frames", spy_take)
    monkeypatch.setattr(AgentProcess, "receive_nowait", spy_nowait)
    async with AgentClient(run_testy(1), cwd=tmp_path) as client:
        session = await client.new_session()
        assert (await session.prompt("echo hi")).text == "hi\n"
    assert taken
    assert callable(taken[0])
    assert read_at_once


async def test_an_agent_refusing_initialize_is_said_to_refuse_it_at_once(tmp_path: Path) -> None:
    refusing = tmp_path / "refusing.py"
    refusing.write_text(
        "import json, sys\n"
        "request = json.loads(sys.stdin.readline())\n"
        "error = {'code': -32000, 'message': 'Log in first: run mytool login'}\n"
        "print(json.dumps({'jsonrpc': '2.0', 'id': request['id'], 'error': error}), flush=True)\n"
        "sys.stdin.read()  # until the client closes the connection\n"
    )
    started = asyncio.get_running_loop().time()
    with pytest.raises(AgentFailed) as failed:
        async with AgentClient([sys.executable, str(refusing)], cwd=tmp_path):
            pass
    assert "' refused initialize: -32000 Log in first: run mytool login" in str(failed.value)
    assert "before answering" not in str(failed.value)
    # Not the 2 s wait for an exit, which an agent that answered (and waits for more) never makes.
    assert asyncio.get_running_loop().time() - started < 2.0


async def test_an_agent_speaking_another_version_says_which_protocol_to_pass(tmp_path: Path) -> None:
    with pytest.raises(AgentFailed) as failed:
        async with AgentClient(run_testy(1), cwd=tmp_path, protocol=2):
            pass
    assert "speaks ACP protocol version 1, but this AgentClient was made with protocol=2" in str(failed.value)
    assert "leave protocol out" in str(failed.value)
    assert "or pass protocol=1" in str(failed.value)
    assert "before answering initialize" not in str(failed.value)


async def test_a_program_echoing_its_input_is_no_agent_rather_than_one_refusing_initialize(
    tmp_path: Path,
) -> None:
    with pytest.raises(AgentFailed) as failed:
        async with AgentClient(["cat"], cwd=tmp_path, init_timeout=5):
            pass
    assert "The agent 'cat' did not answer initialize, after sending acpio's own messages back" in str(
        failed.value
    )
    assert "refused" not in str(failed.value)
