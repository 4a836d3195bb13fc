"""What a LangGraph run streams, as a :class:`~acpio.app.Turn` shows it.

:class:`GraphStream` takes the ``(namespace, mode, chunk)`` triples of ``graph.astream(...,
stream_mode=["messages", "updates", "custom"], subgraphs=True)`` one at a time: the model's text
and reasoning become message and thought chunks, its tool-call chunks are put together into tool
calls (shown by the :class:`~acpio.app.projections.Projections` registry: kind, title, locations,
diff), tool messages end them, a state's ``todos`` becomes the plan, and what a node writes with
the custom stream writer (text) becomes a thought. Subgraphs stream the same way as the root.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from langchain_core.messages import AIMessage, AIMessageChunk, BaseMessage, ToolMessage

from acpio.app import Turn
from acpio.app.projections import Projections
from acpio.app.update_templates import given
from acpio.schema import Content, Diff, PlanEntry, TextContent, ToolCall, ToolCallLocation, ToolCallUpdate

__all__ = ["GraphStream", "ToolCallState"]

_STATUSES = ("pending", "in_progress", "completed")
_PRIORITIES = ("high", "medium", "low")


@dataclass
class ToolCallState:
    """One tool call of the run, as far as it has been streamed."""

    #: The model's id for the call.
    id: str
    #: The tool's name.
    name: str
    #: Its ACP ``toolCallId``: the model's id, made unique in the session when a model repeats one.
    acp_id: str = ""
    #: The arguments' JSON text as streamed so far.
    args_text: str = ""
    #: The complete arguments, once known.
    args: dict[str, Any] | None = None
    #: Whether its result came (the call is over).
    done: bool = False


@dataclass
class _MessageCalls:
    """The tool calls of one streamed message, by their chunks' index."""

    by_index: dict[int, ToolCallState] = field(default_factory=dict[int, ToolCallState])


class GraphStream:
    """The stream of one run of a graph, sent to the client through ``turn``."""

    def __init__(self, turn: Turn, projections: Projections, used_ids: set[str] | None = None) -> None:
        self.turn = turn
        self.projections = projections
        #: The ACP tool call ids the session has used (ACP wants them unique in a session).
        self.used_ids = used_ids if used_ids is not None else set()
        #: The run's tool calls by id, in the order they began.
        self.calls: dict[str, ToolCallState] = {}
        self._streamed: dict[str, _MessageCalls] = {}
        self._plan: list[PlanEntry] | None = None

    async def feed(self, namespace: Sequence[str], mode: str, chunk: Any) -> None:
        """Show one item of the graph's stream (``namespace`` is the subgraph's path, empty for the root)."""
        if mode == "messages":
            message, _metadata = chunk
            await self._message(message)
        elif mode == "updates" and isinstance(chunk, Mapping):
            for node, update in chunk.items():
                if node != "__interrupt__":
                    await self._update(update)
        elif mode == "custom" and isinstance(chunk, str):
            await self.turn.think(chunk)

    # --- messages ---------------------------------------------------------------------------------

    async def _message(self, message: BaseMessage) -> None:
        if isinstance(message, AIMessageChunk):
            await self._text(message)
            for piece in message.tool_call_chunks:
                await self._call_chunk(message.id or "", piece)
            if message.chunk_position == "last":  # the streamed arguments are whole: show them now
                await self._streamed_arguments(message.id or "")
        elif isinstance(message, AIMessage):  # a whole message a node returned without streaming it
            await self._text(message)
            await self._complete(message)
        elif isinstance(message, ToolMessage):
            await self._result(message)

    async def _text(self, message: AIMessage) -> None:
        for kind, text in _pieces(message):
            if kind == "think":
                await self.turn.think(text)
            else:
                await self.turn.say(text)

    async def _call_chunk(self, message_id: str, piece: Mapping[str, Any]) -> None:
        calls = self._streamed.setdefault(message_id, _MessageCalls()).by_index
        index = piece.get("index")
        key = index if isinstance(index, int) else len(calls)
        state = calls.get(key)
        if state is None:
            call_id, name = piece.get("id"), piece.get("name")
            if not call_id or not name:
                return  # a chunk before the call's id and name: nothing to show yet
            state = calls[key] = ToolCallState(call_id, name)
            await self._begin(state)
        state.args_text += piece.get("args") or ""

    async def _streamed_arguments(self, message_id: str) -> None:
        for state in self._streamed.pop(message_id, _MessageCalls()).by_index.values():
            try:
                args = json.loads(state.args_text or "{}")
            except ValueError:
                continue  # not JSON after all: the node's whole message will tell
            if state.args is None and isinstance(args, dict):
                state.args = args
                await self._show_arguments(state)

    async def _complete(self, message: AIMessage) -> None:
        """The message's tool calls have their whole arguments: show what each will do."""
        for call in message.tool_calls:
            call_id = call.get("id") or ""
            state = self.calls.get(call_id)
            if state is None:
                state = ToolCallState(call_id, call["name"])
                await self._begin(state)
            if state.args is None:
                state.args = dict(call["args"])
                await self._show_arguments(state)

    async def _begin(self, state: ToolCallState) -> None:
        self.calls[state.id] = state
        state.acp_id = state.id
        while state.acp_id in self.used_ids:
            state.acp_id = f"{state.id}_{uuid.uuid4().hex[:8]}"
        self.used_ids.add(state.acp_id)
        view = self.projections.view(state.name, {}, self.turn.cwd)
        await self.turn.update(
            ToolCall(tool_call_id=state.acp_id, title=view.title, kind=view.kind, status="pending")
        )

    async def _show_arguments(self, state: ToolCallState) -> None:
        assert state.args is not None
        view = self.projections.view(state.name, state.args, self.turn.cwd)
        content: list[Diff] = []
        if view.diff is not None:
            path, old, new = view.diff
            content.append(Diff(path=str(path), old_text=old, new_text=new))
        extra = given(
            locations=[ToolCallLocation(path=str(p)) for p in view.locations] or None, content=content or None
        )
        update = ToolCallUpdate(
            tool_call_id=state.acp_id,
            title=view.title,
            kind=view.kind,
            status="in_progress",
            raw_input=state.args,
            **extra,
        )
        await self.turn.update(update)

    async def _result(self, message: ToolMessage) -> None:
        state = self.calls.get(message.tool_call_id)
        if state is None:
            state = ToolCallState(message.tool_call_id, message.name or "tool")
            await self._begin(state)
        state.done = True
        output = message.text if isinstance(message.content, list) else str(message.content)
        shown = self.projections.get(state.name).output(output)
        failed = message.status == "error"
        content = [Content(content=TextContent(text=shown))] if shown else None
        status = "failed" if failed else "completed"
        extra = given(content=content)
        await self.turn.update(
            ToolCallUpdate(tool_call_id=state.acp_id, status=status, raw_output=output, **extra)
        )

    # --- updates ----------------------------------------------------------------------------------

    async def _update(self, update: Any) -> None:
        for value in update if isinstance(update, list | tuple) else [update]:
            if not isinstance(value, Mapping):
                continue
            messages = value.get("messages")
            for message in messages if isinstance(messages, list) else [messages]:
                if isinstance(message, AIMessage) and message.tool_calls:
                    await self._complete(message)
            todos = value.get("todos")
            if isinstance(todos, list):
                await self._todos(todos)

    async def _todos(self, todos: list[Any]) -> None:
        entries = [entry for entry in map(_plan_entry, todos) if entry is not None]
        if entries != self._plan:
            self._plan = entries
            await self.turn.plan(entries)

    async def call_for(self, name: str, args: Mapping[str, Any]) -> ToolCallState:
        """The run's call of ``name`` with ``args`` not yet ended, or a new one shown now (an approval's)."""
        for state in self.calls.values():
            if not state.done and state.name == name and state.args == dict(args):
                return state
        state = ToolCallState(f"call_{uuid.uuid4().hex[:16]}", name, args=dict(args))
        await self._begin(state)
        await self._show_arguments(state)
        return state

    def open_calls(self) -> list[ToolCallState]:
        """The calls begun and not ended (the run stopped before their result)."""
        return [state for state in self.calls.values() if not state.done]


def _plan_entry(todo: Any) -> PlanEntry | None:
    """A todo (``{"content": ..., "status": ...}``, DeepAgents' convention, or text) as a plan entry."""
    if isinstance(todo, str):
        return PlanEntry(content=todo, status="pending", priority="medium")
    if not isinstance(todo, Mapping) or not isinstance(todo.get("content"), str):
        return None
    status = todo.get("status")
    priority = todo.get("priority")
    return PlanEntry(
        content=todo["content"],
        status=status if status in _STATUSES else "pending",
        priority=priority if priority in _PRIORITIES else "medium",
    )


def _pieces(message: AIMessage) -> Iterator[tuple[Literal["say", "think"], str]]:
    """The message's text and reasoning, in order: ``("say", text)`` and ``("think", text)``."""
    reasoning = message.additional_kwargs.get("reasoning_content")
    if isinstance(reasoning, str) and reasoning:
        yield "think", reasoning
    if isinstance(message.content, str):
        if message.content:
            yield "say", message.content
        return
    for block in message.content:
        if isinstance(block, str):
            if block:
                yield "say", block
            continue
        kind = block.get("type")
        if kind == "text" and block.get("text"):
            yield "say", str(block["text"])
        elif kind in ("reasoning", "thinking"):
            text = block.get(kind) or block.get("text")
            if isinstance(text, str) and text:
                yield "think", text
