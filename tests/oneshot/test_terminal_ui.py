"""``acpio prompt`` as a person sees it: the real command in a real terminal (tmux), read off the screen.

* a running command's output shows under its tool call while it runs, then once, in full;
* the plan is one checklist, updated in place: the final screen holds it once;
* a spinner with the elapsed time while the agent is silent, gone when the turn ends;
* the agent's markdown rendered (plain text when piped);
* Ctrl-C in the middle of a paragraph leaves it once on the screen;
* the permission question shows the diff it is about;
* the interactive mode: a failed turn told and the conversation going on; a second turn, the
  agent's commands completed, Ctrl-C cancelling a turn and not the program, a mode switched, the
  history, Ctrl-D to leave;
* closing the window (the terminal gone, SIGHUP) still ends the agent's commands.
"""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
import time
from pathlib import Path

import pytest

from ._agents import agent_script
from ._processes import alive, kill_all
from ._tmux import needs_tmux, tmux_running

pytestmark = [needs_tmux, pytest.mark.slow]

TESTY = [sys.executable, "-m", "acpio", "testy"]


def prompt_argv(*args: str, agent: list[str] | str = TESTY) -> list[str]:
    command = agent if isinstance(agent, str) else shlex.join(agent)
    return [sys.executable, "-m", "acpio", "prompt", "--agent", command, *args]


def test_live_command_output_and_the_plan_updated_in_place(tmp_path: Path) -> None:
    go_on = tmp_path / "go-on"
    wait = f"while [ ! -e {shlex.quote(str(go_on))} ]; do sleep 0.05; done"
    # the output's words are not in the command line (shown on the screen too)
    command = f"printf 'output %s\\n' one; {wait}; printf 'output %s\\n' two"
    script = "\n".join(
        [
            "plan Look around; Run the command; Report",
            "progress 1",
            f"run sh -c {shlex.quote(command)}",
            "progress 2",
            "echo All done.",
            "progress 3",
        ]
    )
    with tmux_running(prompt_argv("--allow", script), cwd=tmp_path) as terminal:
        # the command's first line is on screen while the command still runs (it waits for go-on)
        screen = terminal.wait_for_text("│ output one")
        assert "▶ Run the command" in screen
        assert "output two" not in screen
        go_on.touch()
        code, screen = terminal.exited()
    assert code == 0, screen
    lines = screen.splitlines()
    # the plan: once, as it ended; no earlier state of it left behind
    assert lines.count("Plan:") == 1, screen
    assert "  ☑ Report" in lines
    assert not any("▶" in line or "☐" in line for line in lines), screen
    # the tool call: one line, final; its output once, under it (the live tail is gone)
    assert sum("(execute)" in line for line in lines) == 1, screen
    assert lines.count("    output one") == 1, screen
    assert lines.count("    output two") == 1, screen
    assert not any("│" in line for line in lines), screen
    assert lines[-1] == "[stop reason: end_turn]"


def test_a_spinner_with_the_elapsed_time_while_the_agent_is_silent(tmp_path: Path) -> None:
    with tmux_running(prompt_argv("--deny", "sleep 2\necho woke up"), cwd=tmp_path) as terminal:
        terminal.wait_for(
            lambda screen: any(
                line.endswith(" s") and "waiting for the agent…" in line for line in screen.splitlines()
            ),
            "the spinner",
        )
        screen = terminal.wait_for(
            lambda screen: "waiting for the agent… 1 s" in screen or "woke up" in screen, "the time going on"
        )
        code, screen = terminal.exited()
    assert code == 0, screen
    assert "waiting for the agent" not in screen  # gone with the turn
    assert "woke up" in screen


def test_markdown_is_rendered_on_a_terminal_and_plain_in_a_pipe(tmp_path: Path) -> None:
    script = "\n".join(
        [
            "echo # Release notes",
            "echo",
            "echo This is **important** and `quoted`.",
            "echo",
            "echo - one",
            "echo - two",
        ]
    )
    with tmux_running(prompt_argv("--deny", script), cwd=tmp_path) as terminal:
        code, screen = terminal.exited()
    assert code == 0, screen
    assert "This is important and quoted." in screen
    assert "**" not in screen
    assert "`" not in screen
    assert "# Release" not in screen
    assert "Release notes" in screen
    assert " • one" in screen
    assert " • two" in screen
    piped = subprocess.run(
        prompt_argv("--deny", script),
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
        env={k: v for k, v in os.environ.items() if k != "ACPIO_AGENT"},
        check=False,
    )
    assert "This is **important** and `quoted`." in piped.stdout
    assert "# Release notes" in piped.stdout


def test_ctrl_c_in_the_middle_of_a_paragraph_leaves_it_once_on_the_screen(tmp_path: Path) -> None:
    # chunks without a line ending: the paragraph being written is drawn in the live region, padded
    # to the window's width, when the terminal echoes ^C after it
    body = """
say(cx, "The first paragraph is complete.\\n\\n")
number = 0
while not cancelled.is_set():
    say(cx, f"word{number} ")
    number += 1
    await asyncio.sleep(0.02)
"""
    agent = agent_script(tmp_path, body)
    with tmux_running(prompt_argv("--deny", "go", agent=agent), cwd=tmp_path, width=60) as terminal:
        terminal.wait_for_text("word40")  # the paragraph is a few lines long, and still growing
        terminal.send_keys("C-c")
        code, screen = terminal.exited()
    assert code == 130, screen
    words = screen.split()
    assert words.count("word0") == 1, screen
    assert words.count("word20") == 1, screen
    assert words.count("paragraph") == 1, screen


def test_the_permission_question_shows_the_diff_it_is_about(tmp_path: Path) -> None:
    path = tmp_path / "notes.txt"
    agent = agent_script(
        tmp_path,
        f"""
update(cx, {{"sessionUpdate": "tool_call", "toolCallId": "t-1", "title": "Edit notes.txt", "kind": "edit",
             "status": "pending", "content": [{{"type": "diff", "path": {str(path)!r},
             "oldText": "keep me\\nold line\\n", "newText": "keep me\\nnew line\\n"}}]}})
answer = await cx.send_request("session/request_permission", {{
    "sessionId": "s-1", "toolCall": {{"toolCallId": "t-1"}},
    "options": [{{"optionId": "yes", "name": "Apply", "kind": "allow_once"}},
                {{"optionId": "no", "name": "Skip", "kind": "reject_once"}}]}})
say(cx, "answer: " + answer["outcome"].get("optionId", "none"))
""",
    )
    with tmux_running(prompt_argv("--ask", "edit the notes", agent=agent), cwd=tmp_path) as terminal:
        screen = terminal.wait_for_text("Choose 1-2")
        assert "The agent asks for permission: Edit notes.txt" in screen, screen
        question = screen[screen.index("The agent asks for permission: Edit notes.txt") :]
        assert "    -old line" in question, screen
        assert "    +new line" in question
        assert "  1) Apply" in question
        assert "  2) Skip" in question
        terminal.type_line("1")
        code, screen = terminal.exited()
    assert code == 0, screen
    assert "answer: yes" in screen


def test_the_interactive_mode_a_second_turn_completion_and_ctrl_c(tmp_path: Path) -> None:
    # the first turn: testy lists its slash commands (available_commands_update)
    with tmux_running(prompt_argv("-i", "--deny", "commands"), cwd=tmp_path) as terminal:
        terminal.wait_for(lambda screen: screen.endswith("you>"), "the prompt for the next turn")
        terminal.send_keys("/ec", "Tab")  # the agent's /echo, completed
        terminal.wait_for(lambda screen: screen.endswith("you> /echo"), "/echo completed")
        terminal.type_line("second turn")
        screen = terminal.wait_for(lambda screen: screen.count("[stop reason: end_turn]") == 2, "two turns")
        assert "you> /echo second turn\nsecond turn\n[stop reason: end_turn]" in screen
        # Ctrl-C cancels the turn, not the program
        terminal.type_line("sleep 30")
        terminal.wait_for_text("waiting for the agent…")
        terminal.send_keys("C-c")
        screen = terminal.wait_for_text("[stop reason: cancelled]")
        terminal.wait_for(lambda screen: screen.endswith("you>"), "the prompt after the cancelled turn")
        terminal.type_line(":mode plan")
        terminal.wait_for_text("acpio: mode: plan")
        terminal.send_keys("Up", "Up")  # the history: the line before
        terminal.wait_for(lambda screen: screen.endswith("you> sleep 30"), "the line typed before")
        terminal.send_keys("C-u", "C-d")  # clear it; Ctrl-D on an empty line leaves
        code, screen = terminal.exited()
    assert code == 0, screen


def test_a_failed_turn_is_told_and_the_conversation_goes_on(tmp_path: Path) -> None:
    body = """
if "fail" in str(req.prompt):
    update(cx, {"sessionUpdate": "tool_call", "toolCallId": "t", "title": "Half-done", "status": "pending"})
    say(cx, "Working on it")
    raise RequestError(-32603, "the model went away")
say(cx, "Fine again.\\n")
"""
    agent = agent_script(tmp_path, body)
    with tmux_running(prompt_argv("-i", "--deny", "please fail", agent=agent), cwd=tmp_path) as terminal:
        terminal.wait_for(lambda screen: screen.endswith("you>"), "the prompt after the failed turn")
        terminal.type_line("now work")
        terminal.wait_for_text("[stop reason: end_turn]")
        terminal.wait_for(lambda screen: screen.endswith("you>"), "the prompt after the second turn")
        terminal.send_keys("C-d")
        code, screen = terminal.exited()
    assert code == 4, screen  # the conversation ended well, but a turn of it failed
    assert "the model went away (the conversation goes on; it will exit with 4)" in screen
    # what the failed turn left under way stays as it was, once: not drawn again in the next turn
    assert screen.count("Half-done") == 1, screen
    assert screen.index("Half-done") < screen.index("you> now work") < screen.index("Fine again.")


def test_closing_the_terminal_ends_the_agents_commands(tmp_path: Path) -> None:
    pid_file = tmp_path / "command.pid"
    command = f"echo $$ > {shlex.quote(str(pid_file))}; exec sleep 300"
    with tmux_running(prompt_argv("--allow", f"run sh -c {shlex.quote(command)}"), cwd=tmp_path) as terminal:
        terminal.wait_for_text("(execute)")  # the command runs, the live region is on screen
        deadline = time.monotonic() + 30
        while not pid_file.exists() or not pid_file.read_text().strip():
            assert time.monotonic() < deadline, "the command never started"
            time.sleep(0.05)
        pid = int(pid_file.read_text())
        assert alive(pid)
        terminal.tmux("kill-server")  # the window closes: SIGHUP, and a terminal that is gone
    # acpio ends the agent and its commands in order though it can no longer write anything
    deadline = time.monotonic() + 15
    while alive(pid):
        if time.monotonic() > deadline:
            kill_all([pid])
            raise AssertionError("the agent's command outlived the terminal")
        time.sleep(0.05)
