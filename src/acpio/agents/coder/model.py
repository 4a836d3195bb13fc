"""The model provider interface of the reference agent: what a language model provider implements.

A provider is one module under :mod:`acpio.agents.coder.providers` with a :class:`ModelProvider`
subclass; :mod:`acpio.agents.coder.providers` names the modules, so adding a provider is adding a
module and one line there. This module imports nothing of ACP: a provider knows the model's wire
format, the agent translates to and from ACP.

The pieces:

* :class:`ProviderSpec`: the provider's name, title and credential (which environment variable
  holds its key, whether one is needed).
* :class:`ProviderConfig`: what the agent hands a provider when it builds one (key, base URL, the
  models a settings file declares).
* :class:`ModelInfo`: one model of the catalogue, with what it accepts (image, audio), whether it
  reasons, and its context window.
* The conversation: :class:`SystemMessage`, :class:`UserMessage`, :class:`AssistantMessage`,
  :class:`ToolResultMessage`, made of :class:`TextPart`, :class:`ImagePart`, :class:`AudioPart`,
  :class:`ThinkingPart` and :class:`ToolCall`.
* :class:`ToolSpec`: a tool the model may call (a name, a description, a JSON schema).
* :class:`ModelRequest`: one streaming call.
* The events a stream yields: :class:`TextDelta`, :class:`ThinkingDelta`, :class:`ToolCallEvent`,
  :class:`UsageEvent`, and :class:`Finish` last.
* The errors: :class:`ModelError` and its subclasses :class:`ModelAuthError`,
  :class:`ModelRateLimited`, :class:`ModelBadRequest`.

Cancellation is asyncio cancellation: the agent cancels the task that iterates
:meth:`ModelProvider.stream` (or closes the async iterator with ``aclose()``). A provider holds its
HTTP response in ``async with`` (or ``try``/``finally``) inside the generator, so closing it ends the
request at once; it never catches :class:`asyncio.CancelledError`.
"""

from __future__ import annotations

import abc
from collections.abc import AsyncIterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar, Literal, TypeAlias

__all__ = [
    "REASONING_EFFORTS",
    "AssistantMessage",
    "AudioPart",
    "Finish",
    "FinishReason",
    "ImagePart",
    "Message",
    "ModelAuthError",
    "ModelBadRequest",
    "ModelError",
    "ModelEvent",
    "ModelInfo",
    "ModelProvider",
    "ModelRateLimited",
    "ModelRequest",
    "ProviderConfig",
    "ProviderSpec",
    "ReasoningEffort",
    "SystemMessage",
    "TextDelta",
    "TextPart",
    "ThinkingDelta",
    "ThinkingPart",
    "ToolCall",
    "ToolCallEvent",
    "ToolResultMessage",
    "ToolSpec",
    "UsageEvent",
    "UserMessage",
    "UserPart",
]

ReasoningEffort: TypeAlias = Literal["low", "medium", "high"]
"""How hard a reasoning model thinks; ``None`` where one is taken means the model's default."""

REASONING_EFFORTS: tuple[ReasoningEffort, ...] = ("low", "medium", "high")
"""The reasoning efforts, in increasing order."""

FinishReason: TypeAlias = Literal["end_turn", "max_tokens", "refusal", "tool_use"]
"""Why a model stopped: done, out of output tokens, refused, or waiting for the results of its tool calls."""


# -- the provider and its catalogue ------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ProviderSpec:
    """What the agent knows of a provider before building it.

    ``key_env`` is the environment variable that holds the API key (``"OPENAI_API_KEY"``), ``None``
    for a provider that has none; ``key_required`` is false when the provider also works without
    one (a local OpenAI-compatible server). ``base_url_env`` names the variable that points the
    provider at another endpoint (``"OPENAI_BASE_URL"``). The agent uses a provider that has its
    key, or that is pointed at an endpoint (that variable, or ``base_url`` in the settings); it
    offers ``authenticate`` for each provider with a ``key_env``.
    """

    name: str
    """The provider's short name, the prefix of its model ids (``"openai"`` in ``"openai/gpt-4o"``)."""
    title: str
    """Its name for people (``"OpenAI"``)."""
    key_env: str | None = None
    key_required: bool = True
    base_url_env: str | None = None
    extra: str | None = None
    """The acpio extra that installs its client package (``"openai"``: ``pip install 'acpio[openai]'``)."""


@dataclass(frozen=True, slots=True)
class ModelInfo:
    """One model of a provider's catalogue and what it can do.

    ``id`` is the provider's own id (``"gpt-4o"``); the agent shows ``provider/id``. ``image`` and
    ``audio`` say which prompt content the model accepts (the agent refuses the rest with
    ``-32602``); ``reasoning`` that it thinks and takes a :data:`ReasoningEffort`;
    ``context_window`` its size in tokens (``usage_update``'s ``size``), ``None`` when unknown.
    """

    provider: str
    id: str
    name: str = ""
    image: bool = False
    audio: bool = False
    reasoning: bool = False
    context_window: int | None = None
    max_output_tokens: int | None = None
    description: str | None = None

    @property
    def qualified_id(self) -> str:
        """``provider/id``: the id the agent's model option and ``--model`` use."""
        return f"{self.provider}/{self.id}"

    @property
    def label(self) -> str:
        """The name to show: ``name`` when set, else the id."""
        return self.name or self.id


@dataclass(frozen=True, slots=True)
class ProviderConfig:
    """What a provider is built with.

    ``api_key`` comes from the environment variable of its spec or from the credential the user
    gave ``authenticate`` (never from the session store); ``base_url`` from the settings file or the
    spec's ``base_url_env``. ``models`` are the models a settings file declares for this provider
    (a local server's models, or capabilities the provider cannot discover); ``options`` the rest
    of the provider's settings table, as written.
    """

    api_key: str | None = None
    base_url: str | None = None
    models: tuple[ModelInfo, ...] = ()
    options: Mapping[str, Any] = field(default_factory=dict[str, Any])


# -- the conversation --------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class TextPart:
    """Text in a message."""

    text: str


@dataclass(frozen=True, slots=True)
class ImagePart:
    """An image in a user or tool message: base64 ``data`` of type ``mime_type`` (``"image/png"``)."""

    data: str
    mime_type: str


@dataclass(frozen=True, slots=True)
class AudioPart:
    """Audio in a user message: base64 ``data`` of type ``mime_type`` (``"audio/wav"``)."""

    data: str
    mime_type: str


@dataclass(frozen=True, slots=True)
class ThinkingPart:
    """The model's reasoning in an assistant message, given back to it on the next call.

    ``signature`` is the provider's opaque proof of the text (Anthropic's thinking signature),
    ``None`` when the provider has none; a provider drops thinking it cannot send back.
    """

    text: str
    signature: str | None = None


@dataclass(frozen=True, slots=True)
class ToolCall:
    """A tool call the model made: its ``id``, the tool's ``name`` and the ``arguments`` as JSON text."""

    id: str
    name: str
    arguments: str


UserPart: TypeAlias = TextPart | ImagePart | AudioPart
"""What a user message (or a tool result) is made of."""


@dataclass(frozen=True, slots=True)
class SystemMessage:
    """The instructions: the agent sends one, first."""

    text: str
    role: ClassVar[str] = "system"


@dataclass(frozen=True, slots=True)
class UserMessage:
    """What the user said: text, images, audio (embedded files arrive as text)."""

    parts: tuple[UserPart, ...]
    role: ClassVar[str] = "user"

    @property
    def text(self) -> str:
        """The text parts, joined."""
        return "".join(p.text for p in self.parts if isinstance(p, TextPart))


@dataclass(frozen=True, slots=True)
class AssistantMessage:
    """What the model answered: its thinking, its text, and the tool calls it made, in that order."""

    text: str = ""
    thinking: tuple[ThinkingPart, ...] = ()
    tool_calls: tuple[ToolCall, ...] = ()
    role: ClassVar[str] = "assistant"


@dataclass(frozen=True, slots=True)
class ToolResultMessage:
    """The result of one tool call, for the model: ``content`` (text, maybe images) and whether it failed."""

    tool_call_id: str
    name: str
    content: tuple[TextPart | ImagePart, ...]
    is_error: bool = False
    role: ClassVar[str] = "tool"

    @property
    def text(self) -> str:
        """The text parts, joined."""
        return "".join(p.text for p in self.content if isinstance(p, TextPart))


Message: TypeAlias = SystemMessage | UserMessage | AssistantMessage | ToolResultMessage
"""One message of the conversation."""


@dataclass(frozen=True, slots=True)
class ToolSpec:
    """A tool the model may call: ``parameters`` is the JSON schema of its arguments (an object schema)."""

    name: str
    description: str
    parameters: Mapping[str, Any]


@dataclass(frozen=True, slots=True)
class ModelRequest:
    """One streaming call: the model (its id within the provider), the conversation and the tools.

    ``messages`` starts with the :class:`SystemMessage` when there is one. ``reasoning_effort`` is
    given only to models whose :attr:`ModelInfo.reasoning` is true; ``max_tokens`` bounds the
    output (the provider's default when ``None``).
    """

    model: str
    messages: Sequence[Message]
    tools: Sequence[ToolSpec] = ()
    reasoning_effort: ReasoningEffort | None = None
    max_tokens: int | None = None


# -- the stream --------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class TextDelta:
    """A piece of the answer's text."""

    text: str


@dataclass(frozen=True, slots=True)
class ThinkingDelta:
    """A piece of the model's reasoning; ``signature`` (Anthropic) arrives once, with any text."""

    text: str
    signature: str | None = None


@dataclass(frozen=True, slots=True)
class ToolCallEvent:
    """A whole tool call: a provider yields it once its arguments are complete (JSON text)."""

    id: str
    name: str
    arguments: str


@dataclass(frozen=True, slots=True)
class UsageEvent:
    """Tokens of this call: ``input_tokens`` is the whole prompt (context in use), cached ones included."""

    input_tokens: int
    output_tokens: int
    thought_tokens: int | None = None
    cached_read_tokens: int | None = None
    cached_write_tokens: int | None = None


@dataclass(frozen=True, slots=True)
class Finish:
    """The last event of every stream: why the model stopped."""

    reason: FinishReason


ModelEvent: TypeAlias = TextDelta | ThinkingDelta | ToolCallEvent | UsageEvent | Finish
"""What :meth:`ModelProvider.stream` yields."""


# -- errors ------------------------------------------------------------------------------------


class ModelError(Exception):
    """A provider call failed; the message says what happened and, when it can, what to do.

    ``provider`` is the provider's name; ``status`` the HTTP status when there was one.
    """

    def __init__(self, message: str, *, provider: str = "", status: int | None = None) -> None:
        super().__init__(message)
        self.provider = provider
        self.status = status


class ModelAuthError(ModelError):
    """The key was refused or is missing (HTTP 401/403): the user must set or fix it."""


class ModelRateLimited(ModelError):
    """Too many requests or tokens (HTTP 429); ``retry_after`` in seconds when the server said."""

    def __init__(
        self, message: str, *, provider: str = "", status: int | None = 429, retry_after: float | None = None
    ) -> None:
        super().__init__(message, provider=provider, status=status)
        self.retry_after = retry_after


class ModelBadRequest(ModelError):
    """The server refused the request itself (HTTP 400/404/422: unknown model, prompt too long...)."""


# -- the provider ------------------------------------------------------------------------------


class ModelProvider(abc.ABC):
    """A language model provider: its catalogue and a streaming call.

    A subclass sets :attr:`spec` and is built with a :class:`ProviderConfig`::

        class MyProvider(ModelProvider):
            spec = ProviderSpec("mine", "Mine", key_env="MINE_API_KEY")

            async def models(self) -> list[ModelInfo]: ...
            def stream(self, request: ModelRequest) -> AsyncIterator[ModelEvent]: ...

    ``stream`` is an async generator: deltas as they come, a :class:`ToolCallEvent` per complete
    call, :class:`UsageEvent` when the provider reports it, and :class:`Finish` last. It raises
    :class:`ModelError` (or a subclass) for what the provider refused or could not do; any other
    exception is a bug.
    """

    spec: ClassVar[ProviderSpec]

    def __init__(self, config: ProviderConfig) -> None:
        self.config = config

    @abc.abstractmethod
    async def models(self) -> list[ModelInfo]:
        """The models available with this configuration (the declared ones first, then discovered ones).

        Raises :class:`ModelError` when discovery fails; the agent then offers the declared models.
        """

    @abc.abstractmethod
    def stream(self, request: ModelRequest) -> AsyncIterator[ModelEvent]:
        """Call the model and yield its events; closing the iterator ends the call."""

    def help_text(self) -> str:
        """What a user should know to prompt this provider's models (markdown), for ``/help``; none here."""
        return ""

    async def aclose(self) -> None:  # noqa: B027 (a default that does nothing, for providers without clients)
        """Release the provider's HTTP client; the default does nothing."""
