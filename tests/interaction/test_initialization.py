"""Initialization and version negotiation (spec-conformance.md §C), builder and trait style."""

from __future__ import annotations

import pytest

from acpio import ConnectionClosed
from acpio.capabilities import (
    LATEST_PROTOCOL_VERSION,
    AgentFeatures,
    ClientFeatures,
    UnsupportedProtocolVersion,
)
from acpio.schema import (
    AgentCapabilities,
    ClientCapabilities,
    FileSystemCapabilities,
    Implementation,
    InitializeRequest,
    InitializeResponse,
    NewSessionRequest,
    PromptRequest,
    TextContent,
)

from ._support import ScriptAgent, builder_client, compat_agent, compat_pair

CLIENT_CAPS = ClientCapabilities(fs=FileSystemCapabilities(read_text_file=True), terminal=True, meta={"x": 1})


def init(version: int = LATEST_PROTOCOL_VERSION) -> InitializeRequest:
    return InitializeRequest(
        protocol_version=version,
        client_capabilities=CLIENT_CAPS,
        client_info=Implementation(name="tests", title="Tests", version="0.1"),
    )


async def test_builder_initialize_on_the_wire_and_the_agreed_version() -> None:
    agent = ScriptAgent(AgentCapabilities(load_session=True))
    async with builder_client(agent) as (cx, tap):
        assert cx.protocol_version is None
        assert cx.agent_features is None
        response = await cx.send_request(init())
        request = tap.sent_request("initialize")
        # 31: the latest version, as an integer; 32: the capabilities; 33: clientInfo.
        assert request["params"]["protocolVersion"] == 1
        assert type(request["params"]["protocolVersion"]) is int
        assert request["params"]["clientCapabilities"] == {
            "fs": {"readTextFile": True},
            "terminal": True,
            "_meta": {"x": 1},
        }
        assert request["params"]["clientInfo"] == {"name": "tests", "title": "Tests", "version": "0.1"}
        # 34/39: the agent answers with its version, its capabilities and agentInfo.
        result = tap.answer_to(request)["result"]
        assert result["protocolVersion"] == 1
        assert result["agentCapabilities"]["loadSession"] is True
        assert result["agentInfo"] == {"name": "script-agent", "version": "1.0"}
        # 38: the connection remembers the agreed version and what the agent advertised.
        assert type(response) is InitializeResponse
        assert cx.protocol_version == 1
        assert cx.agent_features is not None
        assert cx.agent_features.load_session


@pytest.mark.parametrize("requested", [1, 2, 65535])
async def test_agent_answers_the_requested_version_or_its_latest_as_a_result(requested: int) -> None:
    async with builder_client(ScriptAgent()) as (cx, tap):
        await cx.send_request(init(requested))
        answer = tap.answer_to(tap.sent_request("initialize"))
        assert "error" not in answer
        assert answer["result"]["protocolVersion"] == 1  # 35 (1 -> 1), 36 (never echoes 2 or 65535)


async def test_builder_client_closes_on_a_version_it_does_not_speak() -> None:
    async with builder_client(ScriptAgent(version=2), allow_failure=True) as (cx, tap):
        with pytest.raises(UnsupportedProtocolVersion, match="Upgrade acpio or the agent"):
            await cx.send_request(init())
        assert cx.closed
        assert cx.agent_features is None
        with pytest.raises(ConnectionClosed):
            await cx.build_session("/work").start_session()
        assert tap.sent_methods() == ["initialize"]


async def test_trait_client_closes_on_a_version_it_does_not_speak() -> None:
    async with compat_pair(compat_agent(version=3)) as (_, client, tap):
        with pytest.raises(UnsupportedProtocolVersion):
            await client.initialize(init())
        assert client.agent_features is None
    assert client.closed
    assert tap.sent_methods() == ["initialize"]


async def test_compat_agent_reads_client_capabilities_from_the_initialize_request() -> None:
    # 44, 230: the agent reads clientCapabilities from the initialize *request* params.
    async with compat_pair() as (agent_side, client, _):
        await client.initialize(init())
        features = agent_side.client_features
        assert features is not None
        assert features.read_text_file
        assert features.terminal
        assert not features.write_text_file


def test_omitted_and_null_capabilities_are_unsupported_and_empty_objects_are_supported() -> None:
    # 40-43, from the raw wire: {} is on, null and omitted are off, missing booleans are false.
    response = InitializeResponse.model_validate(
        {
            "protocolVersion": 1,
            "agentCapabilities": {
                "sessionCapabilities": {"list": {}, "close": None},
                "promptCapabilities": {"image": True},
            },
        }
    )
    features = AgentFeatures.from_response(response)
    assert features.list_sessions
    assert not features.close_session
    assert not features.resume_session
    assert features.prompt_image
    assert not features.prompt_audio
    assert not features.prompt_embedded_context
    assert not features.load_session
    assert not features.mcp_http
    assert not features.logout
    bare = AgentFeatures.from_response(InitializeResponse.model_validate({"protocolVersion": 1}))
    assert not any(
        [bare.load_session, bare.list_sessions, bare.resume_session, bare.close_session, bare.prompt_image]
    )
    client = ClientFeatures.from_request(InitializeRequest.model_validate({"protocolVersion": 1}))
    assert not (client.read_text_file)
    assert not (client.write_text_file)
    assert not (client.terminal)
    assert not (client.elicitation_form)


def test_baseline_methods_and_content_are_never_gated() -> None:
    # 46, 47, 233: whatever the agent advertised, the baseline is always allowed to be sent.
    nothing = AgentFeatures({})
    for method in ("session/new", "session/prompt", "session/cancel"):
        assert nothing.supports(method)
    nothing.require_prompt(
        [{"type": "text", "text": "hi"}, {"type": "resource_link", "uri": "file:///a", "name": "a"}]
    )


async def test_custom_capabilities_in_meta_reach_the_peer() -> None:
    # 48: _meta inside a capability object survives the trip and is readable.
    caps = AgentCapabilities(meta={"vendor.example/feature": {"v": 2}})
    async with builder_client(ScriptAgent(caps)) as (cx, tap):
        response = await cx.send_request(init())
        assert response.agent_capabilities is not None
        assert response.agent_capabilities.meta == {"vendor.example/feature": {"v": 2}}
        assert tap.answer_to(tap.sent_request("initialize"))["result"]["agentCapabilities"]["_meta"] == {
            "vendor.example/feature": {"v": 2}
        }


async def test_compat_session_methods_before_initialize_are_refused() -> None:
    # 30, 63, 109 (trait style, require_capabilities=True).
    async with compat_pair() as (_, client, tap):
        with pytest.raises(RuntimeError, match="before initialize"):
            await client.new_session(NewSessionRequest(cwd="/work", mcp_servers=[]))
        assert tap.sent == []
        await client.initialize(init())
        await client.new_session(NewSessionRequest(cwd="/work", mcp_servers=[]))
        assert tap.sent_methods() == ["initialize", "session/new"]


async def test_builder_session_before_initialize_is_refused() -> None:
    # 30, 63, 109 (builder style): nothing reaches the wire until initialize was answered.
    async with builder_client(ScriptAgent()) as (cx, tap):
        with pytest.raises(RuntimeError, match="initialize"):
            await cx.build_session("/work").start_session()
        with pytest.raises(RuntimeError, match=r"session/prompt was sent before initialize"):
            cx.send_request(PromptRequest(session_id="s-1", prompt=[TextContent(text="hi")]))
        assert tap.sent == []
        await cx.send_request(init())
        async with cx.build_session("/work").start_session() as session:
            session.send_prompt("hi")
            assert await session.read_to_string() == "hi"
        assert tap.sent_methods() == ["initialize", "session/new", "session/prompt"]
