"""The reference agent with the real Anthropic provider, against a local server that streams the Messages API
(``wire/anthropic_wire.py``): thinking shown as thoughts and sent back signed within the tool loop, the
listed capabilities offered, and the effort turned into adaptive thinking."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

pytest.importorskip("anthropic")

from ._support import editor, options
from .wire import anthropic_wire as aw

MODEL = "claude-sonnet-4-6"


@pytest.fixture
async def wire() -> AsyncIterator[aw.AnthropicWire]:
    listed = [
        aw.model_info(MODEL, "Claude Sonnet 4.6"),
        aw.model_info("claude-textonly", image=False, thinking=False),
    ]
    async with aw.AnthropicWire(listed) as server:
        yield server


async def test_a_turn_with_thinking_and_a_tool_call_through_anthropic(
    tmp_path: Path, wire: aw.AnthropicWire
) -> None:
    (tmp_path / "user-settings.toml").write_text(
        f'model = "anthropic/{MODEL}"\nreasoning_effort = "low"\n'
        f'[providers.anthropic]\nbase_url = "{wire.base_url}"\nmax_retries = 0\n'
    )
    (tmp_path / "notes.txt").write_text("# Notes\n- buy milk\n")
    wire.messages(
        aw.message_stream(
            aw.thinking(["I should ", "read the notes."], signature="sig-read"),
            aw.text("Let me look."),
            aw.tool_use("toolu_1", "read_file", '{"path": "notes.txt"}'),
            stop_reason="tool_use",
        ),
        aw.message_stream(aw.text(["They ask ", "for milk."]), usage=(300, 9)),
    )
    environ = {"ANTHROPIC_API_KEY": "sk-ant-test"}
    async with editor(options(tmp_path, offline=False, environ=environ)) as client:
        created = (await client.new(tmp_path))["result"]
        model = next(o for o in created["configOptions"] if o["id"] == "model")
        assert {c["value"] for c in model["options"]} == {f"anthropic/{MODEL}", "anthropic/claude-textonly"}
        turn = await client.prompt(created["sessionId"], "what do my notes say?")

    assert turn.stop_reason == "end_turn"
    assert turn.text == "Let me look.They ask for milk."
    thoughts = "".join(u["content"]["text"] for u in turn.kinds("agent_thought_chunk"))
    assert thoughts == "I should read the notes."
    assert [r["method"] for r in turn.requests] == ["fs/read_text_file"]
    assert turn.kinds("usage_update")[-1]["used"] == 309
    first, second = (request.body for request in wire.sent)
    assert first["model"] == MODEL
    assert first["thinking"] == {"type": "adaptive"}
    assert first["output_config"] == {"effort": "low"}
    assert first["system"]
    assert first["messages"] == [
        {"role": "user", "content": [{"type": "text", "text": "what do my notes say?"}]}
    ]
    answer, results = second["messages"][-2:]
    assert answer == {
        "role": "assistant",
        "content": [
            {"type": "thinking", "thinking": "I should read the notes.", "signature": "sig-read"},
            {"type": "text", "text": "Let me look."},
            {"type": "tool_use", "id": "toolu_1", "name": "read_file", "input": {"path": "notes.txt"}},
        ],
    }
    [result] = results["content"]
    assert (result["type"], result["tool_use_id"], result["is_error"]) == ("tool_result", "toolu_1", False)
    assert "- buy milk" in result["content"][0]["text"]
