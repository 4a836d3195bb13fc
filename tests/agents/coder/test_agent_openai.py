"""The reference agent with the real OpenAI-compatible provider, against a local server that streams as
OpenAI does (``wire/openai_wire.py``): its models offered with their capabilities, a turn whose tool call
reads a file through the client and whose result goes back to the model, and a refused key."""

from __future__ import annotations

import base64
import json
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

pytest.importorskip("openai")

from ._support import editor, options
from .wire import openai_wire as ow


@pytest.fixture
async def wire() -> AsyncIterator[ow.OpenAIWire]:
    async with ow.OpenAIWire(["gpt-4o", "mystery-7b"]) as server:
        yield server


def settings_for(tmp_path: Path, wire: ow.OpenAIWire) -> None:
    (tmp_path / "user-settings.toml").write_text(
        f'model = "openai/gpt-4o"\n[providers.openai]\nbase_url = "{wire.base_url}"\nmax_retries = 0\n'
    )


async def test_a_turn_with_a_tool_call_through_an_openai_compatible_server(
    tmp_path: Path, wire: ow.OpenAIWire
) -> None:
    settings_for(tmp_path, wire)
    (tmp_path / "notes.txt").write_text("# Notes\n- buy milk\n")
    wire.chat(
        ow.chat_stream(
            text="Let me look.",
            tool_calls=[ow.ToolCall("call_a", "read_file", '{"path": "notes.txt"}')],
            finish="tool_calls",
        ),
        ow.chat_stream(text=["The notes ", "ask for milk."]),
    )
    async with editor(options(tmp_path, offline=False, environ={"OPENAI_API_KEY": "sk-test"})) as client:
        created = (await client.new(tmp_path))["result"]
        model = next(o for o in created["configOptions"] if o["id"] == "model")
        assert model["currentValue"] == "openai/gpt-4o"
        assert {c["value"] for c in model["options"]} == {"openai/gpt-4o", "openai/mystery-7b"}
        turn = await client.prompt(created["sessionId"], "what do my notes say?")

    assert turn.stop_reason == "end_turn"
    assert turn.text == "Let me look.The notes ask for milk."
    [read] = turn.kinds("tool_call")
    assert (read["title"], read["kind"]) == ("Read notes.txt", "read")
    assert [r["method"] for r in turn.requests] == ["fs/read_text_file"]
    assert turn.kinds("usage_update")[-1]["used"] == 19  # 12 prompt + 7 completion tokens
    first, second = (chat.body for chat in wire.chats)
    assert first["model"] == "gpt-4o"
    assert first["messages"][0]["role"] == "system"
    assert first["messages"][-1] == {"role": "user", "content": "what do my notes say?"}
    assert {t["function"]["name"] for t in first["tools"]} >= {"read_file", "edit_file", "update_plan"}
    tool_result = second["messages"][-1]
    assert tool_result["role"] == "tool"
    assert tool_result["tool_call_id"] == "call_a"
    assert "# Notes\n- buy milk\n" in json.dumps(tool_result["content"]).replace("\\n", "\n")


async def test_an_image_to_a_model_without_vision_and_a_refused_key(
    tmp_path: Path, wire: ow.OpenAIWire
) -> None:
    settings_for(tmp_path, wire)
    image = {"type": "image", "data": base64.b64encode(b"png").decode(), "mimeType": "image/png"}
    async with editor(options(tmp_path, offline=False, environ={"OPENAI_API_KEY": "sk-bad"})) as client:
        session = await client.session(tmp_path)
        await client.call(
            "session/set_config_option",
            {"sessionId": session, "configId": "model", "value": "openai/mystery-7b"},
        )
        refused = await client.prompt(session, [{"type": "text", "text": "look"}, image])
        assert refused.answer["error"]["code"] == -32602
        assert "openai/mystery-7b does not accept image input" in refused.answer["error"]["message"]
        assert wire.chats == []  # refused before the model was called

        wire.chat(ow.error(401))
        failed = await client.prompt(session, "hello")
    assert failed.answer["error"]["code"] == -32000
    assert failed.answer["error"]["message"].startswith("openai/mystery-7b: ")
