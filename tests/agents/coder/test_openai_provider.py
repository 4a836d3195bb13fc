"""The OpenAI-compatible provider, through the real ``openai`` package, against a local chat server.

The server (``wire/openai_wire.py``) streams what OpenAI and the compatible servers stream; each test
checks what the provider sent (the request's JSON) and what it made of the answer (the events).
"""

from __future__ import annotations

import asyncio
import base64
import os
import socket
import time
from collections.abc import AsyncIterator

import pytest

pytest.importorskip("openai")

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
    ToolCall,
    ToolCallEvent,
    ToolResultMessage,
    ToolSpec,
    UsageEvent,
    UserMessage,
)
from acpio.agents.coder.providers import provider_class
from acpio.agents.coder.providers.openai import OPENAI_URL, OpenAIProvider, known_model

from .wire import openai_wire as ow

#: Retries quick enough for a test; the waits are still real.
FAST = {"max_retries": 2, "retry_base_delay": 0.01, "retry_max_delay": 5.0}
HELLO = ModelRequest("gpt-4o", [UserMessage((TextPart("hi"),))])
PNG = base64.b64encode(b"\x89PNG\r\n\x1a\n-pixels").decode()
WAV = base64.b64encode(b"RIFF....WAVEfmt ").decode()


@pytest.fixture
async def wire() -> AsyncIterator[ow.OpenAIWire]:
    async with ow.OpenAIWire(
        ["gpt-4o", "o3-mini", "text-embedding-3-small", "llava:13b", "mystery-7b"]
    ) as server:
        yield server


@pytest.fixture
async def provider(wire: ow.OpenAIWire) -> AsyncIterator[OpenAIProvider]:
    made = OpenAIProvider(ProviderConfig(api_key="sk-test", base_url=wire.base_url, options=FAST))
    yield made
    await made.aclose()


async def events(provider: OpenAIProvider, request: ModelRequest = HELLO) -> list[ModelEvent]:
    return [event async for event in provider.stream(request)]


def test_the_registry_names_the_provider() -> None:
    assert provider_class("openai") is OpenAIProvider
    assert OpenAIProvider.spec.key_env == "OPENAI_API_KEY"
    assert OpenAIProvider.spec.extra == "openai"


async def test_models_are_discovered_with_what_each_accepts(wire: ow.OpenAIWire) -> None:
    declared = ModelInfo("anything", "mystery-7b", "Mystery", image=True, context_window=32_000)
    provider = OpenAIProvider(ProviderConfig(api_key="sk-test", base_url=wire.base_url, models=(declared,)))
    try:
        found = {m.id: m for m in await provider.models()}
    finally:
        await provider.aclose()
    assert list(found) == ["mystery-7b", "gpt-4o", "llava:13b", "o3-mini"]  # declared first; no embeddings
    assert found["mystery-7b"] == ModelInfo(
        "openai", "mystery-7b", "Mystery", image=True, context_window=32_000
    )
    assert (found["gpt-4o"].image, found["gpt-4o"].reasoning, found["gpt-4o"].context_window) == (
        True,
        False,
        128_000,
    )
    assert (found["o3-mini"].image, found["o3-mini"].reasoning) == (False, True)
    assert (found["llava:13b"].image, found["llava:13b"].audio) == (True, False)
    assert found["gpt-4o"].qualified_id == "openai/gpt-4o"
    assert wire.got(ow.MODELS)[0].headers["authorization"] == "Bearer sk-test"


async def test_discovery_can_be_turned_off(wire: ow.OpenAIWire) -> None:
    declared = ModelInfo("openai", "local", image=True)
    config = ProviderConfig(base_url=wire.base_url, models=(declared,), options={"discover": False})
    assert await OpenAIProvider(config).models() == [declared]
    assert wire.requests == []


def test_known_models_table() -> None:
    assert known_model("openai/gpt-4o-mini").image  # an OpenRouter id
    assert known_model("gpt-4o-audio-preview").audio
    assert known_model("qwen3:8b").reasoning
    assert not known_model("qwen3:8b").image
    assert known_model("qwen2.5vl:7b").image
    assert known_model("deepseek-reasoner").reasoning
    assert known_model("llama3.1:8b") == known_model("some-unknown-model")
    assert not known_model("llama3.1:8b").image
    assert not known_model("llama3.1:8b").reasoning


async def test_a_streamed_answer_thinking_text_tool_calls_and_usage(
    wire: ow.OpenAIWire, provider: OpenAIProvider
) -> None:
    wire.chat(
        ow.chat_stream(
            reasoning=["The user wants ", "a file read."],
            text=["Let me ", "look."],
            tool_calls=[
                ow.ToolCall("call_a", "read_file", '{"path": "notes.txt"}'),
                ow.ToolCall("call_b", "run_command", '{"command": "ls -la"}', pieces=5),
            ],
            finish="tool_calls",
            usage=(120, 30),
            reasoning_tokens=12,
        )
    )
    got = await events(provider)
    assert got == [
        ThinkingDelta("The user wants "),
        ThinkingDelta("a file read."),
        TextDelta("Let me "),
        TextDelta("look."),
        ToolCallEvent("call_a", "read_file", '{"path": "notes.txt"}'),
        ToolCallEvent("call_b", "run_command", '{"command": "ls -la"}'),
        UsageEvent(input_tokens=120, output_tokens=30, thought_tokens=12, cached_read_tokens=0),
        Finish("tool_use"),
    ]
    sent = wire.chats[0].body
    assert sent["stream"] is True
    assert sent["stream_options"] == {"include_usage": True}
    assert sent["model"] == "gpt-4o"


async def test_ollama_style_reasoning_field(wire: ow.OpenAIWire, provider: OpenAIProvider) -> None:
    wire.chat(ow.chat_stream(reasoning="hmm", text="ok", reasoning_field="reasoning", usage=None))
    assert await events(provider) == [ThinkingDelta("hmm"), TextDelta("ok"), Finish("end_turn")]


async def test_what_is_sent_messages_tools_media_effort_and_bound(
    wire: ow.OpenAIWire, provider: OpenAIProvider
) -> None:
    wire.chat(ow.chat_stream(text="Done."))
    conversation = [
        SystemMessage("You are a coder."),
        UserMessage(
            (TextPart("What is in these?"), ImagePart(PNG, "image/png"), AudioPart(WAV, "audio/wav"))
        ),
        AssistantMessage("Looking.", tool_calls=(ToolCall("call_1", "read_file", '{"path": "a.png"}'),)),
        ToolResultMessage("call_1", "read_file", (TextPart("an image"), ImagePart(PNG, "image/png"))),
        ToolResultMessage("call_2", "run_command", (TextPart("no such file"),), is_error=True),
        AssistantMessage("", thinking=()),  # an empty answer is left out
        UserMessage((TextPart("Thanks"),)),
    ]
    tools = [
        ToolSpec("read_file", "Read a file", {"type": "object", "properties": {"path": {"type": "string"}}})
    ]
    request = ModelRequest("o4-mini", conversation, tools, reasoning_effort="high", max_tokens=512)
    assert await events(provider, request) == [
        TextDelta("Done."),
        UsageEvent(12, 7, 0, 0),
        Finish("end_turn"),
    ]
    sent = wire.chats[0].body
    assert sent["reasoning_effort"] == "high"
    assert sent["max_tokens"] == 512
    assert "max_completion_tokens" not in sent
    assert sent["tools"] == [
        {
            "type": "function",
            "function": {
                "name": "read_file",
                "description": "Read a file",
                "parameters": tools[0].parameters,
            },
        }
    ]
    image = {"type": "image_url", "image_url": {"url": f"data:image/png;base64,{PNG}"}}
    assert sent["messages"] == [
        {"role": "system", "content": "You are a coder."},
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "What is in these?"},
                image,
                {"type": "input_audio", "input_audio": {"data": WAV, "format": "wav"}},
            ],
        },
        {
            "role": "assistant",
            "content": "Looking.",
            "tool_calls": [
                {
                    "id": "call_1",
                    "type": "function",
                    "function": {"name": "read_file", "arguments": '{"path": "a.png"}'},
                }
            ],
        },
        {"role": "tool", "tool_call_id": "call_1", "content": "an image"},
        {"role": "tool", "tool_call_id": "call_2", "content": "Error: no such file"},
        {"role": "user", "content": [{"type": "text", "text": "Images from the tool results:"}, image]},
        {"role": "user", "content": "Thanks"},
    ]


def test_openai_itself_gets_max_completion_tokens() -> None:
    provider = OpenAIProvider(ProviderConfig(api_key="sk-test"))
    assert provider.base_url == OPENAI_URL
    body = provider.body(ModelRequest("gpt-5", [UserMessage((TextPart("hi"),))], max_tokens=100))
    assert body["max_completion_tokens"] == 100
    assert "max_tokens" not in body


@pytest.mark.parametrize(
    ("finish", "refusal", "expected"),
    [
        ("length", None, "max_tokens"),
        ("content_filter", None, "refusal"),
        ("stop", "I can't help with that.", "refusal"),
    ],
)
async def test_stop_reasons(
    wire: ow.OpenAIWire, provider: OpenAIProvider, finish: str, refusal: str | None, expected: str
) -> None:
    wire.chat(ow.chat_stream(text="Partial", refusal=refusal, finish=finish, usage=None))
    got = await events(provider)
    assert got[-1] == Finish(expected)  # type: ignore[arg-type]
    if refusal is not None:
        assert TextDelta(refusal) in got  # the user sees why


async def test_a_tool_call_with_finish_stop_is_still_a_tool_use(
    wire: ow.OpenAIWire, provider: OpenAIProvider
) -> None:
    wire.chat(ow.chat_stream(tool_calls=[ow.ToolCall("c1", "read_file", "{}")], finish="stop", usage=None))
    assert (await events(provider))[-1] == Finish("tool_use")


async def test_a_stream_cut_short_is_an_error(wire: ow.OpenAIWire, provider: OpenAIProvider) -> None:
    wire.chat(ow.chat_stream(text="Half an", finish=None, usage=None))
    with pytest.raises(ModelError, match="without a finish reason"):
        await events(provider)


async def test_a_refused_key_names_the_variable_and_is_not_retried(
    wire: ow.OpenAIWire, provider: OpenAIProvider
) -> None:
    wire.chat(ow.error(401))
    with pytest.raises(ModelAuthError, match="OPENAI_API_KEY") as caught:
        await events(provider)
    assert caught.value.status == 401
    assert "Incorrect API key" in str(caught.value)
    assert len(wire.chats) == 1


async def test_no_key_for_openai_fails_before_any_request() -> None:
    provider = OpenAIProvider(ProviderConfig())
    with pytest.raises(ModelAuthError, match="set OPENAI_API_KEY"):
        await events(provider)
    with pytest.raises(ModelAuthError, match="authenticate"):
        await provider.models()


async def test_a_local_server_needs_no_key(wire: ow.OpenAIWire) -> None:
    provider = OpenAIProvider(ProviderConfig(base_url=wire.base_url))
    wire.chat(ow.chat_stream(text="local"))
    try:
        assert TextDelta("local") in await events(provider)
    finally:
        await provider.aclose()


async def test_rate_limit_is_retried_after_the_wait_the_server_asks(
    wire: ow.OpenAIWire, provider: OpenAIProvider
) -> None:
    wire.chat(ow.error(429, retry_after=0.3), ow.chat_stream(text="finally"))
    started = time.monotonic()
    got = await events(provider)
    assert time.monotonic() - started >= 0.3
    assert TextDelta("finally") in got
    assert len(wire.chats) == 2
    assert wire.chats[1].body == wire.chats[0].body


async def test_rate_limit_that_lasts_fails_after_the_attempts(
    wire: ow.OpenAIWire, provider: OpenAIProvider
) -> None:
    wire.chat(*[ow.error(429) for _ in range(3)])
    with pytest.raises(ModelRateLimited, match="Still limited after 3 attempts"):
        await events(provider)
    assert len(wire.chats) == 3  # max_retries=2


async def test_a_long_retry_after_fails_at_once_saying_how_long(
    wire: ow.OpenAIWire, provider: OpenAIProvider
) -> None:
    wire.chat(ow.error(429, retry_after=120))
    with pytest.raises(ModelRateLimited, match="asks to wait 120 s") as caught:
        await events(provider)
    assert caught.value.retry_after == 120
    assert len(wire.chats) == 1


async def test_an_exhausted_quota_is_not_retried(wire: ow.OpenAIWire, provider: OpenAIProvider) -> None:
    wire.chat(
        ow.error(
            429, "You exceeded your current quota.", type="insufficient_quota", code="insufficient_quota"
        )
    )
    with pytest.raises(ModelError, match="quota is used up") as caught:
        await events(provider)
    assert not isinstance(caught.value, ModelRateLimited)
    assert len(wire.chats) == 1


async def test_server_errors_are_retried(wire: ow.OpenAIWire, provider: OpenAIProvider) -> None:
    wire.chat(ow.error(500), ow.error(503), ow.chat_stream(text="back"))
    assert TextDelta("back") in await events(provider)
    assert len(wire.chats) == 3


async def test_a_bad_request_is_not_retried(wire: ow.OpenAIWire, provider: OpenAIProvider) -> None:
    wire.chat(ow.error(404))
    with pytest.raises(ModelBadRequest, match="gpt-nope") as caught:
        await events(provider)
    assert caught.value.status == 404
    assert len(wire.chats) == 1


async def test_an_error_mid_stream_keeps_what_came_and_is_not_retried(
    wire: ow.OpenAIWire, provider: OpenAIProvider
) -> None:
    wire.chat(ow.stream_error("The model crashed.", text=["Half "]))
    got: list[ModelEvent] = []

    async def consume() -> None:
        async for event in provider.stream(HELLO):
            got.append(event)

    with pytest.raises(ModelError, match=r"The model crashed\."):
        await consume()
    assert got == [TextDelta("Half ")]
    assert len(wire.chats) == 1


async def test_an_unreachable_server_says_so() -> None:
    with socket.socket() as sock:
        sock.bind(
            ("127.0.0.1", 0)
        )  # bound, never listening: connections are refused, and the port stays ours
        port = sock.getsockname()[1]
        provider = OpenAIProvider(ProviderConfig(base_url=f"http://127.0.0.1:{port}/v1", options=FAST))
        try:
            with pytest.raises(
                ModelError, match=rf"cannot reach http://127.0.0.1:{port}/v1 .*is the server running"
            ):
                await events(provider)
        finally:
            await provider.aclose()


async def test_cancelling_a_call_closes_its_http_stream(
    wire: ow.OpenAIWire, provider: OpenAIProvider
) -> None:
    reply = ow.chat_stream(text=["first ", "second"], finish=None, usage=None, hold=True)
    reply.events.pop()  # no [DONE]: the server holds the stream open
    wire.chat(reply)
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
    await asyncio.wait_for(reply.closed.wait(), 5)  # the server saw the client hang up


@pytest.mark.skipif(
    not os.environ.get("OPENAI_API_KEY"), reason="OPENAI_API_KEY is not set: no call to OpenAI"
)
async def test_real_openai() -> None:
    provider = OpenAIProvider(ProviderConfig(api_key=os.environ["OPENAI_API_KEY"]))
    try:
        models = {m.id: m for m in await provider.models()}
        model = os.environ.get("ACPIO_TEST_OPENAI_MODEL", "gpt-4o-mini")
        assert model in models, f"{model} is not among the key's models: set ACPIO_TEST_OPENAI_MODEL"
        request = ModelRequest(
            model, [UserMessage((TextPart("Say the word 'pong' and nothing else."),))], max_tokens=20
        )
        got = [event async for event in provider.stream(request)]
    finally:
        await provider.aclose()
    assert "pong" in "".join(e.text for e in got if isinstance(e, TextDelta)).lower()
    assert any(isinstance(e, UsageEvent) for e in got)
    assert got[-1] == Finish("end_turn")
