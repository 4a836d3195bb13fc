"""The local wire servers speak what the official client packages expect: their streams parse into the
packages' own event types, and their error answers raise the packages' own exception classes."""

from __future__ import annotations

import pytest

pytest.importorskip("openai")
pytest.importorskip("anthropic")

import anthropic
import openai

from .wire import anthropic_wire as aw
from .wire import openai_wire as ow


async def test_openai_stream_parses_into_chunks() -> None:
    async with ow.OpenAIWire(["gpt-4o"]) as wire:
        client = openai.AsyncOpenAI(api_key="sk-test", base_url=wire.base_url, max_retries=0)
        assert [m.id async for m in client.models.list()] == ["gpt-4o"]
        wire.chat(
            ow.chat_stream(
                reasoning="hm",
                text=["a", "b"],
                tool_calls=[ow.ToolCall("c1", "f", '{"x": 1}')],
                finish="tool_calls",
            )
        )
        stream = await client.chat.completions.create(
            model="gpt-4o",
            messages=[{"role": "user", "content": "hi"}],
            stream=True,
            stream_options={"include_usage": True},
        )
        chunks = [chunk async for chunk in stream]
        await client.close()
    deltas = [c.choices[0].delta for c in chunks if c.choices]
    assert [getattr(d, "reasoning_content", None) for d in deltas][1] == "hm"
    assert "".join(d.content or "" for d in deltas) == "ab"
    calls = [t for d in deltas for t in d.tool_calls or ()]
    assert calls[0].id == "c1"
    assert calls[0].function is not None
    assert calls[0].function.name == "f"
    assert "".join(t.function.arguments or "" for t in calls if t.function) == '{"x": 1}'
    assert [c.choices[0].finish_reason for c in chunks if c.choices][-1] == "tool_calls"
    assert chunks[-1].usage is not None
    assert chunks[-1].usage.total_tokens == 19


@pytest.mark.parametrize(
    ("status", "raised"),
    [
        (400, "BadRequestError"),
        (401, "AuthenticationError"),
        (404, "NotFoundError"),
        (429, "RateLimitError"),
        (500, "InternalServerError"),
        (503, "InternalServerError"),
    ],
)
async def test_openai_errors_raise_the_package_exceptions(status: int, raised: str) -> None:
    async with ow.OpenAIWire() as wire:
        wire.chat(ow.error(status, retry_after=2))
        client = openai.AsyncOpenAI(api_key="sk-test", base_url=wire.base_url, max_retries=0)
        with pytest.raises(getattr(openai, raised)) as caught:
            await client.chat.completions.create(model="gpt-4o", messages=[], stream=True)
        await client.close()
    assert caught.value.status_code == status
    assert caught.value.response.headers["retry-after"] == "2"


async def test_anthropic_stream_parses_into_events() -> None:
    async with aw.AnthropicWire() as wire:
        client = anthropic.AsyncAnthropic(api_key="sk-ant-test", base_url=wire.base_url, max_retries=0)
        listed = [m async for m in client.models.list()]
        assert listed[0].capabilities is not None
        assert listed[0].capabilities.image_input.supported
        wire.messages(
            aw.message_stream(
                aw.thinking("hm", signature="s"),
                aw.text("ab"),
                aw.tool_use("t1", "f", '{"x": 1}'),
                stop_reason="tool_use",
            )
        )
        stream = await client.messages.create(
            model="claude-sonnet-4-6",
            max_tokens=100,
            messages=[{"role": "user", "content": "hi"}],
            stream=True,
        )
        kinds = [event.type async for event in stream]
        await client.close()
    assert kinds[0] == "message_start"
    assert kinds[-2:] == ["message_delta", "message_stop"]
    assert kinds.count("content_block_start") == 3  # the ping between is skipped by the client


@pytest.mark.parametrize(
    ("status", "raised"),
    [
        (400, "BadRequestError"),
        (401, "AuthenticationError"),
        (403, "PermissionDeniedError"),
        (429, "RateLimitError"),
        (500, "InternalServerError"),
        (529, "OverloadedError"),
    ],
)
async def test_anthropic_errors_raise_the_package_exceptions(status: int, raised: str) -> None:
    async with aw.AnthropicWire() as wire:
        wire.messages(aw.error(status, retry_after=2))
        client = anthropic.AsyncAnthropic(api_key="sk-ant-test", base_url=wire.base_url, max_retries=0)
        with pytest.raises(getattr(anthropic, raised)) as caught:
            await client.messages.create(model="claude-sonnet-4-6", max_tokens=1, messages=[], stream=True)
        await client.close()
    assert caught.value.status_code == status
    assert caught.value.request_id == "req_wire01"


async def test_anthropic_error_event_mid_stream() -> None:
    async with aw.AnthropicWire() as wire:
        wire.messages(aw.stream_error(aw.text("x")))
        client = anthropic.AsyncAnthropic(api_key="sk-ant-test", base_url=wire.base_url, max_retries=0)
        stream = await client.messages.create(
            model="claude-sonnet-4-6", max_tokens=1, messages=[], stream=True
        )
        with pytest.raises(anthropic.APIStatusError) as caught:
            async for _ in stream:
                pass
        await client.close()
    assert caught.value.type == "overloaded_error"
