"""The OpenAI chat completions API on a loopback port, as OpenAI and the compatible servers speak it.

``POST /v1/chat/completions`` answers scripted replies: :func:`chat_stream` builds a streamed completion
(``chat.completion.chunk`` objects as ``data:`` events, then ``data: [DONE]``) with ``reasoning_content``
deltas as vLLM, llama.cpp and DeepSeek send thinking, text deltas, tool-call deltas (the first with the
index, id and function name, then fragments of the arguments), a finish reason and, when the request
asked for it with ``stream_options.include_usage``, the usage chunk with no choices. :func:`error` builds
an error answer shaped as the API's (``{"error": {"message", "type", "param", "code"}}``), with
``retry-after`` for a 429. ``GET /v1/models`` lists the models given to the server.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from ._http import Json, Recorded, ScriptedServer, Sse

CHAT = "POST /v1/chat/completions"
MODELS = "GET /v1/models"


@dataclass
class ToolCall:
    """A tool call the model makes: its arguments (JSON text) are streamed in ``pieces`` fragments."""

    id: str
    name: str
    arguments: str
    pieces: int = 3


def _split(text: str, pieces: int) -> list[str]:
    size = max(1, -(-len(text) // max(1, pieces)))
    return [text[i : i + size] for i in range(0, len(text), size)] or [""]


def _pieces(value: str | Sequence[str]) -> list[str]:
    return [value] if isinstance(value, str) else list(value)


def chat_stream(
    *,
    text: str | Sequence[str] = (),
    reasoning: str | Sequence[str] = (),
    tool_calls: Iterable[ToolCall] = (),
    refusal: str | None = None,
    finish: str | None = "stop",
    usage: tuple[int, int] | None = (12, 7),
    reasoning_tokens: int | None = None,
    reasoning_field: str = "reasoning_content",
    model: str = "gpt-4o",
    delay: float = 0.0,
    hold: bool = False,
) -> Sse:
    """A streamed chat completion: thinking, then text, then tool calls, then the finish and the usage.

    ``text`` and ``reasoning`` are the deltas' fragments (a string is one fragment). ``finish=None``
    leaves the finish chunk out (a stream cut short). ``usage`` is ``(prompt_tokens, completion_tokens)``
    or ``None`` for a server that never sends usage.
    """
    made = 1_700_000_000
    base: dict[str, Any] = {"id": "chatcmpl-wire", "object": "chat.completion.chunk", "created": made}
    base |= {"model": model, "system_fingerprint": "fp_wire"}

    def chunk(delta: dict[str, Any], finish_reason: str | None = None) -> tuple[None, str]:
        choice = {"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish_reason}
        return None, json.dumps({**base, "choices": [choice], "usage": None})

    events = [chunk({"role": "assistant", "content": ""})]
    events += [chunk({"content": None, reasoning_field: piece}) for piece in _pieces(reasoning)]
    events += [chunk({"content": piece}) for piece in _pieces(text)]
    if refusal is not None:
        events.append(chunk({"content": None, "refusal": refusal}))
    for index, call in enumerate(tool_calls):
        head = {
            "index": index,
            "id": call.id,
            "type": "function",
            "function": {"name": call.name, "arguments": ""},
        }
        events.append(chunk({"tool_calls": [head]}))
        for piece in _split(call.arguments, call.pieces):
            events.append(chunk({"tool_calls": [{"index": index, "function": {"arguments": piece}}]}))
    if finish is not None:
        events.append(chunk({}, finish))
    if usage is not None:
        prompt, completion = usage
        counts: dict[str, Any] = {
            "prompt_tokens": prompt,
            "completion_tokens": completion,
            "total_tokens": prompt + completion,
            "prompt_tokens_details": {"cached_tokens": 0, "audio_tokens": 0},
            "completion_tokens_details": {"reasoning_tokens": reasoning_tokens or 0, "audio_tokens": 0},
        }
        events.append((None, json.dumps({**base, "choices": [], "usage": counts})))
    events.append((None, "[DONE]"))
    return Sse(events, delay=delay, hold=hold)


#: The API's own message, error type and code for the statuses a client meets most.
_ERRORS: dict[int, tuple[str, str, str | None]] = {
    400: ("Invalid request.", "invalid_request_error", None),
    401: (
        "Incorrect API key provided: sk-wrong. You can find your API key at https://platform.openai.com/account/api-keys.",
        "invalid_request_error",
        "invalid_api_key",
    ),
    404: (
        "The model `gpt-nope` does not exist or you do not have access to it.",
        "invalid_request_error",
        "model_not_found",
    ),
    429: ("Rate limit reached for requests. Please try again in 1s.", "requests", "rate_limit_exceeded"),
    500: ("The server had an error while processing your request. Sorry about that!", "server_error", None),
    503: ("The engine is currently overloaded, please try again later.", "server_error", None),
}


def error(
    status: int,
    message: str | None = None,
    *,
    type: str | None = None,
    code: str | None = None,
    param: str | None = None,
    retry_after: float | None = None,
) -> Json:
    """An error answer as the API gives it; ``retry_after`` (seconds) adds the ``retry-after`` header."""
    said, kind, said_code = _ERRORS.get(
        status, ("Error.", "server_error" if status >= 500 else "invalid_request_error", None)
    )
    body = {
        "error": {"message": message or said, "type": type or kind, "param": param, "code": code or said_code}
    }
    headers = {"x-request-id": "req_wire"}
    if retry_after is not None:
        headers["retry-after"] = f"{retry_after:g}"
    return Json(status, body, headers)


def stream_error(message: str, *, text: str | Sequence[str] = (), type: str = "server_error") -> Sse:
    """A stream that fails after some text: an ``error`` object as a ``data:`` event, as the API sends one."""
    events = chat_stream(text=text, finish=None, usage=None).events[:-1]
    events.append(
        (None, json.dumps({"error": {"message": message, "type": type, "param": None, "code": None}}))
    )
    return Sse(events)


def models(ids: Iterable[str], *, owned_by: str = "openai") -> Json:
    """The ``GET /v1/models`` answer listing ``ids``."""
    data = [{"id": i, "object": "model", "created": 1_700_000_000, "owned_by": owned_by} for i in ids]
    return Json(200, {"object": "list", "data": data})


class OpenAIWire(ScriptedServer):
    """The chat completions and models endpoints; ``base_url`` is what ``AsyncOpenAI(base_url=...)`` takes."""

    def __init__(self, model_ids: Iterable[str] = ("gpt-4o", "gpt-4o-mini")) -> None:
        super().__init__({CHAT: None, MODELS: models(model_ids)})

    @property
    def base_url(self) -> str:
        """``http://127.0.0.1:PORT/v1``."""
        return f"{self.base}/v1"

    def chat(self, *replies: Json | Sse) -> None:
        """Queue replies for the next chat completion requests, in order."""
        self.reply(CHAT, *replies)

    @property
    def chats(self) -> list[Recorded]:
        """The chat completion requests got, in order (``.body`` is the JSON the client sent)."""
        return self.got(CHAT)
