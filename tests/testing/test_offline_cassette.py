"""A cassette of ``acpio agent --offline``, recorded by ``acpio prompt --record``: ``acpio replay`` plays
that agent so that ``acpio prompt`` cannot tell it from the real one, and the recorded client catches
the agent when its behaviour changes (here its default mode), with the conversation as the diff."""

from __future__ import annotations

import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from acpio.testing import Tolerance, replay_client
from acpio.transports import AcpAgent, AgentCommand

ACPIO = [sys.executable, "-m", "acpio"]
SCRIPT = "say hi\nwrite notes.txt: hello\nread notes.txt"

#: Each test starts agent processes (a few seconds each on a busy machine).
pytestmark = pytest.mark.slow


def offline(state: Path, *extra: str) -> str:
    """``acpio agent --offline`` with its sessions in memory and its credentials in ``state``."""
    command = [*ACPIO, "agent", "--offline", "--store", "memory:", "--credentials", str(state / "c.json")]
    return shlex.join([*command, *extra])


def prompt(agent: str, cwd: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*ACPIO, "prompt", "--allow", "--no-color", "--agent", agent, "--cwd", str(cwd), *extra, "-"],
        input=SCRIPT,
        capture_output=True,
        text=True,
        timeout=60,
    )


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, subprocess.CompletedProcess[str]]:
    """The cassette of one real run, and what ``acpio prompt`` showed of it."""
    base = tmp_path_factory.mktemp("offline")
    (base / "project").mkdir()
    cassette = base / "offline.jsonl"
    real = prompt(offline(base), base / "project", "--record", str(cassette))
    assert real.returncode == 0, real.stderr
    return cassette, real


def test_acpio_prompt_cannot_tell_the_replay_from_the_agent(
    recorded: tuple[Path, subprocess.CompletedProcess[str]], tmp_path: Path
) -> None:
    cassette, real = recorded
    project = tmp_path / "project"  # another directory: the replay writes and reads there
    project.mkdir()
    fake = prompt(shlex.join([*ACPIO, "replay", str(cassette)]), project)
    assert fake.returncode == real.returncode == 0
    # the same turn, diff of notes.txt included, with this run's directory where the path shows
    assert fake.stdout.replace(str(project), "DIR") == real.stdout.replace(
        str(cassette.parent / "project"), "DIR"
    )
    assert "Done. Tool results:\n- write_file: Wrote notes.txt\n- read_file: hello" in fake.stdout
    assert (project / "notes.txt").read_text() == "hello"


def test_a_replayed_agent_cut_mid_line_fails_the_client_as_a_dead_agent_would(
    recorded: tuple[Path, subprocess.CompletedProcess[str]], tmp_path: Path
) -> None:
    cassette, _ = recorded
    fake = prompt(shlex.join([*ACPIO, "replay", "--cut-at", "6", str(cassette)]), tmp_path)
    assert fake.returncode == 3, fake.stderr  # the agent exited
    assert "acpio replay: the replayed agent's message 6 was cut mid-line, as asked" in fake.stderr


async def test_the_recorded_client_catches_a_changed_agent(
    recorded: tuple[Path, subprocess.CompletedProcess[str]], tmp_path: Path
) -> None:
    cassette, _ = recorded
    # the offline model counts the session's directory in its usage: another directory, another count
    usage = Tolerance(ignored_fields=frozenset({"used"}))
    same = AcpAgent(AgentCommand.from_string(offline(tmp_path)))
    (await replay_client(cassette, same, cwd=tmp_path, tolerance=usage)).check()
    changed = AcpAgent(AgentCommand.from_string(offline(tmp_path, "--mode", "auto-edit")))
    report = await replay_client(cassette, changed, cwd=tmp_path, tolerance=usage, wait_timeout=2)
    shown = report.render()
    assert "    - agent → client  session/request_permission  Write notes.txt    (not sent)" in shown
    assert '          result.modes.currentModeId: "ask" -> "auto-edit"' in shown
    assert "      agent ⇢ client  session/prompt  stopReason: end_turn" in shown
