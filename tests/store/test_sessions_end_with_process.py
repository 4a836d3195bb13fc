"""An agent whose sessions are kept in memory says so at ``initialize``, and ``acpio prompt`` then
does not offer to continue the session in another process (it would be unknown there)."""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
from pathlib import Path

ACPIO = [sys.executable, "-m", "acpio"]


def _session_note(store: str, cwd: Path) -> str:
    agent = shlex.join([*ACPIO, "agent", "--offline", "--store", store])
    done = subprocess.run(
        [*ACPIO, "prompt", "--agent", agent, "say hi"],
        cwd=cwd,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=60,
        env={k: v for k, v in os.environ.items() if k != "ACPIO_AGENT"},
    )
    assert done.returncode == 0, done.stderr
    assert "hi" in done.stdout
    (line,) = [line for line in done.stderr.splitlines() if line.startswith("acpio: session ")]
    return line


def test_a_memory_store_ends_with_the_process_and_a_file_does_not(tmp_path: Path) -> None:
    assert _session_note("memory:", tmp_path).endswith("(it ends with the agent's process)")
    kept = _session_note(f"sqlite:///{tmp_path / 'sessions.db'}", tmp_path)
    assert "(continue it with --session sess_" in kept
