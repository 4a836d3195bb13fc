"""The model's conversation rebuilt from a session's history: prompts (embedded files and links as text),
thoughts, text and tool calls with their results, an interrupted call, a compaction summary."""

from __future__ import annotations

from acpio import schema as acp
from acpio.agents.coder.conversation import conversation, user_message
from acpio.agents.coder.model import (
    AssistantMessage,
    ImagePart,
    SystemMessage,
    TextPart,
    ThinkingPart,
    ToolCall,
    ToolResultMessage,
    UserMessage,
)
from acpio.agents.coder.tools import TOOL_META
from acpio.app import Exchange


def text(value: str) -> acp.TextContent:
    return acp.TextContent(text=value)


def said(value: str) -> acp.AgentMessageChunk:
    return acp.AgentMessageChunk(content=text(value))


def call(call_id: str, tool: str, arguments: dict[str, object]) -> acp.ToolCall:
    return acp.ToolCall(tool_call_id=call_id, title=tool, raw_input=arguments, meta={TOOL_META: tool})


def ended(call_id: str, output: str, status: str = "completed") -> acp.ToolCallUpdate:
    return acp.ToolCallUpdate(tool_call_id=call_id, status=status, raw_output=output)


def test_prompts_become_user_messages_with_files_and_links_as_text() -> None:
    blocks = [
        text("look at"),
        acp.ImageContent(data="aGk=", mime_type="image/png"),
        acp.EmbeddedResource(resource=acp.TextResourceContents(uri="file:///a.py", text="x = 1")),
        acp.ResourceLink(name="b.py", uri="file:///b.py"),
    ]
    message = user_message(blocks)
    assert message.parts == (
        TextPart("look at"),
        ImagePart("aGk=", "image/png"),
        TextPart("\n<file uri='file:///a.py'>\nx = 1\n</file>\n"),
        TextPart("\n[resource: b.py file:///b.py]\n"),
    )


def test_a_turn_with_tools_is_given_back_as_the_model_made_it() -> None:
    turn = Exchange(
        (text("fix it"),),
        "Reading.Fixed.",
        (
            acp.AgentThoughtChunk(content=text("hmm")),
            said("Reading."),
            call("c1", "read_file", {"path": "a.py"}),
            acp.ToolCallUpdate(tool_call_id="c1", status="in_progress"),
            ended("c1", "x = 1"),
            call("c2", "edit_file", {"path": "a.py"}),
            ended("c2", "the user rejected this call", "failed"),
            acp.UsageUpdate(used=10, size=100),
            said("Fixed."),
            call("c3", "run_command", {"command": "sleep 9"}),  # cancelled: no result
        ),
    )
    messages = conversation("system", [turn])
    assert messages == [
        SystemMessage("system"),
        UserMessage((TextPart("fix it"),)),
        AssistantMessage(
            "Reading.",
            (ThinkingPart("hmm"),),
            (
                ToolCall("c1", "read_file", '{"path": "a.py"}'),
                ToolCall("c2", "edit_file", '{"path": "a.py"}'),
            ),
        ),
        ToolResultMessage("c1", "read_file", (TextPart("x = 1"),)),
        ToolResultMessage("c2", "edit_file", (TextPart("the user rejected this call"),), is_error=True),
        AssistantMessage("Fixed.", (), (ToolCall("c3", "run_command", '{"command": "sleep 9"}'),)),
        ToolResultMessage("c3", "run_command", (TextPart("the call was interrupted"),), is_error=True),
    ]


def test_a_compaction_replaces_what_came_before_and_commands_are_left_out() -> None:
    history = [
        Exchange((text("first"),), "one", (said("one"),)),
        Exchange((text("/compact"),), "the summary", (said("the summary"),)),
        Exchange((text("/model offline/text"),), "Model: offline/text", (said("Model: offline/text"),)),
        Exchange((text("second"),), "two", (said("two"),)),
    ]
    assert conversation("system", history) == [
        SystemMessage("system\n\nA summary of the conversation so far:\nthe summary"),
        UserMessage((TextPart("second"),)),
        AssistantMessage("two"),
    ]
