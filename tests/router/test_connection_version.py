"""``AcpConnection.protocol_version`` on both sides, and the checks of what is sent on a v2 connection."""

from __future__ import annotations

from typing import Any

import pytest

from acpio import (
    AcpConnection,
    Agent,
    CapabilityNotAdvertised,
    Client,
    NotInProtocolVersion,
    SessionConnection,
    Unhandled,
)
from acpio import schema as acp
from acpio.schema import v2
from acpio.testing import serving

from .router_agent import example

V2_INITIALIZE = {
    "protocolVersion": 2,
    "info": {"name": "wire", "version": "1"},
    "capabilities": {"auth": {"terminal": {}}, "elicitation": {"form": {}}},
}


def watching_agent(seen: dict[str, Any], *, v2_agent: bool) -> Any:
    """An agent (v1's builder, or the v2 echo example) whose session/new reports what its connection knows."""
    app = Agent.builder(name="watching")

    async def watch(message: Any, cx: AcpConnection) -> Any:
        if message.method == "session/new":
            seen["version"] = cx.protocol_version
            seen["features"] = cx.client_features
            try:
                cx.send_request(acp.ReadTextFileRequest(session_id="s", path="/etc/hostname"))
            except Exception as error:  # what the test looks at
                seen["refusal"] = error
            message.responder.respond({"sessionId": "s1"})
            return None
        return Unhandled(message)

    app.on_dispatch(watch)  # before the example's handlers
    return app.merge(example("v2_echo_agent").echo_agent()) if v2_agent else app


async def test_a_v2_agent_connection_speaks_2_and_refuses_client_methods_v2_lacks() -> None:
    seen: dict[str, Any] = {}
    async with serving(watching_agent(seen, v2_agent=True)) as peer:
        peer.request("initialize", V2_INITIALIZE, request_id=1)
        assert (await peer.recv())["result"]["protocolVersion"] == 2
        peer.request("session/new", {"cwd": "/tmp"}, request_id=2)
        assert (await peer.recv()) == {"jsonrpc": "2.0", "id": 2, "result": {"sessionId": "s1"}}
    assert seen["version"] == 2
    refusal = seen["refusal"]
    assert isinstance(refusal, NotInProtocolVersion)  # refused before anything was written (see above)
    assert "fs/read_text_file does not exist in ACP v2" in str(refusal)
    assert "MCP server" in str(refusal)
    features = seen["features"]
    assert features.protocol_version == 2
    assert features.terminal_auth
    assert features.elicitation_form
    assert not features.supports("terminal/create")
    assert features.supports("session/request_permission")


async def test_a_v1_agent_answering_a_v2_initialize_speaks_1_and_reads_the_client_as_v1() -> None:
    seen: dict[str, Any] = {}
    async with serving(watching_agent(seen, v2_agent=False)) as peer:
        peer.request("initialize", V2_INITIALIZE, request_id=1)
        assert (await peer.recv())["result"]["protocolVersion"] == 1
        peer.request("session/new", {"cwd": "/tmp", "mcpServers": []}, request_id=2)
        await peer.recv()
    assert seen["version"] == 1
    features = seen["features"]
    assert features.protocol_version == 1
    assert features.terminal_auth
    assert features.elicitation_form
    assert features.boolean_config_options
    assert not features.read_text_file  # a v2 client has no fs methods
    assert isinstance(seen["refusal"], CapabilityNotAdvertised)


async def test_an_agent_knows_no_version_before_it_answered() -> None:
    seen: dict[str, Any] = {}
    async with serving(watching_agent(seen, v2_agent=False)) as peer:
        peer.request("session/new", {"cwd": "/tmp", "mcpServers": []}, request_id=1)
        await peer.recv()
    assert seen["version"] is None


async def test_a_client_connection_reads_a_v2_agents_capabilities() -> None:
    async def main(cx: SessionConnection) -> None:
        answer = await cx.send_request(
            v2.InitializeRequest(protocol_version=2, info=v2.Implementation(name="c", version="1"))
        )
        assert answer.protocol_version == 2
        assert cx.protocol_version == 2
        features = cx.agent_features
        assert features is not None
        assert features.protocol_version == 2
        assert features.supports("session/new")
        assert features.supports("tool_call/cancel")
        assert not features.supports("session/delete")
        assert not features.supports("session/load")  # not a v2 method
        image = v2.ImageContent(data="AAAA", mime_type="image/png")
        with pytest.raises(CapabilityNotAdvertised, match=r"capabilities\.session\.prompt\.image"):
            cx.send_request(v2.PromptRequest(session_id="s", prompt=[image]))

    await Client.builder().connect_with(example("v2_echo_agent").echo_agent(), main)


async def test_the_v2_echo_example_answers_32022_to_a_v2_shaped_request_for_version_1() -> None:
    async with serving(example("v2_echo_agent").echo_agent()) as peer:
        peer.request("initialize", {**V2_INITIALIZE, "protocolVersion": 1}, request_id=1)
        error = (await peer.recv())["error"]
    assert error["code"] == -32022
    assert error["data"] == {"requested": 1, "supported": [2]}
