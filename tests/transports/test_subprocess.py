"""AcpAgent: spawning agents, their stderr, their failures and how they are ended."""

from __future__ import annotations

import asyncio
import json
import os
import shlex
import signal
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from acpio.errors import ConnectionClosed, TransportError
from acpio.transports import AcpAgent, AgentProcess, Component, Transport

TIMEOUT = 10

#: Every test here runs on asyncio's loop and on uvloop's (see conftest.py).
BOTH_EVENT_LOOPS = True

ECHO = r"""
import json, os, sys
for line in sys.stdin:
    message = json.loads(line)
    message["env"] = {k: os.environ.get(k) for k in message.get("want_env", [])}
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()
"""

STDERR_FLOOD = r"""
import sys
sys.stdin.readline()
line = "x" * 99 + "\n"
for _ in range(100_000):  # 10 MB: far more than a pipe holds
    sys.stderr.write(line)
sys.stderr.write("last stderr line\n")
sys.stderr.flush()
sys.stdout.write('{"done":true}\n')
sys.stdout.flush()
sys.stdin.read()
"""

FAILING = r"""
import sys
sys.stdout.write('{"hello":1}\n')
sys.stdout.flush()
sys.stderr.write("starting\nfatal: no credentials found; set API_KEY\n")
sys.exit(3)
"""

STUBBORN = r"""
import signal, subprocess, sys, time
signal.signal(signal.SIGTERM, signal.SIG_IGN)
grandchild = subprocess.Popen(
    [sys.executable, "-c", "import signal as s, time; s.signal(s.SIGTERM, s.SIG_IGN); time.sleep(600)"],
    stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
)
sys.stdout.write('{"grandchild":%d}\n' % grandchild.pid)
sys.stdout.flush()
sys.stdin.read()  # stdin closes ... and we carry on regardless
while True:
    time.sleep(1)
"""


def python(code: str) -> list[str]:
    return [sys.executable, "-c", code]


def alive(pid: int) -> bool:
    """Whether ``pid`` runs (a zombie, dead but not yet reaped, counts as gone)."""
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False


async def wait_gone(pid: int) -> None:
    # No event announces the end of a process that is not our child: look until it is gone.
    for _ in range(1000):
        if not alive(pid):
            return
        await asyncio.sleep(0.01)
    raise AssertionError(f"process {pid} is still alive")


async def exchange(transport: Transport, message: dict[str, Any]) -> Any:
    transport.send(json.dumps(message).encode())
    frame = await transport.receive()
    assert isinstance(frame, bytes)
    return json.loads(frame)


def test_acp_agent_is_a_component() -> None:
    assert isinstance(AcpAgent(["agent"]), Component)


COMMAND_FORMS: dict[str, Callable[[], Any]] = {
    "argv list": lambda: python(ECHO),
    "shell words": lambda: "FORM=words " + shlex.join(python(ECHO)),
    "json string": lambda: json.dumps(
        {"command": sys.executable, "args": ["-c", ECHO], "env": {"FORM": "json"}}
    ),
    "mapping": lambda: {"command": sys.executable, "args": ["-c", ECHO], "env": {"FORM": "mapping"}},
}


@pytest.mark.parametrize("form", COMMAND_FORMS)
async def test_command_forms_round_trip(form: str) -> None:
    agent = AcpAgent(COMMAND_FORMS[form]())
    transport = await agent.open()
    try:
        async with asyncio.timeout(TIMEOUT):
            reply = await exchange(transport, {"id": 1, "want_env": ["FORM"]})
    finally:
        await transport.aclose()
    expected_form = {"argv list": None, "shell words": "words"}.get(form, form.split()[0])
    assert reply == {"id": 1, "want_env": ["FORM"], "env": {"FORM": expected_form}}
    assert agent.returncode == 0
    assert agent.pid == transport.pid


async def test_environment_is_inherited_plus_overrides(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ACPIO_INHERITED", "from parent")
    monkeypatch.setenv("ACPIO_REPLACED", "old")
    agent = AcpAgent(python(ECHO), env={"ACPIO_ADDED": "new", "ACPIO_REPLACED": "new"})
    transport = await agent.open()
    try:
        async with asyncio.timeout(TIMEOUT):
            reply = await exchange(
                transport, {"want_env": ["ACPIO_INHERITED", "ACPIO_ADDED", "ACPIO_REPLACED"]}
            )
    finally:
        await transport.aclose()
    assert reply["env"] == {"ACPIO_INHERITED": "from parent", "ACPIO_ADDED": "new", "ACPIO_REPLACED": "new"}


async def test_command_not_found_is_a_clear_error() -> None:
    with pytest.raises(TransportError, match=r"'acpio-no-such-agent'.*not found.*PATH"):
        await AcpAgent("acpio-no-such-agent --flag").open()


async def test_command_not_executable_is_a_clear_error(tmp_path: Path) -> None:
    script = tmp_path / "agent.sh"
    script.write_text("#!/bin/sh\n")
    with pytest.raises(TransportError, match=r"permission denied.*executable"):
        await AcpAgent([str(script)]).open()


async def test_bad_working_directory_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(TransportError, match=r"working directory .* does not exist"):
        await AcpAgent(python(ECHO), cwd=tmp_path / "missing").open()


async def test_ten_megabytes_of_stderr_do_not_stall_the_agent() -> None:
    """The ``stderr`` callback gets every stderr line, and only those."""
    stderr_lines: list[str] = []
    agent = AcpAgent(python(STDERR_FLOOD), stderr=stderr_lines.append)
    transport = await agent.open()
    try:
        async with asyncio.timeout(TIMEOUT):
            assert await exchange(transport, {"go": True}) == {"done": True}
    finally:
        await transport.aclose()
    tail = transport.stderr_tail
    assert tail is not None
    assert tail.startswith("[… earlier stderr output omitted]\nxxxx")
    assert tail.endswith("last stderr line")
    assert len(tail.encode()) <= 64 * 1024 + 100
    assert len(stderr_lines) == 100_001
    assert stderr_lines[-1] == "last stderr line"
    assert set(stderr_lines[:-1]) == {"x" * 99}


async def test_agent_that_exits_with_an_error_reports_its_stderr() -> None:
    transport = await AcpAgent(python(FAILING)).open()
    try:
        async with asyncio.timeout(TIMEOUT):
            assert await transport.receive() == b'{"hello":1}'
            with pytest.raises(TransportError) as info:
                await transport.receive()
    finally:
        await transport.aclose()
    error = info.value
    assert "exited with exit code 3" in str(error)
    assert error.stderr_tail == "starting\nfatal: no credentials found; set API_KEY"
    assert "no credentials found" in str(error)
    assert transport.returncode == 3


async def test_agent_killed_by_a_signal_is_an_error() -> None:
    transport = await AcpAgent(python("import os, signal; os.kill(os.getpid(), signal.SIGKILL)")).open()
    try:
        async with asyncio.timeout(TIMEOUT):
            with pytest.raises(TransportError, match="was killed by SIGKILL"):
                await transport.receive()
    finally:
        await transport.aclose()


async def test_clean_exit_is_end_of_input() -> None:
    transport = await AcpAgent(python("print('{\"bye\":1}', end='\\n')")).open()
    try:
        async with asyncio.timeout(TIMEOUT):
            assert await transport.receive() == b'{"bye":1}'
            assert await transport.receive() is None
            assert await transport.wait() == 0
    finally:
        await transport.aclose()


async def test_a_program_gone_before_its_pipes_are_wrapped_is_end_of_input(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # On a loaded machine `echo Welcome` exits, and the loop closes its pipes, before the spawn returns.
    from acpio.transports import subprocess as module

    spawn = module.spawn_in_new_group

    async def spawn_then_wait_for_the_end(factory: Callable[[], Any], *argv: str, **options: Any) -> Any:
        pipes_lost: set[int] = set()
        all_lost = asyncio.Event()

        def watched() -> Any:
            protocol = factory()
            pipe_connection_lost = protocol.pipe_connection_lost

            def lost(fd: int, exc: Exception | None) -> None:
                pipe_connection_lost(fd, exc)
                pipes_lost.add(fd)
                if pipes_lost == {0, 1, 2}:
                    all_lost.set()

            protocol.pipe_connection_lost = lost
            return protocol

        transport, protocol = await spawn(watched, *argv, **options)
        await all_lost.wait()
        await protocol.exited
        return transport, protocol

    monkeypatch.setattr(module, "spawn_in_new_group", spawn_then_wait_for_the_end)
    async with asyncio.timeout(TIMEOUT):
        transport = await AcpAgent(["echo", "Welcome"]).open()
        try:
            assert await transport.receive() == b"Welcome"
            assert await transport.receive() is None
            with pytest.raises(TransportError, match=r"exited with exit code 0"):
                await send_until_it_fails(transport)
        finally:
            await transport.aclose()


async def test_an_agent_that_closes_its_stdout_but_keeps_running_ends_the_input() -> None:
    agent = AcpAgent(python("import os, time; os.close(1); time.sleep(60)"), grace_period=0.2)
    transport = await agent.open()
    try:
        async with asyncio.timeout(TIMEOUT):
            assert await transport.receive() is None
            assert transport.returncode is None  # the end of its output was seen, not the end of the process
    finally:
        await transport.aclose()
    assert agent.returncode == -signal.SIGTERM


async def test_closing_ends_a_cooperative_agent_without_signals() -> None:
    agent = AcpAgent(python(ECHO), grace_period=5)
    transport = await agent.open()
    transport.send(b'{"last":1}')
    started = time.monotonic()
    async with asyncio.timeout(TIMEOUT):
        await transport.aclose()
    assert time.monotonic() - started < 2
    assert agent.returncode == 0
    with pytest.raises(ConnectionClosed):
        transport.send(b"{}")
    assert await transport.receive() is None


async def test_closing_ends_a_stubborn_agent_and_its_process_group() -> None:
    agent = AcpAgent(python(STUBBORN), grace_period=0.2, terminate_timeout=0.2)
    transport = await agent.open()
    async with asyncio.timeout(TIMEOUT):
        hello = await transport.receive()
        assert isinstance(hello, bytes)
        grandchild = json.loads(hello)["grandchild"]
        assert alive(grandchild)
        assert os.getpgid(grandchild) == transport.pid
        started = time.monotonic()
        await transport.aclose()
        elapsed = time.monotonic() - started
        await wait_gone(grandchild)
    assert agent.returncode == -signal.SIGKILL
    assert 0.4 <= elapsed < 3


async def send_until_it_fails(transport: Transport) -> None:
    while True:  # the first writes may still fit in the pipe before it reports EPIPE
        transport.send(b"{}")
        await transport.drain()


async def test_write_to_an_agent_that_exited_fails_with_its_status() -> None:
    transport = await AcpAgent(python("import sys; sys.stderr.write('gone\\n'); sys.exit(2)")).open()
    try:
        async with asyncio.timeout(TIMEOUT):
            await transport.wait()
            with pytest.raises(TransportError, match="stopped reading its input") as info:
                await send_until_it_fails(transport)
    finally:
        await transport.aclose()
    assert "exit code 2" in str(info.value)


async def test_a_failing_stderr_callback_is_logged_and_the_agent_goes_on(
    caplog: pytest.LogCaptureFixture,
) -> None:
    seen: list[str] = []

    def stderr(line: str) -> None:
        seen.append(line)
        if line == "one":
            raise RuntimeError("stderr callback bug")

    noisy_echo = 'import sys\nsys.stderr.write("one\\ntwo\\n")\nsys.stderr.flush()\n' + ECHO
    transport = await AcpAgent(python(noisy_echo), stderr=stderr).open()
    try:
        async with asyncio.timeout(TIMEOUT):
            assert await exchange(transport, {"id": 7}) == {"id": 7, "env": {}}
    finally:
        await transport.aclose()
    assert seen == ["one", "two"]
    assert "The stderr callback of" in caplog.text


async def test_process_property_and_transport_type() -> None:
    agent = AcpAgent(python(ECHO))
    transport = await agent.open()
    try:
        assert isinstance(transport, AgentProcess)
        assert agent.process is transport
        assert transport.returncode is None
        assert str(transport.pid) in transport.label
    finally:
        await transport.aclose()


# --- ending at once, leftovers holding stdout, a start cancelled half-way ----------------------------


async def test_kill_ends_the_whole_group_at_once() -> None:
    agent = AcpAgent(python(STUBBORN), grace_period=5, terminate_timeout=5)
    transport = await agent.open()
    try:
        async with asyncio.timeout(TIMEOUT):
            hello = await transport.receive()
            assert isinstance(hello, bytes)
            grandchild = json.loads(hello)["grandchild"]
            started = time.monotonic()
            agent.kill()  # the child ignores SIGTERM and its stdin closing: only SIGKILL works
            await wait_gone(grandchild)
            await wait_gone(transport.pid)
            await transport.aclose()  # reaps the child; nothing left to wait for
            elapsed = time.monotonic() - started
    finally:
        await transport.aclose()
    assert agent.returncode == -signal.SIGKILL
    assert elapsed < 2  # not the 5 s grace periods


# The child starts a grandchild that inherits its stdout, then exits: the pipe stays open.
LEAVES_STDOUT_OPEN = r"""
import subprocess, sys
grandchild = subprocess.Popen(["sleep", "300"], stdin=subprocess.DEVNULL)
sys.stdout.write('{"grandchild":%d}\n' % grandchild.pid)
sys.stdout.flush()
sys.stderr.write("giving up\n")
sys.exit(5)
"""


async def test_an_agent_that_exits_while_its_group_holds_its_stdout_still_ends_the_input() -> None:
    transport = await AcpAgent(python(LEAVES_STDOUT_OPEN), grace_period=0.2, terminate_timeout=0.2).open()
    try:
        async with asyncio.timeout(TIMEOUT):
            hello = await transport.receive()
            assert isinstance(hello, bytes)
            grandchild = json.loads(hello)["grandchild"]
            with pytest.raises(TransportError, match="exited with exit code 5") as info:
                await transport.receive()
            await wait_gone(grandchild)
    finally:
        await transport.aclose()
    assert info.value.stderr_tail == "giving up"


async def test_a_start_cancelled_half_way_leaves_no_process_behind(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from acpio.transports import subprocess as module

    pid_file = tmp_path / "grandchild.pid"
    code = (
        "import subprocess, sys\n"
        "p = subprocess.Popen(['sleep', '300'], stdin=subprocess.DEVNULL)\n"
        f"open({str(pid_file)!r}, 'w').write(str(p.pid))\n"
        "sys.stdin.read()\n"
    )
    opening: asyncio.Future[AgentProcess] | None = None
    connection_made = module._AgentProtocol.connection_made

    def cancel_once_started(protocol: Any, transport: Any) -> None:
        # The child runs and has a child of its own; the start is not finished: cancel it now.
        connection_made(protocol, transport)
        deadline = time.monotonic() + TIMEOUT
        while not (pid_file.exists() and pid_file.read_text()):
            assert time.monotonic() < deadline, "the child never started its grandchild"
            time.sleep(0.01)
        assert opening is not None
        opening.cancel()

    monkeypatch.setattr(module._AgentProtocol, "connection_made", cancel_once_started)
    opening = asyncio.ensure_future(AcpAgent(python(code)).open())
    try:
        with pytest.raises(asyncio.CancelledError):
            async with asyncio.timeout(TIMEOUT):
                await opening
        await wait_gone(int(pid_file.read_text()))
    finally:
        kill_if_alive(pid_file)


def kill_if_alive(pid_file: Path) -> None:
    """After a failure: end the grandchild named in ``pid_file`` (nothing else would)."""
    if pid_file.exists() and pid_file.read_text() and alive(pid := int(pid_file.read_text())):
        os.kill(pid, signal.SIGKILL)
