"""The failures of ``acpio prompt`` a user met with real agents, each with the real command.

* a command that is not an ACP agent (silent, or printing a banner on stdout) ends with a hint
  within the initialize timeout, quoting the banner;
* ``--verbose`` shows the agent's stderr while the turn runs (and extension notifications);
* the engine's log lines carry the ``acpio:`` prefix;
* Ctrl-C, then an agent that ends the cancelled turn with ``end_turn``: exit code 130;
* an error's ``data`` is printed as JSON, not as a Python repr;
* a finished tool call's content sent after text streamed since it ended starts a line of its own;
* a running command's output is live in a pipe too, and printed once;
* a program that is no agent and exits at once (``ls -la``, ``echo Welcome``, ``true``) or echoes
  its input (``cat``): one line saying so and exit code 3, on asyncio's loop and on uvloop's; one
  that closes its stdout and keeps running is not waited for.
"""

from __future__ import annotations

import contextlib
import importlib.util
import os
import shlex
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from ._agents import agent_script
from ._processes import needs_proc

pytestmark = needs_proc

TIMEOUT = 60


def environment(loop: str | None = None) -> dict[str, str]:
    """The test's environment, without a default agent or colour setting; ``loop``: ACPIO_EVENT_LOOP."""
    env = {k: v for k, v in os.environ.items() if k not in ("ACPIO_AGENT", "NO_COLOR")}
    env["PYTHONUNBUFFERED"] = "1"
    if loop is not None:
        env["ACPIO_EVENT_LOOP"] = loop
    return env


def acpio_prompt(cwd: Path, *args: str, loop: str | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "acpio", "prompt", "--deny", *args],
        cwd=cwd,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
        env=environment(loop),
        check=False,
    )


@contextlib.contextmanager
def started(cwd: Path, *args: str, policy: str = "--deny") -> Iterator[subprocess.Popen[str]]:
    """``acpio prompt`` running in its own process group, which is killed at the end whatever happened."""
    process = subprocess.Popen(
        [sys.executable, "-m", "acpio", "prompt", policy, *args],
        cwd=cwd,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=environment(),
        start_new_session=True,
    )
    try:
        yield process
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)  # the agent and its commands too
        process.communicate()


def read_until(stream: object, wanted: str) -> list[str]:
    """Lines of ``stream`` up to the first that contains ``wanted`` (fails at the end of the stream)."""
    seen: list[str] = []
    for line in stream:  # type: ignore[attr-defined]
        seen.append(line)
        if wanted in line:
            return seen
    raise AssertionError(f"{wanted!r} never came; got {seen}")


@pytest.mark.parametrize(
    ("command", "quoted"),
    [
        ("sleep 100", None),
        ("sh -c 'echo Welcome to Frobnicator 2.0, type help; exec sleep 100'", "Welcome to Frobnicator 2.0"),
    ],
    ids=["silent", "banner"],
)
def test_a_command_that_is_no_acp_agent_ends_with_a_hint_within_the_timeout(
    tmp_path: Path, command: str, quoted: str | None
) -> None:
    began = time.monotonic()
    done = acpio_prompt(tmp_path, "--agent", command, "--init-timeout", "1", "hello")
    # 1 s to answer, then at most 2 s for stdin closing and 1 s for SIGTERM: bounded, never a hang
    assert time.monotonic() - began < 20
    assert done.returncode == 3, done.stderr
    error = next(line for line in done.stderr.splitlines() if line.startswith("acpio: error: "))
    assert "did not answer initialize within 1 s" in error
    if quoted is None:
        assert "may not speak ACP" in error
    else:
        assert f"what it wrote on its stdout is not ACP: '{quoted}" in error
        assert "a flag such as --acp" in error
    # every line of acpio's own is prefixed: the engine's log record about the banner too
    for line in done.stderr.splitlines():
        assert line.startswith(("acpio: ", "  | ")), done.stderr


def test_verbose_shows_the_agents_stderr_while_the_turn_runs(tmp_path: Path) -> None:
    go_on = tmp_path / "go-on"
    agent = agent_script(
        tmp_path,
        f"""
print("agent log: thinking hard", file=sys.stderr, flush=True)
while not Path({str(go_on)!r}).exists():
    await asyncio.sleep(0.02)
say(cx, "done")
cx.send_notification("_acme/progress", {{"percent": 50}})
""",
    )
    with started(tmp_path, "--verbose", "--no-color", "--agent", agent, "hello") as process:
        # seen on stderr while the agent still waits: live, not at its death
        read_until(process.stderr, "agent| agent log: thinking hard")
        go_on.touch()
        out, err = process.communicate(timeout=TIMEOUT)
    assert process.returncode == 0, err
    assert 'acpio: extension notification _acme/progress {"percent":50}' in err
    assert out.splitlines() == ["done", "[stop reason: end_turn]"]

    # without --verbose, neither is shown (go-on exists: the agent does not wait)
    done = acpio_prompt(tmp_path, "--no-color", "--agent", agent, "hello")
    assert done.returncode == 0
    assert "thinking hard" not in done.stderr
    assert "_acme/progress" not in done.stderr


def test_ctrl_c_then_an_agent_ending_the_turn_with_end_turn_exits_130(tmp_path: Path) -> None:
    agent = agent_script(
        tmp_path,
        """
say(cx, "working\\n")
await cancelled.wait()
say(cx, "stopped as asked\\n")
""",
    )
    with started(tmp_path, "--no-color", "--agent", agent, "hello") as process:
        read_until(process.stdout, "working")
        os.killpg(process.pid, signal.SIGINT)
        out, err = process.communicate(timeout=TIMEOUT)
    assert "stopped as asked" in out
    assert "[stop reason: end_turn]" in out
    assert "acpio: cancelling the turn" in err
    assert process.returncode == 130, err


def test_a_tool_calls_late_content_does_not_run_into_the_streamed_text(tmp_path: Path) -> None:
    agent = agent_script(
        tmp_path,
        """
call = {"toolCallId": "t1", "title": "Read notes.txt", "status": "completed"}
update(cx, {"sessionUpdate": "tool_call", **call})
say(cx, "Here is what I found")
content = [{"type": "content", "content": {"type": "text", "text": "first line of the notes"}}]
update(cx, {"sessionUpdate": "tool_call_update", "toolCallId": "t1", "content": content})
say(cx, "Done.")
""",
    )
    done = acpio_prompt(tmp_path, "--no-color", "--agent", agent, "hello")
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [
        "[completed] Read notes.txt",
        "Here is what I found",
        "    first line of the notes",
        "Done.",
        "[stop reason: end_turn]",
    ]


def test_error_data_is_printed_as_json(tmp_path: Path) -> None:
    agent = agent_script(
        tmp_path,
        """
raise RequestError(-32000, "Quota exceeded", {"retryAfter": 30, "plan": "free", "ok": False})
""",
    )
    done = acpio_prompt(tmp_path, "--agent", agent, "hello")
    assert done.returncode == 4, done.stderr
    assert done.stderr.splitlines()[-1] == (
        "acpio: error: The agent answered session/prompt with an error: -32000 Quota exceeded: "
        '{"retryAfter": 30, "plan": "free", "ok": false}'
    )


def test_a_running_commands_output_is_live_in_a_pipe_too(tmp_path: Path) -> None:
    go_on = tmp_path / "go-on"
    wait = f"while [ ! -e {shlex.quote(str(go_on))} ]; do sleep 0.05; done"
    command = f"printf 'output %s\\n' one; {wait}; printf 'output %s\\n' two"
    testy = shlex.join([sys.executable, "-m", "acpio", "testy"])
    script = f"run sh -c {shlex.quote(command)}"
    with started(tmp_path, "--agent", testy, script, policy="--allow") as process:
        before = read_until(process.stdout, "    output one")  # while the command still waits
        go_on.touch()
        out, err = process.communicate(timeout=TIMEOUT)
    assert process.returncode == 0, err
    lines = before + out.splitlines(keepends=True)
    assert [line.rstrip("\n") for line in lines if line.startswith("    output")] == [
        "    output one",
        "    output two",
    ]  # each once: not again when the tool call ends


def test_an_agent_printing_a_banner_on_stdout_is_told_where_its_logs_belong(tmp_path: Path) -> None:
    agent = tmp_path / "noisy_agent.py"
    agent.write_text(
        "from acpio import AgentApp\n"
        "print('Starting my agent v1.0', flush=True)\n"
        "app = AgentApp(name='noisy')\n"
        "@app.prompt\n"
        "async def turn(t):\n"
        "    await t.say('hi')\n"
        "app.run()\n"
    )
    done = acpio_prompt(tmp_path, "--no-color", "--agent", f"{shlex.quote(sys.executable)} {agent}", "hello")
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == ["hi", "[stop reason: end_turn]"]  # the turn still works
    warning = next(line for line in done.stderr.splitlines() if "not JSON" in line)
    assert "'Starting my agent v1.0'" in warning
    assert "write only JSON-RPC messages to its stdout, and its logs to stderr" in warning


needs_uvloop = pytest.mark.skipif(importlib.util.find_spec("uvloop") is None, reason="no uvloop installed")

LOOPS = ["asyncio", pytest.param("uvloop", marks=needs_uvloop)]

#: How the line starts for a program that exited before answering.
EXITED = "exited with exit code 0 before answering initialize, "


@pytest.mark.parametrize("loop", LOOPS)
@pytest.mark.parametrize(
    ("command", "said"),
    [
        ("ls -la", EXITED + "after writing 'total "),
        ("echo Welcome", EXITED + "after writing 'Welcome' on its stdout, which is not ACP"),
        ("true", EXITED + "without writing anything on its stdout"),
        ("cat", "sent acpio's own messages back (its initialize request, then acpio's answer to it)"),
    ],
    ids=["ls", "echo", "true", "cat"],
)
def test_a_program_that_is_no_agent_gets_one_line_and_exit_code_3(
    tmp_path: Path, loop: str, command: str, said: str
) -> None:
    done = acpio_prompt(tmp_path, "--agent", command, "hello", loop=loop)
    assert done.returncode == 3, done.stderr
    [line] = done.stderr.splitlines()  # no traceback, no warning for each line it printed
    assert line.startswith(f"acpio: error: The agent {command!r} {said}")
    assert "a flag such as --acp" in line
    assert done.stdout == ""


@pytest.mark.slow
@pytest.mark.parametrize("loop", LOOPS)
def test_a_program_that_closes_its_stdout_and_keeps_running_is_not_waited_for(
    tmp_path: Path, loop: str
) -> None:
    began = time.monotonic()
    done = acpio_prompt(tmp_path, "--agent", "sh -c 'exec >&-; sleep 60'", "hello", loop=loop)
    # 2 s for the agent to exit once its output ended, 2 s once its stdin closed, then SIGTERM: no 60 s
    assert time.monotonic() - began < 30
    assert done.returncode == 3, done.stderr
    assert "before answering initialize, without writing anything on its stdout" in done.stderr


def test_behind_a_proxy_the_agents_lines_that_are_not_json_are_still_warned_of(tmp_path: Path) -> None:
    # The conductor reads the agent's stdout, not acpio's watch: its engine's warning is the only word.
    proxy = shlex.join([sys.executable, str(Path(__file__).parents[2] / "examples" / "arrow_proxy.py")])
    done = acpio_prompt(tmp_path, "--agent", "echo Welcome", "--proxy", proxy, "hello")
    assert done.returncode == 3, done.stderr
    assert any("not JSON" in line and "'Welcome'" in line for line in done.stderr.splitlines()), done.stderr


def test_protocol_2_against_a_v1_agent_says_which_flag_to_use(tmp_path: Path) -> None:
    """``--protocol 2`` with a v1-only agent: the error names the flags that work, not an upgrade."""
    testy = f"{sys.executable} -m acpio testy"
    done = acpio_prompt(tmp_path, "--protocol", "2", "--agent", testy, "hi")
    assert done.returncode == 4, done.stderr
    assert "speaks ACP protocol version 1, but this client speaks only 2" in done.stderr
    assert "leave --protocol out" in done.stderr
    assert "--protocol 1." in done.stderr
    assert "Upgrade acpio" not in done.stderr


def test_a_conductor_whose_proxy_exits_at_once_shows_the_end_of_the_proxys_stderr(tmp_path: Path) -> None:
    # The conductor puts the proxy's stderr in its error's data; a bare "exited with exit code 1"
    # leaves the user nothing to act on (a proxy run by an interpreter without acpio, say).
    proxy = "sh -c 'echo cannot import acpio: no module named pydantic >&2; exit 1'"
    chain = shlex.join(
        [sys.executable, "-m", "acpio", "conductor", "agent", proxy, f"{sys.executable} -m acpio testy"]
    )
    done = acpio_prompt(tmp_path, "--agent", chain, "hello")
    assert done.returncode == 3, done.stderr
    assert "exited with exit code 1" in done.stderr
    assert "  | cannot import acpio: no module named pydantic" in done.stderr


def test_a_proxy_of_prompt_that_exits_at_once_shows_its_stderr_once(tmp_path: Path) -> None:
    proxy = "sh -c 'echo cannot import acpio: no module named pydantic >&2; exit 1'"
    done = acpio_prompt(tmp_path, "--agent", f"{sys.executable} -m acpio testy", "--proxy", proxy, "hello")
    assert done.returncode == 3, done.stderr
    shown = [
        line
        for line in done.stderr.splitlines()
        if line.endswith(" cannot import acpio: no module named pydantic")
    ]
    assert len(shown) == 1, done.stderr
