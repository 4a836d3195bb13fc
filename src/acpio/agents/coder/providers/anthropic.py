"""Anthropic's Claude models, on the official ``anthropic`` package.

Needs the ``anthropic`` extra (``pip install 'acpio[anthropic]'``) and a key: ``ANTHROPIC_API_KEY``
or the agent's ``authenticate``. ``ANTHROPIC_BASE_URL`` (or the settings' base URL) points the
client at a proxy or a compatible server.

**Models** come from ``GET /v1/models`` (retired ones left out), and what each accepts is decided in
this order:

1. a model the settings declare (``ProviderConfig.models``) is taken as declared;
2. otherwise the capabilities the listing gives (``image_input``, ``thinking``, ``effort``,
   ``max_input_tokens``, ``max_tokens``);
3. otherwise, for a listing without capabilities (an older API, a proxy), :data:`KNOWN_MODELS`:
   every Claude model sees images; Claude 3.7 and the later families think.

No Claude model takes audio. The option ``discover = false`` skips the listing.

**Calls** stream the Messages API: ``text_delta``, ``thinking_delta`` and ``signature_delta``
become text and thinking events, a ``tool_use`` block is yielded whole at its
``content_block_stop`` (its ``input_json_delta`` fragments joined), usage counts the whole prompt
(cache reads and writes included), and the stop reason is mapped: ``end_turn``,
``stop_sequence``, ``pause_turn`` -> ``end_turn``; ``max_tokens`` and
``model_context_window_exceeded`` -> ``max_tokens``; ``tool_use``; ``refusal``. A reasoning effort
turns thinking on: ``adaptive`` thinking with ``output_config.effort`` on models that list them,
else ``enabled`` thinking with a token budget per effort (:data:`THINKING_BUDGETS`). Thinking comes
back to the model with its signature, as the API requires within a tool loop; redacted thinking
is not kept. ``max_tokens``, which the API requires, is the request's, else the model's limit
bounded by the ``max_tokens`` option (32000).

**Errors**: 401/403 -> :class:`~acpio.agents.coder.model.ModelAuthError` naming
``ANTHROPIC_API_KEY``; 429 -> :class:`~acpio.agents.coder.model.ModelRateLimited`, retried; 400,
404, 413, 422 -> :class:`~acpio.agents.coder.model.ModelBadRequest`; 500, 529 "overloaded" and an
``overloaded_error`` event before any output are retried, then
:class:`~acpio.agents.coder.model.ModelError`.

**Options**: ``max_retries`` (3), ``retry_base_delay`` (1 s), ``retry_max_delay`` (20 s),
``timeout`` (600 s), ``max_tokens`` (32000), ``discover`` (true).
"""

from __future__ import annotations

import json
import re
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, Literal

from acpio.agents.coder.model import (
    AssistantMessage,
    AudioPart,
    Finish,
    FinishReason,
    ImagePart,
    Message,
    ModelAuthError,
    ModelBadRequest,
    ModelError,
    ModelEvent,
    ModelInfo,
    ModelRateLimited,
    ModelRequest,
    ProviderConfig,
    ProviderSpec,
    ReasoningEffort,
    SystemMessage,
    TextDelta,
    TextPart,
    ThinkingDelta,
    ToolCallEvent,
    UsageEvent,
    UserMessage,
)
from acpio.agents.coder.providers._common import HttpProvider, option, retry_after

if TYPE_CHECKING:
    import anthropic
    from anthropic.types import ModelInfo as ListedModel

__all__ = ["KNOWN_MODELS", "THINKING_BUDGETS", "AnthropicProvider", "Known", "known_model"]

ThinkingStyle = Literal["adaptive", "enabled"]


@dataclass(frozen=True, slots=True)
class Known:
    """What a family of Claude models does, for a listing without capabilities."""

    reasoning: bool = False
    max_output_tokens: int | None = None


KNOWN_MODELS: tuple[tuple[str, Known], ...] = (
    (r"claude-3-(haiku|opus|sonnet)", Known(max_output_tokens=4_096)),
    (r"claude-3-5", Known(max_output_tokens=8_192)),
    (r"claude-3-7", Known(reasoning=True, max_output_tokens=64_000)),
    (r"claude-opus-4-[01]", Known(reasoning=True, max_output_tokens=32_000)),
    (r"claude-[a-z]+-([4-9]|\d\d)", Known(reasoning=True, max_output_tokens=64_000)),
)
"""Regular expressions on a model id, first match wins; a Claude model matching none: images, no thinking."""

THINKING_BUDGETS: dict[ReasoningEffort, int] = {"low": 2_048, "medium": 8_192, "high": 24_576}
"""Thinking tokens per effort, for models that take a budget (``thinking.type = enabled``)."""

_MIN_BUDGET = 1_024  # the API's smallest budget

_STOP: dict[str, FinishReason] = {
    "end_turn": "end_turn",
    "stop_sequence": "end_turn",
    "pause_turn": "end_turn",
    "max_tokens": "max_tokens",
    "model_context_window_exceeded": "max_tokens",
    "tool_use": "tool_use",
    "refusal": "refusal",
}


def known_model(model_id: str) -> Known:
    """What :data:`KNOWN_MODELS` says of ``model_id``."""
    for pattern, known in KNOWN_MODELS:
        if re.search(pattern, model_id.lower()):
            return known
    return Known()


@dataclass
class _ToolUse:
    id: str
    name: str
    arguments: list[str] = field(default_factory=list[str])


class AnthropicProvider(HttpProvider["anthropic.AsyncAnthropic"]):
    """Claude models through the Messages API (see the module's docstring)."""

    spec = ProviderSpec(
        "anthropic",
        "Anthropic",
        key_env="ANTHROPIC_API_KEY",
        base_url_env="ANTHROPIC_BASE_URL",
        extra="anthropic",
    )

    def __init__(self, config: ProviderConfig) -> None:
        super().__init__(config)
        self._catalogue: dict[str, ModelInfo] = {}
        self._thinking: dict[str, ThinkingStyle] = {}

    def make_client(self) -> anthropic.AsyncAnthropic:
        """An ``AsyncAnthropic`` client, without retries of its own (the provider retries)."""
        try:
            import anthropic
        except ImportError as exc:
            raise self.missing_package(exc) from exc

        if not self.config.api_key:
            raise ModelAuthError(
                "No Anthropic API key: set ANTHROPIC_API_KEY, or authenticate with the agent's "
                "anthropic method",
                provider=self.spec.name,
            )
        return anthropic.AsyncAnthropic(
            api_key=self.config.api_key,
            base_url=self.config.base_url,
            max_retries=0,
            timeout=float(option(self.config.options, "timeout", float, 600.0)),
        )

    # -- the catalogue ----------------------------------------------------------------------------

    async def models(self) -> list[ModelInfo]:
        """The declared models, then the listed ones, with what each accepts."""
        declared = [replace(m, provider=self.spec.name) for m in self.config.models]
        found: list[ModelInfo] = []
        if option(self.config.options, "discover", bool, True):
            client = self.client()
            import anthropic

            try:
                listed = [m async for m in client.models.list()]
            except anthropic.APIError as exc:
                raise self.error(exc) from exc
            have = {m.id for m in declared}
            found = [self._info(m) for m in listed if m.id not in have and m.lifecycle != "retired"]
        self._catalogue = {m.id: m for m in [*declared, *found]}
        return [*declared, *found]

    def _info(self, listed: ListedModel) -> ModelInfo:
        caps = listed.capabilities
        if caps is None:
            known = known_model(listed.id)
            return ModelInfo(
                self.spec.name,
                listed.id,
                listed.display_name,
                image=True,
                reasoning=known.reasoning,
                context_window=listed.max_input_tokens or 200_000,
                max_output_tokens=listed.max_tokens or known.max_output_tokens,
            )
        thinks = caps.thinking.supported
        if thinks and caps.thinking.types.adaptive.supported and caps.effort.supported:
            self._thinking[listed.id] = "adaptive"
        return ModelInfo(
            self.spec.name,
            listed.id,
            listed.display_name,
            image=caps.image_input.supported,
            reasoning=thinks,
            context_window=listed.max_input_tokens,
            max_output_tokens=listed.max_tokens,
        )

    # -- a call -----------------------------------------------------------------------------------

    def body(self, request: ModelRequest) -> dict[str, Any]:
        """The JSON body of the Messages request for ``request`` (what is sent on the wire)."""
        known = self._catalogue.get(request.model)
        limit = int(option(self.config.options, "max_tokens", int, 32_000))
        model_limit = (
            known.max_output_tokens if known is not None else known_model(request.model).max_output_tokens
        )
        max_tokens = request.max_tokens or min(limit, model_limit or limit)
        body: dict[str, Any] = {
            "model": request.model,
            "max_tokens": max_tokens,
            "messages": claude_messages(request.messages),
            "stream": True,
        }
        system = "\n\n".join(m.text for m in request.messages if isinstance(m, SystemMessage))
        if system:
            body["system"] = system
        if request.tools:
            body["tools"] = [
                {"name": t.name, "description": t.description, "input_schema": dict(t.parameters)}
                for t in request.tools
            ]
        effort = request.reasoning_effort
        if effort is not None and self._thinking.get(request.model) == "adaptive":
            body["thinking"] = {"type": "adaptive"}
            body["output_config"] = {"effort": effort}
        elif effort is not None:
            budget = min(THINKING_BUDGETS[effort], max_tokens - _MIN_BUDGET)
            if budget >= _MIN_BUDGET:
                body["thinking"] = {"type": "enabled", "budget_tokens": budget}
        return body

    async def attempt(self, request: ModelRequest) -> AsyncIterator[ModelEvent]:
        """Stream one message, not retried (:meth:`stream` retries it)."""
        body = self.body(request)
        client = self.client()
        import anthropic

        try:
            stream = await client.messages.create(**body)
        except anthropic.APIError as exc:
            raise self.error(exc) from exc
        tools: dict[int, _ToolUse] = {}
        stop: str | None = None
        prompt = created = read = output = 0
        try:
            async for event in stream:
                if event.type == "message_start":
                    usage = event.message.usage
                    prompt, output = usage.input_tokens, usage.output_tokens
                    created = usage.cache_creation_input_tokens or 0
                    read = usage.cache_read_input_tokens or 0
                elif event.type == "content_block_start":
                    block = event.content_block
                    if block.type == "tool_use":
                        tools[event.index] = _ToolUse(block.id, block.name)
                elif event.type == "content_block_delta":
                    delta = event.delta
                    if delta.type == "text_delta":
                        yield TextDelta(delta.text)
                    elif delta.type == "thinking_delta":
                        yield ThinkingDelta(delta.thinking)
                    elif delta.type == "signature_delta":
                        yield ThinkingDelta("", signature=delta.signature)
                    elif delta.type == "input_json_delta" and event.index in tools:
                        tools[event.index].arguments.append(delta.partial_json)
                elif event.type == "content_block_stop" and event.index in tools:
                    use = tools[event.index]
                    yield ToolCallEvent(use.id, use.name, "".join(use.arguments) or "{}")
                elif event.type == "message_delta":
                    stop = event.delta.stop_reason or stop
                    output = event.usage.output_tokens
                    prompt = event.usage.input_tokens if event.usage.input_tokens is not None else prompt
                    created = event.usage.cache_creation_input_tokens or created
                    read = event.usage.cache_read_input_tokens or read
        except anthropic.APIError as exc:
            raise self.error(exc) from exc
        finally:
            await stream.close()
        if stop is None:
            raise ModelError(
                "Anthropic ended the answer without a stop reason (the connection was cut)",
                provider=self.spec.name,
            )
        yield UsageEvent(
            input_tokens=prompt + created + read,
            output_tokens=output,
            cached_read_tokens=read,
            cached_write_tokens=created,
        )
        yield Finish(_STOP.get(stop, "end_turn"))

    def error(self, exc: anthropic.APIError) -> ModelError:
        """The :class:`~acpio.agents.coder.model.ModelError` that says what ``exc`` means to the user."""
        import anthropic

        name = self.spec.name
        if isinstance(exc, anthropic.APIStatusError):
            status, kind = exc.status_code, exc.type
            detail = exc.api_message or exc.message
            if status == 200:  # an error event in the stream: its type says what happened
                status = {"overloaded_error": 529, "rate_limit_error": 429, "api_error": 500}.get(
                    kind or "", 200
                )
            said = f"{status} {kind}: {detail}" if kind else f"{status}: {detail}"
            if status in (401, 403):
                return ModelAuthError(
                    f"Anthropic refused the API key ({said}): set ANTHROPIC_API_KEY to a valid key, "
                    "or authenticate with the agent's anthropic method",
                    provider=name,
                    status=status,
                )
            if status == 429:
                wait = retry_after(exc.response.headers)
                return ModelRateLimited(
                    f"Anthropic is rate limiting ({said}).", provider=name, retry_after=wait
                )
            if status in (400, 404, 409, 413, 422):
                return ModelBadRequest(
                    f"Anthropic refused the request ({said})", provider=name, status=status
                )
            if status == 529:
                return ModelError(f"Anthropic is overloaded ({said}).", provider=name, status=status)
            return ModelError(
                f"Anthropic failed ({said}).", provider=name, status=status if status >= 400 else None
            )
        if isinstance(exc, anthropic.APITimeoutError):
            return ModelError("Anthropic did not answer in time", provider=name)
        if isinstance(exc, anthropic.APIConnectionError):
            cause = exc.__cause__ or exc.__context__
            if self.config.base_url is None:
                hint = "is this machine online?"
            else:
                hint = "is the server running, and is ANTHROPIC_BASE_URL (or base_url) right?"
            where = self.config.base_url or "the Anthropic API"
            return ModelError(f"cannot reach {where} ({cause or exc.message}): {hint}", provider=name)
        return ModelError(f"Anthropic failed: {exc.message}", provider=name)


def _image(part: ImagePart) -> dict[str, Any]:
    return {"type": "image", "source": {"type": "base64", "media_type": part.mime_type, "data": part.data}}


def _blocks(parts: Sequence[TextPart | ImagePart | AudioPart]) -> list[dict[str, Any]]:
    blocks: list[dict[str, Any]] = []
    for part in parts:
        if isinstance(part, TextPart):
            if part.text:  # the API refuses empty text blocks
                blocks.append({"type": "text", "text": part.text})
        elif isinstance(part, ImagePart):
            blocks.append(_image(part))
        else:
            raise ModelBadRequest(
                f"Claude models take no audio ({part.mime_type}): choose a model that accepts audio",
                provider="anthropic",
            )
    return blocks


def _tool_input(arguments: str) -> dict[str, Any]:
    try:
        value = json.loads(arguments or "{}")
    except ValueError:
        return {"arguments": arguments}
    return value if isinstance(value, dict) else {"arguments": value}


def claude_messages(messages: Sequence[Message]) -> list[dict[str, Any]]:
    """The conversation as Messages API messages (the system text goes apart, in ``system``)."""
    out: list[dict[str, Any]] = []
    for message in messages:
        if isinstance(message, SystemMessage):
            continue
        if isinstance(message, UserMessage):
            blocks = _blocks(message.parts)
            if blocks:
                out.append({"role": "user", "content": blocks})
        elif isinstance(message, AssistantMessage):
            content: list[dict[str, Any]] = [
                {"type": "thinking", "thinking": t.text, "signature": t.signature}
                for t in message.thinking
                if t.signature
            ]
            if message.text:
                content.append({"type": "text", "text": message.text})
            content += [
                {"type": "tool_use", "id": c.id, "name": c.name, "input": _tool_input(c.arguments)}
                for c in message.tool_calls
            ]
            if content:
                out.append({"role": "assistant", "content": content})
        else:
            result = {
                "type": "tool_result",
                "tool_use_id": message.tool_call_id,
                "content": _blocks(message.content) or [{"type": "text", "text": "(no output)"}],
                "is_error": message.is_error,
            }
            previous = out[-1] if out else None
            if (
                previous is not None
                and previous["role"] == "user"
                and previous["content"][0]["type"] == "tool_result"
            ):
                previous["content"].append(result)  # the results of one turn's calls go in one message
            else:
                out.append({"role": "user", "content": [result]})
    return out
