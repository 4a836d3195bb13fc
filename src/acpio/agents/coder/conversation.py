"""The conversation the model sees, rebuilt from the session's history of ACP updates.

The history is the one record of a session (live, or loaded from the store after a restart), so
the model's view is derived from it each turn: user prompts become user messages, thoughts, text
and tool calls (named by their ``_meta``) assistant messages, and each call's ``rawOutput`` its
result. A ``/compact`` turn's reply is a summary that replaces everything before it.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence

from acpio.agents.coder.model import (
    AssistantMessage,
    AudioPart,
    ImagePart,
    Message,
    SystemMessage,
    TextPart,
    ThinkingPart,
    ToolCall,
    ToolResultMessage,
    UserMessage,
    UserPart,
)
from acpio.agents.coder.tools import TOOL_META
from acpio.app import Exchange
from acpio.schema import (
    AgentMessageChunk,
    AgentThoughtChunk,
    AudioContent,
    ContentBlock,
    EmbeddedResource,
    ImageContent,
    ResourceLink,
    TextContent,
    TextResourceContents,
)
from acpio.schema import ToolCall as AcpToolCall
from acpio.schema import ToolCallUpdate as AcpToolCallUpdate

__all__ = ["COMPACT_COMMAND", "conversation", "user_message"]

#: The slash command whose reply replaces the conversation before it.
COMPACT_COMMAND = "/compact"


def user_message(blocks: Iterable[ContentBlock]) -> UserMessage:
    """A prompt as the model gets it: text, images, audio; embedded files and links as text."""
    parts: list[UserPart] = []
    for block in blocks:
        if isinstance(block, TextContent):
            parts.append(TextPart(block.text))
        elif isinstance(block, ImageContent):
            parts.append(ImagePart(block.data, block.mime_type))
        elif isinstance(block, AudioContent):
            parts.append(AudioPart(block.data, block.mime_type))
        elif isinstance(block, EmbeddedResource):
            resource = block.resource
            if isinstance(resource, TextResourceContents):
                parts.append(TextPart(f"\n<file uri={resource.uri!r}>\n{resource.text}\n</file>\n"))
            else:
                parts.append(TextPart(f"\n[binary resource {resource.uri}]\n"))
        elif isinstance(block, ResourceLink):
            parts.append(TextPart(f"\n[resource: {block.name} {block.uri}]\n"))
    return UserMessage(tuple(parts))


def _is_compaction(exchange: Exchange) -> bool:
    first = exchange.prompt[0] if exchange.prompt else None
    return isinstance(first, TextContent) and first.text.strip().split(" ")[0] == COMPACT_COMMAND


def conversation(system: str, history: Sequence[Exchange]) -> list[Message]:
    """The messages of the earlier turns, after the system message (a compaction summary goes in it)."""
    start = max((i for i, e in enumerate(history) if _is_compaction(e)), default=-1)
    if start >= 0 and history[start].reply:
        system += f"\n\nA summary of the conversation so far:\n{history[start].reply}"
    messages: list[Message] = [SystemMessage(system)]
    for exchange in history[start + 1 :]:
        if (
            exchange.prompt
            and isinstance(exchange.prompt[0], TextContent)
            and exchange.prompt[0].text.startswith("/")
        ):
            continue  # the other slash commands are the agent's, not the model's
        messages.append(user_message(exchange.prompt))
        messages.extend(_replies(exchange))
    return messages


def _replies(exchange: Exchange) -> list[Message]:
    found: list[Message] = []
    text: list[str] = []
    thinking: list[str] = []
    calls: list[ToolCall] = []
    results: dict[str, tuple[str, bool]] = {}

    def flush() -> None:
        if text or thinking or calls:
            thought = (ThinkingPart("".join(thinking)),) if thinking else ()
            found.append(AssistantMessage("".join(text), thought, tuple(calls)))
        for call in calls:
            output, failed = results.get(call.id, ("the call was interrupted", True))
            found.append(ToolResultMessage(call.id, call.name, (TextPart(output),), is_error=failed))
        text.clear()
        thinking.clear()
        calls.clear()

    for update in exchange.updates:
        if isinstance(update, AgentMessageChunk | AgentThoughtChunk) and isinstance(
            update.content, TextContent
        ):
            if calls:
                flush()
            (text if isinstance(update, AgentMessageChunk) else thinking).append(update.content.text)
        elif isinstance(update, AcpToolCall) and update.meta and isinstance(update.meta.get(TOOL_META), str):
            arguments = update.raw_input if update.raw_input is not None else {}
            calls.append(ToolCall(update.tool_call_id, update.meta[TOOL_META], json.dumps(arguments)))
        elif (
            isinstance(update, AcpToolCallUpdate)
            and update.status in ("completed", "failed")
            and update.raw_output is not None
        ):
            raw = update.raw_output
            output = raw if isinstance(raw, str) else json.dumps(raw)
            results[update.tool_call_id] = (output, update.status == "failed")
    flush()
    return found
