"""acpio's client drives agents written with the official SDKs (issue 6 §1, pairings 3 and 4).

acpio's builder-style ``Client`` (``_recording_client.RecordingClient``) runs the full turn against the
TypeScript SDK agent (``peers/ts/agent.mjs``) and the official Python SDK agent
(``peers/official_py/agent.py``): initialize, session/new, a prompt streamed back, a permission request, a
file read and write confined to the work directory, a terminal command run as a real process, and a
cancelled turn. Besides what the client saw, each test checks that acpio parsed every update the peer sent
and wrote it back unchanged.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ._recording_client import RecordingClient
from ._support import (
    PEER_PROMPT,
    PEER_WAIT,
    PY_AGENT,
    TS_AGENT,
    check_peer_agent_turn,
    context,
    message_text,
    requests_of,
    tool_call,
)


def check_updates_round_trip(summary: dict[str, Any]) -> None:
    """Every ``session/update`` acpio read, re-serialized, equals what crossed the wire (nulls included)."""
    on_the_wire = [
        frame["params"]["update"] for frame in summary["wire"] if frame.get("method") == "session/update"
    ]
    as_parsed = [update for turn in summary["turns"] for update in turn["updates"]]
    assert as_parsed == on_the_wire, context(summary)


async def test_acpio_client_drives_the_typescript_agent(node: str, workdir: Path) -> None:
    summary = await RecordingClient(workdir).run([node, str(TS_AGENT)], [PEER_PROMPT], PEER_WAIT)

    check_peer_agent_turn(summary, workdir, "ts-peer-agent")
    check_updates_round_trip(summary)
    # The TypeScript SDK numbers its requests from 0: acpio answers id 0 like any other.
    agent_requests = [frame for frame in summary["wire"] if "method" in frame and "id" in frame]
    assert agent_requests[0]["id"] == 0, context(summary)
    # The diff's explicit `"oldText": null` survives acpio's parse and re-serialization.
    (diff,) = tool_call(summary["turns"][0], "edit-1")["content"]
    assert "oldText" in diff, context(summary)
    assert diff["oldText"] is None, context(summary)


async def test_acpio_client_drives_the_official_python_agent(official_python: str, workdir: Path) -> None:
    summary = await RecordingClient(workdir).run([official_python, str(PY_AGENT)], [PEER_PROMPT], PEER_WAIT)

    check_peer_agent_turn(summary, workdir, "official-python-peer-agent")
    check_updates_round_trip(summary)


async def test_a_rejected_permission_stops_the_typescript_agent(node: str, workdir: Path) -> None:
    summary = await RecordingClient(workdir, permission="reject").run([node, str(TS_AGENT)], [PEER_PROMPT])

    why = context(summary)
    assert (summary["fatal"], summary["sdkErrors"]) == (None, []), why
    (turn,) = summary["turns"]
    assert turn["stopReason"] == "end_turn", why
    assert message_text(turn) == PEER_PROMPT + "permission denied", why
    (permission,) = requests_of(summary, "session/request_permission")
    assert permission["answer"] == {"outcome": "selected", "optionId": "reject-once"}, why
    assert [request["method"] for request in summary["requests"]] == ["session/request_permission"], why
    assert tool_call(turn, "edit-1")["status"] == "failed", why
    assert not (workdir / "output.txt").exists(), why
