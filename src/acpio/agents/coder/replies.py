"""A model's reply in a turn of the reference agent: streamed to the client, turned into a message."""

from __future__ import annotations

from acpio.agents.coder.model import (
    REASONING_EFFORTS,
    AssistantMessage,
    Finish,
    FinishReason,
    ModelAuthError,
    ModelError,
    ModelInfo,
    ModelRateLimited,
    ModelRequest,
    ReasoningEffort,
    TextDelta,
    ThinkingDelta,
    ThinkingPart,
    ToolCall,
    ToolCallEvent,
    UsageEvent,
)
from acpio.agents.coder.state import SessionState
from acpio.app import Turn
from acpio.errors import AuthRequired, InternalError

__all__ = ["call_model", "effort"]


async def call_model(
    turn: Turn, state: SessionState, model: ModelInfo, request: ModelRequest
) -> tuple[AssistantMessage, FinishReason]:
    """Stream ``model``'s reply to ``request`` into ``turn`` (said, thought, usage); the reply, why it ended.

    The provider's errors become ACP errors: a refused key asks for auth, the others fail the turn.
    """
    provider = state.catalogue.providers[model.provider]
    text: list[str] = []
    thought: list[ThinkingPart] = []
    thinking: list[str] = []  # the block being received: it ends with its signature
    calls: list[ToolCall] = []
    finish: FinishReason = "end_turn"
    stream = provider.stream(request)
    try:
        async for event in stream:
            match event:
                case TextDelta(delta):
                    text.append(delta)
                    await turn.say(delta)
                case ThinkingDelta(delta, signed):
                    thinking.append(delta)
                    if signed:  # each signed block goes back as it came, or the provider refuses it
                        thought.append(ThinkingPart("".join(thinking), signed))
                        thinking = []
                    if delta:
                        await turn.think(delta)
                case ToolCallEvent(call_id, name, arguments):
                    calls.append(ToolCall(call_id, name, arguments))
                case UsageEvent():
                    used = event.input_tokens + event.output_tokens
                    await turn.report_usage(used, model.context_window or used)
                case Finish(reason):
                    finish = reason
    except ModelAuthError as exc:
        raise AuthRequired({"provider": exc.provider}, message=f"{model.qualified_id}: {exc}") from exc
    except ModelRateLimited as exc:
        wait = f"; retry in {exc.retry_after:g} s" if exc.retry_after is not None else ""
        raise InternalError(
            {"provider": exc.provider, "status": exc.status},
            message=f"{model.qualified_id} is rate limited: {exc}{wait}",
        ) from exc
    except ModelError as exc:
        raise InternalError(
            {"provider": exc.provider, "status": exc.status},
            message=f"{model.qualified_id} failed: {exc}",
        ) from exc
    finally:
        close = getattr(stream, "aclose", None)
        if close is not None:
            await close()
    if any(thinking):
        thought.append(ThinkingPart("".join(thinking)))
    return AssistantMessage("".join(text), tuple(thought), tuple(calls)), finish


def effort(value: object) -> ReasoningEffort | None:
    """The reasoning effort an option value names (``None`` for the model's default)."""
    for effort in REASONING_EFFORTS:
        if value == effort:
            return effort
    return None
