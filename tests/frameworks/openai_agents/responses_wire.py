"""OpenAI's Responses API on a loopback port, streamed as the API streams it (the Agents SDK's default).

``POST /v1/responses`` answers scripted replies: :func:`response_stream` builds one streamed response,
as named server-sent events (``event: response.output_text.delta`` then ``data: {"type": ...,
"sequence_number": ...}``): ``response.created`` and ``response.in_progress``, then per output item
``response.output_item.added``, its deltas (reasoning summary text, output text in a content part,
function call arguments) and ``response.output_item.done``, and last ``response.completed`` with
every item and the usage. Hosted tool calls (a web search...) come as whole items, as the API
reports what ran on its side.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from tests.agents.coder.wire._http import Default, Json, Recorded, ScriptedServer, Sse

RESPONSES = "POST /v1/responses"


@dataclass
class FunctionCall:
    """A function call the model makes: its arguments (JSON text) streamed in ``pieces`` fragments."""

    call_id: str
    name: str
    arguments: str
    pieces: int = 3


def _split(text: str, pieces: int) -> list[str]:
    size = max(1, -(-len(text) // max(1, pieces)))
    return [text[i : i + size] for i in range(0, len(text), size)] or [""]


def _pieces(value: str | Sequence[str]) -> list[str]:
    return [value] if isinstance(value, str) else list(value)


class _Events:
    def __init__(self) -> None:
        self.events: list[tuple[str | None, str]] = []

    def add(self, kind: str, **fields: Any) -> None:
        body = {"type": kind, "sequence_number": len(self.events), **fields}
        self.events.append((kind, json.dumps(body)))


def response_stream(
    *,
    text: str | Sequence[str] = (),
    reasoning: str | Sequence[str] = (),
    calls: Iterable[FunctionCall] = (),
    hosted: Iterable[dict[str, Any]] = (),
    usage: tuple[int, int] = (30, 9),
    model: str = "gpt-4.1",
    delay: float = 0.0,
    hold: bool = False,
    response_id: str = "resp_wire",
) -> Sse:
    """A streamed response: reasoning summary, hosted tool items, the text, then function calls, completed.

    ``text`` and ``reasoning`` are the deltas' fragments (a string is one fragment). ``usage`` is
    ``(input_tokens, output_tokens)``. With ``hold`` the stream stays open after the text, before
    ``response.completed``, until the client goes away (a call being cancelled).
    """
    out = _Events()
    head = {
        "id": response_id,
        "object": "response",
        "created_at": 1_764_000_000,
        "model": model,
        "parallel_tool_calls": True,
        "tool_choice": "auto",
        "tools": [],
        "output": [],
        "status": "in_progress",
        "error": None,
        "incomplete_details": None,
        "instructions": None,
        "metadata": {},
        "temperature": 1.0,
        "top_p": 1.0,
        "usage": None,
    }
    out.add("response.created", response=head)
    out.add("response.in_progress", response=head)
    items: list[dict[str, Any]] = []
    if reasoning:
        item_id, index, whole = "rs_wire", len(items), "".join(_pieces(reasoning))
        out.add(
            "response.output_item.added",
            output_index=index,
            item={"id": item_id, "type": "reasoning", "summary": []},
        )
        part = {"type": "summary_text", "text": ""}
        place = {"item_id": item_id, "output_index": index, "summary_index": 0}
        out.add("response.reasoning_summary_part.added", **place, part=part)
        for piece in _pieces(reasoning):
            out.add("response.reasoning_summary_text.delta", **place, delta=piece)
        out.add("response.reasoning_summary_text.done", **place, text=whole)
        out.add("response.reasoning_summary_part.done", **place, part={"type": "summary_text", "text": whole})
        item = {"id": item_id, "type": "reasoning", "summary": [{"type": "summary_text", "text": whole}]}
        out.add("response.output_item.done", output_index=index, item=item)
        items.append(item)
    for hosted_item in hosted:
        index = len(items)
        out.add(
            "response.output_item.added", output_index=index, item={**hosted_item, "status": "in_progress"}
        )
        out.add("response.output_item.done", output_index=index, item=hosted_item)
        items.append(hosted_item)
    if text:
        item_id, index, whole = "msg_wire", len(items), "".join(_pieces(text))
        started = {
            "id": item_id,
            "type": "message",
            "status": "in_progress",
            "role": "assistant",
            "content": [],
        }
        out.add("response.output_item.added", output_index=index, item=started)
        place = {"item_id": item_id, "output_index": index, "content_index": 0}
        out.add(
            "response.content_part.added",
            **place,
            part={"type": "output_text", "text": "", "annotations": []},
        )
        for piece in _pieces(text):
            out.add("response.output_text.delta", **place, delta=piece, logprobs=[])
        out.add("response.output_text.done", **place, text=whole, logprobs=[])
        done_part = {"type": "output_text", "text": whole, "annotations": [], "logprobs": []}
        out.add("response.content_part.done", **place, part=done_part)
        item = {**started, "status": "completed", "content": [done_part]}
        out.add("response.output_item.done", output_index=index, item=item)
        items.append(item)
    for n, call in enumerate(calls):
        item_id, index = f"fc_wire_{n}", len(items)
        started = {
            "id": item_id,
            "type": "function_call",
            "status": "in_progress",
            "arguments": "",
            "call_id": call.call_id,
            "name": call.name,
        }
        out.add("response.output_item.added", output_index=index, item=started)
        for piece in _split(call.arguments, call.pieces):
            out.add(
                "response.function_call_arguments.delta", item_id=item_id, output_index=index, delta=piece
            )
        out.add(
            "response.function_call_arguments.done",
            item_id=item_id,
            output_index=index,
            arguments=call.arguments,
        )
        item = {**started, "status": "completed", "arguments": call.arguments}
        out.add("response.output_item.done", output_index=index, item=item)
        items.append(item)
    held = len(out.events)
    tokens_in, tokens_out = usage
    counts = {
        "input_tokens": tokens_in,
        "input_tokens_details": {"cached_tokens": 0},
        "output_tokens": tokens_out,
        "output_tokens_details": {"reasoning_tokens": 0},
        "total_tokens": tokens_in + tokens_out,
    }
    out.add("response.completed", response={**head, "status": "completed", "output": items, "usage": counts})
    return Sse(out.events[:held] if hold else out.events, delay=delay, hold=hold)


class ResponsesWire(ScriptedServer):
    """The Responses endpoint; ``base_url`` is what ``AsyncOpenAI(base_url=...)`` takes.

    Requests are answered the replies :meth:`respond` queued, then ``default`` (a reply, or a
    function of the request that makes one).
    """

    def __init__(self, default: Default | None = None) -> None:
        super().__init__({RESPONSES: default})

    @property
    def base_url(self) -> str:
        """``http://127.0.0.1:PORT/v1``."""
        return f"{self.base}/v1"

    def respond(self, *replies: Json | Sse) -> None:
        """Queue replies for the next ``POST /v1/responses`` requests, in order."""
        self.reply(RESPONSES, *replies)

    @property
    def requests_made(self) -> list[Recorded]:
        """The ``POST /v1/responses`` requests got, in order (``.body`` is the JSON the client sent)."""
        return self.got(RESPONSES)
