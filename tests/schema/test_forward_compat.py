"""Forward compatibility: what a newer peer sends is kept, and passed on unchanged.

A proxy or logger built on acpio must not damage messages: unknown union variants, enum values and
fields are kept on parse and written back on serialize, and the receive-side leniency of the Rust
reference (``x-deserialize-default-on-error``, ``x-deserialize-skip-invalid-items``) applies.
"""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import MISSING, TypeAdapter, ValidationError

from acpio.schema import (
    AgentMessageChunk,
    ContentBlock,
    InitializeResponse,
    McpServer,
    McpServerStdio,
    NewSessionRequest,
    PromptRequest,
    RequestPermissionOutcome,
    RequestPermissionRequest,
    RequestPermissionResponse,
    SessionInfoUpdate,
    SessionNotification,
    TextContent,
    ToolCall,
    ToolCallStatus,
    ToolCallUpdate,
    ToolKind,
    UnknownContentBlock,
    UnknownMcpServer,
    UnknownRequestPermissionOutcome,
    UnknownSessionUpdate,
    UnknownToolCallContent,
)

from ._helpers import assert_same_json


def session_update(update: dict[str, Any]) -> dict[str, Any]:
    return {"sessionId": "sess_1", "update": update}


def test_unknown_session_update_is_kept_and_round_trips() -> None:
    wire = session_update(
        {"sessionUpdate": "hologram_update", "frames": [{"n": 1}, {"n": 2}], "fps": 60, "_meta": {"x": 1}}
    )
    parsed = SessionNotification.model_validate(wire)
    assert isinstance(parsed.update, UnknownSessionUpdate)
    assert parsed.update.session_update == "hologram_update"
    assert_same_json(parsed.to_wire(), wire)


def test_unknown_content_block_type_is_kept_in_a_prompt() -> None:
    wire = {
        "sessionId": "sess_1",
        "prompt": [
            {"type": "text", "text": "look"},
            {"type": "video", "mimeType": "video/mp4", "data": "AAAA", "durationMs": 1200},
        ],
    }
    parsed = PromptRequest.model_validate(wire)
    assert isinstance(parsed.prompt[0], TextContent)
    assert isinstance(parsed.prompt[1], UnknownContentBlock)
    assert parsed.prompt[1].type == "video"
    assert_same_json(parsed.to_wire(), wire)


@pytest.mark.parametrize(
    ("adapter_type", "wire", "unknown"),
    [
        (ContentBlock, {"type": "hologram", "data": "x"}, UnknownContentBlock),
        (McpServer, {"type": "websocket", "name": "ws", "url": "wss://example.com"}, UnknownMcpServer),
        (
            RequestPermissionOutcome,
            {"outcome": "deferred", "until": "later"},
            UnknownRequestPermissionOutcome,
        ),
    ],
    ids=["content-block", "mcp-server", "permission-outcome"],
)
def test_unknown_union_variant_is_kept(adapter_type: Any, wire: dict[str, Any], unknown: type) -> None:
    parsed = TypeAdapter(adapter_type).validate_python(wire)
    assert type(parsed) is unknown
    assert_same_json(parsed.to_wire(), wire)


def test_unknown_tool_call_content_is_kept() -> None:
    wire = session_update(
        {
            "sessionUpdate": "tool_call_update",
            "toolCallId": "call_1",
            "content": [{"type": "chart", "points": [1, 2]}],
        }
    )
    parsed = SessionNotification.model_validate(wire)
    assert isinstance(parsed.update, ToolCallUpdate)
    assert parsed.update.content is not None
    assert isinstance(parsed.update.content[0], UnknownToolCallContent)
    assert_same_json(parsed.to_wire(), wire)


def test_unknown_tool_kind_and_status_are_kept_as_strings() -> None:
    wire = session_update(
        {
            "sessionUpdate": "tool_call",
            "toolCallId": "call_1",
            "title": "Beam",
            "kind": "teleport",
            "status": "paused",
        }
    )
    parsed = SessionNotification.model_validate(wire)
    assert isinstance(parsed.update, ToolCall)
    assert parsed.update.kind == "teleport"
    assert not isinstance(parsed.update.kind, ToolKind)
    assert parsed.update.status == "paused"
    assert_same_json(parsed.to_wire(), wire)


def test_known_tool_kind_becomes_the_enum_member() -> None:
    update = ToolCall.model_validate(
        {"toolCallId": "c", "title": "t", "kind": "switch_mode", "status": "pending"}
    )
    assert update.kind is ToolKind.SWITCH_MODE
    assert update.status is ToolCallStatus.PENDING


def test_unknown_permission_option_kind_does_not_reject_the_request() -> None:
    wire = {
        "sessionId": "sess_1",
        "toolCall": {"toolCallId": "call_1"},
        "options": [{"optionId": "o", "name": "Maybe", "kind": "allow_sometimes"}],
    }
    parsed = RequestPermissionRequest.model_validate(wire)
    assert parsed.options[0].kind == "allow_sometimes"
    assert_same_json(parsed.to_wire(), wire)


def test_unknown_fields_at_every_level_round_trip() -> None:
    wire = {
        "sessionId": "sess_1",
        "vendorTop": {"a": [1, 2.5, True, None]},
        "update": {
            "sessionUpdate": "agent_message_chunk",
            "vendorUpdate": "kept",
            "content": {
                "type": "resource",
                "vendorContent": 7,
                "resource": {"uri": "file:///a.py", "text": "print(1)", "vendorResource": False},
                "annotations": {"priority": 0.5, "vendorAnnotation": [{}]},
            },
            "_meta": {"deep": {"nested": [{"values": [1, "two", None, {"x": True}]}]}},
        },
        "_meta": {"traceparent": "00-abc-def-01", "zed.dev": {"a": {"b": {"c": []}}}},
    }
    parsed = SessionNotification.model_validate(wire)
    assert isinstance(parsed.update, AgentMessageChunk)
    assert parsed.model_extra == {"vendorTop": {"a": [1, 2.5, True, None]}}
    assert parsed.update.model_extra == {"vendorUpdate": "kept"}
    assert_same_json(parsed.to_wire(), wire)


def test_unknown_fields_in_capabilities_round_trip() -> None:
    wire = {
        "protocolVersion": 1,
        "agentCapabilities": {
            "loadSession": True,
            "holograms": {"fps": 60},
            "promptCapabilities": {"image": True, "video": True},
            "_meta": {"vendor": {"x": 1}},
        },
        "newTopLevel": [1],
    }
    assert_same_json(InitializeResponse.model_validate(wire).to_wire(), wire)


@pytest.mark.parametrize(
    ("field", "bad"),
    [("kind", 42), ("kind", {"not": "a kind"}), ("status", ["pending"]), ("locations", "nowhere")],
)
def test_invalid_default_on_error_field_falls_back_without_rejecting(field: str, bad: Any) -> None:
    wire = session_update({"sessionUpdate": "tool_call", "toolCallId": "call_1", "title": "Read", field: bad})
    parsed = SessionNotification.model_validate(wire)
    assert isinstance(parsed.update, ToolCall)
    assert getattr(parsed.update, field) is None
    # ToolCall.kind/status/locations are not nullable: the fallback is not written as null
    assert parsed.to_wire()["update"] == {
        "sessionUpdate": "tool_call",
        "toolCallId": "call_1",
        "title": "Read",
    }


def test_invalid_message_id_falls_back_to_none() -> None:
    wire = session_update(
        {"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": "hi"}, "messageId": 12}
    )
    parsed = SessionNotification.model_validate(wire)
    assert isinstance(parsed.update, AgentMessageChunk)
    assert parsed.update.message_id is None
    assert parsed.update.content == TextContent(text="hi")


def test_invalid_patch_field_falls_back_to_unchanged_not_to_clear() -> None:
    """``session_info_update.title``: omitted = unchanged, ``null`` = clear; an invalid title must not clear.

    The Rust reference's default for this ``MaybeUndefined`` field is *undefined* (omitted).
    """
    parsed = SessionInfoUpdate.model_validate({"sessionUpdate": "session_info_update", "title": 42})
    assert parsed.title is MISSING  # unchanged; None would mean "clear"
    assert parsed.to_wire() == {"sessionUpdate": "session_info_update"}


def test_invalid_item_of_skip_invalid_items_array_is_dropped() -> None:
    wire = session_update(
        {
            "sessionUpdate": "tool_call_update",
            "toolCallId": "call_1",
            "content": [
                {"type": "diff", "newText": "missing its path"},
                {"type": "terminal", "terminalId": "term_1"},
                {"type": "content", "content": {"type": "text"}},
            ],
            "locations": [{"path": 5}, {"path": "/b.py", "line": 3}, {"line": 4}],
        }
    )
    parsed = SessionNotification.model_validate(wire)
    assert parsed.to_wire()["update"] == {
        "sessionUpdate": "tool_call_update",
        "toolCallId": "call_1",
        "content": [{"type": "terminal", "terminalId": "term_1"}],
        "locations": [{"path": "/b.py", "line": 3}],
    }


def test_invalid_plan_entries_and_commands_are_dropped_not_fatal() -> None:
    entry = {"content": "Write tests", "priority": "high", "status": "pending"}
    plan = SessionNotification.model_validate(
        session_update({"sessionUpdate": "plan", "entries": [{"content": "no priority or status"}, entry]})
    )
    assert plan.to_wire()["update"] == {"sessionUpdate": "plan", "entries": [entry]}
    command = {"name": "web", "description": "Search the web"}
    commands = SessionNotification.model_validate(
        session_update(
            {"sessionUpdate": "available_commands_update", "availableCommands": [{"name": 1}, command]}
        )
    )
    assert commands.to_wire()["update"] == {
        "sessionUpdate": "available_commands_update",
        "availableCommands": [command],
    }


def test_null_mcp_servers_read_as_none() -> None:
    """``x-deserialize-default-on-null``: ``"mcpServers": null`` is an empty list, not an error."""
    parsed = NewSessionRequest.model_validate({"cwd": "/home/u", "mcpServers": None})
    assert parsed.mcp_servers == []
    stdio = McpServerStdio.model_validate({"name": "fs", "command": "/bin/mcp", "args": None, "env": None})
    assert (stdio.args, stdio.env) == ([], [])


def test_invalid_mcp_server_fails_new_session() -> None:
    """The current schema no longer skips invalid servers: a server the agent cannot run is an error."""
    stdio = {"name": "fs", "command": "/bin/mcp", "args": [], "env": []}
    with pytest.raises(ValidationError, match="url"):
        NewSessionRequest.model_validate(
            {"cwd": "/home/u", "mcpServers": [{"type": "http", "name": "no url", "headers": []}, stdio]}
        )


def test_unknown_outcome_in_permission_response_round_trips() -> None:
    wire = {"outcome": {"outcome": "delegated", "to": "admin"}, "_meta": {"k": "v"}}
    parsed = RequestPermissionResponse.model_validate(wire)
    assert isinstance(parsed.outcome, UnknownRequestPermissionOutcome)
    assert_same_json(parsed.to_wire(), wire)
