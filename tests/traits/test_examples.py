"""The trait-style examples run: the client spawns the echo agent and prints the echo."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import orjson

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def test_the_trait_client_prints_what_the_trait_echo_agent_echoes() -> None:
    done = subprocess.run(
        [sys.executable, str(EXAMPLES / "trait_client.py")],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout == "Hello, agent!\nend_turn\n"


def test_the_trait_echo_agent_speaks_acp_on_its_stdio() -> None:
    lines = [
        {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": 1}},
        {"jsonrpc": "2.0", "id": 2, "method": "session/new", "params": {"cwd": "/", "mcpServers": []}},
        {
            "jsonrpc": "2.0",
            "id": 3,
            "method": "session/load",
            "params": {"sessionId": "x", "cwd": "/", "mcpServers": []},
        },
    ]
    done = subprocess.run(
        [sys.executable, str(EXAMPLES / "trait_echo_agent.py")],
        input=b"".join(orjson.dumps(line) + b"\n" for line in lines),
        capture_output=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    answers = {m["id"]: m for m in map(orjson.loads, done.stdout.splitlines())}
    assert answers[1]["result"]["protocolVersion"] == 1
    assert answers[2]["result"]["sessionId"].startswith("echo-")
    assert answers[3]["error"]["code"] == -32601  # not implemented by the echo agent


def test_the_examples_are_short() -> None:
    for name in ("trait_echo_agent.py", "trait_client.py"):
        assert len((EXAMPLES / name).read_text().splitlines()) < 40, name
