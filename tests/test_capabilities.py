"""Capability helpers and version negotiation, as a client or an agent uses them."""

from __future__ import annotations

import pytest

from acpio.capabilities import (
    AgentFeatures,
    CapabilityNotAdvertised,
    ClientFeatures,
    UnsupportedProtocolVersion,
    check_agent_version,
)
from acpio.errors import NotInProtocolVersion
from acpio.schema import METHODS, InitializeRequest, InitializeResponse


def agent(caps: dict[str, object]) -> AgentFeatures:
    return AgentFeatures.from_response(
        InitializeResponse.model_validate({"protocolVersion": 1, "agentCapabilities": caps})
    )


def client(caps: dict[str, object]) -> ClientFeatures:
    return ClientFeatures.from_request(
        InitializeRequest.model_validate({"protocolVersion": 1, "clientCapabilities": caps})
    )


def test_agent_features_follow_booleans_and_object_presence() -> None:
    features = agent(
        {
            "loadSession": True,
            "sessionCapabilities": {"list": {}, "resume": None},
            "promptCapabilities": {"image": True, "audio": False},
            "mcpCapabilities": {"http": True},
        }
    )
    assert features.load_session
    assert features.list_sessions  # an object capability is on when present
    assert not features.resume_session  # null means off
    assert not features.close_session  # absent means off
    assert features.prompt_image
    assert not features.prompt_audio
    assert features.mcp_http
    assert not features.mcp_sse


def test_an_agent_that_advertises_nothing_supports_only_the_baseline() -> None:
    features = AgentFeatures.from_response(InitializeResponse(protocol_version=1))
    assert features.supports("session/new")
    assert features.supports("session/prompt")
    assert not features.supports("session/load")
    with pytest.raises(CapabilityNotAdvertised, match=r"agentCapabilities\.loadSession") as info:
        features.require("session/load")
    assert info.value.method == "session/load"


def test_client_features_gate_fs_and_terminal() -> None:
    features = client({"fs": {"readTextFile": True}, "terminal": False})
    assert features.read_text_file
    assert not features.write_text_file
    assert features.supports("fs/read_text_file")
    assert not features.supports("fs/write_text_file")
    with pytest.raises(CapabilityNotAdvertised, match=r"clientCapabilities\.terminal"):
        features.require("terminal/create")


def test_elicitation_needs_the_mode_object() -> None:
    assert client({"elicitation": {"form": {}}}).elicitation_form
    assert not client({"elicitation": {"form": {}}}).elicitation_url
    assert not client({"elicitation": {}}).supports("elicitation/complete")


def test_every_gated_method_can_be_checked_on_its_side() -> None:
    for spec in METHODS:
        if spec.capability is None:
            continue
        side = AgentFeatures({}) if spec.capability.startswith("A.") else ClientFeatures({})
        assert not side.supports(spec.method), spec.method


def test_client_refuses_a_version_it_cannot_speak() -> None:
    check_agent_version(1)
    with pytest.raises(UnsupportedProtocolVersion, match="version 7") as info:
        check_agent_version(7)
    assert info.value.version == 7


@pytest.mark.parametrize(
    ("features", "method", "instead"),
    [
        (AgentFeatures, "session/load", "session/resume"),
        (AgentFeatures, "authenticate", "auth/login"),
        (AgentFeatures, "logout", "auth/logout"),
        (AgentFeatures, "session/set_mode", "session/set_config_option"),
        (ClientFeatures, "fs/read_text_file", "MCP server"),
        (ClientFeatures, "terminal/create", "terminal_update"),
    ],
)
def test_a_v1_method_sent_on_v2_names_what_replaced_it(
    features: type[AgentFeatures | ClientFeatures], method: str, instead: str
) -> None:
    with pytest.raises(NotInProtocolVersion, match=f"{method} does not exist in ACP v2") as raised:
        features({}, protocol_version=2).require(method)
    assert instead in raised.value.instead
