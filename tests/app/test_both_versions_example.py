"""The done-when of issue 29 for AgentApp: one agent process, one prompt function, a v1 and a v2 client.

``examples/both_versions_agent.py`` runs as a subprocess on its stdio; a v1 client and a v2 client
(raw frames, each on a process of its own) run the same turn: v1 gets ``tool_call``, ``plan`` and an
``end_turn`` answer; v2 gets the prompt acknowledged with a ``messageId``, ``tool_call_update``
upserts, ``plan_update`` and ``state_update`` running then idle. The real ``acpio prompt`` completes
the turn on each version too.
"""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest

from acpio import AcpAgent
from acpio.testing import WirePeer

from ._wire_v2 import INFO, is_idle, kinds

ROOT = Path(__file__).resolve().parents[2]
AGENT = [sys.executable, str(ROOT / "examples" / "both_versions_agent.py")]
TIMEOUT = 30.0
PROMPT = [{"type": "text", "text": "count these four words"}]


@asynccontextmanager
async def agent_process() -> AsyncIterator[WirePeer]:
    transport = await AcpAgent(AGENT).open()
    try:
        yield WirePeer(transport, timeout=TIMEOUT)
    finally:
        await transport.aclose()


def allow(peer: WirePeer, request: dict[str, Any]) -> None:
    peer.respond(request, {"outcome": {"outcome": "selected", "optionId": "allow"}})


async def test_a_v1_client_gets_v1_updates_and_an_end_turn_answer(tmp_path: Path) -> None:
    async with agent_process() as peer:
        init = await peer.response_to(peer.request("initialize", {"protocolVersion": 1}))
        new = await peer.response_to(peer.request("session/new", {"cwd": str(tmp_path), "mcpServers": []}))
        session_id = new["result"]["sessionId"]
        asked = peer.request("session/prompt", {"sessionId": session_id, "prompt": PROMPT})
        seen: list[Any] = []
        allow(peer, await peer.message_for("session/request_permission", seen))
        answer = await peer.response_to(asked, seen)
    assert init["result"]["protocolVersion"] == 1
    assert init["result"]["agentInfo"]["name"] == "counter"
    updates = [f["params"]["update"] for f in seen if f.get("method") == "session/update"]
    assert kinds(updates) == [
        "plan",
        "tool_call",
        "tool_call_update",
        "tool_call_update",
        "agent_message_chunk",
    ]
    assert updates[3]["status"] == "completed"
    assert "messageId" not in updates[4]
    assert updates[4]["content"]["text"] == "Your prompt has 4 words."
    assert answer["result"] == {"stopReason": "end_turn"}


async def test_a_v2_client_gets_v2_updates_around_the_same_turn(tmp_path: Path) -> None:
    async with agent_process() as peer:
        init = await peer.response_to(
            peer.request("initialize", {"protocolVersion": 2, "info": INFO, "capabilities": {}})
        )
        new = await peer.response_to(peer.request("session/new", {"cwd": str(tmp_path)}))
        session_id = new["result"]["sessionId"]
        asked = peer.request("session/prompt", {"sessionId": session_id, "prompt": PROMPT})
        seen: list[Any] = []
        answer = await peer.response_to(asked, seen)
        permission = await peer.message_for("session/request_permission", seen)
        allow(peer, permission)
        seen.append(await peer.until(is_idle, seen))
    assert init["result"]["protocolVersion"] == 2
    assert init["result"]["info"]["name"] == "counter"
    assert permission["params"]["subject"]["type"] == "tool_call"
    updates = [f["params"]["update"] for f in seen if f.get("method") == "session/update"]
    assert kinds(updates) == [
        "user_message",
        "state_update:running",
        "plan_update",
        "tool_call_update",
        "tool_call_update",
        "state_update:requires_action",
        "state_update:running",
        "tool_call_update",
        "agent_message_chunk",
        "state_update:idle",
    ]
    assert updates[0]["messageId"] == answer["result"]["messageId"]
    assert updates[3]["title"] == "Count the words"  # the first upsert creates the call
    assert updates[7]["status"] == "completed"
    assert updates[8]["content"]["text"] == "Your prompt has 4 words."
    assert updates[8]["messageId"] != updates[0]["messageId"]
    assert updates[-1]["stopReason"] == "end_turn"


@pytest.mark.parametrize("protocol", ["1", "2"])
def test_acpio_prompt_completes_the_turn_on_each_version(tmp_path: Path, protocol: str) -> None:
    env = {k: v for k, v in os.environ.items() if k not in ("ACPIO_AGENT", "NO_COLOR")}
    argv = ["prompt", "--protocol", protocol, "--allow", "--agent", shlex.join(AGENT), "count these words"]
    done = subprocess.run(
        [sys.executable, "-m", "acpio", *argv],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
        env=env,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert "Your prompt has 3 words." in done.stdout
    assert "[stop reason: end_turn]" in done.stdout
    # v2's requires_action while the permission is asked; v1 has no such state
    assert ("[waiting for you]" in done.stdout) == (protocol == "2")
