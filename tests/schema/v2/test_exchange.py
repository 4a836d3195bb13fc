"""A v2 exchange (initialize, session/new, session/prompt, session/update) read and written back.

Each message is valid against the v2 JSON schema, parses into the class the design names, and
``to_wire()`` gives the same JSON back; models built in Python write schema-valid JSON.
"""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import BaseModel

from acpio.schema import v2

from .._helpers import assert_same_json
from .conftest import V2DefValidator

EXCHANGE: list[tuple[str, type[BaseModel], dict[str, Any]]] = [
    (
        "InitializeRequest",
        v2.InitializeRequest,
        {
            "protocolVersion": 2,
            "info": {"name": "zed", "version": "0.200.0"},
            "capabilities": {"auth": {"terminal": {}}, "elicitation": {"form": {}}},
        },
    ),
    (
        "InitializeResponse",
        v2.InitializeResponse,
        {
            "protocolVersion": 2,
            "info": {"name": "agent", "version": "1.0.0"},
            "capabilities": {"session": {"prompt": {"image": {}}, "mcp": {"http": {}}}},
            "authMethods": [],
        },
    ),
    ("NewSessionRequest", v2.NewSessionRequest, {"cwd": "/home/me/project", "mcpServers": []}),
    ("NewSessionResponse", v2.NewSessionResponse, {"sessionId": "sess_1"}),
    (
        "PromptRequest",
        v2.PromptRequest,
        {"sessionId": "sess_1", "prompt": [{"type": "text", "text": "fix the bug"}]},
    ),
    ("PromptResponse", v2.PromptResponse, {"messageId": "msg_1"}),
]

UPDATES: list[tuple[str, dict[str, Any]]] = [
    ("RunningStateUpdate", {"sessionUpdate": "state_update", "state": "running"}),
    ("IdleStateUpdate", {"sessionUpdate": "state_update", "state": "idle", "stopReason": "end_turn"}),
    (
        "IdleStateUpdate",
        {
            "sessionUpdate": "state_update",
            "state": "idle",
            "stopReason": "error",
            "error": {"code": -32603, "message": "model unreachable"},
        },
    ),
    ("RequiresActionStateUpdate", {"sessionUpdate": "state_update", "state": "requires_action"}),
    (
        "AgentMessageChunk",
        {
            "sessionUpdate": "agent_message_chunk",
            "messageId": "msg_2",
            "content": {"type": "text", "text": "hi"},
        },
    ),
    (
        "AgentMessage",
        {"sessionUpdate": "agent_message", "messageId": "msg_2", "content": [{"type": "text", "text": "hi"}]},
    ),
    (
        "ToolCallUpdate",
        {
            "sessionUpdate": "tool_call_update",
            "toolCallId": "call_1",
            "title": "Reading main.py",
            "kind": "read",
            "status": "in_progress",
        },
    ),
    ("ToolCallUpdate", {"sessionUpdate": "tool_call_update", "toolCallId": "call_1", "status": "cancelled"}),
]


@pytest.mark.parametrize(("name", "cls", "data"), EXCHANGE, ids=[e[0] for e in EXCHANGE])
def test_exchange_messages_round_trip(
    name: str, cls: type[BaseModel], data: dict[str, Any], v2_def_validator: V2DefValidator
) -> None:
    v2_def_validator(name).validate(data)
    model = cls.model_validate(data)
    assert type(model).__name__ == name
    assert_same_json(model.to_wire(), data)  # type: ignore[attr-defined]


@pytest.mark.parametrize(("cls_name", "update"), UPDATES, ids=[f"{u[0]}-{i}" for i, u in enumerate(UPDATES)])
def test_session_updates_round_trip(
    cls_name: str, update: dict[str, Any], v2_def_validator: V2DefValidator
) -> None:
    data = {"sessionId": "sess_1", "update": update}
    v2_def_validator("UpdateSessionNotification").validate(data)
    note = v2.UpdateSessionNotification.model_validate(data)
    assert type(note.update).__name__ == cls_name
    assert_same_json(note.to_wire(), data)


def test_updates_built_in_python_carry_their_tags(v2_def_validator: V2DefValidator) -> None:
    updates = [
        v2.RunningStateUpdate(),
        v2.IdleStateUpdate(stop_reason="cancelled"),
        v2.AgentMessageChunk(message_id="m", content=v2.TextContent(text="hello")),
        v2.ToolCallUpdate(tool_call_id="call_1", status=v2.ToolCallStatus.PAUSED),
    ]
    wires = [v2.UpdateSessionNotification(session_id="s", update=u).to_wire() for u in updates]
    for wire in wires:
        v2_def_validator("UpdateSessionNotification").validate(wire)
    assert [w["update"]["sessionUpdate"] for w in wires] == [
        "state_update",
        "state_update",
        "agent_message_chunk",
        "tool_call_update",
    ]
    assert wires[0]["update"] == {"sessionUpdate": "state_update", "state": "running"}
    assert wires[3]["update"] == {
        "sessionUpdate": "tool_call_update",
        "toolCallId": "call_1",
        "status": "paused",
    }


def test_a_state_outside_a_session_update_has_no_session_update_tag(v2_def_validator: V2DefValidator) -> None:
    data = {"status": "open", "state": {"state": "running"}}
    v2_def_validator("SessionStatusResponse").validate(data)
    status = v2.SessionStatusResponse.model_validate(data)
    assert isinstance(status.state, v2.RunningStateUpdate)
    assert status.status is v2.SessionStatus.OPEN
    assert status.to_wire() == data
    built = v2.SessionStatusResponse(
        status=v2.SessionStatus.OPEN, state=v2.IdleStateUpdate(stop_reason="end_turn")
    )
    assert built.to_wire()["state"] == {"state": "idle", "stopReason": "end_turn"}


def test_request_classes_know_method_and_response() -> None:
    assert v2.PromptRequest.METHOD == "session/prompt"
    assert v2.PromptRequest.RESPONSE is v2.PromptResponse
    assert v2.InitializeRequest.RESPONSE is v2.InitializeResponse
    row = v2.REQUESTS["session/prompt"]
    assert (row.direction, row.params, row.result, row.capability) == (
        "client_to_agent",
        v2.PromptRequest,
        v2.PromptResponse,
        "A.session",
    )
    assert v2.NOTIFICATIONS["session/update"].params is v2.UpdateSessionNotification
