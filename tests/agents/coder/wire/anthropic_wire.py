"""The Anthropic Messages API on a loopback port, as the API streams it.

``POST /v1/messages`` answers scripted replies: :func:`message_stream` builds a streamed message
(``message_start``; per content block ``content_block_start``, its deltas and ``content_block_stop``;
``message_delta`` with the stop reason and the output usage; ``message_stop``; and a ``ping`` after the
first block, as the API sends one), its blocks made with :func:`thinking` (``thinking_delta`` then one
``signature_delta``), :func:`text` (``text_delta``), :func:`tool_use` (``input_json_delta`` fragments of
the input's JSON) and :func:`redacted_thinking`. :func:`error` builds an error answer shaped as the
API's (``{"type": "error", "error": {"type", "message"}, "request_id"}``, with ``retry-after`` for a 429)
and :func:`stream_error` a stream that ends with an ``error`` event (``overloaded_error`` mid-stream).
``GET /v1/models`` lists models with their capabilities (:func:`model_info`).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from ._http import Json, Recorded, ScriptedServer, Sse

MESSAGES = "POST /v1/messages"
MODELS = "GET /v1/models"


@dataclass
class Block:
    """One content block of a streamed message: what ``content_block_start`` carries, then its deltas."""

    start: dict[str, Any]
    deltas: list[dict[str, Any]]


def _pieces(value: str | Sequence[str]) -> list[str]:
    return [value] if isinstance(value, str) else list(value)


def text(pieces: str | Sequence[str]) -> Block:
    """A text block streamed as ``text_delta`` fragments."""
    return Block({"type": "text", "text": ""}, [{"type": "text_delta", "text": p} for p in _pieces(pieces)])


def thinking(pieces: str | Sequence[str], signature: str = "EqQBCgIYAhIM1gbcDa9GJwZA2b3hGgxsig") -> Block:
    """A thinking block: ``thinking_delta`` fragments, then the ``signature_delta``."""
    deltas = [{"type": "thinking_delta", "thinking": p} for p in _pieces(pieces)]
    deltas.append({"type": "signature_delta", "signature": signature})
    return Block({"type": "thinking", "thinking": "", "signature": ""}, deltas)


def redacted_thinking(data: str = "EmwKAhgBEgy3va3pzix/LafPsn4a") -> Block:
    """A redacted thinking block: whole at its start, no deltas."""
    return Block({"type": "redacted_thinking", "data": data}, [])


def tool_use(id: str, name: str, arguments: str, pieces: int = 3) -> Block:
    """A tool use block; its input (JSON text) is streamed as ``input_json_delta`` fragments."""
    size = max(1, -(-len(arguments) // max(1, pieces)))
    fragments = [arguments[i : i + size] for i in range(0, len(arguments), size)]
    deltas = [{"type": "input_json_delta", "partial_json": ""}]
    deltas += [{"type": "input_json_delta", "partial_json": f} for f in fragments]
    return Block({"type": "tool_use", "id": id, "name": name, "input": {}}, deltas)


def _event(data: dict[str, Any]) -> tuple[str, str]:
    return data["type"], json.dumps(data)


def message_stream(
    *blocks: Block,
    stop_reason: str | None = "end_turn",
    usage: tuple[int, int] = (25, 15),
    cache: tuple[int, int] = (0, 0),
    model: str = "claude-sonnet-4-6",
    delay: float = 0.0,
    hold: bool = False,
) -> Sse:
    """A streamed message made of ``blocks``; ``usage`` is ``(input_tokens, output_tokens)``.

    ``cache`` is ``(cache_creation_input_tokens, cache_read_input_tokens)``. ``stop_reason=None`` ends
    the stream after the blocks, with no ``message_delta`` nor ``message_stop`` (a stream cut short).
    """
    prompt, output = usage
    created, read = cache
    start_usage = {
        "input_tokens": prompt,
        "cache_creation_input_tokens": created,
        "cache_read_input_tokens": read,
        "output_tokens": 1,
        "service_tier": "standard",
    }
    message = {
        "id": "msg_wire01",
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": [],
        "stop_reason": None,
        "stop_sequence": None,
        "usage": start_usage,
    }
    events = [_event({"type": "message_start", "message": message})]
    for index, block in enumerate(blocks):
        events.append(_event({"type": "content_block_start", "index": index, "content_block": block.start}))
        if index == 0:
            events.append(_event({"type": "ping"}))
        for delta in block.deltas:
            events.append(_event({"type": "content_block_delta", "index": index, "delta": delta}))
        events.append(_event({"type": "content_block_stop", "index": index}))
    if stop_reason is not None:
        delta = {"stop_reason": stop_reason, "stop_sequence": None}
        end_usage = {"input_tokens": prompt, "output_tokens": output}
        end_usage |= {"cache_creation_input_tokens": created, "cache_read_input_tokens": read}
        events.append(_event({"type": "message_delta", "delta": delta, "usage": end_usage}))
        events.append(_event({"type": "message_stop"}))
    return Sse(events, delay=delay, hold=hold)


#: The API's error type and message per status.
_ERRORS: dict[int, tuple[str, str]] = {
    400: ("invalid_request_error", "messages: at least one message is required"),
    401: ("authentication_error", "invalid x-api-key"),
    403: ("permission_error", "Your API key does not have permission to use the specified resource."),
    404: ("not_found_error", "model: claude-nope"),
    413: ("request_too_large", "Request exceeds the maximum allowed number of bytes."),
    429: ("rate_limit_error", "Number of request tokens has exceeded your per-minute rate limit"),
    500: ("api_error", "Internal server error"),
    529: ("overloaded_error", "Overloaded"),
}


def error(
    status: int, message: str | None = None, *, type: str | None = None, retry_after: float | None = None
) -> Json:
    """An error answer as the API gives it; ``retry_after`` (seconds) adds the ``retry-after`` header."""
    kind, said = _ERRORS.get(status, ("api_error", "Error"))
    body = {
        "type": "error",
        "error": {"type": type or kind, "message": message or said},
        "request_id": "req_wire01",
    }
    headers = {"request-id": "req_wire01"}
    if retry_after is not None:
        headers["retry-after"] = f"{retry_after:g}"
    return Json(status, body, headers)


def stream_error(*blocks: Block, type: str = "overloaded_error", message: str = "Overloaded") -> Sse:
    """A stream that breaks off after ``blocks`` with an ``error`` event, as the API sends when overloaded."""
    events = message_stream(*blocks, stop_reason=None).events
    events.append(("error", json.dumps({"type": "error", "error": {"type": type, "message": message}})))
    return Sse(events)


def model_info(
    id: str,
    display_name: str | None = None,
    *,
    image: bool = True,
    thinking: bool = True,
    effort: bool = True,
    max_input_tokens: int | None = 200_000,
    max_tokens: int | None = 64_000,
    capabilities: bool = True,
) -> dict[str, Any]:
    """A model as ``GET /v1/models`` describes it; ``capabilities=False`` leaves the capabilities out."""
    info: dict[str, Any] = {
        "type": "model",
        "id": id,
        "display_name": display_name or id,
        "created_at": "2025-09-29T00:00:00Z",
        "lifecycle": "active",
        "max_input_tokens": max_input_tokens,
        "max_tokens": max_tokens,
    }
    if capabilities:

        def has(flag: bool) -> dict[str, bool]:
            return {"supported": flag}

        info["capabilities"] = {
            "batch": has(True),
            "citations": has(True),
            "code_execution": has(False),
            "context_management": {"supported": False},
            "effort": {"supported": effort}
            | {level: has(effort) for level in ("low", "medium", "high", "max")},
            "image_input": has(image),
            "pdf_input": has(image),
            "server_tools": {"supported": False},
            "structured_outputs": has(True),
            "thinking": {
                "supported": thinking,
                "types": {
                    "adaptive": has(thinking),
                    "between_tools": has(False),
                    "disabled": has(True),
                    "enabled": has(thinking),
                },
            },
        }
    return info


def models(infos: Iterable[dict[str, Any]]) -> Json:
    """The ``GET /v1/models`` answer: one page listing ``infos``."""
    data = list(infos)
    first = data[0]["id"] if data else None
    last = data[-1]["id"] if data else None
    return Json(200, {"data": data, "has_more": False, "first_id": first, "last_id": last})


class AnthropicWire(ScriptedServer):
    """The Messages and models endpoints; ``base_url`` is what ``AsyncAnthropic(base_url=...)`` takes."""

    def __init__(self, infos: Iterable[dict[str, Any]] | None = None) -> None:
        listed = infos if infos is not None else [model_info("claude-sonnet-4-6", "Claude Sonnet 4.6")]
        super().__init__({MESSAGES: None, MODELS: models(listed)})

    @property
    def base_url(self) -> str:
        """``http://127.0.0.1:PORT`` (the client adds ``/v1/messages``)."""
        return self.base

    def messages(self, *replies: Json | Sse) -> None:
        """Queue replies for the next Messages requests, in order."""
        self.reply(MESSAGES, *replies)

    @property
    def sent(self) -> list[Recorded]:
        """The Messages requests got, in order (``.body`` is the JSON the client sent)."""
        return self.got(MESSAGES)
