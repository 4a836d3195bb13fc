"""``acpio conductor`` ends every component process group, however it is stopped.

The chain is the example arrow proxy in front of ``tests/oneshot/stubborn_testy.py``: testy that
ignores SIGTERM and SIGHUP, stays alive when its stdin closes and keeps a ``sleep`` of its own in its
process group. The test is the client, speaking raw JSON lines. Each test stops the conductor one way
(SIGTERM, SIGHUP, SIGINT, its stdin closing, a second signal, its parent exiting) and checks, by pid
and process group, that no component and nothing a component started is left.
"""

from __future__ import annotations

import asyncio
import importlib.util
import json
import os
import signal
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType

import pytest

from ._support import ARROW, PYTHON, ROOT

TIMEOUT = 30
STUBBORN = ROOT / "tests" / "oneshot" / "stubborn_testy.py"
INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {"protocolVersion": 1, "clientCapabilities": {}},
}


def _load_processes() -> ModuleType:
    """``tests/oneshot/_processes.py`` (pid and process-group helpers), loaded by path."""
    spec = importlib.util.spec_from_file_location(
        "acpio_test_processes", ROOT / "tests/oneshot/_processes.py"
    )
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


processes = _load_processes()
pytestmark = processes.needs_proc


@dataclass
class Conductor:
    """A running conductor (or the parent that runs it), with the pids and groups it started."""

    process: asyncio.subprocess.Process
    pid: int
    log: Path
    pids: list[int]
    groups: list[int]

    def log_lines(self) -> list[str]:
        return self.log.read_text().splitlines() if self.log.exists() else []

    async def initialized(self) -> None:
        """Send ``initialize`` (which starts the components), read the answer, note the processes."""
        assert self.process.stdin is not None
        assert self.process.stdout is not None
        self.process.stdin.write(json.dumps(INITIALIZE).encode() + b"\n")
        await self.process.stdin.drain()
        async with asyncio.timeout(TIMEOUT):
            answer = json.loads(await self.process.stdout.readline())
            # The agent notes its pid and its sleep's at start: polled, a file signals nothing.
            while len(self.log_lines()) < 2:  # noqa: ASYNC110
                await asyncio.sleep(0.02)
        assert answer["id"] == 1
        assert answer["result"]["protocolVersion"] == 1
        components = processes.children(self.pid)
        assert len(components) == 2  # the proxy and the agent
        grandchild = int(self.log_lines()[1].split()[1])
        self.pids += [*components, grandchild]
        self.groups += components

    async def stopped(self) -> tuple[int, str]:
        async with asyncio.timeout(TIMEOUT):
            _, err = await self.process.communicate()
        assert self.process.returncode is not None
        return self.process.returncode, err.decode()


def conductor_argv(log: Path) -> list[str]:
    return [PYTHON, "-m", "acpio", "conductor", "agent", ARROW, f"{PYTHON} {STUBBORN} {log}"]


@pytest.fixture
async def started(tmp_path: Path) -> AsyncIterator[list[Conductor]]:
    """Conductors the test started, cleaned up (killed) if the test left them running."""
    runs: list[Conductor] = []
    yield runs
    for run in runs:
        processes.kill_all(run.pids, run.groups)
        if run.process.returncode is None:
            run.process.kill()
        # Not process.wait(): it also waits for the pipes, which a conductor left running may hold.
        await processes.wait_gone([run.process.pid])


async def start(runs: list[Conductor], tmp_path: Path) -> Conductor:
    log = tmp_path / "agent.log"
    process = await asyncio.create_subprocess_exec(
        *conductor_argv(log),
        cwd=ROOT,
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    run = Conductor(process, process.pid, log, [process.pid], [])
    runs.append(run)
    return run


@pytest.mark.parametrize(
    ("how", "code"),
    [("SIGTERM", 143), ("SIGHUP", 129), ("SIGINT", 130), ("stdin closed", 0)],
)
async def test_every_way_of_ending_ends_the_components_in_order(
    started: list[Conductor], tmp_path: Path, how: str, code: int
) -> None:
    run = await start(started, tmp_path)
    await run.initialized()
    if how == "stdin closed":  # the client went away: an editor that exited or crashed
        assert run.process.stdin is not None
        run.process.stdin.close()
    else:
        run.process.send_signal(signal.Signals[how])
    returncode, err = await run.stopped()
    assert returncode == code, err
    assert "Traceback" not in err
    if how != "stdin closed":
        assert f"acpio: stopping on {how}; ending the components" in err
    await processes.wait_gone(run.pids, run.groups)
    # In order: the agent's stdin was closed, then SIGTERM (which it ignores), then SIGKILL.
    assert run.log_lines()[2:] == ["stdin closed", "SIGTERM ignored"]


async def test_a_second_signal_while_ending_kills_the_components_at_once(
    started: list[Conductor], tmp_path: Path
) -> None:
    run = await start(started, tmp_path)
    await run.initialized()
    run.process.send_signal(signal.SIGTERM)
    assert run.process.stderr is not None
    async with asyncio.timeout(TIMEOUT):
        while True:
            line = await run.process.stderr.readline()
            assert line, "the conductor's stderr ended before it said it was stopping"
            if b"acpio: stopping on SIGTERM" in line:
                break
    began = time.monotonic()
    run.process.send_signal(signal.SIGTERM)
    returncode, err = await run.stopped()
    await processes.wait_gone(run.pids, run.groups)
    # Not waiting for the agent's grace periods (2 + 1 s, from the first signal); under load the
    # kill itself took 1.54 s once. The agent's log (below) says it got no SIGTERM: no grace ran.
    assert time.monotonic() - began < 2.0
    assert returncode == 143, err
    assert "acpio: stopping at once: killing the components" in err
    assert "SIGTERM ignored" not in run.log_lines()


#: A parent for the conductor that the test can kill: the conductor shares its stdin and stdout.
#: With ``nohup`` first, SIGHUP is ignored (as ``nohup`` does) for the conductor.
PARENT = """
import signal, subprocess, sys
if sys.argv[1] == "nohup":
    signal.signal(signal.SIGHUP, signal.SIG_IGN)
child = subprocess.Popen(sys.argv[2:])
print(child.pid, flush=True)
child.wait()
"""


async def start_under_a_parent(runs: list[Conductor], tmp_path: Path, how: str) -> Conductor:
    log = tmp_path / "agent.log"
    parent = await asyncio.create_subprocess_exec(
        *(PYTHON, "-c", PARENT, how),
        *conductor_argv(log),
        cwd=ROOT,
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    assert parent.stdout is not None
    async with asyncio.timeout(TIMEOUT):
        pid = int(await parent.stdout.readline())
    run = Conductor(parent, pid, log, [pid], [])
    runs.append(run)
    await run.initialized()
    return run


async def test_when_its_parent_exits_the_conductor_ends_the_components(
    started: list[Conductor], tmp_path: Path
) -> None:
    run = await start_under_a_parent(started, tmp_path, "plain")
    parent = run.process
    parent.kill()  # SIGKILL: the conductor gets no signal, and its stdin stays open (we hold it)
    await processes.wait_gone([parent.pid])
    await processes.wait_gone(run.pids, run.groups, within=TIMEOUT)
    assert run.log_lines()[2:] == ["stdin closed", "SIGTERM ignored"]
    assert run.process.stderr is not None
    err = await run.process.stderr.read()  # the conductor's stderr: the pipe ends when it exits
    assert b"acpio: stopping: the process that started acpio exited; ending the components" in err
    assert run.process.stdin is not None
    run.process.stdin.close()


async def test_under_nohup_neither_sighup_nor_the_parents_exit_stops_the_conductor(
    started: list[Conductor], tmp_path: Path
) -> None:
    run = await start_under_a_parent(started, tmp_path, "nohup")
    os.kill(run.pid, signal.SIGHUP)
    run.process.kill()  # the parent
    await processes.wait_gone([run.process.pid])  # not wait(): the conductor holds its pipes
    await asyncio.sleep(1.5)  # three looks at the parent process id
    assert all(processes.alive(pid) for pid in run.pids), run.log_lines()
    assert run.process.stdin is not None
    run.process.stdin.close()  # the end of stdin still ends it, in order
    await processes.wait_gone(run.pids, run.groups, within=TIMEOUT)
    assert run.log_lines()[2:] == ["stdin closed", "SIGTERM ignored"]
    assert run.process.stderr is not None
    assert b"stopping" not in await run.process.stderr.read()
