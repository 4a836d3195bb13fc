"""``acpio prompt --auth`` with a terminal method, ``--logout``, and the elicitation form, as real processes.

The terminal login runs testy's own command line with the method's args and env, sharing
acpio's stdin and terminal: piped here, and in a real terminal (tmux) below, where the person
types the name, and where the elicitation form is filled in field by field.
"""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from ._tmux import needs_tmux, tmux_running

#: Slow (real processes end to end): run first, so that no worker is left with them at the end.
pytestmark = pytest.mark.slow

TESTY = [sys.executable, "-m", "acpio", "testy"]


def _prompt(*args: str, agent: list[str]) -> list[str]:
    return [sys.executable, "-m", "acpio", "prompt", "--agent", shlex.join(agent), *args]


def _run(argv: list[str], cwd: Path, stdin: str = "") -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in ("ACPIO_AGENT", "ACPIO_TESTY_LOGIN")}
    return subprocess.run(
        argv, cwd=cwd, input=stdin, capture_output=True, text=True, timeout=90, env=env, check=False
    )


def test_a_terminal_login_runs_the_agent_with_the_method_args_then_the_prompt(tmp_path: Path) -> None:
    login = tmp_path / "login.json"
    agent = [*TESTY, "--terminal-auth", str(login)]
    done = _run(_prompt("--auth", "testy-terminal-login", "echo hello", agent=agent), tmp_path, stdin="Ann\n")
    assert done.returncode == 0, done.stderr
    assert "testy login: logged in as Ann" in done.stdout  # the login process wrote on the terminal (stdout)
    assert "hello" in done.stdout
    announced = "acpio: logging in in this terminal (testy-terminal-login): Log in to testy in a terminal"
    assert announced in done.stderr
    assert "acpio: logged in with testy-terminal-login" in done.stderr
    assert login.exists()
    out = _run(_prompt("--logout", agent=agent), tmp_path)
    assert (out.returncode, out.stderr.strip()) == (0, "acpio: logged out")
    assert not login.exists()
    refused = _run(_prompt("echo hi", agent=agent), tmp_path)
    assert refused.returncode == 4
    assert "log in with --auth METHOD (its methods: testy-terminal-login)" in refused.stderr


def test_a_failed_terminal_login_starts_no_session(tmp_path: Path) -> None:
    agent = [*TESTY, "--terminal-auth", str(tmp_path / "login.json")]
    done = _run(_prompt("--auth", "testy-terminal-login", "echo hello", agent=agent), tmp_path, stdin="\n")
    assert done.returncode == 4
    assert (
        "The terminal login 'testy-terminal-login' failed (exit status 1): no session was started"
        in done.stderr
    )
    assert "hello" not in done.stdout


def test_logout_needs_an_agent_that_offers_it(tmp_path: Path) -> None:
    done = _run(_prompt("--logout", agent=TESTY), tmp_path)
    assert done.returncode == 4
    assert "does not advertise agentCapabilities.auth.logout" in done.stderr


@needs_tmux
def test_the_terminal_login_in_a_real_terminal(tmp_path: Path) -> None:
    login = tmp_path / "login.json"
    agent = [*TESTY, "--terminal-auth", str(login)]
    with tmux_running(
        _prompt("--auth", "testy-terminal-login", "echo signed in", agent=agent), cwd=tmp_path
    ) as term:
        term.wait_for_text("testy login: your name (an empty line fails the login):")
        term.type_line("Bea")
        code, screen = term.exited()
    assert code == 0, screen
    assert "testy login: logged in as Bea" in screen
    assert "signed in" in screen
    assert login.read_text() == '{"user":"Bea"}'


@needs_tmux
def test_the_elicitation_form_in_a_real_terminal(tmp_path: Path) -> None:
    with tmux_running(_prompt("--deny", "elicit Tell me about you", agent=TESTY), cwd=tmp_path) as term:
        term.wait_for_text("The agent asks: Tell me about you")
        for answer in ("Cy", "", "7", "", "no", "red", "2", "rust"):
            term.wait_for(lambda screen: screen.rstrip().endswith(":"), "a question")
            term.type_line(answer)
        screen = term.wait_for_text("Send these answers?")
        assert "  Name: Cy\n" in screen
        assert "  Colour: red\n" in screen
        assert "  Size: Medium\n" in screen
        term.type_line("y")
        code, screen = term.exited()
    assert code == 0, screen
    answer = '{"age":7,"colour":"red","name":"Cy","size":"m","subscribe":false,"tags":["rust"]}'
    assert f"elicitation: accept{answer}" in screen.replace("\n", "").replace(" {", "{")  # may wrap


@needs_tmux
def test_a_url_elicitation_in_a_real_terminal_asks_before_opening(tmp_path: Path) -> None:
    script = "elicit-url https://example.com/authorize Authorize the repository"
    with tmux_running(_prompt("--deny", script, agent=TESTY), cwd=tmp_path) as term:
        screen = term.wait_for_text("Open it?")
        assert "The agent asks you to open a web page: Authorize the repository" in screen
        assert "  https://example.com/authorize" in screen
        assert "  host: example.com" in screen
        term.type_line("d")
        code, screen = term.exited()
    assert code == 0, screen
    assert "elicitation: decline" in screen


def test_list_sessions_from_the_command_line(tmp_path: Path) -> None:
    listed = _run(_prompt("--cwd", str(tmp_path), "--list-sessions", agent=TESTY), tmp_path)
    assert (listed.returncode, listed.stdout) == (0, "")  # a fresh testy keeps no session
    refused = _run(_prompt("--list-sessions", "--close-session", "x", "hi", agent=TESTY), tmp_path)
    assert refused.returncode == 2
    assert "take no prompt" in refused.stderr
    unknown = _run(_prompt("--close-session", "nope", agent=TESTY), tmp_path)
    assert unknown.returncode == 4
    assert unknown.stderr.startswith("acpio: error: The agent refused session/close of 'nope'")


def test_a_request_scoped_elicitation_and_an_unadvertised_mode(tmp_path: Path) -> None:
    from ._agents import agent_script

    agent = agent_script(
        tmp_path,
        """
answer = await cx.send_request("elicitation/create", {
    "requestId": 7, "mode": "form", "message": "Which workspace?",
    "requestedSchema": {"type": "object", "properties": {"workspace": {"type": "string"}},
                        "required": ["workspace"]}})
say(cx, "scoped: " + answer["action"] + " " + str(answer.get("content")) + "\\n")
try:
    await cx.send_request("elicitation/create", {
        "sessionId": "s-1", "mode": "url", "message": "Log in", "elicitationId": "u-1",
        "url": "https://example.com/"})
except RequestError as error:
    say(cx, f"url refused: {error.code}\\n")
""",
    )
    done = _run(_prompt("--answer", "workspace=main", "go", agent=shlex.split(agent)), tmp_path)
    assert done.returncode == 0, done.stderr
    assert "scoped: accept {'workspace': 'main'}" in done.stdout
    assert "url refused: -32602" in done.stdout  # no --urls and no terminal: URL mode not advertised


@needs_tmux
def test_ctrl_c_during_a_form_cancels_it_and_the_turn(tmp_path: Path) -> None:
    with tmux_running(_prompt("--deny", "elicit\necho after", agent=TESTY), cwd=tmp_path) as term:
        term.wait_for_text("Name (string, required):")
        term.send_keys("C-c")
        code, screen = term.exited()
    assert code == 130, screen
    assert "cancelling the turn" in screen
    assert "after" not in screen.split("cancelling the turn")[-1]
