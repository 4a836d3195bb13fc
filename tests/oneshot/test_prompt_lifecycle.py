"""``acpio prompt`` ends every process group it started, however it is stopped; it gives up on a silent agent.

The agent is ``stubborn_testy.py``: testy that ignores SIGTERM and SIGHUP, stays alive when its stdin
closes and keeps a ``sleep`` of its own in its process group; its ``run`` command makes acpio start
a terminal command (in a group of its own). Each test stops ``acpio prompt`` one way (SIGTERM,
SIGHUP, a second signal, its parent exiting, the agent dying) and checks, by pid and process group,
that nothing it started is left.
"""

from __future__ import annotations

import asyncio
import io
import os
import shlex
import signal
import subprocess
import sys
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import cast

import pytest

from acpio import Agent
from acpio import schema as acp
from acpio.oneshot import ExitCode, PromptFailed, PromptOptions, run_prompt

from ._processes import alive, kill_all, needs_proc, wait_gone
from ._support import until

pytestmark = needs_proc

HERE = Path(__file__).resolve().parent
TIMEOUT = 30


def environment() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("ACPIO_AGENT", "NO_COLOR")}
    env["PYTHONUNBUFFERED"] = "1"
    return env


@dataclass
class Run:
    """An ``acpio prompt`` process, its agent and the terminal command the agent asked for."""

    project: Path
    process: asyncio.subprocess.Process
    log: Path
    #: Every pid and process group seen, for the final check and the clean-up.
    pids: list[int] = field(default_factory=list)
    groups: list[int] = field(default_factory=list)

    def log_lines(self) -> list[str]:
        return self.log.read_text().splitlines() if self.log.exists() else []

    async def started(self) -> None:
        """Wait until the agent and the terminal command run; note their pids and groups."""
        pids_file = self.project / "command.pids"
        await until(lambda: len(self.log_lines()) >= 2 and len(pids_file.read_text().split()) >= 2)
        agent = int(self.log_lines()[0].split()[1])
        grandchild = int(self.log_lines()[1].split()[1])
        shell, sleeper = map(int, pids_file.read_text().split()[:2])
        self.pids += [agent, grandchild, shell, sleeper]
        self.groups += [agent, shell]
        assert all(alive(pid) for pid in self.pids)

    async def stopped(self) -> tuple[int, str]:
        """Wait for acpio to exit; its exit code and stderr."""
        async with asyncio.timeout(TIMEOUT):
            _, err = await self.process.communicate()
        assert self.process.returncode is not None
        return self.process.returncode, err.decode()


async def wait_for_line(stream: asyncio.StreamReader | None, wanted: str) -> None:
    assert stream is not None
    async with asyncio.timeout(TIMEOUT):
        while True:
            line = (await stream.readline()).decode()
            assert line, f"the output ended before {wanted!r}"
            if wanted in line:
                return


def command(project: Path, trap: str = "") -> str:
    """testy's ``run`` of a shell that keeps a ``sleep`` in its group and writes both pids."""
    return f"run sh -c '{trap}sleep 300 & echo $$ $! > {project / 'command.pids'}; wait'"


class Launcher:
    """Starts ``acpio prompt`` processes with the stubborn agent; cleans up what a failed test left."""

    def __init__(self, tmp_path: Path) -> None:
        self.tmp_path = tmp_path
        self.project = tmp_path / "project"
        self.project.mkdir()
        (self.project / "command.pids").write_text("")
        self.log = tmp_path / "agent.log"
        self.runs: list[Run] = []

    def argv(self, text: str, *options: str) -> list[str]:
        agent = shlex.join([sys.executable, str(HERE / "stubborn_testy.py"), str(self.log)])
        # --allow: the agent's commands run only with the user's consent.
        return [sys.executable, "-m", "acpio", "prompt", "--agent", agent, "--allow", *options, text]

    async def start(self, text: str) -> Run:
        process = await asyncio.create_subprocess_exec(
            *self.argv(text),
            cwd=self.project,
            stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            env=environment(),
        )
        run = Run(self.project, process, self.log, pids=[process.pid])
        self.runs.append(run)
        return run

    async def clean_up(self) -> None:
        for run in self.runs:
            if run.process is not None and run.process.returncode is None:
                run.process.kill()
                await run.process.wait()
            kill_all(run.pids, run.groups)


@pytest.fixture
async def launcher(tmp_path: Path) -> AsyncIterator[Launcher]:
    launcher = Launcher(tmp_path)
    try:
        yield launcher
    finally:
        await launcher.clean_up()


# --- signals -----------------------------------------------------------------------------------------


@pytest.mark.parametrize(("number", "code"), [(signal.SIGTERM, 143), (signal.SIGHUP, 129)])
async def test_a_signal_during_a_turn_ends_the_agent_and_its_commands_in_order(
    launcher: Launcher, number: signal.Signals, code: int
) -> None:
    run = await launcher.start(command(launcher.project))
    await run.started()
    run.process.send_signal(number)
    returncode, err = await run.stopped()
    assert returncode == code, err
    assert f"acpio: stopping on {number.name}; ending the agent and the commands it runs" in err
    assert "Traceback" not in err
    await wait_gone(run.pids, run.groups)
    # In order: the agent's stdin was closed, then SIGTERM (which it ignores), then SIGKILL.
    assert run.log_lines()[2:] == ["stdin closed", "SIGTERM ignored"]


async def test_a_second_signal_while_ending_kills_everything_at_once(launcher: Launcher) -> None:
    # The command ignores SIGTERM too: without the second signal, ending takes the grace periods.
    run = await launcher.start(command(launcher.project, trap='trap "" TERM; '))
    await run.started()
    run.process.send_signal(signal.SIGTERM)
    await wait_for_line(run.process.stderr, "acpio: stopping on SIGTERM")
    run.process.send_signal(signal.SIGTERM)
    returncode, err = await run.stopped()
    await wait_gone(run.pids, run.groups)
    assert returncode == 143, err
    assert "acpio: stopped: the agent was killed" in err
    # SIGKILL came before any SIGTERM: no grace period was waited (a clock would say the same, but
    # not on a loaded machine, where killing and reaping alone can take the 2 s of a grace period).
    assert "SIGTERM ignored" not in run.log_lines()


async def test_ctrl_c_while_ending_kills_everything_at_once(launcher: Launcher) -> None:
    run = await launcher.start(command(launcher.project, trap='trap "" TERM; '))
    await run.started()
    run.process.send_signal(signal.SIGHUP)
    await wait_for_line(run.process.stderr, "acpio: stopping on SIGHUP")
    run.process.send_signal(signal.SIGINT)
    returncode, err = await run.stopped()
    await wait_gone(run.pids, run.groups)
    assert returncode == 129, err
    assert "acpio: stopped: the agent was killed" in err
    assert "SIGTERM ignored" not in run.log_lines()  # killed at once, as above


# --- the parent exits, the agent dies ----------------------------------------------------------------

#: A parent for acpio that the test can kill: it starts acpio (argv from its own; with SIGHUP ignored
#: when the first word is ``nohup``, as ``nohup`` does), and writes acpio's pid.
PARENT = """
import signal, subprocess, sys
if sys.argv[3] == "nohup":
    signal.signal(signal.SIGHUP, signal.SIG_IGN)
child = subprocess.Popen(sys.argv[4:], stdin=subprocess.DEVNULL, stdout=open(sys.argv[1], "w"),
                         stderr=open(sys.argv[2], "w"))
print(child.pid, flush=True)
child.wait()
"""


@asynccontextmanager
async def under_a_parent(
    launcher: Launcher, how: str
) -> AsyncIterator[tuple[asyncio.subprocess.Process, Run]]:
    """Start ``acpio prompt`` (with the terminal command) as the child of a parent the test can kill."""
    out, err = launcher.tmp_path / "out.txt", launcher.tmp_path / "err.txt"
    parent = await asyncio.create_subprocess_exec(
        *(sys.executable, "-c", PARENT, str(out), str(err), how),
        *launcher.argv(command(launcher.project)),
        cwd=launcher.project,
        stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE,
        env=environment(),
    )
    run: Run | None = None
    try:
        assert parent.stdout is not None
        async with asyncio.timeout(TIMEOUT):
            acpio_pid = int(await parent.stdout.readline())
        run = Run(launcher.project, parent, launcher.log, pids=[acpio_pid])
        await run.started()
        yield parent, run
    finally:
        if parent.returncode is None:
            parent.kill()
            await parent.wait()
        if run is not None:
            kill_all(run.pids, run.groups)


async def test_when_its_parent_exits_acpio_ends_the_agent_and_its_commands(launcher: Launcher) -> None:
    async with under_a_parent(launcher, "plain") as (parent, run):
        parent.kill()  # SIGKILL: acpio gets no signal, its parent is simply gone
        await parent.wait()
        await wait_gone(run.pids, run.groups, within=TIMEOUT)
    err = (launcher.tmp_path / "err.txt").read_text()
    assert "acpio: stopping: the process that started acpio exited; ending the agent" in err
    assert run.log_lines()[2:] == ["stdin closed", "SIGTERM ignored"]


async def test_under_nohup_neither_sighup_nor_the_parents_exit_stops_acpio(launcher: Launcher) -> None:
    async with under_a_parent(launcher, "nohup") as (parent, run):
        acpio_pid = run.pids[0]
        os.kill(acpio_pid, signal.SIGHUP)
        parent.kill()
        await parent.wait()
        await asyncio.sleep(1.5)  # three looks at the parent process id
        assert all(alive(pid) for pid in run.pids), run.log_lines()
        os.kill(acpio_pid, signal.SIGTERM)  # still stoppable, in order
        await wait_gone(run.pids, run.groups, within=TIMEOUT)
    err = (launcher.tmp_path / "err.txt").read_text()
    assert "stopping on SIGTERM" in err
    assert "SIGHUP" not in err
    assert "the process that started acpio exited" not in err


async def test_when_the_agent_dies_mid_turn_its_group_and_its_commands_are_ended(launcher: Launcher) -> None:
    run = await launcher.start(command(launcher.project))
    await run.started()
    agent = run.pids[1]
    os.kill(agent, signal.SIGKILL)  # the agent alone: its own sleep stays in its group
    returncode, err = await run.stopped()
    assert returncode == ExitCode.AGENT_FAILED, err
    assert "was killed by SIGKILL" in err
    await wait_gone(run.pids, run.groups)


# --- an agent that never answers initialize ----------------------------------------------------------

SILENT_AGENT = r"""
import sys
sys.stderr.write("starting up\nPlease log in at https://example.invalid/login and press Enter\n")
sys.stderr.flush()
for line in sys.stdin:  # the initialize request is read, and never answered
    pass
"""


def test_an_agent_that_never_answers_initialize_times_out_with_its_stderr(launcher: Launcher) -> None:
    script = launcher.tmp_path / "silent.py"
    script.write_text(SILENT_AGENT)
    agent = shlex.join([sys.executable, str(script)])
    began = time.monotonic()
    done = subprocess.run(
        [sys.executable, "-m", "acpio", "prompt", "--agent", agent, "--init-timeout", "1", "hello"],
        cwd=launcher.project,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
        env=environment(),
        check=False,
    )
    assert time.monotonic() - began < 15
    assert done.returncode == 3, done.stderr
    first, *rest = done.stderr.splitlines()
    assert first.startswith("acpio: error: The agent ")
    assert "did not answer initialize within 1 s: it may be waiting for input" in first
    assert "may not speak ACP" in first
    assert "--init-timeout SECONDS" in first
    assert rest == ["  | starting up", "  | Please log in at https://example.invalid/login and press Enter"]


@pytest.mark.parametrize("value", ["-1", "soon", "nan", "inf"])
def test_init_timeout_must_be_a_number_of_seconds(launcher: Launcher, value: str) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "acpio", "prompt", "--agent", "true", "--init-timeout", value, "hello"],
        cwd=launcher.project,
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
        env=environment(),
        check=False,
    )
    assert done.returncode == 2
    assert "--init-timeout" in done.stderr.splitlines()[-1]


async def test_run_prompt_gives_up_on_an_agent_that_never_answers_initialize(tmp_path: Path) -> None:
    silent = Agent.builder(name="silent")
    never: list[object] = []

    @silent.on_request
    async def initialize(request: acp.InitializeRequest, responder: object) -> None:
        never.append(responder)  # kept, never answered

    options = PromptOptions(agent=silent, prompt="hello", cwd=tmp_path, init_timeout=0.3)
    with pytest.raises(PromptFailed) as caught:
        async with asyncio.timeout(TIMEOUT):
            await run_prompt(options, stdout=io.StringIO(), stderr=io.StringIO(), handle_sigint=False)
    assert caught.value.exit_code == ExitCode.AGENT_FAILED
    assert caught.value.message.startswith("The agent did not answer initialize within 0.3 s")
    assert never  # the request did reach the agent


# --- a terminal command whose start is cancelled (the run is being stopped) ---------------------------


async def test_a_terminal_start_cancelled_half_way_leaves_no_process_behind(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from acpio.oneshot import ConfinedFiles, Terminals
    from acpio.oneshot import terminals as module

    pids_file = tmp_path / "command.pids"
    creating: asyncio.Task[acp.CreateTerminalResponse] | None = None

    def started() -> bool:
        return pids_file.exists() and len(pids_file.read_text().split()) >= 2

    def cancel_once_started(protocol: object, transport: object) -> None:
        # The command runs and has a child of its own; its start is not finished: cancel it now.
        deadline = time.monotonic() + TIMEOUT
        while not started():
            assert time.monotonic() < deadline, "the command never started its child"
            time.sleep(0.01)
        assert creating is not None
        creating.cancel()

    monkeypatch.setattr(module._OutputProtocol, "connection_made", cancel_once_started)
    terminals = Terminals(ConfinedFiles(tmp_path))
    request = acp.CreateTerminalRequest(
        session_id="s", command="sh", args=["-c", f"sleep 300 & echo $$ $! > {pids_file}; wait"]
    )
    creating = task = asyncio.ensure_future(terminals.create(request))
    try:
        with pytest.raises(asyncio.CancelledError):
            async with asyncio.timeout(TIMEOUT):
                await task
        shell, sleeper = map(int, pids_file.read_text().split())
        await wait_gone([shell, sleeper], [shell])
    finally:
        await terminals.aclose()
        if started():
            kill_all(map(int, pids_file.read_text().split()))


async def test_cancelling_run_prompt_ends_the_agent_and_its_commands_in_order(launcher: Launcher) -> None:
    from acpio.transports import AgentCommand

    agent = AgentCommand.from_args([sys.executable, str(HERE / "stubborn_testy.py"), str(launcher.log)])
    options = PromptOptions(
        agent=agent, prompt=command(launcher.project), cwd=launcher.project, permissions="allow"
    )
    running = asyncio.ensure_future(
        run_prompt(options, stdout=io.StringIO(), stderr=io.StringIO(), handle_sigint=False)
    )
    # A Run only to find the pids: the process it names is not used.
    run = Run(launcher.project, cast(asyncio.subprocess.Process, None), launcher.log)
    launcher.runs.append(run)
    try:
        await run.started()
        running.cancel()
        with pytest.raises(asyncio.CancelledError):
            async with asyncio.timeout(TIMEOUT):
                await running
        await wait_gone(run.pids, run.groups)
    finally:
        running.cancel()
    assert run.log_lines()[2:] == ["stdin closed", "SIGTERM ignored"]
