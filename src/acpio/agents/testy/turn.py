"""One prompt turn: what the commands use to talk to the client, and how the turn is cancelled.

A :class:`TestyTurn` runs in its own task (started with ``cx.spawn`` by the ``session/prompt``
handler), never in the dispatch loop: it awaits the client's answers to ``fs/*``, ``terminal/*`` and
``session/request_permission``, and only a task outside the dispatch loop may do that (inside it,
``await`` would raise :class:`~acpio.DeadlockError`, since the loop that must read the answer would
be the one waiting).

Cancellation is cooperative and explicit: ``session/cancel`` calls :meth:`TestyTurn.cancel`, which
sets an event. Every wait of the turn (:meth:`TestyTurn.request`, :meth:`TestyTurn.sleep`) races
that event, so a cancel ends it at once; a client request still in flight is then abandoned (the
engine sends ``$/cancel_request`` for it, and its answer is ignored). Between commands,
:meth:`TestyTurn.pause` lets the dispatch loop read a pending cancel. Any of these raises
:class:`TurnCancelled`, which ends the turn with stop reason ``cancelled``.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
from collections.abc import Awaitable
from typing import Any, NoReturn, TypeVar

from acpio.agents.testy.sessions import TestySession
from acpio.capabilities import ClientFeatures
from acpio.errors import ConnectionClosed
from acpio.jsonrpc import Connection
from acpio.schema import (
    AgentMessageChunk,
    AgentThoughtChunk,
    Content,
    SessionNotification,
    SessionUpdate,
    TextContent,
    ToolCall,
    ToolCallContent,
    ToolCallLocation,
    ToolCallStatus,
    ToolCallUpdate,
    ToolKind,
)

__all__ = ["CancellableTurn", "TestyTurn", "TurnCancelled", "end_process"]

T = TypeVar("T")


class TurnCancelled(Exception):
    """The client cancelled the turn (``session/cancel``, ``$/cancel_request``, ``session/close``...)."""


class CancellableTurn:
    """A prompt turn in one session, whatever the protocol version: its connection and its cancel flag.

    :class:`TestyTurn` (v1) and :class:`acpio.agents.testy.v2.turn.TurnV2` add how each version
    talks to the client.
    """

    def __init__(self, session: TestySession, cx: Connection) -> None:
        self.session = session
        self.cx = cx
        self._cancel_requested = asyncio.Event()
        self._finished = asyncio.Event()

    def __repr__(self) -> str:
        state = "cancelled" if self.cancelled else "finished" if self._finished.is_set() else "running"
        return f"<{type(self).__name__} {self.session.session_id!r} {state}>"

    # --- cancellation -----------------------------------------------------------------------------

    @property
    def cancelled(self) -> bool:
        """Whether the turn was asked to stop."""
        return self._cancel_requested.is_set()

    def cancel(self) -> None:
        """Ask the turn to stop: it ends with ``cancelled`` at its next step (at once if it waits)."""
        self._cancel_requested.set()

    def finish(self) -> None:
        """Mark the turn answered (called once, when the prompt got its response)."""
        self._finished.set()

    async def wait_finished(self) -> None:
        """Wait until the prompt has been answered."""
        await self._finished.wait()

    async def wait_cancel_requested(self) -> None:
        """Wait until the turn is asked to stop."""
        await self._cancel_requested.wait()

    def checkpoint(self) -> None:
        """Raise :class:`TurnCancelled` if the turn was asked to stop."""
        if self.cancelled:
            raise TurnCancelled()

    async def pause(self) -> None:
        """Let the dispatch loop run (a ``session/cancel`` may be waiting), then :meth:`checkpoint`."""
        await asyncio.sleep(0)
        self.checkpoint()

    async def sleep(self, seconds: float) -> None:
        """Wait ``seconds``; a cancel ends the wait at once with :class:`TurnCancelled`."""
        await self._until_cancelled(asyncio.sleep(seconds))

    async def hang(self, seconds: float) -> None:
        """Wait ``seconds`` whatever happens (a wedged agent), then :meth:`checkpoint`."""
        await asyncio.sleep(seconds)
        self.checkpoint()

    async def request(self, message: Any) -> Any:
        """Send a request to the client and return its (typed) result; raises the client's error.

        A cancel while waiting abandons the request (``$/cancel_request`` goes to the client) and
        raises :class:`TurnCancelled`.
        """
        self.checkpoint()
        return await self._until_cancelled(self.cx.send_request(message))

    async def until_cancelled(self, awaitable: Awaitable[T]) -> T:
        """Wait for ``awaitable``; a cancel of the turn stops it and raises :class:`TurnCancelled`."""
        return await self._until_cancelled(awaitable)

    def send_and_forget(self, message: Any) -> None:
        """Send a request to the client without waiting for its answer (cleanup after a cancel).

        Does nothing once the connection is closed.
        """
        with contextlib.suppress(ConnectionClosed):
            self.cx.send_request(message)

    async def _until_cancelled(self, awaitable: Awaitable[T]) -> T:
        self.checkpoint()
        work = asyncio.ensure_future(awaitable)
        work.add_done_callback(_retrieve)  # its error is raised below, or dropped if the turn ends first
        cancel = asyncio.ensure_future(self._cancel_requested.wait())
        try:
            await asyncio.wait((work, cancel), return_when=asyncio.FIRST_COMPLETED)
        finally:
            cancel.cancel()
            if not work.done():
                work.cancel()  # a SentRequest whose waiter is cancelled sends $/cancel_request
        self.checkpoint()
        return work.result()


class TestyTurn(CancellableTurn):
    """A v1 prompt turn: what the client can do, and the v1 updates the commands send."""

    def __init__(self, session: TestySession, cx: Connection, client: ClientFeatures) -> None:
        super().__init__(session, cx)
        #: What the client advertised at ``initialize`` (testy calls only what it advertised).
        self.client = client

    # --- sending updates --------------------------------------------------------------------------

    def send_update(self, update: SessionUpdate) -> None:
        """Send one ``session/update`` for this turn's session."""
        self.cx.send_notification(SessionNotification(session_id=self.session.session_id, update=update))

    def say(self, text: str) -> None:
        """One agent message chunk (kept in the session's history for ``session/load``).

        Remembered first: the session's store then commits it before the transport writes it. With
        the session's ``shout`` option on, the text is upper-cased.
        """
        if self.session.shout:
            text = text.upper()
        self.session.remember_agent(text)
        self.send_update(AgentMessageChunk(content=TextContent(text=text)))

    def think(self, text: str) -> None:
        """One agent thought chunk."""
        self.send_update(AgentThoughtChunk(content=TextContent(text=text)))

    def start_tool_call(
        self,
        title: str,
        kind: ToolKind,
        *,
        status: ToolCallStatus = ToolCallStatus.IN_PROGRESS,
        path: str | None = None,
        raw_input: dict[str, Any] | None = None,
    ) -> str:
        """Announce a new tool call (``tool_call``) and return its id."""
        tool_call_id = self.session.next_tool_call_id()
        extra: dict[str, Any] = {}
        if path is not None:
            extra["locations"] = [ToolCallLocation(path=path)]
        if raw_input is not None:
            extra["raw_input"] = raw_input
        self.send_update(ToolCall(tool_call_id=tool_call_id, title=title, kind=kind, status=status, **extra))
        return tool_call_id

    def update_tool_call(
        self,
        tool_call_id: str,
        status: ToolCallStatus | None = None,
        content: list[ToolCallContent] | None = None,
    ) -> None:
        """Send a ``tool_call_update`` with the given status and/or content."""
        changes: dict[str, Any] = {}
        if status is not None:
            changes["status"] = status
        if content is not None:
            changes["content"] = content
        self.send_update(ToolCallUpdate(tool_call_id=tool_call_id, **changes))

    def fail_tool_call(self, tool_call_id: str, message: str) -> None:
        """End a tool call ``failed``, with ``message`` as its text content."""
        self.update_tool_call(tool_call_id, ToolCallStatus.FAILED, [text_content(message)])


def end_process(code: int, message: str) -> NoReturn:
    """``exit``: write ``message`` to stderr and end the process now with ``code``, as a crash does.

    Nothing is cleaned up (no answer, no ``finally`` blocks): what the client sees is an agent
    that died. Served in-process, testy ends the process that serves it.
    """
    with contextlib.suppress(OSError):
        os.write(2, f"{message}\n".encode())
    os._exit(code)  # private-ok: the standard way to end a process at once, skipping all clean-up


def _retrieve(task: asyncio.Future[Any]) -> None:
    """Mark a finished task's exception as seen, so asyncio does not log it as never retrieved."""
    if not task.cancelled():
        task.exception()


def text_content(text: str) -> Content:
    """Text as tool call content."""
    return Content(content=TextContent(text=text))
