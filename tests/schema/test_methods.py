"""The method table covers every ACP v1 method with the right direction, types, stability and gate."""

from __future__ import annotations

from collections import Counter
from typing import Any

import pytest

import acpio.schema as acp
from acpio.schema import METHODS, NOTIFICATIONS, REQUESTS, MethodSpec

ROWS = pytest.mark.parametrize("spec", METHODS, ids=lambda m: f"{m.method}:{m.kind}")


def all_methods(meta: dict[str, Any]) -> set[str]:
    return {
        method
        for group in ("agentMethods", "clientMethods", "protocolMethods", "proxyMethods")
        for method in meta.get(group, {}).values()
    }


def test_table_covers_every_method_of_meta_unstable(meta_unstable: dict[str, Any]) -> None:
    assert {m.method for m in METHODS} == all_methods(meta_unstable)
    assert "$/cancel_request" in REQUESTS.keys() | NOTIFICATIONS.keys()


def test_mcp_message_and_proxy_successor_are_both_requests_and_notifications() -> None:
    kinds = Counter(m.method for m in METHODS)
    repeated = sorted(method for method, count in kinds.items() if count > 1)
    assert repeated == ["mcp/message", "proxy/successor"]
    assert REQUESTS["mcp/message"].params is acp.MessageMcpRequest
    assert NOTIFICATIONS["mcp/message"].params is acp.MessageMcpNotification
    assert REQUESTS["proxy/successor"].params is acp.ProxySuccessorRequest
    assert NOTIFICATIONS["proxy/successor"].params is acp.ProxySuccessorNotification


def test_proxy_initialize_is_initialize_under_another_name() -> None:
    spec = REQUESTS["proxy/initialize"]
    assert (spec.params, spec.result) == (acp.InitializeProxyRequest, acp.InitializeProxyResponse)
    assert issubclass(spec.params, acp.InitializeRequest)
    assert issubclass(spec.result, acp.InitializeResponse)
    wire = {"protocolVersion": 1, "clientCapabilities": {"fs": {"readTextFile": True}}}
    assert acp.InitializeProxyRequest.model_validate(wire).to_wire() == wire


def test_removed_methods_are_gone() -> None:
    """``nes/*``, ``document/*`` and ``mcp/connect``/``mcp/disconnect`` left the schema."""
    gone = [m.method for m in METHODS if m.method.split("/")[0] in ("nes", "document")]
    assert gone == []
    assert "mcp/connect" not in REQUESTS
    assert "mcp/disconnect" not in REQUESTS
    assert not hasattr(acp, "StartNesRequest")


def test_requests_and_notifications_partition_the_table() -> None:
    assert len(REQUESTS) + len(NOTIFICATIONS) == len(METHODS)
    assert all(m.kind == "request" for m in REQUESTS.values())
    assert all(m.kind == "notification" for m in NOTIFICATIONS.values())


@ROWS
def test_stable_flag_matches_meta_json(spec: MethodSpec, meta_stable: dict[str, Any]) -> None:
    assert spec.stable == (spec.method in all_methods(meta_stable))


@ROWS
def test_direction_matches_meta(spec: MethodSpec, meta_unstable: dict[str, Any]) -> None:
    to_agent = spec.method in meta_unstable["agentMethods"].values()
    to_client = spec.method in meta_unstable["clientMethods"].values()
    protocol = spec.method in meta_unstable.get("protocolMethods", {}).values()
    proxy = spec.method in meta_unstable.get("proxyMethods", {}).values()
    expected = (
        "proxy"
        if proxy
        else "both"
        if protocol or (to_agent and to_client)
        else "client_to_agent"
        if to_agent
        else "agent_to_client"
    )
    assert spec.direction == expected


@ROWS
def test_params_and_result_classes_match_the_method(
    spec: MethodSpec, unstable_schema: dict[str, Any]
) -> None:
    defs = unstable_schema["$defs"]
    assert spec.method == spec.params.METHOD  # type: ignore[attr-defined]
    assert defs[spec.params.__name__]["x-method"] == spec.method
    if spec.kind == "request":
        assert spec.result is not None
        assert issubclass(spec.params, acp.AcpRequest)
        assert spec.params.RESPONSE is spec.result
        assert spec.method == spec.result.METHOD  # type: ignore[attr-defined]
        assert defs[spec.result.__name__]["x-method"] == spec.method
    else:
        assert spec.result is None
        assert issubclass(spec.params, acp.AcpNotification)


@ROWS
def test_capability_path_exists(spec: MethodSpec, unstable_schema: dict[str, Any]) -> None:
    if spec.capability is None:
        return
    defs = unstable_schema["$defs"]
    side, *path = spec.capability.split(".")
    assert side in ("A", "C")
    node = defs["AgentCapabilities" if side == "A" else "ClientCapabilities"]
    model: Any = acp.AgentCapabilities if side == "A" else acp.ClientCapabilities
    for part in path:
        assert part in node.get("properties", {}), f"{spec.capability}: no {part!r}"
        prop = node["properties"][part]
        refs = [prop, *prop.get("allOf", []), *prop.get("anyOf", [])]
        target = next((r["$ref"].rsplit("/", 1)[-1] for r in refs if "$ref" in r), None)
        node = defs[target] if target else prop
        assert any(f.alias == part or name == part for name, f in model.model_fields.items())
        model = getattr(acp, target) if target else None


@pytest.mark.parametrize(
    ("method", "capability"),
    [
        ("session/load", "A.loadSession"),
        ("fs/read_text_file", "C.fs.readTextFile"),
        ("fs/write_text_file", "C.fs.writeTextFile"),
        ("terminal/create", "C.terminal"),
        ("session/list", "A.sessionCapabilities.list"),
        ("elicitation/create", "C.elicitation"),
        ("initialize", None),
        ("session/prompt", None),
    ],
)
def test_known_capability_gates(method: str, capability: str | None) -> None:
    assert REQUESTS[method].capability == capability
