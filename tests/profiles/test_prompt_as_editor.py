"""``acpio prompt --as zed`` talks to an agent as Zed does: Zed's initialize, Zed's early-update drop.

The agent (``tests/check/broken_agent.py --fault early-update``) sends an
``available_commands_update`` before it answers ``session/new``. Zed drops it (zed#60199); so does
``acpio prompt --as zed``, saying so on stderr, while plain ``acpio prompt`` shows it.
"""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
from pathlib import Path
from typing import Any

import acpio

AGENT = shlex.join(
    [sys.executable, str(Path(__file__).parents[1] / "check" / "broken_agent.py"), "--fault", "early-update"]
)
SOURCE = str(Path(acpio.__file__).resolve().parents[1])


def prompt(tmp_path: Path, *args: str) -> tuple[list[dict[str, Any]], str]:
    env = {**os.environ, "PYTHONPATH": SOURCE}
    command = [
        sys.executable,
        "-m",
        "acpio",
        "prompt",
        "--json",
        "--cwd",
        str(tmp_path),
        "--agent",
        AGENT,
        *args,
    ]
    done = subprocess.run(
        command, capture_output=True, text=True, timeout=60, env=env, stdin=subprocess.DEVNULL, check=False
    )
    assert done.returncode == 0, done.stderr
    return [json.loads(line) for line in done.stdout.splitlines()], done.stderr


def updates(frames: list[dict[str, Any]]) -> list[str]:
    return [
        f["message"]["params"]["update"]["sessionUpdate"]
        for f in frames
        if f["direction"] == "recv" and f["message"].get("method") == "session/update"
    ]


def test_as_zed_the_early_update_is_dropped_with_a_warning_naming_the_issue(tmp_path: Path) -> None:
    frames, stderr = prompt(tmp_path, "--as", "zed", "hello")
    initialize = frames[0]["message"]["params"]
    assert initialize["clientInfo"]["name"] == "zed"
    assert initialize["clientCapabilities"] == {
        "fs": {"readTextFile": True, "writeTextFile": True},
        "terminal": True,
    }
    assert initialize["protocolVersion"] == 1
    assert updates(frames) == ["agent_message_chunk"]  # the early available_commands_update never arrived
    assert (
        "warning: Zed drops this session/update of session 's-1': it arrived before the session/new answer "
        "(https://github.com/zed-industries/zed/issues/60199)"
    ) in stderr


def test_without_a_profile_the_early_update_is_shown(tmp_path: Path) -> None:
    frames, stderr = prompt(tmp_path, "hello")
    assert updates(frames) == ["available_commands_update", "agent_message_chunk"]
    assert "Zed drops" not in stderr
    assert frames[0]["message"]["params"]["clientInfo"]["name"] == "acpio"


def test_as_jetbrains_the_update_is_kept_and_the_hang_is_named(tmp_path: Path) -> None:
    frames, stderr = prompt(tmp_path, "--as", "jetbrains", "hello")
    assert updates(frames) == ["available_commands_update", "agent_message_chunk"]
    assert "warning: JetBrains AI Assistant hangs on this session/update" in stderr
