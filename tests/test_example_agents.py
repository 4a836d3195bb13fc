"""Every example agent introduces itself (``agentInfo``) and gives each new session an id of its own."""

from __future__ import annotations

import importlib.util
import shlex
import sys
from pathlib import Path
from typing import Any

import pytest

from acpio.schema import NewSessionRequest
from acpio.testing import TestClient, serving

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


@pytest.fixture(params=STDIO_AGENTS)
def acpio_agent(request: pytest.FixtureRequest) -> str:
    """Each stdio example, spawned by acpio's pytest plugin for ``acpio_client``."""
    return shlex.join([sys.executable, str(EXAMPLES / request.param)])


async def test_a_stdio_example_agent_sends_agent_info_and_a_new_id_per_session(
    acpio_client: TestClient, tmp_path: Path
) -> None:
    new = NewSessionRequest(cwd=str(tmp_path), mcp_servers=[])
    first, second = [await acpio_client.connection.send_request(new) for _ in range(2)]
    assert first.session_id != second.session_id
    info = acpio_client.conversation.entries[1].message["result"].get("agentInfo")
    assert info is not None, acpio_client.conversation
    assert info["name"]
    assert info["version"]


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
