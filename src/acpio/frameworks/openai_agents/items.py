"""The Agents SDK's run items as ACP sees them: a tool call's name and arguments, and the history as input.

A tool call the model makes is a function call (``name``, JSON ``arguments``) or an item of a hosted or
local tool (``web_search_call``, ``shell_call``, ``apply_patch_call``...): :func:`describe` gives each a
tool name and a mapping of arguments for :mod:`acpio.app.projections`. The conversation the model sees
is rebuilt from the session's ACP history (:func:`history_input`), so a session loaded in a new process
gives the model what it saw before.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from agents.apply_diff import apply_diff
from pydantic import BaseModel

from acpio.app import Exchange
from acpio.app.projections import Projection, ToolView
from acpio.schema import (
    AgentMessageChunk,
    ContentBlock,
    EmbeddedResource,
    ImageContent,
    TextContent,
    TextResourceContents,
    ToolCall,
    ToolCallUpdate,
)

__all__ = ["FUNCTION_META", "ApplyPatch", "describe", "history_input", "prompt_input", "runs_remotely"]

#: The ``_meta`` key of an ACP tool call that keeps the model's function call item (name, call id,
#: arguments): what :func:`history_input` gives the model again, with the call's ``rawOutput``.
FUNCTION_META = "openai-agents/function_call"

#: Tool items run by the provider, whose item already holds the result (no output item follows).
_REMOTE = {
    "web_search_call",
    "file_search_call",
    "code_interpreter_call",
    "image_generation_call",
    "mcp_call",
}
#: The tool name of each item type that is no function call (the names the projections know).
_NAMES = {
    "web_search_call": "web_search",
    "file_search_call": "file_search",
    "code_interpreter_call": "code_interpreter",
    "image_generation_call": "image_generation",
    "computer_call": "computer_use_preview",
    "local_shell_call": "local_shell",
    "shell_call": "shell",
    "apply_patch_call": "apply_patch",
    "tool_search_call": "tool_search",
}


def _as_dict(raw: Any) -> dict[str, Any]:
    if isinstance(raw, BaseModel):
        dumped: dict[str, Any] = raw.model_dump(mode="json", exclude_none=True, by_alias=True)
        return dumped
    return dict(raw) if isinstance(raw, Mapping) else {}


def describe(raw: Any) -> tuple[str, dict[str, Any]]:
    """The tool name and the arguments of a tool call item (a function call, or a hosted tool's item)."""
    item = _as_dict(raw)
    kind = str(item.get("type", ""))
    if kind in ("function_call", "mcp_call", "custom_tool_call"):
        name = str(item.get("name", kind))
        arguments = item.get("arguments", item.get("input"))
        return name, {"input": arguments} if kind == "custom_tool_call" else _parsed(arguments)
    arguments = {k: v for k, v in item.items() if k not in ("id", "type", "status", "call_id")}
    action = arguments.pop("action", None)
    if isinstance(action, dict):  # web_search, local_shell, shell, computer: the action's fields
        arguments = {**{k: v for k, v in action.items() if k != "type"}, **arguments}
    operation = arguments.pop("operation", None)
    if isinstance(operation, dict):  # apply_patch: the operation's type, path and diff
        arguments = {**operation, **arguments}
    return _NAMES.get(kind, kind or "tool"), arguments


def _parsed(arguments: Any) -> dict[str, Any]:
    import json

    if isinstance(arguments, str):
        try:
            value = json.loads(arguments or "{}")
        except ValueError:
            return {"input": arguments}
        return value if isinstance(value, dict) else {"input": value}
    return dict(arguments) if isinstance(arguments, Mapping) else {}


def runs_remotely(raw: Any) -> bool:
    """Whether the provider ran this tool call, its item holding the result (a web search...)."""
    return _as_dict(raw).get("type") in _REMOTE


class ApplyPatch(Projection):
    """The Agents SDK's ``apply_patch`` tool: a V4A diff of one file, shown as the file's diff."""

    def view(self, name: str, arguments: Mapping[str, Any], root: Path) -> ToolView:
        """``Edit PATH`` (or create, delete), the diff worked out from the file on disk."""
        operation, raw = str(arguments.get("type", "")), arguments.get("path")
        path = (root / raw).resolve() if isinstance(raw, str) and raw else None
        if path is None or not path.is_relative_to(root.resolve()):
            return ToolView(title=f"Patch {raw}" if raw else name, kind="edit")
        if operation == "delete_file":
            return ToolView(title=f"Delete {raw}", kind="delete", locations=(path,))
        old = path.read_text(encoding="utf-8") if operation == "update_file" and path.is_file() else None
        try:
            new = apply_diff(
                old or "", str(arguments.get("diff", "")), "create" if old is None else "default"
            )
        except ValueError:
            return ToolView(title=f"Edit {raw}", kind="edit", locations=(path,))
        return ToolView(title=f"Edit {raw}", kind="edit", locations=(path,), diff=(path, old, new))

    def output(self, text: str) -> str | None:
        """Nothing: the diff shows the change."""
        return None


def prompt_input(prompt: Sequence[ContentBlock]) -> dict[str, Any]:
    """The user's message of an ACP prompt: its text, images and embedded text files."""
    parts: list[dict[str, Any]] = []
    for block in prompt:
        if isinstance(block, TextContent):
            parts.append({"type": "input_text", "text": block.text})
        elif isinstance(block, ImageContent):
            parts.append({"type": "input_image", "image_url": f"data:{block.mime_type};base64,{block.data}"})
        elif isinstance(block, EmbeddedResource) and isinstance(block.resource, TextResourceContents):
            text = f"<file uri={block.resource.uri!r}>\n{block.resource.text}\n</file>"
            parts.append({"type": "input_text", "text": text})
    return {"role": "user", "content": parts}


def history_input(history: Iterable[Exchange]) -> list[dict[str, Any]]:
    """The model's input items for a session's earlier turns, from what their ACP updates kept.

    Each turn gives the user's message, the agent's text, and each function call (kept in the
    call's ``_meta``) with its output (the call's ``rawOutput``); a call that never finished is
    told to the model as interrupted. Reasoning and hosted tools' items are not given again.
    """
    items: list[dict[str, Any]] = []
    for exchange in history:
        items.append(prompt_input(exchange.prompt))
        items.extend(_turn_items(exchange))
    return items


def _turn_items(exchange: Exchange) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = []
    said: list[str] = []
    calls: dict[str, str] = {}  # ACP tool call id -> the model's call id
    answered: set[str] = set()

    def flush() -> None:
        if said:
            items.append({"role": "assistant", "content": "".join(said)})
            said.clear()

    for update in exchange.updates:
        if isinstance(update, AgentMessageChunk) and isinstance(update.content, TextContent):
            said.append(update.content.text)
        elif isinstance(update, ToolCall) and update.meta and FUNCTION_META in update.meta:
            flush()
            call = dict(update.meta[FUNCTION_META])
            calls[update.tool_call_id] = str(call["call_id"])
            items.append({"type": "function_call", **call})
        elif (
            isinstance(update, ToolCallUpdate)
            and update.tool_call_id in calls
            and update.raw_output is not None
        ):
            call_id = calls[update.tool_call_id]
            if call_id not in answered:
                answered.add(call_id)
                output = update.raw_output if isinstance(update.raw_output, str) else str(update.raw_output)
                items.append({"type": "function_call_output", "call_id": call_id, "output": output})
    flush()
    for call_id in calls.values():
        if call_id not in answered:  # the turn was cancelled while it ran
            items.append(
                {"type": "function_call_output", "call_id": call_id, "output": "Interrupted by the user."}
            )
    return items
