"""One Usage per turn: the standard places and the private dialects, each read from a frame shaped as sent."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from acpio import Agent
from acpio.client import AgentClient, Usage
from acpio.driver.usage import UsageMeter
from acpio.jsonrpc import Connection
from acpio.schema import (
    NewSessionRequest,
    NewSessionResponse,
    PromptRequest,
    PromptResponse,
    SessionNotification,
    StopReason,
    UsageUpdate,
)


def read(*, updates: tuple[dict[str, Any], ...] = (), result: dict[str, Any] | None = None) -> Usage | None:
    meter = UsageMeter()
    for update in updates:
        meter.read_update(update)
    if result is not None:
        meter.read_prompt_result(result)
    return meter.usage


def test_nothing_reported_is_no_usage() -> None:
    assert read(result={"stopReason": "end_turn"}) is None
    assert (
        read(updates=({"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": "hi"}},))
        is None
    )


def test_v1_prompt_response_usage_and_usage_update() -> None:
    usage = read(
        updates=(
            {"sessionUpdate": "usage_update", "used": 1000, "size": 200000},
            {
                "sessionUpdate": "usage_update",
                "used": 1200,
                "size": 200000,
                "cost": {"amount": 0.25, "currency": "USD"},
            },
        ),
        result={
            "stopReason": "end_turn",
            "usage": {"inputTokens": 900, "outputTokens": 300, "cachedReadTokens": 100, "totalTokens": 1300},
        },
    )
    assert usage == Usage(
        input_tokens=900,
        output_tokens=300,
        cached_read_tokens=100,
        total_tokens=1300,
        context_used=1200,  # the later usage_update is the newer figure
        context_size=200000,
        cost=0.25,
        currency="USD",
        sources=("usage_update", "prompt_response.usage"),
    )


def test_v2_idle_state_usage() -> None:
    # ACP v2: the turn's usage rides on the idle state_update that ends it (schema v2 IdleStateUpdate.usage)
    idle = {
        "sessionUpdate": "state_update",
        "state": "idle",
        "stopReason": "end_turn",
        "usage": {"inputTokens": 10, "outputTokens": 5, "thoughtTokens": 2, "totalTokens": 17},
    }
    usage = read(updates=(idle,))
    assert usage is not None
    assert (usage.input_tokens, usage.output_tokens, usage.thought_tokens, usage.total_tokens) == (
        10,
        5,
        2,
        17,
    )
    assert usage.sources == ("state_update.usage",)


def test_gemini_cli_meta_quota() -> None:
    # gemini-cli packages/cli/src/acp/acpSession.ts (5411f11) returns every prompt this way and sends no
    # standard usage (gemini-cli#29389); the numbers are those of gemini-cli#23148's example.
    result = {
        "stopReason": "end_turn",
        "_meta": {
            "quota": {
                "token_count": {"input_tokens": 8461, "output_tokens": 9},
                "model_usage": [
                    {
                        "model": "gemini-3.1-pro-preview",
                        "token_count": {"input_tokens": 8461, "output_tokens": 9},
                    }
                ],
            }
        },
    }
    assert read(result=result) == Usage(
        input_tokens=8461, output_tokens=9, sources=("gemini-cli:_meta.quota",)
    )


def test_codex_acp_meta_quota_alone_and_beside_its_standard_usage() -> None:
    # codex-acp src/__tests__/CodexACPAgent/data/token-usage-end-turn.json (ba5bcc3): its TokenCount under
    # _meta.quota, camelCase (codex-acp#10, #353), beside the standard usage it now sends too.
    token_count = {
        "totalTokens": 2500,
        "inputTokens": 1500,
        "cachedInputTokens": 500,
        "outputTokens": 450,
        "reasoningOutputTokens": 50,
    }
    quota = {
        "quota": {
            "token_count": token_count,
            "model_usage": [{"model": "model-id", "token_count": token_count}],
        }
    }
    standard = {
        "totalTokens": 2500,
        "inputTokens": 1500,
        "cachedReadTokens": 500,
        "outputTokens": 450,
        "thoughtTokens": 50,
    }
    expected = dict(
        input_tokens=1500, output_tokens=450, thought_tokens=50, cached_read_tokens=500, total_tokens=2500
    )
    alone = read(result={"stopReason": "end_turn", "_meta": quota})
    assert alone == Usage(**expected, sources=("codex-acp:_meta.quota",))
    both = read(result={"stopReason": "end_turn", "usage": standard, "_meta": quota})
    assert both == Usage(**expected, sources=("prompt_response.usage", "codex-acp:_meta.quota"))


def test_a_dialect_never_overrides_the_standard_figure() -> None:
    result = {
        "stopReason": "end_turn",
        "usage": {"inputTokens": 100, "outputTokens": 10, "totalTokens": 110},
        "_meta": {"quota": {"token_count": {"input_tokens": 999, "output_tokens": 999}}},
    }
    usage = read(result=result)
    assert usage is not None
    assert (usage.input_tokens, usage.output_tokens, usage.total_tokens) == (100, 10, 110)


def test_kimi_cli_status_update_payload() -> None:
    # The StatusUpdate payload recorded in a kimi-cli session's wire.jsonl (kimi-cli#2394); its ACP server
    # drops it (kimi-cli 1.49.0, src/kimi_cli/acp/session.py), so an adapter forwards it in _meta.
    status = {
        "context_tokens": 7426,
        "max_context_tokens": 262144,
        "token_usage": {
            "input_other": 2306,
            "output": 420,
            "input_cache_read": 5120,
            "input_cache_creation": 0,
        },
    }
    usage = read(
        updates=({"sessionUpdate": "usage_update", "used": 7426, "size": 262144, "_meta": {"kimi": status}},)
    )
    assert usage == Usage(
        input_tokens=2306,
        output_tokens=420,
        cached_read_tokens=5120,
        cached_write_tokens=0,
        total_tokens=7846,
        context_used=7426,
        context_size=262144,
        sources=("usage_update", "kimi-cli:StatusUpdate"),
    )


def test_copilot_cli_uses_the_standard_places() -> None:
    # copilot-cli#4174: nothing before 1.0.78, whose changelog reads "Expose token usage in ACP prompt
    # results and live usage_update notifications", without cost (copilot-cli#4363).
    usage = read(
        updates=({"sessionUpdate": "usage_update", "used": 18211, "size": 128000},),
        result={
            "stopReason": "end_turn",
            "usage": {"inputTokens": 18000, "outputTokens": 211, "totalTokens": 18211},
        },
    )
    assert usage is not None
    assert (usage.context_used, usage.context_size, usage.cost) == (18211, 128000, None)
    assert (usage.input_tokens, usage.output_tokens) == (18000, 211)


def test_malformed_counts_are_left_out() -> None:
    usage = read(
        updates=({"sessionUpdate": "usage_update", "used": -1, "size": "big", "cost": {"amount": True}},)
    )
    assert usage is None


async def test_a_turn_result_carries_the_usage_the_agent_reported(tmp_path: Path) -> None:
    """Through the wire: an agent reporting gemini-cli's way and with a usage_update."""
    app = Agent.builder(name="gemini-like")

    @app.on_request
    async def prompt(request: PromptRequest, cx: Connection) -> PromptResponse:
        update = UsageUpdate(used=5000, size=1048576)
        cx.send_notification(SessionNotification(session_id=request.session_id, update=update))
        answer = PromptResponse(stop_reason=StopReason.END_TURN)
        answer.meta = {
            "quota": {"token_count": {"input_tokens": 4900, "output_tokens": 100}, "model_usage": []}
        }
        return answer

    @app.on_request
    async def new_session(request: NewSessionRequest) -> NewSessionResponse:
        return NewSessionResponse(session_id="s-1")

    async with AgentClient(app, cwd=tmp_path) as client:
        session = await client.new_session()
        result = await session.prompt("hi")
    assert result.usage == Usage(
        input_tokens=4900,
        output_tokens=100,
        context_used=5000,
        context_size=1048576,
        sources=("usage_update", "gemini-cli:_meta.quota"),
    )
