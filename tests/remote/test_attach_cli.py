"""``acpio prompt --attach`` against ``acpio serve --app``, as processes: a second client watches live."""

from __future__ import annotations

import asyncio
import os
import re
import signal
import sys
from pathlib import Path

import pytest

pytest.importorskip("uvicorn")

ACPIO = [sys.executable, "-m", "acpio"]

#: An AgentApp whose turn says "begun", waits for the gate file, then says "middle" and "end".
APP = """
import asyncio
from pathlib import Path

from acpio.app import AgentApp, Turn

app = AgentApp("gated", unstable=True)

@app.prompt
async def prompt(turn: Turn) -> None:
    await turn.say("begun ")
    while not Path({gate!r}).exists():
        await asyncio.sleep(0.05)
    await turn.say("middle ")
    if turn.text.startswith("ask"):
        async with turn.tool_call("Delete build/", kind="delete") as call:
            allowed = await turn.ask_permission(call)
        await turn.say("allowed " if allowed else "denied ")
    await turn.say("end")
"""


async def read_until(stream: asyncio.StreamReader, pattern: str, seen: list[str]) -> re.Match[str]:
    while True:
        line = (await asyncio.wait_for(stream.readline(), 30)).decode()
        assert line, f"the stream ended before {pattern!r}: {seen}"
        seen.append(line)
        found = re.search(pattern, line)
        if found is not None:
            return found


@pytest.mark.slow
async def test_an_observer_from_a_second_acpio_prompt_sees_the_first_ones_turn_live(tmp_path: Path) -> None:
    gate = tmp_path / "gate"
    (tmp_path / "gated_app.py").write_text(APP.format(gate=str(gate)))
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tmp_path), os.environ.get("PYTHONPATH", "")])}
    pipes = {"stdout": asyncio.subprocess.PIPE, "stderr": asyncio.subprocess.PIPE, "env": env}
    server = await asyncio.create_subprocess_exec(
        *ACPIO, "serve", "--port", "0", "--app", "gated_app:app", **pipes
    )
    owner = observer = None
    try:
        assert server.stdout is not None
        listening = await read_until(server.stdout, r"listening on http://(\S+)", [])
        url = f"ws://{listening[1]}"
        owner = await asyncio.create_subprocess_exec(
            *ACPIO, "prompt", "--agent", url, "--cwd", str(tmp_path), "hello there", **pipes
        )
        assert owner.stderr is not None
        session_id = (await read_until(owner.stderr, r"session (sess_\w+)", []))[1]
        observer = await asyncio.create_subprocess_exec(
            *ACPIO, "prompt", "--agent", url, "--attach", session_id, **pipes
        )
        assert observer.stdout is not None
        shown: list[str] = []
        await read_until(observer.stdout, "--- end of history ---", shown)
        history = "".join(shown)
        assert "hello there" in history
        assert "begun" in history
        assert "middle" not in history  # not said yet: what follows is live
        gate.touch()
        rest, errors = await asyncio.wait_for(observer.communicate(), 30)
        assert observer.returncode == 0, errors
        assert rest.decode().split() == ["middle", "end", "[stop", "reason:", "end_turn]"]
        assert f"session {session_id} closed" in errors.decode()  # the first client left
        said, _ = await asyncio.wait_for(owner.communicate(), 30)
        assert owner.returncode == 0
        assert "begun middle end" in said.decode()
    finally:
        for process in (observer, owner, server):
            if process is not None and process.returncode is None:
                process.send_signal(signal.SIGTERM)
                await asyncio.wait_for(process.wait(), 15)


@pytest.mark.slow
async def test_a_controller_from_a_second_acpio_prompt_sees_the_turn_then_runs_its_own(
    tmp_path: Path,
) -> None:
    gate = tmp_path / "gate"
    (tmp_path / "gated_app.py").write_text(APP.format(gate=str(gate)))
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tmp_path), os.environ.get("PYTHONPATH", "")])}
    pipes = {"stdout": asyncio.subprocess.PIPE, "stderr": asyncio.subprocess.PIPE, "env": env}
    server = await asyncio.create_subprocess_exec(
        *ACPIO, "serve", "--port", "0", "--app", "gated_app:app", **pipes
    )
    owner = controller = None
    try:
        assert server.stdout is not None
        listening = await read_until(server.stdout, r"listening on http://(\S+)", [])
        url = f"ws://{listening[1]}"
        owner = await asyncio.create_subprocess_exec(
            *ACPIO, "prompt", "--agent", url, "--cwd", str(tmp_path), "--allow", "hello there", **pipes
        )
        assert owner.stderr is not None
        session_id = (await read_until(owner.stderr, r"session (sess_\w+)", []))[1]
        controller = await asyncio.create_subprocess_exec(
            *ACPIO,
            "prompt",
            "--agent",
            url,
            "--attach",
            session_id,
            "--control",
            "--allow",
            "ask now",
            **pipes,
        )
        assert controller.stdout is not None
        shown: list[str] = []
        await read_until(controller.stdout, "--- end of history ---", shown)
        assert "hello there" in "".join(shown)
        gate.touch()
        rest, errors = await asyncio.wait_for(controller.communicate(), 30)
        assert controller.returncode == 0, errors
        words = rest.decode().split()
        # the owner's turn live, then the controller's own prompt, run by the agent, its permission allowed
        # (by the controller or the owner: both allow, the first answer wins)
        assert words[:5] == ["middle", "end", "[stop", "reason:", "end_turn]"], words
        assert words[-4:] == ["end", "[stop", "reason:", "end_turn]"], words
        shown_text = " ".join(words[5:])
        assert shown_text.startswith("begun middle [pending] Delete build/"), words
        assert "allowed end" in shown_text, words
        said, _ = await asyncio.wait_for(owner.communicate(), 30)
        assert owner.returncode == 0
        assert "begun middle end" in said.decode()
    finally:
        for process in (controller, owner, server):
            if process is not None and process.returncode is None:
                process.send_signal(signal.SIGTERM)
                await asyncio.wait_for(process.wait(), 15)


@pytest.mark.parametrize(
    ("command", "error"),
    [
        (
            ["prompt", "--agent", "acpio testy", "--attach", "sess_x"],
            "--attach needs the URL of the remote agent",
        ),
        (["serve", "--port", "0", "--app", "no_such_module_here:app"], "cannot import no_such_module_here"),
        (["prompt", "--agent", "ws://127.0.0.1:9", "--control", "hi"], "give it with --attach ID"),
        (["serve", "--port", "0", "--route", "acpio-server=a", "--", "acpio", "testy"], "it needs --app"),
        (["serve", "--port", "0", "--route", "a", "--app", "x:app"], "give the balancer's affinity cookie"),
    ],
    ids=[
        "attach-to-a-command",
        "serve-an-unknown-app",
        "control-without-attach",
        "route-without-app",
        "route-not-a-cookie",
    ],
)
async def test_the_usage_mistakes_say_what_to_do(command: list[str], error: str) -> None:
    process = await asyncio.create_subprocess_exec(*ACPIO, *command, stderr=asyncio.subprocess.PIPE)
    _, errors = await asyncio.wait_for(process.communicate(), 30)
    assert process.returncode == 2
    assert error in errors.decode()
