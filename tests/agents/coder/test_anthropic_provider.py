"""The Anthropic provider, through the real ``anthropic`` package, against a local Messages API server.

The server (``wire/anthropic_wire.py``) streams the Messages API's events; each test checks what the
provider sent (the request's JSON) and what it made of the answer (the events).
"""

from __future__ import annotations

import asyncio
import base64
import os
import socket
import time
from collections.abc import AsyncIterator

import pytest

pytest.importorskip("anthropic")

from acpio.agents.coder.model import (
    AssistantMessage,
    AudioPart,
    Finish,
    ImagePart,
    ModelAuthError,
    ModelBadRequest,
    ModelError,
    ModelEvent,
    ModelInfo,
    ModelRateLimited,
    ModelRequest,
    ProviderConfig,
    SystemMessage,
    TextDelta,
    TextPart,
    ThinkingDelta,
    ThinkingPart,
    ToolCall,
    ToolCallEvent,
    ToolResultMessage,
    ToolSpec,
    UsageEvent,
    UserMessage,
)
from acpio.agents.coder.providers import provider_class
from acpio.agents.coder.providers.anthropic import AnthropicProvider

from .wire import anthropic_wire as aw

FAST = {"max_retries": 2, "retry_base_delay": 0.01, "retry_max_delay": 5.0}
MODEL = "claude-sonnet-4-6"
HELLO = ModelRequest(MODEL, [UserMessage((TextPart("hi"),))])
PNG = base64.b64encode(b"\x89PNG\r\n\x1a\n-pixels").decode()

LISTED = [
    aw.model_info(MODEL, "Claude Sonnet 4.6", max_tokens=64_000),
    aw.model_info(
        "claude-textonly-1", "Text only", image=False, thinking=False, effort=False, max_input_tokens=100_000
    ),
    aw.model_info("claude-3-5-haiku-20241022", "Claude Haiku 3.5", capabilities=False, max_tokens=None),
    aw.model_info("claude-old", "Old") | {"lifecycle": "retired"},
]


@pytest.fixture
async def wire() -> AsyncIterator[aw.AnthropicWire]:
    async with aw.AnthropicWire(LISTED) as server:
        yield server


@pytest.fixture
async def provider(wire: aw.AnthropicWire) -> AsyncIterator[AnthropicProvider]:
    made = AnthropicProvider(ProviderConfig(api_key="sk-ant-test", base_url=wire.base_url, options=FAST))
    yield made
    await made.aclose()


async def events(provider: AnthropicProvider, request: ModelRequest = HELLO) -> list[ModelEvent]:
    return [event async for event in provider.stream(request)]


def test_the_registry_names_the_provider() -> None:
    assert provider_class("anthropic") is AnthropicProvider
    assert AnthropicProvider.spec.key_env == "ANTHROPIC_API_KEY"
    assert AnthropicProvider.spec.key_required


async def test_models_from_the_listing_and_its_capabilities(wire: aw.AnthropicWire) -> None:
    declared = ModelInfo("x", "claude-textonly-1", "Declared", image=True)
    config = ProviderConfig(api_key="sk-ant-test", base_url=wire.base_url, models=(declared,))
    provider = AnthropicProvider(config)
    try:
        found = {m.id: m for m in await provider.models()}
    finally:
        await provider.aclose()
    assert list(found) == [
        "claude-textonly-1",
        MODEL,
        "claude-3-5-haiku-20241022",
    ]  # declared first, no retired
    assert found["claude-textonly-1"] == ModelInfo("anthropic", "claude-textonly-1", "Declared", image=True)
    assert found[MODEL] == ModelInfo(
        "anthropic",
        MODEL,
        "Claude Sonnet 4.6",
        image=True,
        reasoning=True,
        context_window=200_000,
        max_output_tokens=64_000,
    )
    haiku = found["claude-3-5-haiku-20241022"]  # no capabilities listed: the known table
    assert (haiku.image, haiku.reasoning, haiku.max_output_tokens) == (True, False, 8_192)
    assert not any(m.audio for m in found.values())
    assert wire.got(aw.MODELS)[0].headers["anthropic-version"]


async def test_a_streamed_answer_thinking_text_tool_use_and_usage(
    wire: aw.AnthropicWire, provider: AnthropicProvider
) -> None:
    wire.messages(
        aw.message_stream(
            aw.thinking(["Read ", "the file."], signature="sig-1"),
            aw.text(["Let me ", "look."]),
            aw.tool_use("toolu_01", "read_file", '{"path": "notes.txt"}'),
            aw.tool_use("toolu_02", "run_command", '{"command": "ls"}', pieces=1),
            stop_reason="tool_use",
            usage=(40, 55),
            cache=(100, 2000),
        )
    )
    assert await events(provider) == [
        ThinkingDelta("Read "),
        ThinkingDelta("the file."),
        ThinkingDelta("", signature="sig-1"),
        TextDelta("Let me "),
        TextDelta("look."),
        ToolCallEvent("toolu_01", "read_file", '{"path": "notes.txt"}'),
        ToolCallEvent("toolu_02", "run_command", '{"command": "ls"}'),
        UsageEvent(input_tokens=2140, output_tokens=55, cached_read_tokens=2000, cached_write_tokens=100),
        Finish("tool_use"),
    ]
    assert wire.sent[0].body["stream"] is True


async def test_what_is_sent_system_media_thinking_tool_results_and_tools(
    wire: aw.AnthropicWire, provider: AnthropicProvider
) -> None:
    await provider.models()  # the catalogue says how this model thinks and how long it may answer
    wire.messages(aw.message_stream(aw.text("Done.")))
    conversation = [
        SystemMessage("You are a coder."),
        UserMessage((TextPart("Look at this"), ImagePart(PNG, "image/png"))),
        AssistantMessage(
            "Reading.",
            thinking=(ThinkingPart("I should read it.", "sig-1"), ThinkingPart("unsigned, dropped")),
            tool_calls=(
                ToolCall("toolu_1", "read_file", '{"path": "a.png"}'),
                ToolCall("toolu_2", "run_command", "{}"),
            ),
        ),
        ToolResultMessage("toolu_1", "read_file", (TextPart("an image"), ImagePart(PNG, "image/png"))),
        ToolResultMessage("toolu_2", "run_command", (TextPart(""),), is_error=True),
        UserMessage((TextPart("Thanks"),)),
    ]
    tools = [
        ToolSpec("read_file", "Read a file", {"type": "object", "properties": {"path": {"type": "string"}}})
    ]
    request = ModelRequest(MODEL, conversation, tools, reasoning_effort="medium")
    assert (await events(provider, request))[-1] == Finish("end_turn")
    sent = wire.sent[0].body
    image = {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": PNG}}
    assert sent["system"] == "You are a coder."
    assert sent["max_tokens"] == 32_000  # the model's 64000, bounded by the option's default
    assert sent["thinking"] == {"type": "adaptive"}
    assert sent["output_config"] == {"effort": "medium"}
    assert sent["tools"] == [
        {"name": "read_file", "description": "Read a file", "input_schema": tools[0].parameters}
    ]
    assert sent["messages"] == [
        {"role": "user", "content": [{"type": "text", "text": "Look at this"}, image]},
        {
            "role": "assistant",
            "content": [
                {"type": "thinking", "thinking": "I should read it.", "signature": "sig-1"},
                {"type": "text", "text": "Reading."},
                {"type": "tool_use", "id": "toolu_1", "name": "read_file", "input": {"path": "a.png"}},
                {"type": "tool_use", "id": "toolu_2", "name": "run_command", "input": {}},
            ],
        },
        {
            "role": "user",
            "content": [
                {
                    "type": "tool_result",
                    "tool_use_id": "toolu_1",
                    "content": [{"type": "text", "text": "an image"}, image],
                    "is_error": False,
                },
                {
                    "type": "tool_result",
                    "tool_use_id": "toolu_2",
                    "content": [{"type": "text", "text": "(no output)"}],
                    "is_error": True,
                },
            ],
        },
        {"role": "user", "content": [{"type": "text", "text": "Thanks"}]},
    ]


async def test_a_model_without_adaptive_thinking_gets_a_budget(
    wire: aw.AnthropicWire, provider: AnthropicProvider
) -> None:
    await provider.models()
    wire.messages(aw.message_stream(aw.text("a")), aw.message_stream(aw.text("b")))
    haiku = "claude-3-7-sonnet-20250219"  # not listed: the known table
    await events(provider, ModelRequest(haiku, HELLO.messages, reasoning_effort="high"))
    await events(provider, ModelRequest(haiku, HELLO.messages, reasoning_effort="high", max_tokens=4_000))
    first, second = (r.body for r in wire.sent)
    assert first["thinking"] == {"type": "enabled", "budget_tokens": 24_576}
    assert first["max_tokens"] == 32_000
    assert "output_config" not in first
    assert second["thinking"] == {
        "type": "enabled",
        "budget_tokens": 2_976,
    }  # below max_tokens, as the API wants


@pytest.mark.parametrize(
    ("stop", "expected"),
    [
        ("max_tokens", "max_tokens"),
        ("refusal", "refusal"),
        ("model_context_window_exceeded", "max_tokens"),
        ("stop_sequence", "end_turn"),
    ],
)
async def test_stop_reasons(
    wire: aw.AnthropicWire, provider: AnthropicProvider, stop: str, expected: str
) -> None:
    wire.messages(aw.message_stream(aw.text("Partial"), stop_reason=stop))
    assert (await events(provider))[-1] == Finish(expected)  # type: ignore[arg-type]


async def test_a_stream_cut_short_is_an_error(wire: aw.AnthropicWire, provider: AnthropicProvider) -> None:
    wire.messages(aw.message_stream(aw.text("Half an"), stop_reason=None))
    with pytest.raises(ModelError, match="without a stop reason"):
        await events(provider)


async def test_a_refused_key_names_the_variable(wire: aw.AnthropicWire, provider: AnthropicProvider) -> None:
    wire.messages(aw.error(401))
    with pytest.raises(ModelAuthError, match=r"ANTHROPIC_API_KEY.*authenticate") as caught:
        await events(provider)
    assert "invalid x-api-key" in str(caught.value)
    assert len(wire.sent) == 1


async def test_no_key_fails_before_any_request() -> None:
    provider = AnthropicProvider(ProviderConfig())
    with pytest.raises(ModelAuthError, match="set ANTHROPIC_API_KEY"):
        await events(provider)


async def test_an_unreachable_server_says_what_to_check() -> None:
    with socket.socket() as sock:
        # bound, never listening: connections are refused, and the port stays ours
        sock.bind(("127.0.0.1", 0))
        url = f"http://127.0.0.1:{sock.getsockname()[1]}"
        provider = AnthropicProvider(ProviderConfig(api_key="sk-ant-test", base_url=url, options=FAST))
        try:
            with pytest.raises(
                ModelError, match=rf"cannot reach {url} .*: is the server running, and is ANTHROPIC_BASE_URL"
            ):
                await events(provider)
        finally:
            await provider.aclose()


async def test_rate_limit_and_overload_are_retried(
    wire: aw.AnthropicWire, provider: AnthropicProvider
) -> None:
    wire.messages(aw.error(429, retry_after=0.3), aw.error(529), aw.message_stream(aw.text("finally")))
    started = time.monotonic()
    assert TextDelta("finally") in await events(provider)
    assert time.monotonic() - started >= 0.3
    assert len(wire.sent) == 3


async def test_rate_limit_that_lasts_fails_after_the_attempts(
    wire: aw.AnthropicWire, provider: AnthropicProvider
) -> None:
    wire.messages(*[aw.error(429) for _ in range(3)])
    with pytest.raises(ModelRateLimited, match=r"rate_limit_error.*Still limited after 3 attempts"):
        await events(provider)


async def test_overloaded_mid_stream_before_any_output_is_retried(
    wire: aw.AnthropicWire, provider: AnthropicProvider
) -> None:
    wire.messages(aw.stream_error(), aw.message_stream(aw.text("second try")))
    assert TextDelta("second try") in await events(provider)
    assert len(wire.sent) == 2


async def test_overloaded_after_output_is_an_error(
    wire: aw.AnthropicWire, provider: AnthropicProvider
) -> None:
    wire.messages(aw.stream_error(aw.text("Half ")))
    got: list[ModelEvent] = []

    async def consume() -> None:
        async for event in provider.stream(HELLO):
            got.append(event)

    with pytest.raises(ModelError, match="overloaded") as caught:
        await consume()
    assert caught.value.status == 529
    assert got == [TextDelta("Half ")]
    assert len(wire.sent) == 1


async def test_a_bad_request_is_not_retried(wire: aw.AnthropicWire, provider: AnthropicProvider) -> None:
    wire.messages(aw.error(400))
    with pytest.raises(ModelBadRequest, match="at least one message is required"):
        await events(provider)
    assert len(wire.sent) == 1


async def test_audio_is_refused_before_sending(wire: aw.AnthropicWire, provider: AnthropicProvider) -> None:
    request = ModelRequest(MODEL, [UserMessage((AudioPart("UklGRg==", "audio/wav"),))])
    with pytest.raises(ModelBadRequest, match="no audio"):
        await events(provider, request)
    assert wire.sent == []


async def test_cancelling_a_call_closes_its_http_stream(
    wire: aw.AnthropicWire, provider: AnthropicProvider
) -> None:
    reply = aw.message_stream(aw.text(["first ", "second"]), stop_reason=None, hold=True)
    wire.messages(reply)
    first = asyncio.Event()

    async def consume() -> None:
        async for event in provider.stream(HELLO):
            if isinstance(event, TextDelta):
                first.set()

    task = asyncio.ensure_future(consume())
    await asyncio.wait_for(first.wait(), 10)
    assert not reply.closed.is_set()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    await asyncio.wait_for(reply.closed.wait(), 5)


@pytest.mark.skipif(
    not os.environ.get("ANTHROPIC_API_KEY"), reason="ANTHROPIC_API_KEY is not set: no call to Anthropic"
)
async def test_real_anthropic() -> None:
    provider = AnthropicProvider(ProviderConfig(api_key=os.environ["ANTHROPIC_API_KEY"]))
    try:
        models = {m.id: m for m in await provider.models()}
        cheapest = [i for i in models if "haiku" in i] or list(models)
        model = os.environ.get("ACPIO_TEST_ANTHROPIC_MODEL", cheapest[0])
        request = ModelRequest(
            model, [UserMessage((TextPart("Say the word 'pong' and nothing else."),))], max_tokens=20
        )
        got = [event async for event in provider.stream(request)]
    finally:
        await provider.aclose()
    assert "pong" in "".join(e.text for e in got if isinstance(e, TextDelta)).lower()
    assert any(isinstance(e, UsageEvent) for e in got)
    assert got[-1] == Finish("end_turn")
