"""The generated models behave as issue #2 section 3 requires: names, aliases, unions, null, no coercion."""

from __future__ import annotations

import re
from typing import Any

import orjson
import pytest
from pydantic import BaseModel, TypeAdapter, ValidationError

import acpio.schema as acp
from acpio.schema import (
    AgentMessageChunk,
    AgentThoughtChunk,
    AuthMethod,
    AuthMethodAgent,
    AuthMethodTerminal,
    BlobResourceContents,
    CancelledPermissionOutcome,
    CancelRequestNotification,
    ContentBlock,
    ContentChunk,
    CreateElicitationRequest,
    Diff,
    ElicitationUrlMode,
    EmbeddedResource,
    ImageContent,
    InitializeRequest,
    McpServer,
    McpServerHttp,
    McpServerSse,
    McpServerStdio,
    Plan,
    RequestPermissionOutcome,
    RequestPermissionRequest,
    SelectedPermissionOutcome,
    SessionInfoUpdate,
    SessionNotification,
    SessionUpdate,
    SetSessionConfigOptionRequest,
    Terminal,
    TextContent,
    TextResourceContents,
    ToolCall,
    ToolCallContent,
    ToolCallUpdate,
    UnknownAuthMethod,
    UserMessageChunk,
)

from ._helpers import assert_same_json

# ----- names ----------------------------------------------------------------------------------------


def test_every_schema_def_is_exported_under_its_own_name(unstable_schema: dict[str, Any]) -> None:
    missing = [name for name in unstable_schema["$defs"] if name not in acp.__all__ or not hasattr(acp, name)]
    assert not missing


def test_no_numbered_class_names() -> None:
    assert [name for name in acp.__all__ if re.fullmatch(r"\w+\d+", name)] == []


def test_unstable_types_are_exactly_the_defs_missing_from_the_stable_schema(
    unstable_schema: dict[str, Any], stable_schema: dict[str, Any]
) -> None:
    assert set(unstable_schema["$defs"]) - set(stable_schema["$defs"]) == set(acp.UNSTABLE_TYPES)


def test_variant_classes_are_named_after_their_tag() -> None:
    for cls in (UserMessageChunk, AgentMessageChunk, AgentThoughtChunk):
        assert issubclass(cls, ContentChunk)
    assert (
        AgentMessageChunk(content=TextContent(text="x")).to_wire()["sessionUpdate"] == "agent_message_chunk"
    )


# ----- attributes and aliases -------------------------------------------------------------------------


def test_snake_case_attributes_with_camel_case_wire_names() -> None:
    by_attr = McpServerHttp(name="api", url="https://x", headers=[])
    request = SessionNotification(session_id="s", update=Plan(entries=[]))
    assert request.session_id == "s"
    assert request.to_wire() == {"sessionId": "s", "update": {"sessionUpdate": "plan", "entries": []}}
    assert by_attr.to_wire()["type"] == "http"


def test_camel_case_names_are_accepted_on_construction() -> None:
    by_alias = SessionNotification(sessionId="s", update={"sessionUpdate": "plan", "entries": []})  # type: ignore[call-arg]
    by_name = SessionNotification(session_id="s", update={"sessionUpdate": "plan", "entries": []})  # type: ignore[arg-type]
    assert by_alias == by_name
    assert by_alias.to_wire() == by_name.to_wire()


def test_meta_is_the_attribute_meta() -> None:
    by_name = TextContent(text="hi", meta={"k": 1})
    by_alias = TextContent.model_validate({"type": "text", "text": "hi", "_meta": {"k": 1}})
    assert by_name.meta == by_alias.meta == {"k": 1}
    assert by_name.to_wire() == {"type": "text", "text": "hi", "_meta": {"k": 1}}
    assert "field_meta" not in TextContent.model_fields


def test_building_a_variant_fills_its_discriminator() -> None:
    assert TextContent(text="hi").to_wire() == {"type": "text", "text": "hi"}
    assert ImageContent(data="AA", mime_type="image/png").to_wire() == {
        "type": "image",
        "data": "AA",
        "mimeType": "image/png",
    }
    assert SelectedPermissionOutcome(option_id="o").to_wire() == {"outcome": "selected", "optionId": "o"}
    assert CancelledPermissionOutcome().to_wire() == {"outcome": "cancelled"}
    assert ToolCall(tool_call_id="c", title="t").to_wire() == {
        "sessionUpdate": "tool_call",
        "toolCallId": "c",
        "title": "t",
    }


def test_variant_instances_are_accepted_where_the_union_is_expected() -> None:
    request = acp.PromptRequest(session_id="s", prompt=[TextContent(text="hi")])
    assert request.to_wire() == {"sessionId": "s", "prompt": [{"type": "text", "text": "hi"}]}


# ----- tagged unions ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("union", "wire", "expected"),
    [
        (
            SessionUpdate,
            {"sessionUpdate": "user_message_chunk", "content": {"type": "text", "text": "a"}},
            UserMessageChunk,
        ),
        (
            SessionUpdate,
            {"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": "a"}},
            AgentMessageChunk,
        ),
        (
            SessionUpdate,
            {"sessionUpdate": "agent_thought_chunk", "content": {"type": "text", "text": "a"}},
            AgentThoughtChunk,
        ),
        (SessionUpdate, {"sessionUpdate": "tool_call", "toolCallId": "c", "title": "t"}, ToolCall),
        (SessionUpdate, {"sessionUpdate": "tool_call_update", "toolCallId": "c"}, ToolCallUpdate),
        (SessionUpdate, {"sessionUpdate": "plan", "entries": []}, Plan),
        (SessionUpdate, {"sessionUpdate": "session_info_update"}, SessionInfoUpdate),
        (ContentBlock, {"type": "text", "text": "a"}, TextContent),
        (ContentBlock, {"type": "image", "data": "AA", "mimeType": "image/png"}, ImageContent),
        (ContentBlock, {"type": "audio", "data": "AA", "mimeType": "audio/wav"}, acp.AudioContent),
        (ContentBlock, {"type": "resource_link", "uri": "file:///a", "name": "a"}, acp.ResourceLink),
        (ContentBlock, {"type": "resource", "resource": {"uri": "file:///a", "text": "t"}}, EmbeddedResource),
        (ToolCallContent, {"type": "content", "content": {"type": "text", "text": "a"}}, acp.Content),
        (ToolCallContent, {"type": "diff", "path": "/a", "newText": "b"}, Diff),
        (ToolCallContent, {"type": "terminal", "terminalId": "t"}, Terminal),
        (RequestPermissionOutcome, {"outcome": "cancelled"}, CancelledPermissionOutcome),
        (RequestPermissionOutcome, {"outcome": "selected", "optionId": "o"}, SelectedPermissionOutcome),
    ],
    ids=lambda v: v["sessionUpdate"] if isinstance(v, dict) and "sessionUpdate" in v else None,
)
def test_discriminated_unions_resolve_by_their_tag(union: Any, wire: dict[str, Any], expected: type) -> None:
    parsed = TypeAdapter(union).validate_python(wire)
    assert type(parsed) is expected
    assert parsed.to_wire() == wire


def test_malformed_known_variant_is_rejected_where_the_schema_drops_invalid_items() -> None:
    """ContentBlock items are dropped when invalid (skip-invalid-items), so none may pass as unknown."""
    with pytest.raises(ValidationError):
        TypeAdapter(ContentBlock).validate_python({"type": "image", "data": "AA"})  # mimeType missing


def test_malformed_known_session_update_is_delivered_as_unknown_with_its_json() -> None:
    """One bad field must not drop the whole session/update (``used: null`` broke other SDKs' clients)."""
    for wire in [
        {"sessionUpdate": "tool_call", "title": "no id"},
        {"sessionUpdate": "usage_update", "used": None, "size": 100},
    ]:
        parsed = TypeAdapter(SessionUpdate).validate_python(wire)
        assert type(parsed) is acp.UnknownSessionUpdate
        assert parsed.session_update == wire["sessionUpdate"]
        assert parsed.to_wire() == wire


# ----- untagged and partly tagged unions --------------------------------------------------------------


@pytest.mark.parametrize(
    ("wire", "expected"),
    [
        ({"name": "fs", "command": "/bin/mcp", "args": [], "env": []}, McpServerStdio),
        ({"type": "http", "name": "api", "url": "https://a.example", "headers": []}, McpServerHttp),
        ({"type": "sse", "name": "ev", "url": "https://e.example", "headers": []}, McpServerSse),
    ],
    ids=["stdio", "http", "sse"],
)
def test_mcp_server_resolution(wire: dict[str, Any], expected: type) -> None:
    parsed = TypeAdapter(McpServer).validate_python(wire)
    assert type(parsed) is expected
    assert parsed.to_wire() == wire


def test_mcp_http_and_sse_are_distinct_classes_that_write_their_tag() -> None:
    http = McpServerHttp(name="a", url="https://a", headers=[])
    sse = McpServerSse(name="a", url="https://a", headers=[])
    assert McpServerHttp is not McpServerSse
    assert (http.to_wire()["type"], sse.to_wire()["type"]) == ("http", "sse")
    assert "type" not in McpServerStdio(name="a", command="c", args=[], env=[]).to_wire()


@pytest.mark.parametrize(
    ("wire", "expected"),
    [
        ({"id": "a", "name": "Agent"}, AuthMethodAgent),
        ({"id": "a", "name": "Agent", "type": "agent"}, AuthMethodAgent),
        (
            {"id": "t", "name": "Terminal", "type": "terminal", "args": ["--login"], "env": {"X": "1"}},
            AuthMethodTerminal,
        ),
        ({"id": "c", "name": "Custom", "type": "_custom"}, UnknownAuthMethod),
    ],
    ids=["untagged-agent", "typed-agent", "terminal", "custom"],
)
def test_auth_method_resolution(wire: dict[str, Any], expected: type) -> None:
    parsed = TypeAdapter(AuthMethod).validate_python(wire)
    assert type(parsed) is expected
    assert parsed.to_wire() == wire


def test_embedded_resource_text_versus_blob() -> None:
    text = EmbeddedResource.model_validate(
        {"type": "resource", "resource": {"uri": "file:///a", "text": "t"}}
    )
    blob = EmbeddedResource.model_validate(
        {"type": "resource", "resource": {"uri": "file:///b", "blob": "AA=="}}
    )
    assert type(text.resource) is TextResourceContents
    assert type(blob.resource) is BlobResourceContents
    with pytest.raises(ValidationError):
        EmbeddedResource.model_validate({"type": "resource", "resource": {"uri": "file:///c"}})


# ----- null versus omitted ----------------------------------------------------------------------------


def test_explicit_null_clears_a_session_title() -> None:
    assert SessionInfoUpdate(title=None).to_wire() == {"sessionUpdate": "session_info_update", "title": None}
    assert SessionInfoUpdate().to_wire() == {"sessionUpdate": "session_info_update"}
    parsed = SessionInfoUpdate.model_validate({"sessionUpdate": "session_info_update", "title": None})
    assert parsed.to_wire() == {"sessionUpdate": "session_info_update", "title": None}


def test_never_set_optional_fields_are_absent() -> None:
    assert ToolCallUpdate(tool_call_id="c").to_wire() == {"toolCallId": "c"}
    assert InitializeRequest(protocol_version=1).to_wire() == {"protocolVersion": 1}


def test_none_is_not_written_where_the_schema_forbids_null() -> None:
    # ToolCall.kind/status and InitializeRequest.clientCapabilities are optional but not nullable
    assert ToolCall(tool_call_id="c", title="t", kind=None, status=None).to_wire() == {
        "sessionUpdate": "tool_call",
        "toolCallId": "c",
        "title": "t",
    }
    assert InitializeRequest(protocol_version=1, client_capabilities=None).to_wire() == {"protocolVersion": 1}


# ----- no coercion ------------------------------------------------------------------------------------


@pytest.mark.parametrize("version", ["1", True, 1.0, -1, 65536])
def test_protocol_version_is_not_coerced(version: Any) -> None:
    with pytest.raises(ValidationError):
        InitializeRequest(protocol_version=version)
    with pytest.raises(ValidationError):
        InitializeRequest.model_validate({"protocolVersion": version})


@pytest.mark.parametrize("request_id", [True, False, 1.0, 2.5])
def test_request_id_is_not_coerced(request_id: Any) -> None:
    with pytest.raises(ValidationError):
        CancelRequestNotification(request_id=request_id)
    with pytest.raises(ValidationError):
        CancelRequestNotification.model_validate({"requestId": request_id})


@pytest.mark.parametrize("request_id", [0, 7, -3, "7", "req-1"])
def test_request_id_keeps_its_type(request_id: int | str) -> None:
    parsed = CancelRequestNotification.model_validate({"requestId": request_id})
    assert type(parsed.request_id) is type(request_id)
    assert parsed.request_id == request_id
    assert parsed.to_wire() == {"requestId": request_id}


URLS = [
    "https://agent.example.com",
    "HTTPS://Agent.Example.COM/a%2Fb?sig=A+B&x=%7E#frag",
    "https://ex.com/ü path",
]


@pytest.mark.parametrize("url", URLS)
def test_urls_stay_byte_identical(url: str) -> None:
    assert McpServerHttp(name="a", url=url, headers=[]).url == url
    assert (
        McpServerHttp.model_validate({"type": "http", "name": "a", "url": url, "headers": []}).to_wire()[
            "url"
        ]
        == url
    )
    mode = ElicitationUrlMode.model_validate({"elicitationId": "e", "url": url, "sessionId": "s"})
    assert mode.to_wire()["url"] == url
    wire = {"message": "Sign in", "mode": "url", "elicitationId": "e", "url": url, "sessionId": "s"}
    assert CreateElicitationRequest.model_validate(wire).to_wire() == wire


# ----- ToolCallUpdate: tagged inside a session update only --------------------------------------------


def test_tool_call_update_is_tagged_inside_session_notification_only() -> None:
    inside = SessionNotification(session_id="s", update=ToolCallUpdate(tool_call_id="c"))
    assert inside.to_wire() == {
        "sessionId": "s",
        "update": {"sessionUpdate": "tool_call_update", "toolCallId": "c"},
    }
    permission = RequestPermissionRequest(
        session_id="s", tool_call=ToolCallUpdate(tool_call_id="c"), options=[]
    )
    assert permission.to_wire() == {"sessionId": "s", "toolCall": {"toolCallId": "c"}, "options": []}
    parsed = RequestPermissionRequest.model_validate(
        {"sessionId": "s", "toolCall": {"toolCallId": "c"}, "options": []}
    )
    assert "sessionUpdate" not in parsed.to_wire()["toolCall"]


def test_tool_call_update_reused_after_a_notification_is_not_tagged() -> None:
    """Putting an update into a notification must not change the caller's object."""
    update = ToolCallUpdate(tool_call_id="c", status="completed")
    SessionNotification(session_id="s", update=update)
    assert update.to_wire() == {"toolCallId": "c", "status": "completed"}
    permission = RequestPermissionRequest(session_id="s", tool_call=update, options=[])
    assert permission.to_wire()["toolCall"] == {"toolCallId": "c", "status": "completed"}


# ----- composite classes ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "wire",
    [
        {"sessionId": "s", "configId": "mode", "value": "code"},
        {"sessionId": "s", "configId": "brave", "type": "boolean", "value": True},
    ],
    ids=["value-id", "boolean"],
)
def test_set_config_option_accepts_both_shapes(wire: dict[str, Any]) -> None:
    assert SetSessionConfigOptionRequest.model_validate(wire).to_wire() == wire


@pytest.mark.parametrize(
    "wire",
    [
        {"sessionId": "s", "configId": "mode"},
        {"sessionId": "s", "configId": "brave", "type": "boolean"},
        {"sessionId": "s", "configId": "mode", "value": True},
        {"sessionId": "s", "configId": "mode", "value": 3},
    ],
    ids=["no-value", "boolean-without-value", "bool-without-type", "number"],
)
def test_set_config_option_rejects_invalid_shapes(wire: dict[str, Any], def_validator: Any) -> None:
    assert not def_validator("SetSessionConfigOptionRequest").is_valid(wire)
    with pytest.raises(ValidationError):
        SetSessionConfigOptionRequest.model_validate(wire)


FORM = {"type": "object", "properties": {"name": {"type": "string"}}}


@pytest.mark.parametrize(
    "wire",
    [
        {"message": "m", "mode": "form", "sessionId": "s", "requestedSchema": FORM},
        {"message": "m", "mode": "form", "sessionId": "s", "toolCallId": "c", "requestedSchema": FORM},
        {"message": "m", "mode": "form", "requestId": 5, "requestedSchema": FORM},
        {"message": "m", "mode": "url", "requestId": "r", "elicitationId": "e", "url": "https://x.example"},
        {"message": "m", "mode": "_vendor", "sessionId": "s", "anything": [1]},
    ],
    ids=["form-session", "form-tool-call", "form-request", "url-request", "other-mode"],
)
def test_create_elicitation_accepts_valid_shapes(wire: dict[str, Any], def_validator: Any) -> None:
    assert def_validator("CreateElicitationRequest").is_valid(wire)
    assert_same_json(CreateElicitationRequest.model_validate(wire).to_wire(), wire)


@pytest.mark.parametrize(
    "wire",
    [
        {"message": "m", "mode": "form", "sessionId": "s"},
        {"message": "m", "mode": "url", "sessionId": "s", "url": "https://x.example"},
        {"message": "m", "mode": "url", "sessionId": "s", "elicitationId": "e"},
        {"message": "m", "mode": "form", "requestedSchema": FORM},
        {"mode": "form", "sessionId": "s", "requestedSchema": FORM},
    ],
    ids=["form-without-schema", "url-without-id", "url-without-url", "no-scope", "no-message"],
)
def test_create_elicitation_rejects_invalid_shapes(wire: dict[str, Any], def_validator: Any) -> None:
    assert not def_validator("CreateElicitationRequest").is_valid(wire)
    with pytest.raises(ValidationError):
        CreateElicitationRequest.model_validate(wire)


def test_create_elicitation_with_null_request_id_scope(def_validator: Any) -> None:
    """``RequestId`` includes ``null``, so ``requestId: null`` is a valid request scope in the schema."""
    wire = {
        "message": "m",
        "mode": "url",
        "requestId": None,
        "elicitationId": "e",
        "url": "https://x.example",
    }
    assert def_validator("CreateElicitationRequest").is_valid(wire)
    assert CreateElicitationRequest.model_validate(wire).to_wire() == wire


# ----- typed messages ---------------------------------------------------------------------------------


def test_requests_know_their_method_and_response() -> None:
    assert acp.PromptRequest.METHOD == "session/prompt"
    assert acp.PromptRequest.RESPONSE is acp.PromptResponse
    assert SessionNotification.METHOD == "session/update"
    assert issubclass(acp.PromptResponse, BaseModel)


def test_mcp_message_result_carries_exactly_one_inner_outcome(def_validator: Any) -> None:
    """``MessageMcpResponse`` holds the inner MCP ``result`` (any JSON, null included) or ``error``."""
    for wire in [{"result": None}, {"result": {"content": []}}, {"error": {"code": -32601, "message": "no"}}]:
        assert def_validator("MessageMcpResponse").is_valid(wire)
        assert acp.MessageMcpResponse.model_validate(wire).to_wire() == wire
    null_result = acp.MessageMcpResponse.model_validate({"result": None})
    assert "result" in null_result.model_fields_set  # an explicit null result is not an absent one
    assert acp.MessageMcpResponse(result=None).to_wire() == {"result": None}
    error = acp.MessageMcpResponse.model_validate({"error": {"code": 1, "message": "m", "data": None}})
    assert error.error is not None
    assert error.to_wire()["error"] == {"code": 1, "message": "m", "data": None}  # explicit null data kept
    with pytest.raises(ValidationError, match="result or error"):
        acp.MessageMcpResponse.model_validate({})


# ----- construction hooks run on construction only ----------------------------------------------------


def test_parsing_does_not_run_construction_hooks() -> None:
    """Tag marking is for objects built in Python; parsing must skip it (it is on the receive path).

    pydantic calls a model's own ``__init__`` on every parse unless it is marked as a base init; if
    a pydantic release stops honouring the marker, this fails and the receive path got slower.
    """
    for cls in (TextContent, AgentMessageChunk, SessionNotification):
        assert cls.__pydantic_custom_init__ is False, cls
    parsed = SessionNotification.model_validate(
        {
            "sessionId": "s",
            "update": {"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": "hi"}},
        }
    )
    assert parsed.update.model_fields_set == {"session_update", "content"}
    assert parsed.to_wire()["update"]["content"] == {"type": "text", "text": "hi"}


def test_to_wire_json_is_to_wire_as_json() -> None:
    note = SessionNotification(
        session_id="s",
        update=AgentMessageChunk(content=TextContent(text='é\n"x"'), message_id="m"),
        meta={"k": [1, 2.5, None]},
    )
    assert orjson.loads(note.to_wire_json()) == note.to_wire()
