"""``acpio prompt`` against ``acpio agent`` in real processes: Ctrl-C while the agent's command runs in
a real terminal cancels the turn, and the command's process is gone."""

from __future__ import annotations

import contextlib
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path


def _running(marker: str) -> list[str]:
    found = []
    for entry in Path("/proc").iterdir():
        try:
            if entry.name.isdigit() and marker.encode() in (entry / "cmdline").read_bytes():
                found.append(entry.name)
        except OSError:
            continue
    return found


def _offline_agent(tmp_path: Path) -> str:
    """The command of ``acpio agent --offline``, its sessions and keys kept in ``tmp_path``."""
    return (
        f"{sys.executable} -m acpio agent --offline --store sqlite:///{tmp_path / 's.db'}"
        f" --credentials {tmp_path / 'keys.json'}"
    )


def test_ctrl_c_while_a_command_runs_cancels_the_turn_and_ends_the_command(tmp_path: Path) -> None:
    seconds = f"{random.randint(100, 999)}.{random.randint(100, 999)}"  # names this test's process
    agent = _offline_agent(tmp_path)
    prompt = subprocess.Popen(
        [sys.executable, "-m", "acpio", "prompt", "--allow", "--agent", agent, f"run sleep {seconds}"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=tmp_path,
        start_new_session=True,
    )
    try:
        assert prompt.stdout is not None
        seen = []
        for line in prompt.stdout:
            seen.append(line)
            if f"Run `sleep {seconds}`" in line:  # the agent's tool call; its command starts soon
                break
        deadline = time.monotonic() + 20
        while not _running(f"sleep {seconds}") and time.monotonic() < deadline:
            time.sleep(0.05)
        assert _running(f"sleep {seconds}"), "".join(seen)
        prompt.send_signal(signal.SIGINT)
        rest, errors = prompt.communicate(timeout=30)
        out = "".join(seen) + rest
        assert prompt.returncode == 130, errors
        assert f"[failed] Run `sleep {seconds}` (execute)" in out
        assert out.rstrip().endswith("[stop reason: cancelled]")
        assert _running(f"sleep {seconds}") == []  # (before the clean-up below could end it)
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(prompt.pid, signal.SIGKILL)  # on a failure, the agent and its command too
        prompt.wait()


def test_under_ask_one_command_of_the_agent_is_asked_about_once(tmp_path: Path) -> None:
    """The agent asks to ``Run `cmd```, then runs ``sh -c cmd``: the one yes covers both."""
    agent = _offline_agent(tmp_path)
    done = subprocess.run(
        [sys.executable, "-m", "acpio", "prompt", "--ask", "--agent", agent, "run echo ran > ran.txt"],
        input="y\n",  # one answer: a second question would read the end of input, a refusal
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert done.stderr.count("The agent asks for permission") == 1, done.stderr
    assert "The agent asks for permission: Run `echo ran > ran.txt` (execute)" in done.stderr
    assert (tmp_path / "ran.txt").read_text() == "ran\n"
    assert "[completed] Run `echo ran > ran.txt` (execute)" in done.stdout
