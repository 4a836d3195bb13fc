"""The offline model: deterministic directives, one tool call per request, the stop reasons."""

from __future__ import annotations

import json

import pytest

from acpio.agents.coder.model import (
    AssistantMessage,
    Finish,
    ImagePart,
    ModelEvent,
    ModelRequest,
    ProviderConfig,
    TextDelta,
    TextPart,
    ThinkingDelta,
    ToolCall,
    ToolCallEvent,
    ToolResultMessage,
    ToolSpec,
    UsageEvent,
    UserMessage,
)
from acpio.agents.coder.providers import ProviderUnavailable, provider_class

TOOLS = [ToolSpec(name, name, {"type": "object"}) for name in ("read_file", "edit_file", "update_plan")]


async def _events(request: ModelRequest) -> list[ModelEvent]:
    provider = provider_class("offline")(ProviderConfig())
    return [event async for event in provider.stream(request)]


def _text(events: list[ModelEvent]) -> str:
    return "".join(e.text for e in events if isinstance(e, TextDelta))


async def test_offline_model_calls_one_tool_per_request_then_reports() -> None:
    user = UserMessage((TextPart("think first\nread notes.txt\nedit notes.txt: a => b\nsay bye"),))
    first = await _events(ModelRequest("coder", [user], TOOLS))
    assert [e for e in first if isinstance(e, ThinkingDelta)] == [ThinkingDelta("first")]
    calls = [e for e in first if isinstance(e, ToolCallEvent)]
    assert calls == [ToolCallEvent("call_1", "read_file", json.dumps({"path": "notes.txt"}))]
    assert first[-1] == Finish("tool_use")
    assert any(isinstance(e, UsageEvent) for e in first)

    history = [
        user,
        AssistantMessage(tool_calls=(ToolCall("call_1", "read_file", calls[0].arguments),)),
        ToolResultMessage("call_1", "read_file", (TextPart("a\n"),)),
    ]
    second = await _events(ModelRequest("coder", history, TOOLS))
    edit = next(e for e in second if isinstance(e, ToolCallEvent))
    assert json.loads(edit.arguments) == {"path": "notes.txt", "old_text": "a", "new_text": "b"}

    history += [
        AssistantMessage(tool_calls=(ToolCall("call_2", "edit_file", edit.arguments),)),
        ToolResultMessage("call_2", "edit_file", (TextPart("edited"),), is_error=True),
    ]
    third = await _events(ModelRequest("coder", history, TOOLS))
    assert third[-1] == Finish("end_turn")
    assert _text(third) == "bye\nDone. Tool results:\n- read_file: a\n- edit_file: failed: edited"


@pytest.mark.parametrize(
    ("line", "reason"), [("refuse", "refusal"), ("long", "max_tokens"), ("hi", "end_turn")]
)
async def test_offline_stop_reasons(line: str, reason: str) -> None:
    events = await _events(ModelRequest("coder", [UserMessage((TextPart(line),))], TOOLS))
    assert events[-1] == Finish(reason)  # type: ignore[arg-type]


async def test_offline_model_sees_images_and_missing_tools() -> None:
    user = UserMessage((TextPart("run ls"), ImagePart("aGVsbG8=", "image/png")))
    events = await _events(ModelRequest("coder", [user], TOOLS, reasoning_effort="high"))
    assert isinstance(events[0], ThinkingDelta)
    assert "Effort high" in events[0].text
    assert _text(events).startswith("I received an image (image/png, 6 bytes).")
    assert "(the tool run_command is not available here)" in _text(events)
    assert events[-1] == Finish("end_turn")


def test_unknown_provider_is_named() -> None:
    with pytest.raises(ProviderUnavailable, match="unknown model provider 'nope': known providers are"):
        provider_class("nope")
