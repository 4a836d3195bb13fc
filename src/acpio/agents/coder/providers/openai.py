"""OpenAI and the OpenAI-compatible servers (Ollama, vLLM, llama.cpp, LM Studio, OpenRouter...).

Needs the ``openai`` extra (``pip install 'acpio[openai]'``). The provider speaks the chat
completions API through the official ``AsyncOpenAI`` client: ``base_url`` points it at any
compatible server, ``OPENAI_API_KEY`` (or the agent's ``authenticate``) gives the key. OpenAI's own
endpoint needs a key; a local server does not (the client then sends a placeholder).

**Models** are discovered from the endpoint's ``GET /models``, and what each accepts is decided in
this order:

1. a model the settings declare (``ProviderConfig.models``) is taken as declared, so a settings file
   can say that a local model sees images or thinks;
2. otherwise the id is matched against :data:`KNOWN_MODELS` (OpenAI's families, and common open
   models: ``llava``, ``*-vl``, ``gemma3``... see images; ``qwen3``, ``deepseek-r1``, ``gpt-oss``...
   think); an OpenRouter id is matched on its last part (``openai/gpt-4o`` as ``gpt-4o``);
3. otherwise the model is taken as text only, without reasoning.

Ids that are no chat models (embeddings, speech, images, moderation) are left out. The option
``discover = false`` skips the listing and offers only the declared models.

**Calls** stream (``stream_options.include_usage`` for the usage): text deltas, thinking from the
``reasoning_content`` (vLLM, llama.cpp, DeepSeek) or ``reasoning`` (Ollama, OpenRouter) deltas,
tool calls assembled from their deltas and yielded whole at the end, usage, and the finish reason
mapped: ``stop`` -> ``end_turn``, ``length`` -> ``max_tokens``, ``tool_calls`` -> ``tool_use``,
``content_filter`` (or a refusal) -> ``refusal``. ``reasoning_effort`` is sent to reasoning models
when the agent gives one. The output bound is sent as ``max_completion_tokens`` to OpenAI and as
``max_tokens`` to other servers, which mostly know only that one. Thinking is not sent back to the
model (the chat completions API has no place for it). Images in a tool result, which a ``tool``
message cannot carry, follow the tool messages in a user message.

**Errors**: 401/403 -> :class:`~acpio.agents.coder.model.ModelAuthError` naming ``OPENAI_API_KEY``;
429 -> :class:`~acpio.agents.coder.model.ModelRateLimited`, retried (see
:class:`~acpio.agents.coder.providers._common.RetryPolicy`) unless the quota is exhausted; 400, 404,
413, 422 -> :class:`~acpio.agents.coder.model.ModelBadRequest`; 5xx retried, then
:class:`~acpio.agents.coder.model.ModelError`, as for an unreachable server.

**Options** (the provider's settings table): ``max_retries`` (3), ``retry_base_delay`` (1 s),
``retry_max_delay`` (20 s), ``timeout`` (600 s), ``headers`` (extra HTTP headers, such as
OpenRouter's ``HTTP-Referer``), ``discover`` (true).
"""

from __future__ import annotations

import re
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

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
    ProviderSpec,
    SystemMessage,
    TextDelta,
    TextPart,
    ThinkingDelta,
    ToolCallEvent,
    ToolResultMessage,
    UsageEvent,
    UserMessage,
)
from acpio.agents.coder.providers._common import HttpProvider, option, retry_after

if TYPE_CHECKING:
    import openai
    from openai.types.chat import ChatCompletionChunk

__all__ = ["KNOWN_MODELS", "OPENAI_URL", "Known", "OpenAIProvider", "known_model"]

OPENAI_URL = "https://api.openai.com/v1"
"""OpenAI's own endpoint, used when no base URL is given."""


@dataclass(frozen=True, slots=True)
class Known:
    """What a family of models accepts: images, audio, reasoning, and its context window."""

    image: bool = False
    audio: bool = False
    reasoning: bool = False
    context_window: int | None = None


KNOWN_MODELS: tuple[tuple[str, Known], ...] = (
    (r"^gpt-4o(-mini)?-audio|^gpt-audio", Known(audio=True, context_window=128_000)),
    (r"^o[13]-mini", Known(reasoning=True, context_window=200_000)),
    (r"^o\d", Known(image=True, reasoning=True, context_window=200_000)),
    (r"^gpt-5.*-chat", Known(image=True, context_window=128_000)),
    (r"^gpt-5", Known(image=True, reasoning=True, context_window=400_000)),
    (r"^gpt-4\.1", Known(image=True, context_window=1_047_576)),
    (r"^gpt-4o|^gpt-4-turbo|^gpt-4-vision|^chatgpt-4o", Known(image=True, context_window=128_000)),
    (r"^gpt-4", Known(context_window=8_192)),
    (r"^gpt-3\.5", Known(context_window=16_385)),
    (r"^gpt-oss", Known(reasoning=True, context_window=131_072)),
    (r"^gemini", Known(image=True, audio=True, context_window=1_048_576)),
    (r"^claude", Known(image=True, context_window=200_000)),
    (r"deepseek-reasoner|deepseek-r1|qwq|^qwen3(?!.*instruct)|magistral|thinking", Known(reasoning=True)),
    (
        r"llava|vision|-vl\b|vl-|gemma-?3|pixtral|minicpm-v|moondream|llama-?4|mistral-small-?3\.[12]|qwen2\.5vl",
        Known(image=True),
    ),
)
"""Regular expressions on a model id (lower case, its last ``/`` part), first match wins."""

_NOT_CHAT = re.compile(
    r"embed|tts|whisper|dall-e|davinci|babbage|moderation|transcribe|realtime|gpt-image|sora|rerank"
)


def known_model(model_id: str) -> Known:
    """What :data:`KNOWN_MODELS` says of ``model_id``: text only, no reasoning, when nothing matches."""
    name = model_id.lower().rsplit("/", 1)[-1]
    for pattern, known in KNOWN_MODELS:
        if re.search(pattern, name):
            return known
    return Known()


@dataclass
class _ToolCallParts:
    id: str = ""
    name: str = ""
    arguments: list[str] = field(default_factory=list[str])


_FINISH: dict[str, FinishReason] = {
    "stop": "end_turn",
    "length": "max_tokens",
    "tool_calls": "tool_use",
    "function_call": "tool_use",
    "content_filter": "refusal",
}


class OpenAIProvider(HttpProvider["openai.AsyncOpenAI"]):
    """Chat completions on OpenAI or any OpenAI-compatible server (see the module's docstring)."""

    spec = ProviderSpec(
        "openai",
        "OpenAI-compatible",
        key_env="OPENAI_API_KEY",
        key_required=False,
        base_url_env="OPENAI_BASE_URL",
        extra="openai",
    )

    @property
    def base_url(self) -> str:
        """The endpoint: the configured base URL, else OpenAI's."""
        return (self.config.base_url or OPENAI_URL).rstrip("/")

    @property
    def is_openai(self) -> bool:
        """Whether the endpoint is OpenAI's own (which needs a key and takes ``max_completion_tokens``)."""
        return self.base_url.startswith(OPENAI_URL)

    def _where(self) -> str:
        return "OpenAI" if self.is_openai else f"the server at {self.base_url}"

    def make_client(self) -> openai.AsyncOpenAI:
        """An ``AsyncOpenAI`` client for the endpoint; its own retries are off (the provider retries)."""
        try:
            import openai
        except ImportError as exc:
            raise self.missing_package(exc) from exc

        key = self.config.api_key
        if not key:
            if self.is_openai:
                raise ModelAuthError(
                    "No OpenAI API key: set OPENAI_API_KEY, or authenticate with the agent's openai "
                    "method (a local OpenAI-compatible server needs none: set its base URL instead)",
                    provider=self.spec.name,
                )
            key = "no-key"  # a local server ignores it, and the client insists on one
        headers = self.config.options.get("headers")
        return openai.AsyncOpenAI(
            api_key=key,
            base_url=self.base_url,
            max_retries=0,
            timeout=float(option(self.config.options, "timeout", float, 600.0)),
            default_headers={str(k): str(v) for k, v in headers.items()}
            if isinstance(headers, dict)
            else None,
        )

    # -- the catalogue ----------------------------------------------------------------------------

    async def models(self) -> list[ModelInfo]:
        """The declared models, then the endpoint's chat models, with what each accepts."""
        declared = [replace(m, provider=self.spec.name) for m in self.config.models]
        if not option(self.config.options, "discover", bool, True):
            return declared
        client = self.client()
        import openai

        try:
            listed = [m.id async for m in client.models.list()]
        except openai.APIError as exc:
            raise self.error(exc) from exc
        have = {m.id for m in declared}
        found = []
        for model_id in sorted(set(listed) - have):
            if _NOT_CHAT.search(model_id.lower()):
                continue
            known = known_model(model_id)
            found.append(
                ModelInfo(
                    self.spec.name,
                    model_id,
                    image=known.image,
                    audio=known.audio,
                    reasoning=known.reasoning,
                    context_window=known.context_window,
                )
            )
        return [*declared, *found]

    # -- a call -----------------------------------------------------------------------------------

    def body(self, request: ModelRequest) -> dict[str, Any]:
        """The JSON body of the chat completion request for ``request`` (what is sent on the wire)."""
        body: dict[str, Any] = {
            "model": request.model,
            "messages": chat_messages(request.messages),
            "stream": True,
            "stream_options": {"include_usage": True},
        }
        if request.tools:
            body["tools"] = [
                {
                    "type": "function",
                    "function": {
                        "name": t.name,
                        "description": t.description,
                        "parameters": dict(t.parameters),
                    },
                }
                for t in request.tools
            ]
        if request.reasoning_effort is not None:
            body["reasoning_effort"] = request.reasoning_effort
        if request.max_tokens is not None:
            body["max_completion_tokens" if self.is_openai else "max_tokens"] = request.max_tokens
        return body

    async def attempt(self, request: ModelRequest) -> AsyncIterator[ModelEvent]:
        """Stream one chat completion, not retried (:meth:`stream` retries it)."""
        body = self.body(request)
        client = self.client()
        import openai

        try:
            stream = await client.chat.completions.create(**body)
        except openai.APIError as exc:
            raise self.error(exc) from exc
        calls: dict[int, _ToolCallParts] = {}
        finish: str | None = None
        refused = False
        usage: UsageEvent | None = None
        try:
            async for chunk in stream:
                usage = _usage(chunk) or usage
                for choice in chunk.choices[:1]:
                    delta = choice.delta
                    thought = _reasoning(delta)
                    if thought:
                        yield ThinkingDelta(thought)
                    if delta.content:
                        yield TextDelta(delta.content)
                    if delta.refusal:
                        refused = True
                        yield TextDelta(delta.refusal)
                    for part in delta.tool_calls or ():
                        parts = calls.setdefault(part.index, _ToolCallParts())
                        parts.id = parts.id or (part.id or "")
                        if part.function is not None:
                            parts.name = parts.name or (part.function.name or "")
                            parts.arguments.append(part.function.arguments or "")
                    finish = choice.finish_reason or finish
        except openai.APIError as exc:
            raise self.error(exc) from exc
        finally:
            await stream.close()
        if finish is None:
            raise ModelError(
                f"{self._where()} ended the answer without a finish reason (the connection was cut)",
                provider=self.spec.name,
            )
        for index in sorted(calls):
            parts = calls[index]
            if not parts.name:
                raise ModelError(f"{self._where()} sent a tool call without a name", provider=self.spec.name)
            yield ToolCallEvent(parts.id or f"call_{index}", parts.name, "".join(parts.arguments) or "{}")
        if usage is not None:
            yield usage
        reason = "refusal" if refused else _FINISH.get(finish, "end_turn")
        yield Finish("tool_use" if calls and reason == "end_turn" else reason)

    def error(self, exc: openai.APIError) -> ModelError:
        """The :class:`~acpio.agents.coder.model.ModelError` that says what ``exc`` means to the user."""
        import openai

        name, where = self.spec.name, self._where()
        if isinstance(exc, openai.APIStatusError):
            status, detail = exc.status_code, _detail(exc)
            if status in (401, 403):
                return ModelAuthError(
                    f"{where} refused the API key ({status}: {detail}): set OPENAI_API_KEY to a valid key, "
                    "or authenticate with the agent's openai method",
                    provider=name,
                    status=status,
                )
            if status == 429 and exc.code == "insufficient_quota":
                return ModelError(
                    f"{where}: the key's quota is used up (429: {detail}); check its plan and billing",
                    provider=name,
                    status=status,
                )
            if status == 429:
                wait = retry_after(exc.response.headers)
                return ModelRateLimited(
                    f"{where} is rate limiting (429: {detail}).", provider=name, retry_after=wait
                )
            if status in (400, 404, 409, 413, 422):
                return ModelBadRequest(
                    f"{where} refused the request ({status}: {detail})", provider=name, status=status
                )
            return ModelError(f"{where} failed ({status}: {detail}).", provider=name, status=status)
        if isinstance(exc, openai.APITimeoutError):
            return ModelError(f"{where} did not answer in time", provider=name)
        if isinstance(exc, openai.APIConnectionError):
            cause = exc.__cause__ or exc.__context__
            return ModelError(
                f"cannot reach {self.base_url} ({cause or exc.message}): is the server running, "
                "and is the base URL right?",
                provider=name,
            )
        return ModelError(f"{where} failed during the answer: {exc.message}", provider=name)


def _detail(exc: openai.APIStatusError) -> str:
    body = exc.body
    if isinstance(body, dict):
        message = body.get("message")
        if isinstance(message, str) and message:
            return message
    if isinstance(body, str) and body:
        return body[:500]
    return exc.message


def _reasoning(delta: Any) -> str | None:
    # not in the official type: vLLM, llama.cpp and DeepSeek send reasoning_content, Ollama and OpenRouter
    # reasoning (a recent vLLM sends both, the same text)
    for name in ("reasoning_content", "reasoning"):
        value = getattr(delta, name, None)
        if isinstance(value, str):
            return value
    return None


def _usage(chunk: ChatCompletionChunk) -> UsageEvent | None:
    usage = chunk.usage
    if usage is None:
        return None
    details, prompt = usage.completion_tokens_details, usage.prompt_tokens_details
    return UsageEvent(
        input_tokens=usage.prompt_tokens,
        output_tokens=usage.completion_tokens,
        thought_tokens=details.reasoning_tokens if details is not None else None,
        cached_read_tokens=prompt.cached_tokens if prompt is not None else None,
    )


def _audio_format(mime_type: str) -> str:
    subtype = mime_type.lower().partition("/")[2].removeprefix("x-")
    return {"wave": "wav", "mpeg": "mp3", "mp3": "mp3", "wav": "wav"}.get(subtype, subtype)


def _image(part: ImagePart) -> dict[str, Any]:
    return {"type": "image_url", "image_url": {"url": f"data:{part.mime_type};base64,{part.data}"}}


def _user_content(parts: Sequence[TextPart | ImagePart | AudioPart]) -> str | list[dict[str, Any]]:
    if all(isinstance(p, TextPart) for p in parts):
        return "".join(p.text for p in parts if isinstance(p, TextPart))
    content: list[dict[str, Any]] = []
    for part in parts:
        if isinstance(part, TextPart):
            content.append({"type": "text", "text": part.text})
        elif isinstance(part, ImagePart):
            content.append(_image(part))
        else:
            content.append(
                {
                    "type": "input_audio",
                    "input_audio": {"data": part.data, "format": _audio_format(part.mime_type)},
                }
            )
    return content


def chat_messages(messages: Sequence[Message]) -> list[dict[str, Any]]:
    """The conversation as chat completion messages (see the module's docstring for what is left out)."""
    out: list[dict[str, Any]] = []
    images: list[ImagePart] = []  # of the tool results just sent, to follow them
    for message in messages:
        if images and not isinstance(message, ToolResultMessage):
            out.append(
                {
                    "role": "user",
                    "content": [
                        {"type": "text", "text": "Images from the tool results:"},
                        *map(_image, images),
                    ],
                }
            )
            images = []
        if isinstance(message, SystemMessage):
            out.append({"role": "system", "content": message.text})
        elif isinstance(message, UserMessage):
            out.append({"role": "user", "content": _user_content(message.parts)})
        elif isinstance(message, AssistantMessage):
            said: dict[str, Any] = {"role": "assistant", "content": message.text or None}
            if message.tool_calls:
                said["tool_calls"] = [
                    {"id": c.id, "type": "function", "function": {"name": c.name, "arguments": c.arguments}}
                    for c in message.tool_calls
                ]
            elif not message.text:
                continue
            out.append(said)
        else:
            text = message.text or "(no output)"
            out.append(
                {
                    "role": "tool",
                    "tool_call_id": message.tool_call_id,
                    "content": f"Error: {text}" if message.is_error else text,
                }
            )
            images.extend(p for p in message.content if isinstance(p, ImagePart))
    if images:
        out.append(
            {
                "role": "user",
                "content": [{"type": "text", "text": "Images from the tool results:"}, *map(_image, images)],
            }
        )
    return out
