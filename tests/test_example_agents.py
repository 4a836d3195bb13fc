"""Every example agent introduces itself (``agentInfo``) and gives each new session an id of its own."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path
from typing import Any

import orjson
import pytest

from acpio.testing import serving

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"
#: The example agents that speak ACP on their stdio.
STDIO_AGENTS = ["echo_agent.py", "trait_echo_agent.py", "wordcount_agent.py"]


def setup_messages(cwd: str) -> list[dict[str, Any]]:
    """``initialize``, then two ``session/new``."""
    new = {"cwd": cwd, "mcpServers": []}
    return [
        {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": 1}},
        {"jsonrpc": "2.0", "id": 2, "method": "session/new", "params": new},
        {"jsonrpc": "2.0", "id": 3, "method": "session/new", "params": new},
    ]


def check_answers(answers: dict[Any, dict[str, Any]]) -> None:
    info = answers[1]["result"].get("agentInfo")
    assert info is not None, answers[1]
    assert info["name"]
    assert info["version"]
    first, second = (answers[i]["result"]["sessionId"] for i in (2, 3))
    assert first != second


@pytest.mark.parametrize("name", STDIO_AGENTS)
def test_a_stdio_example_agent_sends_agent_info_and_a_new_id_per_session(name: str, tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, str(EXAMPLES / name)],
        input=b"".join(orjson.dumps(m) + b"\n" for m in setup_messages(str(tmp_path))),
        capture_output=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    frames = [orjson.loads(line) for line in done.stdout.splitlines()]
    check_answers({m["id"]: m for m in frames if "id" in m and "method" not in m})


async def test_the_unstable_fork_example_agent_sends_agent_info_and_a_new_id_per_session(
    tmp_path: Path,
) -> None:
    spec = importlib.util.spec_from_file_location("unstable_fork_example", EXAMPLES / "unstable_fork.py")
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    for unstable in (True, False):
        async with serving(module.forking_agent(unstable=unstable)) as peer:
            answers = {}
            for message in setup_messages(str(tmp_path)):
                peer.send(message)
                answer = await peer.recv()
                answers[answer["id"]] = answer
        check_answers(answers)
