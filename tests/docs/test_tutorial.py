"""docs/tutorial.md, step by step, for real (scripts/doc_blocks.py has the marks).

The tutorial's files are written to a fresh directory, its ``run`` commands are run there with this
venv's ``acpio`` and ``python`` first on ``PATH``, each ``output`` block is compared with what the
command before it printed, the trace viewer (``run-long``) is started and its page and events
fetched over HTTP instead of a browser, and Zed's ``agent_servers`` entry is checked to start the
agent.
"""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
import urllib.request
from pathlib import Path
from typing import Any

import pytest

from ._blocks import ROOT, Block, blocks

TUTORIAL = ROOT / "docs" / "tutorial.md"
TIMEOUT = 60


def env() -> dict[str, str]:
    values = {k: v for k, v in os.environ.items() if k not in ("ACPIO_AGENT", "NO_COLOR")}
    values["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), values.get("PATH", "")])
    values["BROWSER"] = "true"  # `--open` runs `true URL`: no browser in CI
    return values


def run(command: str, cwd: Path) -> str:
    done = subprocess.run(
        ["bash", "-c", command],
        cwd=cwd,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
        env=env(),
        check=False,
    )
    assert done.returncode == 0, f"{command!r} failed:\n{done.stdout}\n{done.stderr}"
    assert "Warning" not in done.stderr, f"{command!r} warns the reader:\n{done.stderr}"
    return done.stdout


def commands(block: Block) -> list[str]:
    lines = [line.strip() for line in block.code.splitlines()]
    return [line for line in lines if line and not line.startswith("#")]


def view_trace(command: str, cwd: Path) -> None:
    """Start ``acpio trace view``, fetch its page and its events, stop it."""
    viewer = subprocess.Popen(
        shlex.split(command), cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env()
    )
    try:
        assert viewer.stdout is not None
        first = viewer.stdout.readline()
        assert first.startswith("Trace viewer at http://127.0.0.1:"), first + viewer.stderr.read()
        url = first.split(" at ", 1)[1].strip()
        with urllib.request.urlopen(url, timeout=10) as page:
            assert "<title>acpio trace</title>" in page.read().decode()
        with urllib.request.urlopen(f"{url}/events", timeout=10) as answer:
            events: dict[str, Any] = json.load(answer)
        methods = {e.get("method") for e in events["events"]}
        assert {"initialize", "session/prompt", "session/request_permission", "fs/write_text_file"} <= methods
    finally:
        viewer.terminate()
        viewer.wait(timeout=10)


@pytest.mark.slow
def test_the_tutorial_runs(tmp_path: Path) -> None:
    steps = blocks(TUTORIAL)
    written = [b for b in steps if b.mark == "file"]
    assert [b.arg for b in written] == ["my_agent.py", "test_my_agent.py", "pytest.ini"]
    for block in written:
        (tmp_path / block.arg).write_text(block.code)
    ran = 0
    last_output: str | None = None
    for block in steps:
        if block.mark == "run":
            last_output = "".join(run(command, tmp_path) for command in commands(block))
            ran += 1
        elif block.mark == "output":
            assert last_output == block.code, f"{block.where}: the page shows what the command does not print"
        elif block.mark == "run-long":
            (command,) = commands(block)
            view_trace(command, tmp_path)
            ran += 1
    assert ran == 5
    assert (tmp_path / "count.txt").read_text() == "2\n"  # written again by step 4: "trace me"


def test_the_zed_settings_start_the_agent(tmp_path: Path) -> None:
    (zed,) = [b for b in blocks(TUTORIAL) if b.lang == "json" and "agent_servers" in b.code]
    (tmp_path / "my_agent.py").write_text(next(b.code for b in blocks(TUTORIAL) if b.arg == "my_agent.py"))
    project = zed.code.replace("/path/to/project/.venv/bin/python", sys.executable)
    project = project.replace("/path/to/project", str(tmp_path))
    (server,) = json.loads(project)["agent_servers"].values()
    assert set(server) == {"command", "args", "env"}
    agent = shlex.join([server["command"], *server["args"]])
    out = run(shlex.join(["acpio", "prompt", "--deny", "--agent", agent, "from the editor"]), tmp_path)
    assert "Your prompt has 3 words." in out
