"""What a newer v2 peer sends survives a hop, and v2's patch fields tell omitted, null and value apart.

v2 gives every enum and tagged union an ``other`` catch-all and reserves ``_``-prefixed values for
custom extensions: a proxy or a logger built on ``acpio.schema.v2`` must pass them on unchanged.
"""

from __future__ import annotations

from typing import Any

import orjson
import pytest
from pydantic import MISSING, TypeAdapter, ValidationError

from acpio.schema import v2

from .._helpers import assert_same_json
from .conftest import V2DefValidator

#: (union, a value with a custom tag, the catch-all class it lands in)
CUSTOM_VARIANTS: list[tuple[Any, dict[str, Any], type]] = [
    (v2.SessionUpdate, {"sessionUpdate": "_acme_heartbeat", "beat": 3}, v2.UnknownSessionUpdate),
    (v2.StateUpdate, {"state": "_acme_paused", "why": "quota"}, v2.OtherStateUpdate),
    (v2.ContentBlock, {"type": "_acme_chart", "series": [1, 2]}, v2.UnknownContentBlock),
    (v2.ToolCallContent, {"type": "_acme_table", "rows": []}, v2.UnknownToolCallContent),
    (v2.McpServer, {"type": "_acme_socket", "name": "s", "path": "/run/s"}, v2.UnknownMcpServer),
    (v2.AuthMethod, {"type": "_acme_sso", "id": "sso", "name": "SSO"}, v2.UnknownAuthMethod),
    (v2.BackgroundWork, {"type": "_acme_job", "id": "j1"}, v2.UnknownBackgroundWork),
    (v2.ReplayFrom, {"type": "_acme_since", "cursor": "c"}, v2.UnknownReplayFrom),
    (v2.RequestPermissionOutcome, {"outcome": "_acme_deferred"}, v2.UnknownRequestPermissionOutcome),
    (
        v2.AvailableCommand,
        {"type": "_acme_macro", "name": "m", "description": "a macro"},
        v2.UnknownAvailableCommand,
    ),
]


@pytest.mark.parametrize(
    ("union", "wire", "catch_all"), CUSTOM_VARIANTS, ids=[c[2].__name__ for c in CUSTOM_VARIANTS]
)
def test_custom_union_variants_are_kept(union: Any, wire: dict[str, Any], catch_all: type) -> None:
    value = TypeAdapter(union).validate_python(wire)
    assert type(value) is catch_all
    assert_same_json(value.to_wire(), wire)


def test_a_custom_session_update_survives_the_notification(v2_def_validator: V2DefValidator) -> None:
    data = {"sessionId": "s", "update": {"sessionUpdate": "_acme_heartbeat", "beat": 3}, "_meta": {"k": 1}}
    v2_def_validator("UpdateSessionNotification").validate(data)
    note = v2.UpdateSessionNotification.model_validate(data)
    assert isinstance(note.update, v2.UnknownSessionUpdate)
    assert orjson.loads(note.to_wire_json()) == data


def test_custom_enum_values_stay_strings_and_known_ones_become_members() -> None:
    update = v2.ToolCallUpdate.model_validate({"toolCallId": "t", "kind": "_acme_deploy", "status": "paused"})
    assert update.kind == "_acme_deploy"
    assert not isinstance(update.kind, v2.ToolKind)
    assert update.status is v2.ToolCallStatus.PAUSED
    assert update.to_wire() == {"toolCallId": "t", "kind": "_acme_deploy", "status": "paused"}


def test_unknown_fields_at_every_level_round_trip(v2_def_validator: V2DefValidator) -> None:
    data = {
        "sessionId": "s",
        "prompt": [{"type": "text", "text": "hi", "future": {"x": 1}}],
        "newTopLevel": [1, "two"],
    }
    v2_def_validator("PromptRequest").validate(data)
    request = v2.PromptRequest.model_validate(data)
    assert request.to_wire() == data
    response = v2.InitializeResponse.model_validate(
        {
            "protocolVersion": 2,
            "info": {"name": "a", "version": "1", "build": "abc"},
            "capabilities": {"session": {"_acme": {}, "prompt": {"video": {}}}, "nextThing": {}},
        }
    )
    assert response.to_wire()["capabilities"] == {
        "session": {"_acme": {}, "prompt": {"video": {}}},
        "nextThing": {},
    }
    assert response.to_wire()["info"]["build"] == "abc"


def test_a_custom_stop_reason_and_an_error_stop_reason_are_kept() -> None:
    custom = v2.IdleStateUpdate.model_validate({"state": "idle", "stopReason": "_acme_budget", "spent": 3})
    assert custom.stop_reason == "_acme_budget"
    assert custom.to_wire() == {"state": "idle", "stopReason": "_acme_budget", "spent": 3}
    error = v2.IdleStateUpdate.model_validate(
        {"state": "idle", "stopReason": "error", "error": {"code": -32603, "message": "boom"}}
    )
    assert error.error is not None
    assert error.error.message == "boom"


# ----- patch fields: omitted (MISSING) = unchanged, null (None) = clear, a value = replace ----------

#: (class, required wire fields, a patch field's wire name, a value for it)
PATCHES: list[tuple[type, dict[str, Any], str, Any]] = [
    (v2.ToolCallUpdate, {"toolCallId": "t"}, "title", "Reading"),
    (v2.ToolCallUpdate, {"toolCallId": "t"}, "status", "completed"),
    (v2.ToolCallUpdate, {"toolCallId": "t"}, "content", []),
    (v2.ToolCallUpdate, {"toolCallId": "t"}, "_meta", {"k": 1}),
    (v2.TerminalUpdate, {"terminalId": "term"}, "exitStatus", {"exitCode": 0}),
    (v2.AgentMessage, {"messageId": "m"}, "content", [{"type": "text", "text": "hi"}]),
    (v2.UserMessage, {"messageId": "m"}, "content", [{"type": "text", "text": "hi"}]),
    (v2.AgentThought, {"messageId": "m"}, "content", [{"type": "text", "text": "hmm"}]),
    (v2.AgentMessage, {"messageId": "m"}, "_meta", {"k": None}),
    (v2.SessionInfoUpdate, {}, "title", "Fix the bug"),
]


@pytest.mark.parametrize(
    ("cls", "base", "wire", "value"), PATCHES, ids=[f"{p[0].__name__}.{p[2]}" for p in PATCHES]
)
def test_patch_fields_keep_omitted_null_and_value_apart(
    cls: type[v2.AcpModel], base: dict[str, Any], wire: str, value: Any
) -> None:
    attr = next(
        name for name, info in cls.model_fields.items() if (info.alias or name) == wire or name == wire
    )
    omitted = cls.model_validate(base)
    cleared = cls.model_validate({**base, wire: None})
    replaced = cls.model_validate({**base, wire: value})
    assert getattr(omitted, attr) is MISSING
    assert getattr(cleared, attr) is None
    assert getattr(replaced, attr) not in (None, MISSING)
    tag = {k: v for k, v in omitted.to_wire().items() if k not in base}  # a tag the class writes itself
    assert omitted.to_wire() == {**tag, **base}
    assert cleared.to_wire() == {**tag, **base, wire: None}
    assert_same_json(replaced.to_wire(), {**tag, **base, wire: value})


def test_patch_fields_built_in_python_write_null_only_when_asked() -> None:
    assert v2.ToolCallUpdate(tool_call_id="t").to_wire() == {"toolCallId": "t"}
    assert v2.ToolCallUpdate(tool_call_id="t", title=None, kind=None).to_wire() == {
        "toolCallId": "t",
        "title": None,
        "kind": None,
    }
    assert v2.ToolCallUpdate(tool_call_id="t").status is MISSING


def test_an_invalid_patch_value_reads_as_unchanged_not_as_clear() -> None:
    update = v2.ToolCallUpdate.model_validate({"toolCallId": "t", "title": 42})
    assert update.title is MISSING
    assert "title" not in update.to_wire()


def test_non_patch_optional_fields_are_omitted_when_none() -> None:
    request = v2.NewSessionRequest(cwd="/p", mcp_servers=[])
    assert request.to_wire() == {"cwd": "/p", "mcpServers": []}
    chunk = v2.AgentMessageChunk(message_id="m", content=v2.TextContent(text="x"))
    assert chunk.to_wire() == {
        "sessionUpdate": "agent_message_chunk",
        "messageId": "m",
        "content": {"type": "text", "text": "x"},
    }


# ----- request ids, wire names -----------------------------------------------------------------


def test_request_ids_are_never_null() -> None:
    adapter = TypeAdapter(v2.RequestId)
    assert adapter.validate_python(7) == 7
    assert adapter.validate_python("r-1") == "r-1"
    for bad in (None, True, 1.5):
        with pytest.raises(ValidationError):
            adapter.validate_python(bad)
    with pytest.raises(ValidationError):
        v2.AgentRequest.model_validate({"id": None, "method": "session/update"})


def test_an_error_response_may_carry_a_null_id() -> None:
    response = v2.AgentResponse.model_validate(
        {"id": None, "error": {"code": -32700, "message": "parse error"}}
    )
    assert response.id is None


def test_wire_names_are_camel_case_and_python_names_snake_case() -> None:
    request = v2.ResumeSessionRequest(
        session_id="s", cwd="/p", replay_from=v2.ReplayFromStart(), mcp_servers=[]
    )
    wire = request.to_wire()
    assert wire["sessionId"] == "s"
    assert wire["replayFrom"] == {"type": "start"}
    assert v2.ResumeSessionRequest.model_validate(wire).replay_from == request.replay_from
    data = orjson.loads(request.to_wire_json())
    assert data == wire
    assert b"null" not in request.to_wire_json()


def test_unsupported_version_error_data_is_typed_and_other_data_kept() -> None:
    error = v2.Error.model_validate(
        {"code": -32022, "message": "unsupported", "data": {"requested": 3, "supported": [1, 2]}}
    )
    assert isinstance(error.data, v2.UnsupportedProtocolVersionErrorData)
    assert error.data.supported == [1, 2]
    other = v2.Error.model_validate({"code": -32603, "message": "x", "data": ["trace", 1]})
    assert other.data == ["trace", 1]
    assert other.to_wire() == {"code": -32603, "message": "x", "data": ["trace", 1]}
