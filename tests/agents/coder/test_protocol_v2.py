"""``acpio agent --offline --protocol 2`` over stdio: files it edits itself, inside the session's roots.

v2 has no client files nor terminals: the agent reads and writes the files itself, confined to the
session's directory as on v1, shows an edit as a v2 diff (``changes`` plus a git patch), and runs a
command as an agent-owned terminal. Driven by acpio's negotiating client and by ``acpio prompt``.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from acpio import AcpAgent, Client
from acpio.schema import v2
from acpio.session import SessionConnection
from acpio.session.turn_view import DiffView, TurnView

TIMEOUT = 60
SCRIPT = "edit a.txt: hello => bye\nwrite ../outside.txt: escaped\nrun echo from-an-agent-terminal\nsay done"


def _agent(tmp_path: Path, protocol: str) -> list[str]:
    return [
        *(sys.executable, "-m", "acpio", "agent", "--offline", "--protocol", protocol),
        *("--store", "memory:", "--credentials", str(tmp_path / "keys.json")),
    ]


async def _turn(agent: list[str], project: Path) -> tuple[object, TurnView, str]:
    seen: dict[str, object] = {}

    async def main(cx: SessionConnection) -> None:
        seen["answer"] = await cx.initialize()
        async with cx.build_session(str(project)).start_session() as session:
            session.send_prompt(SCRIPT)
            seen["text"] = await session.read_to_string(permissions="allow")
            seen["view"] = session.view

    await Client.builder().connect_with(AcpAgent(agent, cwd=str(project)), main)
    view = seen["view"]
    assert isinstance(view, TurnView)
    return seen["answer"], view, str(seen["text"])


def _project(tmp_path: Path) -> Path:
    project = tmp_path / "project"
    project.mkdir()
    (project / "a.txt").write_text("hello\n")
    return project


async def test_the_negotiating_client_gets_v2_an_edit_as_changes_and_an_agent_terminal(
    tmp_path: Path,
) -> None:
    project = _project(tmp_path)
    answer, view, text = await _turn(_agent(tmp_path, "2"), project)
    assert isinstance(answer, v2.InitializeResponse)
    assert answer.info.name == "acpio-agent"
    assert (project / "a.txt").read_text() == "bye\n"  # written by the agent itself
    assert not (tmp_path / "outside.txt").exists()
    calls = {call.title: call for call in view.tool_calls.values()}
    edit = calls["Edit a.txt"]
    assert edit.status == "completed"
    diffs = [c for c in edit.content if isinstance(c, DiffView)]
    assert [(ch.operation, ch.path) for d in diffs for ch in d.changes] == [
        ("modify", str(project / "a.txt"))
    ]
    patch = diffs[0].patch or ""
    assert "-hello" in patch
    assert "+bye" in patch
    outside = calls["Write ../outside.txt"]
    assert outside.status == "failed"
    assert "outside the session's directories" in text + repr(outside.content)
    assert calls["Run `echo from-an-agent-terminal`"].status == "completed"
    [terminal] = view.terminals.values()
    assert terminal.command == "sh -c 'echo from-an-agent-terminal'"
    assert bytes(terminal.output) == b"from-an-agent-terminal\n"
    assert terminal.exit_code == 0
    assert view.stop_reason == "end_turn"


async def test_both_serves_a_v2_client_v2_and_protocol_1_keeps_v1(tmp_path: Path) -> None:
    project = _project(tmp_path)
    answer, view, _ = await _turn(_agent(tmp_path, "both"), project)
    assert isinstance(answer, v2.InitializeResponse)
    assert (project / "a.txt").read_text() == "bye\n"
    assert len(view.terminals) == 1
    (project / "a.txt").write_text("hello\n")
    answer, view, text = await _turn(_agent(tmp_path, "1"), project)
    assert not isinstance(answer, v2.InitializeResponse)  # the default: v1, as before
    assert (project / "a.txt").read_text() == "bye\n"
    # v1: no agent terminals; commands need the client's, and this client offers none
    assert view.terminals == {}
    assert "(the tool run_command is not available here)" in text


def test_acpio_prompt_protocol_2_shows_the_diff_the_refusal_and_the_agent_terminal(tmp_path: Path) -> None:
    project = _project(tmp_path)
    agent = " ".join(_agent(tmp_path, "2"))
    done = subprocess.run(
        [sys.executable, "-m", "acpio", "prompt", "--protocol", "2", "--allow", "--agent", agent, SCRIPT],
        capture_output=True,
        text=True,
        cwd=project,
        timeout=TIMEOUT,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    out = done.stdout
    assert "[completed] Edit a.txt (edit)" in out
    assert "-hello" in out
    assert "+bye" in out
    assert "[failed] Write ../outside.txt (edit)" in out
    assert "../outside.txt is outside the session's directories" in out
    assert "$ sh -c 'echo from-an-agent-terminal'" in out
    assert "[exit status 0]" in out
    assert out.rstrip().endswith("[stop reason: end_turn]")
    assert (project / "a.txt").read_text() == "bye\n"
    assert not (tmp_path / "outside.txt").exists()
