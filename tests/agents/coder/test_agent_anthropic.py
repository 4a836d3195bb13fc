"""The reference agent with the real Anthropic provider against a local server that streams as the
Messages API does (``wire/anthropic_wire.py``): thinking shown as thoughts, a tool call through the
client, and the signed thinking given back with the tool result on the next call, as Anthropic requires."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

pytest.importorskip("anthropic")

from acpio.agents.coder.agent import CoderOptions

from ._support import editor, options
from .wire import anthropic_wire as aw


@pytest.fixture
async def wire() -> AsyncIterator[aw.AnthropicWire]:
    async with aw.AnthropicWire() as server:
        yield server


def notes_and_settings(tmp_path: Path, wire: aw.AnthropicWire) -> None:
    """A notes file to read, and settings that point the Anthropic provider at ``wire``, thinking low."""
    (tmp_path / "user-settings.toml").write_text(
        f'reasoning_effort = "low"\n[providers.anthropic]\nbase_url = "{wire.base_url}"\nmax_retries = 0\n'
    )
    (tmp_path / "notes.txt").write_text("milk\n")


def anthropic_options(tmp_path: Path) -> CoderOptions:
    return options(tmp_path, offline=False, environ={"ANTHROPIC_API_KEY": "sk-ant-test"})


async def test_thinking_and_a_tool_call_through_an_anthropic_server(
    tmp_path: Path, wire: aw.AnthropicWire
) -> None:
    notes_and_settings(tmp_path, wire)
    wire.messages(
        aw.message_stream(
            aw.thinking(["The user ", "wants the notes."], signature="sig-1"),
            aw.tool_use("toolu_1", "read_file", '{"path": "notes.txt"}'),
            stop_reason="tool_use",
        ),
        aw.message_stream(aw.text("They say milk.")),
    )
    async with editor(anthropic_options(tmp_path)) as client:
        created = (await client.new(tmp_path))["result"]
        values = {o["id"]: o["currentValue"] for o in created["configOptions"]}
        assert values["model"] == "anthropic/claude-sonnet-4-6"
        turn = await client.prompt(created["sessionId"], "what do my notes say?")

    assert turn.stop_reason == "end_turn"
    assert turn.thoughts == "The user wants the notes."
    assert turn.text == "They say milk."
    assert [r["method"] for r in turn.requests] == ["fs/read_text_file"]
    first, second = (request.body for request in wire.sent)
    assert first["model"] == "claude-sonnet-4-6"
    assert "thinking" in first  # the reasoning effort asked for thinking
    assistant, result = second["messages"][-2:]
    assert assistant["role"] == "assistant"
    assert assistant["content"][0] == {
        "type": "thinking",
        "thinking": "The user wants the notes.",
        "signature": "sig-1",
    }
    assert assistant["content"][-1]["type"] == "tool_use"
    assert assistant["content"][-1]["id"] == "toolu_1"
    assert result["role"] == "user"
    assert result["content"][0]["type"] == "tool_result"
    assert result["content"][0]["tool_use_id"] == "toolu_1"


async def test_two_signed_thinking_blocks_go_back_as_two_blocks(
    tmp_path: Path, wire: aw.AnthropicWire
) -> None:
    notes_and_settings(tmp_path, wire)
    wire.messages(
        aw.message_stream(
            aw.thinking(["First, ", "look."], signature="sig-a"),
            aw.thinking(["Then read it."], signature="sig-b"),
            aw.tool_use("toolu_1", "read_file", '{"path": "notes.txt"}'),
            stop_reason="tool_use",
        ),
        aw.message_stream(aw.text("Milk.")),
    )
    async with editor(anthropic_options(tmp_path)) as client:
        created = (await client.new(tmp_path))["result"]
        turn = await client.prompt(created["sessionId"], "notes?")

    assert turn.stop_reason == "end_turn"
    assistant = wire.sent[1].body["messages"][-2]
    assert [block for block in assistant["content"] if block["type"] == "thinking"] == [
        {"type": "thinking", "thinking": "First, look.", "signature": "sig-a"},
        {"type": "thinking", "thinking": "Then read it.", "signature": "sig-b"},
    ]
