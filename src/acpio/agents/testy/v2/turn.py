"""One v2 prompt turn: its messages by id, its state updates, and what the client may cancel in it.

A v2 turn (:class:`TurnV2`) is cancelled as a v1 one (:class:`~acpio.agents.testy.turn.CancellableTurn`)
but reports itself differently: ``state_update`` ``running`` when it starts, ``requires_action``
while it waits for a permission, ``idle`` with the stop reason when it ends; its agent text is one
message (``agent-N``, N its position in the session's history) whose chunks all carry that id; tool
calls are ``tool_call_update`` upserts. The tool calls and terminals the client may cancel
(``tool_call/cancel``, ``terminal/cancel``) are registered here while they run.
"""

from __future__ import annotations

import asyncio
from typing import Any

from acpio.agents.testy.sessions import TestySession
from acpio.agents.testy.turn import CancellableTurn, TurnCancelled
from acpio.agents.testy.v2.terminals import AgentTerminal
from acpio.errors import InvalidParams
from acpio.jsonrpc import Connection
from acpio.schema.v2 import (
    AgentMessage,
    AgentMessageChunk,
    AgentThoughtChunk,
    Content,
    IdleStateUpdate,
    RequiresActionStateUpdate,
    RunningStateUpdate,
    SessionUpdate,
    TextContent,
    ToolCallCancelCapabilities,
    ToolCallCapabilities,
    ToolCallContent,
    ToolCallLocation,
    ToolCallStatus,
    ToolCallUpdate,
    ToolKind,
    UpdateSessionNotification,
)

__all__ = ["CANCEL_GRACE", "TurnV2", "text_content"]

#: How long a cancelled turn still waits for the client's answer to a permission request (v2
#: clients answer those ``cancelled``, and the idle ``state_update`` comes after).
CANCEL_GRACE = 5.0


class TurnV2(CancellableTurn):
    """A v2 prompt turn in one session (see the module docstring)."""

    def __init__(self, session: TestySession, cx: Connection, user_message_id: str) -> None:
        super().__init__(session, cx)
        #: The id of the prompt's user message (what ``session/prompt`` answered).
        self.user_message_id = user_message_id
        self._agent_message_id: str | None = None
        self._thought_id: str | None = None
        #: Tool calls the client may cancel now: id -> the event ``tool_call/cancel`` sets.
        self.cancellable: dict[str, asyncio.Event] = {}
        #: Terminals running now: id -> terminal (``terminal/cancel`` kills it).
        self.terminals: dict[str, AgentTerminal] = {}

    # --- sending ----------------------------------------------------------------------------------

    def send(self, update: SessionUpdate) -> None:
        """Send one ``session/update`` for this turn's session."""
        self.cx.send_notification(
            UpdateSessionNotification(session_id=self.session.session_id, update=update)
        )

    def running(self) -> None:
        """``state_update`` ``running``: foreground work goes on."""
        self.send(RunningStateUpdate())

    def requires_action(self) -> None:
        """``state_update`` ``requires_action``: the turn waits for the user."""
        self.send(RequiresActionStateUpdate())

    def idle(self, stop_reason: str) -> None:
        """``state_update`` ``idle`` with the stop reason: the turn is over."""
        self.send(IdleStateUpdate(stop_reason=stop_reason))

    @property
    def agent_message_id(self) -> str:
        """The id of this turn's agent message (given at the first text)."""
        if self._agent_message_id is None:
            self._agent_message_id = self.session.new_message_id("agent")
        return self._agent_message_id

    def say(self, text: str) -> None:
        """One chunk of the turn's agent message (kept in the history; upper case with ``shout``)."""
        if self.session.shout:
            text = text.upper()
        message_id = self.agent_message_id
        self.session.remember_agent(text, message_id)
        self.send(AgentMessageChunk(message_id=message_id, content=TextContent(text=text)))

    def replace(self, text: str) -> None:
        """An ``agent_message`` upsert: the turn's agent message is now ``text`` alone."""
        if self.session.shout:
            text = text.upper()
        message_id = self.agent_message_id
        self.session.replace_agent(text, message_id)
        self.send(AgentMessage(message_id=message_id, content=[TextContent(text=text)]))

    def think(self, text: str) -> None:
        """One chunk of the turn's thought."""
        if self._thought_id is None:
            self._thought_id = self.session.next_id("thought")
        self.send(AgentThoughtChunk(message_id=self._thought_id, content=TextContent(text=text)))

    # --- tool calls -------------------------------------------------------------------------------

    def start_tool_call(
        self,
        title: str,
        kind: ToolKind,
        *,
        status: ToolCallStatus = ToolCallStatus.IN_PROGRESS,
        path: str | None = None,
        raw_input: dict[str, Any] | None = None,
        cancellable: bool = False,
    ) -> str:
        """Create a tool call (its first ``tool_call_update``) and return its id.

        A ``cancellable`` one advertises ``capabilities.cancel`` and is registered for
        ``tool_call/cancel`` until it ends (:meth:`end_tool_call`).
        """
        tool_call_id = self.session.next_tool_call_id()
        fields: dict[str, Any] = {"title": title, "kind": kind, "status": status}
        if path is not None:
            fields["locations"] = [ToolCallLocation(path=path)]
        if raw_input is not None:
            fields["raw_input"] = raw_input
        if cancellable:
            fields["capabilities"] = ToolCallCapabilities(cancel=ToolCallCancelCapabilities())
            self.cancellable[tool_call_id] = asyncio.Event()
        self.send(ToolCallUpdate(tool_call_id=tool_call_id, **fields))
        return tool_call_id

    def update_tool_call(
        self,
        tool_call_id: str,
        status: ToolCallStatus | None = None,
        content: list[ToolCallContent] | None = None,
    ) -> None:
        """A ``tool_call_update`` with the given status and/or content (what is not given is unchanged)."""
        fields: dict[str, Any] = {}
        if status is not None:
            fields["status"] = status
        if content is not None:
            fields["content"] = content
        self.send(ToolCallUpdate(tool_call_id=tool_call_id, **fields))

    def end_tool_call(
        self, tool_call_id: str, status: ToolCallStatus, content: list[ToolCallContent] | None = None
    ) -> None:
        """The final ``tool_call_update``; the tool call can no longer be cancelled."""
        self.cancellable.pop(tool_call_id, None)
        self.update_tool_call(tool_call_id, status, content)

    def fail_tool_call(self, tool_call_id: str, message: str) -> None:
        """End a tool call ``failed``, with ``message`` as its text content."""
        self.end_tool_call(tool_call_id, ToolCallStatus.FAILED, [text_content(message)])

    async def ask(self, request: Any, grace: float = CANCEL_GRACE) -> Any:
        """Send a request the client answers even after ``session/cancel`` (a permission: ``cancelled``).

        Once the turn is cancelled the answer is awaited ``grace`` seconds more, then abandoned
        (:class:`TurnCancelled`). A client error is raised as it came.
        """
        self.checkpoint()
        answer = asyncio.ensure_future(self.cx.send_request(request))
        cancel = asyncio.ensure_future(self.wait_cancel_requested())
        try:
            await asyncio.wait((answer, cancel), return_when=asyncio.FIRST_COMPLETED)
            if not answer.done():
                await asyncio.wait((answer,), timeout=grace)
        finally:
            cancel.cancel()
        if not answer.done():
            answer.cancel()  # $/cancel_request goes to the client
            raise TurnCancelled()
        return answer.result()

    def cancel_tool_call(self, tool_call_id: str) -> None:
        """``tool_call/cancel``: flag the tool call; ``-32602`` if it is unknown, ended or not cancellable."""
        event = self.cancellable.get(tool_call_id)
        if event is None:
            raise InvalidParams(
                {"toolCallId": tool_call_id},
                message=f"tool_call/cancel: {tool_call_id!r} is not a running cancellable tool call of "
                f"session {self.session.session_id!r} (unknown, already ended, or without "
                "capabilities.cancel)",
            )
        event.set()


def text_content(text: str) -> Content:
    """Text as tool call content."""
    return Content(content=TextContent(text=text))
