"""One ACP turn of an Agents SDK agent: the streamed run shown as updates, approvals asked, resumed.

:class:`AgentRun` runs ``Runner.run_streamed`` and shows its events as they come: output text and
reasoning as chunks, each tool call through the projections (opened when the model asks for it,
ended with its output), a handoff as the session's new mode, each model call's usage. A run that
stops on tools needing approval asks the user per call, then resumes from its ``RunState``.
Cancelling the turn's task cancels the run (the SDK's tasks with it), and the turn ends
``cancelled``.

A local tool runs only once its call is shown: the run's ``on_tool_start`` hook waits for the
stream to reach the call, so the text before it goes out first and an edit's diff is read from
the file before the tool changes it.
"""

from __future__ import annotations

import asyncio
import logging
from contextlib import AsyncExitStack
from typing import Any

from agents import (
    Agent,
    InputGuardrailTripwireTriggered,
    MaxTurnsExceeded,
    OutputGuardrailTripwireTriggered,
    RunConfig,
    RunHooks,
    Runner,
    RunState,
    Tool,
)
from agents.items import ToolApprovalItem, ToolCallItem, ToolCallOutputItem, TResponseInputItem
from agents.result import RunResultStreaming
from agents.run_context import RunContextWrapper
from agents.stream_events import StreamEvent
from agents.tool_context import ToolContext

from acpio.app import ActiveToolCall, StopReasonName, Turn
from acpio.app.projections import Projections
from acpio.frameworks.openai_agents.items import FUNCTION_META, describe, runs_remotely

__all__ = ["AgentRun"]

_log = logging.getLogger("acpio.frameworks.openai_agents")

#: How long a local tool waits for the stream to show its call before it runs anyway.
SHOW_TIMEOUT = 30.0

_THOUGHTS = ("response.reasoning_summary_text.delta", "response.reasoning_text.delta")


class _ShowFirst(RunHooks[Any]):
    """Holds each function tool until its call is shown (see the module's docstring)."""

    def __init__(self) -> None:
        self.shown: dict[str, asyncio.Event] = {}

    def gate(self, call_id: str) -> asyncio.Event:
        return self.shown.setdefault(call_id, asyncio.Event())

    async def on_tool_start(self, context: RunContextWrapper[Any], agent: Agent[Any], tool: Tool) -> None:
        if not isinstance(context, ToolContext):
            return
        try:
            await asyncio.wait_for(self.gate(context.tool_call_id).wait(), SHOW_TIMEOUT)
        except TimeoutError:
            _log.warning("The call %s of %s ran before the stream showed it", context.tool_call_id, tool.name)


class AgentRun:
    """The run of one prompt: ``await AgentRun(...).answer(input)`` gives the turn's stop reason."""

    def __init__(
        self,
        turn: Turn,
        agent: Agent[Any],
        projections: Projections,
        *,
        modes: dict[str, Agent[Any]],
        context: Any,
        run_config: RunConfig | None,
        max_turns: int,
        context_window: int,
    ) -> None:
        self.turn = turn
        self.agent = agent
        self.projections = projections
        self.modes = modes
        self.context = context
        self.run_config = run_config
        self.max_turns = max_turns
        self.context_window = context_window
        self._hooks = _ShowFirst()
        self._calls: dict[str, tuple[str, ActiveToolCall]] = {}  # the model's call id -> (tool, shown)
        self._refused = False
        self._rejected: set[str] = set()  # the calls the user rejected: their output is the refusal
        self._finished: set[str] = set()  # the hosted tools' calls already ended

    async def answer(self, run_input: list[TResponseInputItem]) -> StopReasonName:
        """Run the agent on ``run_input`` to the end, asking for approvals; why the turn stopped."""
        async with AsyncExitStack() as open_calls:
            start: list[TResponseInputItem] | RunState[Any] = run_input
            agent = self.agent
            try:
                while True:
                    result = self._start(agent, start)
                    await self._stream(result, open_calls)
                    if not result.interruptions:
                        break
                    start = await self._decide(result, open_calls)
                    agent = result.last_agent
            except MaxTurnsExceeded:
                return "max_turn_requests"
            except (InputGuardrailTripwireTriggered, OutputGuardrailTripwireTriggered):
                return "refusal"
        return "refusal" if self._refused else "end_turn"

    def _start(
        self, agent: Agent[Any], start: list[TResponseInputItem] | RunState[Any]
    ) -> RunResultStreaming:
        return Runner.run_streamed(
            agent,
            start,
            context=self.context,
            max_turns=self.max_turns,
            hooks=self._hooks,
            run_config=self.run_config,
        )

    async def _stream(self, result: RunResultStreaming, open_calls: AsyncExitStack) -> None:
        try:
            async for event in result.stream_events():
                await self._show(event, open_calls)
        except asyncio.CancelledError:
            result.cancel()  # cancelled while the client was behind: stop the run's tasks too
            raise

    async def _show(self, event: StreamEvent, open_calls: AsyncExitStack) -> None:
        if event.type == "raw_response_event":
            data = event.data
            if data.type == "response.output_text.delta":
                await self.turn.say(data.delta)
            elif data.type in _THOUGHTS:
                await self.turn.think(getattr(data, "delta", ""))
            elif data.type == "response.refusal.delta":
                self._refused = True
                await self.turn.say(data.delta)
            elif data.type == "response.output_item.added" and runs_remotely(data.item):
                await self._open(data.item, open_calls)  # a hosted tool: shown while it runs
            elif data.type == "response.output_item.done" and runs_remotely(data.item):
                await self._finish_remote(data.item, open_calls)
            elif data.type == "response.completed" and data.response.usage is not None:
                usage = data.response.usage
                await self.turn.report_usage(usage.input_tokens + usage.output_tokens, self.context_window)
        elif event.type == "agent_updated_stream_event":
            name = event.new_agent.name
            if name in self.modes and name != self.turn.mode:
                await self.turn.set_mode(name)
        elif isinstance(event.item, ToolCallItem):
            if runs_remotely(event.item.raw_item):
                await self._finish_remote(event.item.raw_item, open_calls)
            else:
                await self._open(event.item.raw_item, open_calls)
        elif isinstance(event.item, ToolCallOutputItem):
            await self._finish(event.item)

    async def _open(self, raw: Any, open_calls: AsyncExitStack) -> ActiveToolCall:
        name, arguments = describe(raw)
        call_id = str(_field(raw, "call_id") or _field(raw, "id"))
        known = self._calls.get(call_id)
        if known is not None:
            return known[1]
        meta = None
        if _field(raw, "type") == "function_call":
            meta = {FUNCTION_META: {"call_id": call_id, "name": name, "arguments": _field(raw, "arguments")}}
        shown = await open_calls.enter_async_context(
            self.projections.tool_call(self.turn, name, arguments, meta=meta)
        )
        self._calls[call_id] = (name, shown)
        self._hooks.gate(call_id).set()
        return shown

    async def _finish_remote(self, raw: Any, open_calls: AsyncExitStack) -> None:
        """End a hosted tool's call with what its item says (once: the stream and the run item both tell)."""
        shown = await self._open(raw, open_calls)
        call_id = str(_field(raw, "call_id") or _field(raw, "id"))
        if call_id in self._finished:
            return
        self._finished.add(call_id)
        failed = _field(raw, "status") in ("failed", "incomplete")
        await self.projections.show_output(shown, self._calls[call_id][0], _remote_output(raw), failed=failed)

    async def _finish(self, item: ToolCallOutputItem) -> None:
        found = self._calls.get(str(item.call_id))
        if found is None:
            return
        name, shown = found
        output = item.raw_item.get("output") if isinstance(item.raw_item, dict) else None
        text = output if isinstance(output, str) else str(item.output)
        await self.projections.show_output(shown, name, text, failed=str(item.call_id) in self._rejected)

    async def _decide(self, result: RunResultStreaming, open_calls: AsyncExitStack) -> RunState[Any]:
        """Ask the user about each call waiting for approval; the state to resume the run from."""
        state = result.to_state()
        for item in result.interruptions:
            shown = await self._open(item.raw_item, open_calls)
            if await self.turn.ask_permission(shown, allow="Allow", deny="Reject"):
                state.approve(item)
            else:
                state.reject(item, rejection_message=_rejected(item))
                self._rejected.add(str(_field(item.raw_item, "call_id")))
        return state


def _field(raw: Any, name: str) -> Any:
    return raw.get(name) if isinstance(raw, dict) else getattr(raw, name, None)


def _remote_output(raw: Any) -> str:
    """What a hosted tool's item says of its result (the search's sources, the code's output...)."""
    for name in ("output", "outputs", "results", "result"):
        value = _field(raw, name)
        if value:
            return value if isinstance(value, str) else str(value)
    return ""


def _rejected(item: ToolApprovalItem) -> str:
    return f"The user rejected the call of {item.name}: do not call it again unless they ask."
