"""Terminals: the terminal/* methods as real processes, their output within a byte limit."""

from __future__ import annotations

import asyncio
import os
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from acpio.errors import InvalidParams, ResourceNotFound
from acpio.oneshot.files import ConfinedFiles
from acpio.oneshot.terminals import OutputBuffer, TerminalCommand, Terminals
from acpio.schema import (
    CreateTerminalRequest,
    EnvVariable,
    KillTerminalRequest,
    ReleaseTerminalRequest,
    TerminalOutputRequest,
    WaitForTerminalExitRequest,
)

from ._support import TIMEOUT, until

SESSION = "s-1"


@pytest.fixture
def real(tmp_path: Path) -> Path:
    """``tmp_path`` with symbolic links resolved, as a command's ``pwd`` shows it."""
    return tmp_path.resolve()


@pytest.fixture
async def terminals(tmp_path: Path) -> AsyncIterator[Terminals]:
    managed = Terminals(ConfinedFiles(tmp_path), kill_grace=1.0)
    try:
        yield managed
    finally:
        await managed.aclose()


async def start(terminals: Terminals, command: str, *args: str, **fields: object) -> str:
    request = CreateTerminalRequest(session_id=SESSION, command=command, args=list(args), **fields)
    return (await terminals.create(request)).terminal_id


async def wait(terminals: Terminals, terminal_id: str) -> tuple[int | None, str | None]:
    async with asyncio.timeout(TIMEOUT):
        status = await terminals.wait_for_exit(
            WaitForTerminalExitRequest(session_id=SESSION, terminal_id=terminal_id)
        )
    return status.exit_code, status.signal


def output(terminals: Terminals, terminal_id: str) -> tuple[str, bool, object]:
    answer = terminals.output(TerminalOutputRequest(session_id=SESSION, terminal_id=terminal_id))
    return answer.output, answer.truncated, answer.exit_status


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


# --- OutputBuffer -----------------------------------------------------------------------------------


def test_output_buffer_keeps_everything_under_the_limit() -> None:
    buffer = OutputBuffer(10)
    buffer.append(b"hello")
    assert buffer.text() == "hello"
    assert not buffer.truncated


def test_output_buffer_drops_the_oldest_bytes_at_a_character_boundary() -> None:
    buffer = OutputBuffer(4)
    buffer.append("aé".encode())  # 3 bytes
    buffer.append("éz".encode())  # 6 in all: 2 must go, which would cut the first é in half
    assert buffer.text() == "éz"
    assert buffer.truncated
    assert len(buffer) == 3


def test_output_buffer_never_starts_with_half_a_character() -> None:
    buffer = OutputBuffer(4)
    buffer.append("€€".encode())  # two 3-byte characters
    assert buffer.text() == "€"


def test_output_buffer_leaves_out_an_unfinished_character_until_final() -> None:
    buffer = OutputBuffer(100)
    buffer.append("ok€".encode()[:-1])
    assert buffer.text(final=False) == "ok"
    assert buffer.text(final=True) == "ok\ufffd"


# --- the methods -----------------------------------------------------------------------------------


async def test_a_command_runs_and_reports_its_output_and_exit_code(terminals: Terminals) -> None:
    terminal_id = await start(
        terminals, "sh", "-c", "printf 'to stdout\\n'; printf 'to stderr\\n' >&2; exit 3"
    )
    assert await wait(terminals, terminal_id) == (3, None)
    text, truncated, status = output(terminals, terminal_id)
    assert text == "to stdout\nto stderr\n"
    assert not truncated
    assert status is not None
    assert status.exit_code == 3


async def test_output_is_available_while_the_command_runs(terminals: Terminals) -> None:
    terminal_id = await start(terminals, "sh", "-c", "echo first; sleep 30")
    await until(lambda: output(terminals, terminal_id)[0] == "first\n")
    assert output(terminals, terminal_id)[2] is None  # no exit status yet


async def test_env_and_cwd_are_applied(terminals: Terminals, tmp_path: Path, real: Path) -> None:
    (tmp_path / "sub").mkdir()
    terminal_id = await start(
        terminals,
        "sh",
        "-c",
        'echo "$GREETING"; pwd',
        env=[EnvVariable(name="GREETING", value="hi there")],
        cwd=str(tmp_path / "sub"),
    )
    await wait(terminals, terminal_id)
    assert output(terminals, terminal_id)[0] == f"hi there\n{real / 'sub'}\n"


async def test_the_default_cwd_is_the_root(terminals: Terminals, real: Path) -> None:
    terminal_id = await start(terminals, "pwd")
    await wait(terminals, terminal_id)
    assert output(terminals, terminal_id)[0] == f"{real}\n"


async def test_output_byte_limit_truncates_from_the_start(terminals: Terminals) -> None:
    script = "import sys; sys.stdout.write('a' + 'é' * 100 + 'END')"
    terminal_id = await start(terminals, "python3", "-c", script, output_byte_limit=51)
    await wait(terminals, terminal_id)
    text, truncated, _ = output(terminals, terminal_id)
    assert truncated
    assert text.endswith("END")
    assert set(text[:-3]) == {"é"}
    assert len(text.encode()) <= 51


async def test_a_command_killed_by_a_signal_reports_the_signal(terminals: Terminals) -> None:
    terminal_id = await start(terminals, "sh", "-c", "kill -TERM $$")
    assert await wait(terminals, terminal_id) == (None, "SIGTERM")


async def test_kill_ends_the_command_and_keeps_the_terminal(terminals: Terminals) -> None:
    terminal_id = await start(terminals, "sh", "-c", "echo started; exec sleep 30")
    await until(lambda: output(terminals, terminal_id)[0] == "started\n")
    async with asyncio.timeout(TIMEOUT):
        await terminals.kill(KillTerminalRequest(session_id=SESSION, terminal_id=terminal_id))
    exit_code, signal = await wait(terminals, terminal_id)
    assert exit_code is None
    assert signal in ("SIGTERM", "SIGKILL")
    assert output(terminals, terminal_id)[0] == "started\n"


async def test_kill_ends_what_the_command_started(terminals: Terminals, tmp_path: Path) -> None:
    pid_file = tmp_path / "child.pid"
    terminal_id = await start(terminals, "sh", "-c", f"sleep 30 & echo $! > {pid_file}; wait")
    await until(lambda: pid_file.exists() and bool(pid_file.read_text().strip()))
    child = int(pid_file.read_text())
    await terminals.kill(KillTerminalRequest(session_id=SESSION, terminal_id=terminal_id))
    await until(lambda: not alive(child))


async def test_release_kills_a_running_command_and_forgets_the_id(terminals: Terminals) -> None:
    terminal_id = await start(terminals, "sh", "-c", "echo kept; exec sleep 30")
    await until(lambda: output(terminals, terminal_id)[0] == "kept\n")
    snapshot = terminals.snapshot(terminal_id)
    assert snapshot is not None
    pid_alive_before = snapshot.exit_status is None
    async with asyncio.timeout(TIMEOUT):
        await terminals.release(ReleaseTerminalRequest(session_id=SESSION, terminal_id=terminal_id))
    assert pid_alive_before
    with pytest.raises(ResourceNotFound, match="was released"):
        output(terminals, terminal_id)
    released = terminals.snapshot(terminal_id)
    assert released is not None
    assert released.released
    assert released.output == "kept\n"
    assert released.exit_status is not None
    assert released.exit_status.signal is not None


async def test_unknown_terminal_ids_and_other_sessions_are_refused(terminals: Terminals) -> None:
    with pytest.raises(ResourceNotFound, match="does not exist"):
        output(terminals, "term-99")
    terminal_id = await start(terminals, "true")
    with pytest.raises(ResourceNotFound):
        terminals.output(TerminalOutputRequest(session_id="another", terminal_id=terminal_id))


async def test_a_missing_command_is_reported_to_the_agent(terminals: Terminals) -> None:
    with pytest.raises(ResourceNotFound, match="command not found"):
        await start(terminals, "no-such-command-for-acpio")


async def test_a_cwd_outside_the_root_is_refused(terminals: Terminals) -> None:
    with pytest.raises(InvalidParams, match="outside"):
        await start(terminals, "pwd", cwd="/")


async def test_aclose_ends_running_commands(tmp_path: Path) -> None:
    terminals = Terminals(ConfinedFiles(tmp_path), kill_grace=1.0)
    terminal_id = await start(terminals, "sleep", "30")
    snapshot = terminals.snapshot(terminal_id)
    assert snapshot is not None
    assert snapshot.exit_status is None
    async with asyncio.timeout(TIMEOUT):
        await terminals.aclose()
    closed = terminals.snapshot(terminal_id)
    assert closed is not None
    assert closed.exit_status is not None


# --- checking and consent ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("fields", "field"),
    [
        ({"command": "sh", "env": [EnvVariable(name="A=B", value="x")]}, "env[0].name"),
        ({"command": "sh", "env": [EnvVariable(name="A\0", value="x")]}, "env[0].name"),
        ({"command": "sh", "env": [EnvVariable(name="A", value="\0")]}, "env[0].value"),
        ({"command": "sh\0"}, "command"),
        ({"command": "sh", "args": ["\ud800"]}, "args[0]"),  # a lone surrogate: no bytes for it
        ({"command": "sh", "cwd": "/\0"}, "cwd"),
    ],
)
async def test_fields_no_process_can_get_are_invalid_params(
    terminals: Terminals, fields: dict[str, object], field: str
) -> None:
    with pytest.raises(InvalidParams) as caught:
        await terminals.create(CreateTerminalRequest(session_id=SESSION, **fields))
    assert caught.value.data["field"] == field
    assert field in caught.value.message


async def test_consent_decides_before_anything_starts(tmp_path: Path) -> None:
    asked: list[TerminalCommand] = []

    async def refuse(command: TerminalCommand) -> None:
        asked.append(command)
        raise InvalidParams(message="no")

    terminals = Terminals(ConfinedFiles(tmp_path), consent=refuse)
    with pytest.raises(InvalidParams, match="no"):
        await start(terminals, "sh", "-c", f"touch {tmp_path / 'started'}")
    await asyncio.sleep(0.3)
    assert not (tmp_path / "started").exists()
    assert [command.argv for command in asked] == [["sh", "-c", f"touch {tmp_path / 'started'}"]]
    assert terminals.snapshot("term-1") is None


async def test_the_command_is_described_as_it_would_run(tmp_path: Path, real: Path) -> None:
    evil = real / "evil"
    evil.mkdir()
    (evil / "ls").write_text("#!/bin/sh\necho from evil\n")
    (evil / "ls").chmod(0o755)
    terminals = Terminals(ConfinedFiles(tmp_path))
    request = CreateTerminalRequest(
        session_id=SESSION,
        command="ls",
        args=["-l"],
        env=[EnvVariable(name="PATH", value=str(evil)), EnvVariable(name="LD_PRELOAD", value="x.so")],
    )
    command = terminals.prepare(request)
    assert command.program == str(evil / "ls")  # the agent's PATH decides, and it is shown
    assert command.risky_variables == ("PATH", "LD_PRELOAD")
    assert command.command_line == f"PATH={evil} LD_PRELOAD=x.so ls -l"
    assert command.describe() == [
        "command: ls -l",
        f"program: {evil / 'ls'}",
        f"in: {real}",
        f"environment: PATH={evil}  <- decides which programs run or what they load",
        "environment: LD_PRELOAD=x.so  <- decides which programs run or what they load",
    ]
    odd = terminals.prepare(
        CreateTerminalRequest(session_id=SESSION, command="true", env=[EnvVariable(name="A-B", value="1 2")])
    )
    assert odd.command_line == "env 'A-B=1 2' true"
    assert odd.risky_variables == ()


async def test_what_runs_is_the_program_shown(terminals: Terminals, tmp_path: Path, real: Path) -> None:
    (tmp_path / "bin").mkdir()
    (tmp_path / "bin" / "hello").write_text("#!/bin/sh\necho hello from bin\n")
    (tmp_path / "bin" / "hello").chmod(0o755)
    terminal_id = await start(
        terminals, "hello", env=[EnvVariable(name="PATH", value=f"bin{os.pathsep}/usr/bin{os.pathsep}/bin")]
    )
    await wait(terminals, terminal_id)
    assert output(terminals, terminal_id)[0] == "hello from bin\n"  # a relative PATH entry: from cwd
    snapshot = terminals.snapshot(terminal_id)
    assert snapshot is not None
    assert snapshot.command_line == f"PATH=bin{os.pathsep}/usr/bin{os.pathsep}/bin hello"
