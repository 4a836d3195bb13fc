"""A builder-style agent keeps what its client advertised and never sends it what it did not."""

from __future__ import annotations

from typing import Any

import pytest

from acpio import AcpConnection, Agent
from acpio import schema as acp
from acpio.capabilities import CapabilityNotAdvertised
from acpio.testing import serving

NO_FS: dict[str, Any] = {"protocolVersion": 1, "clientCapabilities": {}}
WITH_FS: dict[str, Any] = {
    "protocolVersion": 1,
    "clientCapabilities": {"fs": {"readTextFile": True, "writeTextFile": False}},
}


def _reading_agent(outcomes: list[str]) -> Any:
    """An agent whose session/new asks the client to read a file, and notes what happened."""
    app = Agent.builder(name="reader")

    @app.on_request
    async def new_session(req: acp.NewSessionRequest, cx: AcpConnection) -> acp.NewSessionResponse:
        read = acp.ReadTextFileRequest(session_id="s1", path="/tmp/notes.txt")
        try:
            cx.send_request(read)
        except CapabilityNotAdvertised as exc:
            outcomes.append(f"refused: {exc}")
        else:
            outcomes.append("sent")
        outcomes.append(f"features: {cx.peer_state.client_features}")
        return acp.NewSessionResponse(session_id="s1")

    return app


async def _new_session(params: dict[str, Any], outcomes: list[str]) -> list[str]:
    """Initialize with ``params``, open a session; the methods the agent sent the client meanwhile."""
    async with serving(_reading_agent(outcomes)) as client:
        client.request("initialize", params, request_id=1)
        await client.response_to(1)
        client.request("session/new", {"cwd": "/tmp", "mcpServers": []}, request_id=2)
        seen: list[Any] = []
        await client.response_to(2, seen)
        return [message.get("method") for message in seen if "method" in message]


async def test_a_read_the_client_did_not_advertise_is_refused_and_nothing_is_written() -> None:
    outcomes: list[str] = []
    sent = await _new_session(NO_FS, outcomes)
    assert sent == []
    assert outcomes[0].startswith("refused: ")
    assert "fs/read_text_file" in outcomes[0]
    assert "fs.readTextFile" in outcomes[0]


async def test_a_read_the_client_advertised_is_sent() -> None:
    outcomes: list[str] = []
    sent = await _new_session(WITH_FS, outcomes)
    assert sent == ["fs/read_text_file"]
    assert outcomes[0] == "sent"


@pytest.mark.parametrize("params", [NO_FS, WITH_FS])
async def test_the_connection_records_the_client_before_any_handler_runs(params: dict[str, Any]) -> None:
    outcomes: list[str] = []
    await _new_session(params, outcomes)
    assert outcomes[1].startswith("features: ")
    assert outcomes[1] != "features: None"
