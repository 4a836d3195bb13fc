"""The official TypeScript SDK's clients, v2 and v1, against acpio's ``VersionRouter`` serving both.

The agent is ``tests/router/router_agent.py``: a process whose router hands v1 clients to the v1
echo example and v2 clients to ``examples/v2_echo_agent.py``. The v2 client is
``peers/ts/client_v2.mjs`` (``@agentclientprotocol/sdk/experimental/v2``, which has no v1 fallback),
the v1 client ``peers/ts/client.mjs``.
"""

from __future__ import annotations

import sys
from pathlib import Path

from ._support import PEERS, ROOT, TS_CLIENT, check_run_clean, client_argv, context, message_text, run_client

ROUTER_AGENT = [sys.executable, str(ROOT / "tests" / "router" / "router_agent.py")]
TS_CLIENT_V2 = PEERS / "ts" / "client_v2.mjs"


def test_the_typescript_v2_client_completes_a_turn_against_acpios_router(node: str, workdir: Path) -> None:
    argv = [node, str(TS_CLIENT_V2), "--cwd", str(workdir), "--prompt", "hello from v2", "--prompt", "again"]
    summary = run_client([*argv, "--timeout", "30", "--", *ROUTER_AGENT])
    assert summary["fatal"] is None, context(summary)
    assert summary["sdkErrors"] == [], context(summary)
    assert summary["sdkVersion"] == "2.4.0"
    assert summary["protocolVersion"] == 2
    assert summary["agentInfo"] == {"name": "v2-echo", "version": "1.0"}
    assert summary["agentCapabilities"] == {"session": {}}
    assert summary["sessionId"].startswith("echo-")
    for turn, text in zip(summary["turns"], ["hello from v2", "again"], strict=True):
        assert turn["ack"]["messageId"].startswith("user-"), context(summary)
        assert turn["updates"] == ["user_message", "state_update", "agent_message_chunk", "state_update"]
        assert turn["text"] == text
        assert turn["stopReason"] == "end_turn"


def test_the_typescript_v1_client_completes_a_turn_against_the_same_router(node: str, workdir: Path) -> None:
    argv = client_argv(
        [node, str(TS_CLIENT)], workdir, ROUTER_AGENT, prompts=["hello from v1"], cancel_prompt=None
    )
    summary = run_client(argv)
    check_run_clean(summary)
    assert summary["initialize"]["agentInfo"]["name"] == "echo", context(summary)
    turn = summary["turns"][0]
    assert message_text(turn) == "hello from v1", context(summary)
    assert turn["stopReason"] == "end_turn", context(summary)


def test_the_typescript_v2_client_is_refused_by_a_v1_only_router_it_cannot_fall_back_from(
    node: str, workdir: Path
) -> None:
    argv = [node, str(TS_CLIENT_V2), "--cwd", str(workdir), "--prompt", "x", "--timeout", "30"]
    summary = run_client([*argv, "--", *ROUTER_AGENT, "--only", "1"])
    assert "info" in summary["fatal"], context(summary)  # a v1 answer has agentInfo, not v2's info
    assert summary["protocolVersion"] is None
    assert summary["turns"] == []
