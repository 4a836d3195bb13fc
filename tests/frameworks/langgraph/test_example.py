"""examples/langgraph_agent.py under ``acpio prompt``: a diff, a permission, a cancel, a reload elsewhere."""

from __future__ import annotations

import asyncio
import os
import re
import shlex
import signal
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("langgraph.checkpoint.sqlite", reason="the langgraph extra is not installed")

from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver

EXAMPLE = Path(__file__).resolve().parents[3] / "examples" / "langgraph_agent.py"
AGENT = shlex.join([sys.executable, str(EXAMPLE)])
TIMEOUT = 60


def environment() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("ACPIO_AGENT", "NO_COLOR")}
    env["PYTHONUNBUFFERED"] = "1"
    return env


def acpio_prompt(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "acpio", "prompt", "--agent", AGENT, *args],
        cwd=cwd, capture_output=True, text=True, timeout=TIMEOUT, env=environment(), check=False,
    )  # fmt: skip


def test_the_example_is_under_30_lines_and_the_docs_show_it_whole() -> None:
    assert len(EXAMPLE.read_text().splitlines()) < 30
    page = EXAMPLE.parents[1] / "docs" / "frameworks" / "langgraph.md"
    assert f"```python\n{EXAMPLE.read_text()}```" in page.read_text()


@pytest.mark.slow  # two agent processes importing LangGraph, one after the other
@pytest.mark.parametrize("protocol", ["1", "2"])
async def test_a_diff_a_permission_then_the_session_reloaded_in_a_new_process(
    tmp_path: Path, protocol: str
) -> None:
    first = acpio_prompt(tmp_path, "--protocol", protocol, "--allow", "take a note")
    assert first.returncode == 0, first.stderr
    assert "[permission] Edit notes.txt: Allow (allow)" in first.stdout
    assert f"+++ {tmp_path / 'notes.txt'}\n    @@ -0,0 +1 @@\n    +hi" in first.stdout
    assert first.stdout.endswith("Noted.\n[stop reason: end_turn]\n")
    assert (tmp_path / "notes.txt").read_text() == "hi"
    session = re.search(r"session (sess_[0-9a-f]+)", first.stderr)
    assert session is not None, first.stderr
    (tmp_path / "notes.txt").unlink()

    if protocol == "2":  # the turn's states: asking made the session wait for the user
        assert "[waiting for you]\n[permission] Edit notes.txt: Allow (allow)\n[working]" in first.stdout
        assert "    diff --git " in first.stdout  # v2's structured diff, as a git patch
    second = acpio_prompt(tmp_path, "--protocol", protocol, "--deny", "--session", session[1], "again")
    assert second.returncode == 0, second.stderr
    if protocol == "1":  # session/load replays the history; on v2 acpio prompt resumes it without
        history, _, turn = second.stdout.partition("--- end of history ---")
        assert "you> take a note" in history
        assert "+hi" in history
        assert "Noted." in history
    else:
        turn = second.stdout
        assert f"session {session[1]}" in second.stderr
    assert "[permission] Edit notes.txt: Reject (reject)" in turn
    assert not (tmp_path / "notes.txt").exists()
    # the graph went on in the same thread of the checkpointer: both prompts are in its state
    async with AsyncSqliteSaver.from_conn_string(str(tmp_path / "langgraph.db")) as saver:
        saved = await saver.aget_tuple({"configurable": {"thread_id": session[1]}})
    assert saved is not None
    humans = [m.content for m in saved.checkpoint["channel_values"]["messages"] if m.type == "human"]
    assert humans == ["take a note", "again"]


@pytest.mark.slow  # an agent process importing LangGraph, then the cancel
@pytest.mark.parametrize("protocol", ["1", "2"])
async def test_ctrl_c_while_the_permission_is_asked_ends_the_turn_cancelled(
    tmp_path: Path, protocol: str
) -> None:
    process = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "acpio", "prompt", "--protocol", protocol, "--ask", "--agent", AGENT,
        "take a note", cwd=tmp_path, env=environment(), stdin=subprocess.PIPE, stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )  # fmt: skip
    assert process.stdout is not None
    try:
        async with asyncio.timeout(TIMEOUT):
            while "Edit notes.txt" not in (await process.stdout.readline()).decode():
                pass
            await asyncio.sleep(0.5)  # the question is on the screen
            process.send_signal(signal.SIGINT)
            out, err = await process.communicate()
    finally:
        if process.returncode is None:
            process.kill()
            await process.wait()
    assert process.returncode == 130, err.decode()
    assert out.decode().endswith("[stop reason: cancelled]\n")
    assert not (tmp_path / "notes.txt").exists()
