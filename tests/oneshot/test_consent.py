"""The agent's commands run only with consent; requests for another session are answered at once.

A scripted agent (``_hostile.py``) sends ``terminal/create`` and friends to ``run_prompt`` as a
hostile agent would: a command that reaches outside ``--cwd``, a ``PATH`` that makes ``ls`` its own
program, malformed fields, a session that does not exist.
"""

from __future__ import annotations

import asyncio
import io
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from acpio.oneshot import LineInput, PolicyName, PromptOptions, run_prompt

from ._hostile import ScriptedAgent, Step
from ._support import TIMEOUT


class Done:
    def __init__(self, agent: ScriptedAgent, code: int, out: str, err: str) -> None:
        self.answers = agent.answers
        self.code = code
        self.out = out
        self.err = err


async def run(
    steps: list[Step],
    cwd: Path,
    permissions: PolicyName = "deny",
    typed: str = "",
    allow_env: frozenset[str] = frozenset(),
) -> Done:
    agent = ScriptedAgent(steps)
    out, err = io.StringIO(), io.StringIO()
    options = PromptOptions(
        agent=agent.builder, prompt="go", cwd=cwd, permissions=permissions, allow_env=allow_env
    )
    read_end, write_end = os.pipe()
    try:
        os.write(write_end, typed.encode())
        os.close(write_end)
        answers = LineInput(read_end, name="pipe")
        async with asyncio.timeout(TIMEOUT):
            code = await run_prompt(options, stdout=out, stderr=err, answers=answers, handle_sigint=False)
    finally:
        os.close(read_end)
    return Done(agent, code, out.getvalue(), err.getvalue())


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "project"
    root.mkdir()
    (tmp_path / "secret.txt").write_text("top secret\n")
    return root.resolve()  # as the client shows it


def reach_out(project: Path) -> Step:
    """A command that reads and writes outside the project."""
    outside = project.parent
    script = f"cat {outside / 'secret.txt'}; echo pwned > {outside / 'pwned.txt'}"
    return ("terminal/create", {"command": "sh", "args": ["-c", script]})


WAIT: Step = ("terminal/wait_for_exit", {"terminalId": "term-1"})


def error(answer: dict[str, Any]) -> dict[str, Any]:
    assert "error" in answer, answer
    result: dict[str, Any] = answer["error"]
    return result


# --- the policy -------------------------------------------------------------------------------------


async def test_deny_refuses_a_command_before_it_starts(project: Path) -> None:
    done = await run([reach_out(project)], project, "deny")
    refused = error(done.answers[0])
    assert refused["code"] == -32602
    assert refused["message"].startswith("Refused to run sh -c 'cat ")
    assert "--deny" in refused["message"]
    assert refused["data"]["refused"] == "deny"
    assert refused["data"]["command"] == "sh"
    await asyncio.sleep(0.3)  # had it started, it would have written by now
    assert not (project.parent / "pwned.txt").exists()
    assert "[permission] Run sh -c 'cat " in done.out
    assert ": Refuse (refuse)" in done.out
    assert "[terminal/create failed] Refused to run sh -c" in done.out
    assert "top secret" not in done.out


async def test_allow_runs_the_command_and_says_so(project: Path) -> None:
    done = await run(
        [("terminal/create", {"command": "sh", "args": ["-c", "echo ran > ran.txt"]}), WAIT], project, "allow"
    )
    assert done.answers[0] == {"result": {"terminalId": "term-1"}}
    assert done.answers[1]["result"]["exitCode"] == 0
    assert (project / "ran.txt").read_text() == "ran\n"
    assert "[permission] Run sh -c 'echo ran > ran.txt': Run it (run)" in done.out


async def test_ask_shows_what_would_run_and_a_no_refuses(project: Path) -> None:
    evil = project / "evil"
    evil.mkdir()
    (evil / "ls").write_text(f"#!/bin/sh\necho hijacked > {project / 'hijacked.txt'}\n")
    (evil / "ls").chmod(0o755)
    env = [{"name": "GREETING", "value": "hi there"}, {"name": "PATH", "value": str(evil)}]
    done = await run(
        [("terminal/create", {"command": "ls", "args": ["-l"], "env": env})], project, "ask", "n\n"
    )
    refused = error(done.answers[0])
    assert refused["code"] == -32602
    assert refused["data"]["refused"] == "user"
    assert refused["message"] == f"Refused to run GREETING='hi there' PATH={evil} ls -l: the user refused it"
    assert not (project / "hijacked.txt").exists()
    question = done.err.splitlines()
    start = question.index(
        f"The agent asks for permission: Run GREETING='hi there' PATH={evil} ls -l (execute)"
    )
    assert question[start + 1 : start + 8] == [
        "    command: ls -l",
        f"    program: {evil / 'ls'}",
        f"    in: {project}",
        "    environment: GREETING='hi there'",
        f"    environment: PATH={evil}  <- decides which programs run or what they load",
        "  1) Run it",
        "  2) Refuse",
    ]


async def test_ask_answered_yes_runs_it(project: Path) -> None:
    done = await run(
        [("terminal/create", {"command": "touch", "args": ["made.txt"]}), WAIT], project, "ask", "y\n"
    )
    assert done.answers[0] == {"result": {"terminalId": "term-1"}}
    assert (project / "made.txt").exists()


def hijacking_ls(project: Path) -> Path:
    """A directory with an ``ls`` of the agent's own, which leaves ``hijacked.txt`` in the project."""
    evil = project / "evil"
    evil.mkdir()
    (evil / "ls").write_text(f"#!/bin/sh\necho hijacked > {project / 'hijacked.txt'}\n")
    (evil / "ls").chmod(0o755)
    return evil


@pytest.mark.parametrize(
    ("variables", "refused"),
    [
        ({"PATH": "{evil}"}, ["PATH"]),
        ({"LD_PRELOAD": "{evil}/hook.so", "GREETING": "hi"}, ["LD_PRELOAD"]),
        (
            {"PYTHONPATH": "{evil}", "DYLD_INSERT_LIBRARIES": "{evil}/x"},
            ["PYTHONPATH", "DYLD_INSERT_LIBRARIES"],
        ),
    ],
)
async def test_allow_refuses_a_command_that_changes_what_runs_or_loads(
    project: Path, variables: dict[str, str], refused: list[str]
) -> None:
    evil = hijacking_ls(project)
    env = [{"name": name, "value": value.format(evil=evil)} for name, value in variables.items()]
    done = await run([("terminal/create", {"command": "ls", "env": env})], project, "allow")
    answer = error(done.answers[0])
    assert answer["code"] == -32602
    assert answer["data"]["refused"] == "env"
    assert answer["data"]["variables"] == refused
    flags = " ".join(f"--allow-env {name}" for name in refused)
    assert f"it sets {', '.join(refused)}, which decide" in answer["message"]
    assert f"allows it by name ({flags})" in answer["message"]
    assert not (project / "hijacked.txt").exists()
    assert "[terminal/create failed] Refused to run " in done.out


async def test_allow_env_lets_the_named_variables_through_and_no_other(project: Path) -> None:
    evil = hijacking_ls(project)
    steps = [
        ("terminal/create", {"command": "ls", "env": [{"name": "PATH", "value": str(evil)}]}),
        WAIT,
        (
            "terminal/create",
            {
                "command": "ls",
                "env": [{"name": "PATH", "value": str(evil)}, {"name": "LD_PRELOAD", "value": "x"}],
            },
        ),
    ]
    done = await run(steps, project, "allow", allow_env=frozenset({"PATH"}))
    assert done.answers[0] == {"result": {"terminalId": "term-1"}}
    assert (project / "hijacked.txt").read_text() == "hijacked\n"  # the user allowed exactly that
    assert error(done.answers[2])["data"]["variables"] == ["LD_PRELOAD"]


def test_allow_env_from_the_command_line(tmp_path: Path) -> None:
    """``acpio prompt --allow --allow-env NAME``, with an agent whose command sets ``PATH``."""
    from ._agents import agent_script

    evil = hijacking_ls(tmp_path)
    agent = agent_script(
        tmp_path,
        f"""
request = {{"sessionId": "s-1", "command": "ls", "env": [{{"name": "PATH", "value": {str(evil)!r}}}]}}
try:
    created = await cx.send_request("terminal/create", request)
except RequestError as error:
    say(cx, f"refused: {{error.message}}\\n")
else:
    await cx.send_request("terminal/wait_for_exit", {{"sessionId": "s-1", **created}})
    say(cx, "ran\\n")
""",
    )

    def acpio_prompt(*args: str) -> subprocess.CompletedProcess[str]:
        command = [sys.executable, "-m", "acpio", "prompt", "--agent", agent, "--allow", *args, "go"]
        return subprocess.run(
            command, cwd=tmp_path, stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=TIMEOUT
        )

    refused = acpio_prompt()
    assert refused.returncode == 0, refused.stderr
    assert "refused: Refused to run PATH=" in refused.stdout
    assert "(--allow-env PATH)" in refused.stdout
    assert not (tmp_path / "hijacked.txt").exists()
    allowed = acpio_prompt("--allow-env", "PATH")
    assert allowed.returncode == 0, allowed.stderr
    assert "ran" in allowed.stdout
    assert (tmp_path / "hijacked.txt").exists()
    mistake = acpio_prompt("--allow-env", "path")
    assert mistake.returncode == 2
    assert mistake.stderr.startswith("acpio: error: --allow-env path: the agent's commands may set path")


def permission(title: str, *kinds: str) -> Step:
    options = [{"optionId": kind, "name": kind, "kind": kind} for kind in kinds]
    return (
        "session/request_permission",
        {"toolCall": {"toolCallId": "call-1", "title": title}, "options": options},
    )


async def test_a_permission_the_user_granted_covers_that_command_once(project: Path) -> None:
    steps = [
        permission("`touch made.txt`", "allow_once", "reject_once"),
        ("terminal/create", {"command": "touch", "args": ["made.txt"]}),  # covered: no question
        WAIT,
        ("terminal/create", {"command": "touch", "args": ["made.txt"]}),  # used up: asked, refused
        ("terminal/create", {"command": "sh", "args": ["-c", "touch other.txt"]}),  # never granted
    ]
    done = await run(steps, project, "ask", "y\nn\nn\n")
    assert done.answers[0] == {"result": {"outcome": {"outcome": "selected", "optionId": "allow_once"}}}
    assert done.answers[1] == {"result": {"terminalId": "term-1"}}
    assert error(done.answers[3])["data"]["refused"] == "user"
    assert error(done.answers[4])["data"]["refused"] == "user"
    assert done.err.count("The agent asks for permission") == 3
    assert not (project / "other.txt").exists()


async def test_allow_always_covers_the_command_for_the_run_and_a_shell_script_by_its_text(
    project: Path,
) -> None:
    steps = [
        permission("touch a.txt", "allow_always", "reject_once"),
        ("terminal/create", {"command": "sh", "args": ["-c", "touch a.txt"]}),
        ("terminal/create", {"command": "sh", "args": ["-c", "touch a.txt"]}),
        # The same command with PATH set is not what the user allowed: asked (and refused).
        (
            "terminal/create",
            {"command": "touch", "args": ["a.txt"], "env": [{"name": "PATH", "value": "/bin"}]},
        ),
    ]
    done = await run(steps, project, "ask", "y\nn\n")
    assert done.answers[1] == {"result": {"terminalId": "term-1"}}
    assert done.answers[2] == {"result": {"terminalId": "term-2"}}
    assert error(done.answers[3])["data"]["refused"] == "user"
    assert done.err.count("The agent asks for permission") == 2


@pytest.mark.parametrize("title", ["Run `touch made.txt`", "run `touch made.txt`", "`touch made.txt`"])
async def test_a_grant_titled_run_and_the_command_in_backticks_covers_it(project: Path, title: str) -> None:
    steps = [
        permission(title, "allow_once", "reject_once"),
        ("terminal/create", {"command": "sh", "args": ["-c", "touch made.txt"]}),
        WAIT,
    ]
    done = await run(steps, project, "ask", "y\n")
    assert done.answers[1] == {"result": {"terminalId": "term-1"}}
    assert done.err.count("The agent asks for permission") == 1
    assert (project / "made.txt").exists()


@pytest.mark.parametrize(
    "title", ["Run `touch` and `made.txt`", "Run touch made.txt, please", "Rerun `touch made.txt`"]
)
async def test_a_title_that_is_not_just_the_command_grants_nothing(project: Path, title: str) -> None:
    steps = [
        permission(title, "allow_once", "reject_once"),
        ("terminal/create", {"command": "sh", "args": ["-c", "touch made.txt"]}),
    ]
    done = await run(steps, project, "ask", "y\nn\n")
    assert error(done.answers[1])["data"]["refused"] == "user"
    assert done.err.count("The agent asks for permission") == 2
    assert not (project / "made.txt").exists()


async def test_under_deny_the_agents_own_permission_request_grants_nothing(project: Path) -> None:
    steps = [
        permission("touch made.txt", "allow_once", "reject_once"),
        ("terminal/create", {"command": "touch", "args": ["made.txt"]}),
    ]
    done = await run(steps, project, "deny")
    assert done.answers[0] == {"result": {"outcome": {"outcome": "selected", "optionId": "reject_once"}}}
    assert error(done.answers[1])["data"]["refused"] == "deny"
    assert not (project / "made.txt").exists()


# --- malformed requests and unknown sessions --------------------------------------------------------


@pytest.mark.parametrize(
    ("params", "field"),
    [
        ({"command": "sh", "env": [{"name": "A=B", "value": "x"}]}, "env[0].name"),
        (
            {"command": "sh", "env": [{"name": "OK", "value": "1"}, {"name": "A\u0000B", "value": "x"}]},
            "env[1].name",
        ),
        ({"command": "sh", "env": [{"name": "", "value": "x"}]}, "env[0].name"),
        ({"command": "sh", "env": [{"name": "A", "value": "x\u0000"}]}, "env[0].value"),
        ({"command": "s\u0000h"}, "command"),
        ({"command": "sh", "args": ["-c", "true\u0000"]}, "args[1]"),
        ({"command": "true", "cwd": "/tmp\u0000x"}, "cwd"),
    ],
)
async def test_a_malformed_terminal_create_is_invalid_params_naming_the_field(
    project: Path, params: dict[str, Any], field: str
) -> None:
    done = await run([("terminal/create", params)], project, "allow")
    refused = error(done.answers[0])
    assert refused["code"] == -32602, refused
    assert refused["data"]["field"] == field
    assert field in refused["message"]


@pytest.mark.parametrize(
    "method",
    ["terminal/output", "terminal/wait_for_exit", "terminal/kill", "terminal/release", "fs/read_text_file"],
)
async def test_a_request_for_another_session_is_answered_at_once(project: Path, method: str) -> None:
    params = {"sessionId": "not-mine", "terminalId": "term-1", "path": str(project / "x")}
    began = time.monotonic()
    done = await run([(method, params)], project, "allow")
    # At once: not after the connection's parking limit (10 s) for a session nobody claims.
    assert time.monotonic() - began < 5
    refused = error(done.answers[0])
    assert refused["code"] == -32002
    assert refused["data"] == {"sessionId": "not-mine"}
    assert "not-mine" in refused["message"]
    assert f"[{method} failed]" in done.out


async def test_a_policy_rule_runs_a_command_but_not_with_a_marked_variable(
    project: Path, tmp_path: Path
) -> None:
    policy = tmp_path / "policy.toml"
    policy.write_text('default = "deny"\n\n[[rule]]\naction = "allow"\ncommand = "ls"\n')
    env = [{"name": "LD_PRELOAD", "value": str(project / "evil.so")}]
    steps: list[Step] = [
        ("terminal/create", {"command": "ls", "args": ["-a"]}),
        ("terminal/create", {"command": "ls", "env": env}),
        ("terminal/create", {"command": "cat", "args": ["x"]}),
    ]
    agent = ScriptedAgent(steps)
    out, err = io.StringIO(), io.StringIO()
    options = PromptOptions(agent=agent.builder, prompt="go", cwd=project, permissions="deny", policy=policy)
    async with asyncio.timeout(TIMEOUT):
        await run_prompt(options, stdout=out, stderr=err, handle_sigint=False)
    assert "terminalId" in agent.answers[0]["result"]
    marked = error(agent.answers[1])
    assert marked["data"]["refused"] == "env"
    assert "a rule of --policy runs the agent's commands, but not with such a variable" in marked["message"]
    denied = error(agent.answers[2])
    assert denied["data"]["refused"] == "policy"
    assert denied["message"] == "Refused to run cat x: the policy refused it: denied by default"
    assert "acpio: policy: Run ls -a: run (allowed by rule 1)" in err.getvalue()
