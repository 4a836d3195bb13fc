"""One prompt turn being read: :class:`TurnStream`, its events as they come, then its :class:`TurnResult`."""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING

from acpio.driver.requests import SessionRequests, unified_diff
from acpio.driver.result import (
    FileWrite,
    FileWritten,
    FormAnswered,
    FormAsk,
    PermissionAsk,
    PermissionDecided,
    StreamEvent,
    TerminalRun,
    TurnResult,
    UsageChanged,
)
from acpio.driver.usage import UsageMeter
from acpio.errors import ConnectionClosed, RequestError, TransportError
from acpio.session import (
    ActiveSession,
    MessageView,
    PlanChanged,
    PlanEntryView,
    TerminalChanged,
    TerminalView,
    TextAdded,
    ToolCallChanged,
    ToolCallView,
    TurnEnded,
)

if TYPE_CHECKING:
    from acpio.session import SessionMessage

__all__ = ["Failure", "TurnStream"]

#: How the client describes a connection that ended mid-turn: the message, and the agent's stderr tail.
Failure = Callable[[BaseException], Awaitable[tuple[str, str | None]]]


class TurnStream:
    """A prompt turn being read: iterate it for its events as they come, or await :meth:`result`.

    Made by :meth:`AgentSession.stream <acpio.client.AgentSession.stream>`, which has sent the
    prompt. ``async for event in stream`` gives each :data:`~acpio.client.StreamEvent` (text
    added, a tool call changed, a permission decided, a form answered, a file written, usage
    reported...) and ends with the turn; :meth:`result` reads whatever is left and gives the
    :class:`TurnResult`. The agent's requests are answered as they are read, so read the turn to
    its end: a turn nobody reads waits for its answers.
    """

    def __init__(self, active: ActiveSession, requests: SessionRequests, failure: Failure) -> None:
        self._active = active
        self._requests = requests
        self._failure = failure
        self._pending: deque[StreamEvent] = deque()
        self._result: TurnResult | None = None
        self._meter = UsageMeter()
        self._messages: dict[int, MessageView] = {}
        self._calls: dict[str, ToolCallView] = {}
        self._terminals: dict[str, TerminalView] = {}
        self._plan: tuple[PlanEntryView, ...] = ()
        self._records: list[PermissionAsk | FormAsk | FileWrite] = []
        self._first_terminal = len(requests.started_terminals)
        requests.cancelled.clear()
        self._started = time.monotonic()

    def __repr__(self) -> str:
        state = "ended" if self._result is not None else "running"
        return f"<TurnStream {self._active.session_id!r} {state}>"

    @property
    def done(self) -> bool:
        """Whether the turn has ended (its result is known)."""
        return self._result is not None

    def cancel(self) -> None:
        """Cancel the turn (``session/cancel``): pending permissions are answered ``cancelled``.

        Read on: the agent ends the turn with stop reason ``cancelled`` after its last updates.
        """
        if self._result is None:
            self._requests.cancelled.set()
            self._active.cancel()

    def abandon(self, stop_reason: str = "cancelled") -> TurnResult:
        """End the turn now, for this client, with what was read of it: its result, ``stop_reason`` given.

        For a turn given up on (an agent that ignores ``session/cancel``): the text, tool calls,
        permissions asked, files written, commands run and usage read so far are kept. The agent
        is told nothing: stop whatever task reads the turn first, and end the agent (its process)
        or cancel the turn, since what it still sends would be read as the next turn's. A turn
        already ended keeps its result.
        """
        if self._result is None:
            self._finish(stop_reason)
        assert self._result is not None
        self._pending.clear()
        return self._result

    def __aiter__(self) -> TurnStream:
        return self

    async def __anext__(self) -> StreamEvent:
        while not self._pending:
            if self._result is not None:
                raise StopAsyncIteration
            await self._read_one()
        return self._pending.popleft()

    async def result(self) -> TurnResult:
        """Read the turn to its end (events not iterated are dropped) and give its result."""
        while self._result is None:
            await self._read_one()
        self._pending.clear()
        return self._result

    # --- reading ---------------------------------------------------------------------------------

    async def _read_one(self) -> None:
        try:
            item = await self._active.read_update()
        except RequestError as exc:
            self._finish(None, error=f"The agent answered session/prompt with an error: {exc}", code=exc.code)
            return
        except (ConnectionClosed, TransportError) as exc:
            message, tail = await self._failure(exc)
            self._finish(None, error=message, stderr_tail=tail)
            return
        if isinstance(item, TurnEnded):
            if item.response is not None and self._meter.read_prompt_result(item.response.to_wire()):
                self._usage_changed()
            stop = item.stop_reason
            self._finish(str(stop) if stop is not None else None)
            return
        if item.is_request:
            await self._requests.answer(item, self._active.connection)
            for record in self._requests.take_records():
                self._recorded(record)
            return
        self._read_update(item)

    def _read_update(self, item: SessionMessage) -> None:
        event = item.event
        if isinstance(event, TextAdded):
            self._messages.setdefault(id(event.message), event.message)
        elif isinstance(event, ToolCallChanged):
            self._calls.setdefault(event.call.tool_call_id, event.call)
        elif isinstance(event, TerminalChanged):
            self._terminals.setdefault(event.terminal.terminal_id, event.terminal)
        elif isinstance(event, PlanChanged):
            self._plan = event.entries
        if event is not None:
            self._pending.append(event)
        params = item.dispatch.params
        if isinstance(params, dict) and self._meter.read_update(params.get("update")):
            self._usage_changed()

    def _recorded(self, record: PermissionAsk | FormAsk | FileWrite) -> None:
        self._records.append(record)
        if isinstance(record, FileWrite):
            self._pending.append(FileWritten(record))
            return
        if isinstance(record, FormAsk):
            self._pending.append(FormAnswered(record))
            return
        if record.subject == "tool_call":
            call = self._active.view.tool_calls.get(record.tool_call.tool_call_id)
            if call is not None:
                self._calls.setdefault(call.tool_call_id, call)
                self._pending.append(ToolCallChanged(call))
        self._pending.append(PermissionDecided(record))

    def _usage_changed(self) -> None:
        usage = self._meter.usage
        if usage is not None:
            self._pending.append(UsageChanged(usage))

    # --- the end -----------------------------------------------------------------------------------

    def _finish(
        self,
        stop_reason: str | None,
        *,
        error: str | None = None,
        code: int | None = None,
        stderr_tail: str | None = None,
    ) -> None:
        messages = list(self._messages.values())
        self._result = TurnResult(
            session_id=self._active.session_id,
            stop_reason=stop_reason,
            text="".join(m.text for m in messages if m.role == "agent"),
            thoughts="".join(m.text for m in messages if m.role == "thought"),
            tool_calls=tuple(call.copy() for call in self._calls.values()),
            files_written=self._files_written(),
            terminals=self._terminal_runs(),
            permissions=tuple(r for r in self._records if isinstance(r, PermissionAsk)),
            plan=self._plan,
            usage=self._meter.usage,
            duration=time.monotonic() - self._started,
            protocol_version=self._active.protocol_version,
            error=error,
            error_code=code,
            stderr_tail=stderr_tail,
            forms=tuple(r for r in self._records if isinstance(r, FormAsk)),
        )

    def _files_written(self) -> tuple[FileWrite, ...]:
        """The client's writes, then the edits completed tool calls report for other paths."""
        writes = [r for r in self._records if isinstance(r, FileWrite)]
        written = {write.path for write in writes}
        for call in self._calls.values():
            if call.status != "completed":
                continue
            for diff in call.diffs:
                for change in diff.changes:
                    if change.path in written:
                        continue
                    patch = diff.patch
                    if patch is None and change.new_text is not None:
                        patch = unified_diff(change.path, change.old_text, change.new_text)
                    writes.append(
                        FileWrite(
                            change.path, change.old_text, change.new_text, patch, "agent", call.tool_call_id
                        )
                    )
                    written.add(change.path)
        return tuple(writes)

    def _terminal_runs(self) -> tuple[TerminalRun, ...]:
        runs: list[TerminalRun] = []
        terminals = self._requests.terminals
        started = list(self._requests.started_terminals.items())[self._first_terminal :]
        for terminal_id, cwd in started:
            snapshot = terminals.snapshot(terminal_id) if terminals is not None else None
            if snapshot is None:
                continue
            status = snapshot.exit_status
            runs.append(
                TerminalRun(
                    terminal_id,
                    snapshot.command_line,
                    snapshot.output,
                    status.exit_code if status is not None else None,
                    status.signal if status is not None else None,
                    "client",
                    cwd=cwd,
                    truncated=snapshot.truncated,
                )
            )
        for view in self._terminals.values():
            runs.append(
                TerminalRun(
                    view.terminal_id,
                    view.command,
                    bytes(view.output).decode("utf-8", "replace"),
                    view.exit_code,
                    view.signal,
                    "agent",
                    cwd=view.cwd,
                )
            )
        return tuple(runs)
