"""``acpio prompt --protocol 2 --agent "acpio testy --protocol 2"``: a v2 turn as a user sees it.

Both ends are real processes: the turn's state (working, then the stop reason), testy's plan, its
agent terminal with the command's output, a tool call that advertises ``tool_call/cancel``, a
structured diff as a git patch, and the text.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

SCRIPT = "plan build; check\nrun echo built\nwork 0.2 index the repository\nwrite out.txt done\necho all done"


def test_acpio_prompt_shows_testy_v2s_state_terminal_tool_call_and_diff(tmp_path: Path) -> None:
    testy = f"{sys.executable} -m acpio testy --protocol 2"
    done = subprocess.run(
        [sys.executable, "-m", "acpio", "prompt", "--protocol", "2", "--allow", "--agent", testy, SCRIPT],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "NO_COLOR": "1"},
        check=False,
    )
    assert done.returncode == 0, done.stderr
    out = done.stdout
    path = tmp_path / "out.txt"
    for shown in (
        "[working]",  # state_update running
        "Plan:\n  [ ] build\n  [ ] check\n",
        f"$ echo built  (in {tmp_path})",  # the agent terminal
        "exit status 0\n",
        "[in progress] index the repository\n[completed] index the repository\n",
        f"diff --git a{path} b{path}\n    new file mode 100644\n",
        "+done\n",
        "all done\n[stop reason: end_turn]",  # state_update idle
    ):
        assert shown in out, f"{shown!r} not in:\n{out}"
    assert path.read_text() == "done"


def test_acpio_prompt_session_on_v2_resumes_that_session_in_a_new_agent_process(tmp_path: Path) -> None:
    testy = f"{sys.executable} -m acpio testy --protocol 2 --store sqlite:///{tmp_path / 'sessions.db'}"

    def prompt(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "acpio", "prompt", "--protocol", "2", "--agent", testy, *args],
            cwd=tmp_path, capture_output=True, text=True, timeout=60, env={**os.environ, "NO_COLOR": "1"},
            check=False,
        )  # fmt: skip

    first = prompt("echo one")
    assert first.returncode == 0, first.stderr
    session = first.stderr.split("session ", 1)[1].split()[0]
    second = prompt("--session", session, "echo two")
    assert second.returncode == 0, second.stderr
    assert f"session {session}" in second.stderr  # the same session, not a new one
    assert second.stdout.endswith("two\n[stop reason: end_turn]\n")
    unknown = prompt("--session", "sess_nowhere", "echo three")
    assert unknown.returncode == 4, unknown.stdout
    assert "refused session/resume for session 'sess_nowhere'" in unknown.stderr
