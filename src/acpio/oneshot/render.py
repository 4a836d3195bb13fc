r"""Showing a prompt turn to a person: plain text for pipes, rich text for terminals, or JSON lines.

Every renderer takes the same calls from the prompt flow (:class:`Renderer`): the session's
updates as they arrive, the permission decisions, the agent's requests answered with an error,
and the stop reason. :class:`PlainRenderer` writes text without colour (stdout is a pipe or a file);
:class:`~acpio.oneshot.render_rich.RichRenderer` (in its own module, the only one importing
``rich``) colours and updates in place on a terminal; :class:`JsonLinesRenderer` ignores them all
and instead writes every JSON-RPC message that crosses the connection (see :meth:`JsonLinesRenderer.record`).

What a turn looks like in plain text::

    > Let me look at the file first.
    [pending] Read notes.txt (read)
    [completed] Read notes.txt (read)
        first line of notes.txt
    Plan:
      [x] Read the notes
      [>] Fix the typo
      [ ] Run the tests
    The typo is fixed.
    [stop reason: end_turn]

Thoughts are prefixed ``> ``; tool calls get one status line per change of status, and their
content (text, a unified diff of the edit, the command's output) once they end (their lines come
from :class:`~acpio.oneshot.render_tools.ToolCallLines`); a plan is printed whole at each update
(the agent always sends the full plan).

Every piece of text goes through :func:`~acpio.oneshot.sanitize.sanitize` before it is printed
(:meth:`TextRenderer._stream`, :meth:`TextRenderer._lines`): what the agent sends cannot drive the
terminal (escape sequences, ``\r``...), nor start a line of its own inside a one-line field.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence
from typing import Any, ClassVar, Final, Protocol, TextIO

import orjson

from acpio.client.permissions import Outcome, describe_request
from acpio.oneshot.render_events import MAX_CONTENT_LINES, EventLines, Line, Segment, style_for
from acpio.oneshot.render_tools import TerminalLookup, ToolCallLines, ToolCallState, diff_lines
from acpio.oneshot.sanitize import sanitize
from acpio.schema import (
    AgentMessageChunk,
    AgentThoughtChunk,
    AvailableCommandsUpdate,
    CompactionSummaryChunk,
    CompactionUpdate,
    ConfigOptionUpdate,
    CurrentModeUpdate,
    Notice,
    Plan,
    PlanEntry,
    RequestPermissionRequest,
    SelectedPermissionOutcome,
    SessionInfoUpdate,
    SessionUpdate,
    ToolCall,
    ToolCallUpdate,
    UsageUpdate,
    UserMessageChunk,
)
from acpio.session.turn_view import MessageRole, TextAdded, TurnEvent, block_mark
from acpio.transports.base import OversizedFrame
from acpio.transports.tap import Direction

__all__ = [
    "MAX_CONTENT_LINES",
    "JsonLinesRenderer",
    "Line",
    "PlainRenderer",
    "Renderer",
    "Segment",
    "TerminalLookup",
    "TextRenderer",
    "describe_update",
    "diff_lines",
]

#: How ``--json`` writes a frame's direction: ``"send"`` (to the agent) or ``"recv"`` (from it).
_JSON_DIRECTION: Final = {Direction.OUTGOING: "send", Direction.INCOMING: "recv"}


class Renderer(Protocol):
    """What the prompt flow tells a renderer, in the order things happen."""

    def update(self, update: SessionUpdate, *, history: bool = False) -> None:
        """Show a ``session/update``; ``history`` marks one replayed by ``session/load``."""
        ...

    def text(self, role: MessageRole, text: str) -> None:
        """Show a text chunk of ``role``, read without its model, as :meth:`update` shows the chunk."""
        ...

    def begin_history(self, session_id: str) -> None:
        """The replayed history of ``session_id`` follows (``session/load``)."""
        ...

    def end_history(self) -> None:
        """The replayed history is over."""
        ...

    def permission(self, request: RequestPermissionRequest, outcome: Outcome) -> None:
        """The answer given to a ``session/request_permission``."""
        ...

    def request_failed(self, method: str, message: str) -> None:
        """The agent's ``method`` request was answered with an error saying ``message``."""
        ...

    def turn_ended(self, stop_reason: str | None) -> None:
        """The agent answered ``session/prompt`` with ``stop_reason``; ``None``: with an error."""
        ...

    def settle(self) -> None:
        """Finish the current line (and any in-place display) before something else writes to the screen."""
        ...

    def status(self, waiting_for: str | None) -> None:
        """What the run waits for now (``"starting the agent"``), shown with its time; ``None``: nothing."""
        ...

    def known_tool(self, tool_call_id: str) -> ToolCallUpdate | None:
        """What the agent said of the tool call ``tool_call_id`` (title, kind, content), if anything."""
        ...

    def event(self, event: TurnEvent) -> None:
        """Show what an ACP v2 ``session/update`` changed (:mod:`acpio.session.turn_view`)."""
        ...

    def terminal_output(self, terminal_id: str) -> None:
        """The command of terminal ``terminal_id`` wrote more output (for a renderer that streams it)."""
        ...

    def close(self) -> None:
        """The run is over: flush."""
        ...


class TextRenderer(ABC):
    """The logic shared by the plain and rich renderers: what to show, as lines of styled segments.

    Subclasses write: :meth:`_write` (streamed text, no line ending added) and :meth:`_show`
    (whole lines; ``key`` names something shown again when it changes, such as one tool call's
    status line or the plan, which a terminal can redraw in place). ``LABELS`` and ``PREFIXES``
    choose the words and marks.
    """

    #: Status marks of tool calls and plan entries.
    LABELS: ClassVar[dict[str, str]] = {
        "pending": "[pending]",
        "in_progress": "[in progress]",
        "completed": "[completed]",
        "failed": "[failed]",
        "cancelled": "[cancelled]",
        "plan.pending": "[ ]",
        "plan.in_progress": "[>]",
        "plan.completed": "[x]",
    }
    #: Whether a running command's output is printed as it comes, under its tool call (then not
    #: again when the tool call ends); otherwise it is shown once the tool call ended.
    STREAMS_OUTPUT: ClassVar[bool] = False
    #: The mark at the start of each line of streamed thoughts and (replayed) user messages.
    PREFIXES: ClassVar[dict[str, str]] = {
        "thought": "(thinking) ",
        "user": "you> ",
        "compaction": "(summary) ",
    }

    def __init__(self, terminals: TerminalLookup | None = None) -> None:
        self._tool_calls = ToolCallLines(self.LABELS, terminals)
        self._stream_kind: str | None = None
        self._at_line_start = True
        self._history = False
        #: The last ``available_commands_update`` shown: an agent repeating it is not shown again.
        self._commands_shown: str | None = None
        self._events = EventLines(self.LABELS)

    # --- what subclasses write -------------------------------------------------------------------

    @abstractmethod
    def _write(self, text: str, style: str) -> None:
        """Write streamed ``text`` in ``style`` (a style name), adding no line ending."""

    @abstractmethod
    def _show(self, lines: Sequence[Line], key: object = None) -> None:
        """Write whole lines; ``key`` names something that is shown again, updated, when it changes."""

    def _lines(self, lines: Sequence[Line], key: object = None) -> None:
        """:meth:`_show` ``lines`` once every segment is sanitized (a newline in one becomes a space)."""
        self._show(
            [[(sanitize(text, single_line=True), style) for text, style in line] for line in lines], key
        )

    # --- the Renderer protocol -------------------------------------------------------------------

    def update(self, update: SessionUpdate, *, history: bool = False) -> None:
        """Show one update: stream message text, show tool calls, plans and the rest."""
        history = history or self._history
        if isinstance(update, AgentMessageChunk):
            self._stream("agent", block_mark(update.content), history)
        elif isinstance(update, AgentThoughtChunk):
            self._stream("thought", block_mark(update.content), history)
        elif isinstance(update, UserMessageChunk):
            self._stream("user", block_mark(update.content), history)
        elif isinstance(update, ToolCall):
            self._tool_changed(self._tool_calls.called(update), history)
        elif isinstance(update, ToolCallUpdate):
            self._tool_changed(self._tool_calls.updated(update), history)
        elif isinstance(update, CompactionSummaryChunk):
            self._stream("compaction", block_mark(update.content), history)
        elif isinstance(update, Plan):
            self._end_stream()
            self._lines(self._plan_lines(update.entries, history), key="plan")
        else:
            text = describe_update(update)
            if isinstance(update, AvailableCommandsUpdate):
                if text == self._commands_shown:
                    return
                self._commands_shown = text
            if text is not None:
                self._end_stream()
                # a notice stands out by its severity; the other updates are side information
                style = f"notice.{update.severity}" if isinstance(update, Notice) else "info"
                self._lines([[(f"[{text}]", style_for(style, history))]])

    def text(self, role: MessageRole, text: str) -> None:
        """Stream a text chunk's text, as :meth:`update` streams the chunk."""
        self._stream(role, text, self._history)

    def event(self, event: TurnEvent) -> None:
        """Show a v2 event: message text streamed, the rest as lines (:class:`EventLines`)."""
        if isinstance(event, TextAdded):
            if event.message.role != "user":  # a v2 agent echoes each prompt: it is on the screen already
                self._stream(event.message.role, self._events.text(event), False)
            return
        shown = self._events.lines(event)
        if shown is not None:
            self._end_stream()
            self._lines(*shown)

    def begin_history(self, session_id: str) -> None:
        """Mark the start of the replayed history."""
        self._end_stream()
        self._history = True
        self._lines([[(f"--- history of session {session_id} ---", "history")]])

    def end_history(self) -> None:
        """Mark the end of the replayed history."""
        self._end_stream()
        self._history = False
        self._lines([[("--- end of history ---", "history")]])

    def permission(self, request: RequestPermissionRequest, outcome: Outcome) -> None:
        """One line: what was asked and the option chosen (or ``cancelled``).

        The tool call the request is about is remembered, so that later updates of it show its title.
        """
        self._end_stream()
        self._tool_calls.asked(request)
        if isinstance(outcome, SelectedPermissionOutcome):
            chosen = next((o for o in request.options if o.option_id == outcome.option_id), None)
            kind = str(chosen.kind) if chosen is not None else ""
            answer = f"{chosen.name} ({outcome.option_id})" if chosen is not None else outcome.option_id
            style = "permission.allow" if kind.startswith("allow") else "permission.reject"
        else:
            answer, style = "cancelled", "permission.reject"
        self._lines(
            [[("[permission] ", "info"), (f"{describe_request(request)}: ", "tool.title"), (answer, style)]]
        )

    def request_failed(self, method: str, message: str) -> None:
        """One line: the agent's request this client answered with an error, and the error."""
        self._end_stream()
        self._lines([[(f"[{method} failed] ", "refused"), (message, "refused")]])

    def turn_ended(self, stop_reason: str | None) -> None:
        """Mark unfinished tool calls of a cancelled turn as cancelled; then the stop reason.

        ``None`` (the agent answered with an error, which is told on stderr): no stop reason.
        """
        self._end_stream()
        if stop_reason == "cancelled":
            for tool in self._tool_calls.cancel_unfinished():
                self._tool_changed(tool, False)
        self._tool_calls.stop_streaming()
        if stop_reason is None:
            return
        style = {"end_turn": "stop.end_turn", "cancelled": "stop.cancelled"}.get(stop_reason, "stop.other")
        self._lines([[(f"[stop reason: {stop_reason}]", style)]])

    def settle(self) -> None:
        """End a line left open by streamed text."""
        self._end_stream()

    def status(self, waiting_for: str | None) -> None:  # noqa: B027 (a hook: most renderers show nothing)
        """Nothing in text: a terminal renderer shows a spinner."""

    def known_tool(self, tool_call_id: str) -> ToolCallUpdate | None:
        """The tool call's latest title, kind and content (``None`` for a tool call not seen)."""
        return self._tool_calls.known(tool_call_id)

    def close(self) -> None:
        """Finish the last line."""
        self._end_stream()

    # --- streamed text ---------------------------------------------------------------------------

    def _stream(self, kind: str, text: str, history: bool) -> None:
        text = sanitize(text)
        if not text:
            return
        if kind != self._stream_kind:
            self._end_stream()
            self._stream_kind = kind
        style = style_for(kind, history)
        prefix = self.PREFIXES.get(kind, "")
        for number, part in enumerate(text.split("\n")):
            if number:
                self._write("\n", style)
                self._at_line_start = True
            if part:
                if self._at_line_start and prefix:
                    self._write(prefix, style)
                self._write(part, style)
                self._at_line_start = False

    def _end_stream(self) -> None:
        if not self._at_line_start:
            self._write("\n", "agent")
            self._at_line_start = True
        self._stream_kind = None

    # --- tool calls --------------------------------------------------------------------------------

    def terminal_output(self, terminal_id: str) -> None:
        """With ``STREAMS_OUTPUT``: print the new complete lines of a terminal in a running tool call."""
        lines = self._tool_calls.new_output(terminal_id)
        if lines:
            self._end_stream()
            self._lines(lines)

    def _tool_changed(self, tool: ToolCallState, history: bool) -> None:
        calls = self._tool_calls
        status_line = calls.status_line(tool, history)
        if status_line is not None:
            self._end_stream()
            self._lines([status_line], key=("tool", tool.tool_call_id))
        if self.STREAMS_OUTPUT and not history:
            for terminal_id in calls.terminals_to_stream(tool):
                self._start_streaming(terminal_id)
        content = calls.content_lines(tool, history)
        if content:  # it may come without a status line, after text streamed since the call ended
            self._end_stream()
            self._lines(content)

    def _start_streaming(self, terminal_id: str) -> None:
        command_line = self._tool_calls.start_streaming(terminal_id)
        if command_line is not None:
            self._end_stream()
            self._lines([command_line])
            self.terminal_output(terminal_id)

    # --- plans -----------------------------------------------------------------------------------

    def _plan_lines(self, entries: Sequence[PlanEntry], history: bool) -> list[Line]:
        lines: list[Line] = [[("Plan:", style_for("plan.title", history))]]
        for entry in entries:
            status = str(entry.status)
            style = style_for(f"plan.{status}", history)
            mark = self.LABELS.get(f"plan.{status}", f"[{status}]")
            line: Line = [(f"  {mark} ", style), (entry.content, style)]
            if str(entry.priority) == "high":
                line.append((" (high priority)", style_for("info", history)))
            lines.append(line)
        return lines


class PlainRenderer(TextRenderer):
    """Text without colour, for a pipe or a file: every line written once, in order.

    A running command's output is printed as it comes, line by line, under its tool call.
    """

    STREAMS_OUTPUT: ClassVar[bool] = True

    def __init__(self, out: TextIO, terminals: TerminalLookup | None = None) -> None:
        super().__init__(terminals)
        self._out = out

    def _write(self, text: str, style: str) -> None:
        self._out.write(text)
        self._out.flush()

    def _show(self, lines: Sequence[Line], key: object = None) -> None:
        self._out.write("".join("".join(text for text, _ in line) + "\n" for line in lines))
        self._out.flush()


class JsonLinesRenderer:
    """``--json``: every JSON-RPC message of the connection as one JSON object per line.

    Each line is ``{"direction": "send" | "recv", "message": <the JSON-RPC message>}``, in the order
    the messages were sent (queued) and received; a batch is written as its messages, one per line.
    A received line that is not JSON becomes ``{"direction": "recv", "invalid": "<the text>"}``.
    The renderer calls (updates, permissions...) write nothing: the messages say it all.
    """

    def __init__(self, out: TextIO) -> None:
        self._out = out

    def record(self, direction: Direction, frame: bytes | OversizedFrame) -> None:
        """Write the message(s) of one frame that went ``direction``: the observer of a ``--json`` tap.

        An oversized line, skipped unread, is not written.
        """
        if type(frame) is not bytes:
            return
        direction_word = _JSON_DIRECTION[direction]
        try:
            decoded: Any = orjson.loads(frame)
        except orjson.JSONDecodeError:
            entry = {"direction": direction_word, "invalid": frame.decode("utf-8", "replace")}
            self._out.write(orjson.dumps(entry).decode() + "\n")
        else:
            messages = decoded if isinstance(decoded, list) and decoded else [decoded]
            self._out.write(
                "".join(
                    orjson.dumps({"direction": direction_word, "message": message}).decode() + "\n"
                    for message in messages
                )
            )
        self._out.flush()

    def update(self, update: SessionUpdate, *, history: bool = False) -> None:
        """Nothing: the ``session/update`` message itself was recorded."""

    def text(self, role: MessageRole, text: str) -> None:
        """Nothing: the ``session/update`` message itself was recorded."""

    def begin_history(self, session_id: str) -> None:
        """Nothing: the ``session/load`` request was recorded."""

    def end_history(self) -> None:
        """Nothing: the ``session/load`` response was recorded."""

    def permission(self, request: RequestPermissionRequest, outcome: Outcome) -> None:
        """Nothing: the request and its response were recorded."""

    def request_failed(self, method: str, message: str) -> None:
        """Nothing: the error response was recorded."""

    def turn_ended(self, stop_reason: str | None) -> None:
        """Nothing: the ``session/prompt`` response was recorded."""

    def settle(self) -> None:
        """Nothing: every line is complete."""

    def status(self, waiting_for: str | None) -> None:
        """Nothing: the messages say it all."""

    def known_tool(self, tool_call_id: str) -> ToolCallUpdate | None:
        """Nothing is kept: ``None``."""
        return None

    def event(self, event: TurnEvent) -> None:
        """Nothing: the ``session/update`` message itself was recorded."""

    def terminal_output(self, terminal_id: str) -> None:
        """Nothing: the terminal requests and answers say it all."""

    def close(self) -> None:
        """Flush the output."""
        self._out.flush()


# --- describing things ---------------------------------------------------------------------------


def describe_update(update: SessionUpdate) -> str | None:
    """A one-line description of an update that is neither text, a tool call nor a plan; ``None``: skip."""
    if isinstance(update, CurrentModeUpdate):
        return f"mode: {update.current_mode_id}"
    if isinstance(update, SessionInfoUpdate):
        return f"title: {update.title}" if isinstance(update.title, str) else None
    if isinstance(update, AvailableCommandsUpdate):
        names = ", ".join(f"/{command.name}" for command in update.available_commands)
        return f"commands: {names or '(none)'}"
    if isinstance(update, UsageUpdate):
        text = f"usage: {update.used} of {update.size} tokens"
        if update.cost is not None:
            text += f", {update.cost.amount} {update.cost.currency}"
        return text
    if isinstance(update, ConfigOptionUpdate):
        values = ", ".join(
            f"{option.name}={_option_value(option.current_value)}" for option in update.config_options
        )
        return f"config: {values or '(none)'}"
    if isinstance(update, Notice):
        detail = f": {update.description}" if update.description else ""
        return f"{update.severity}: {update.title}{detail}"
    if isinstance(update, CompactionUpdate):
        error = update.error if isinstance(update.error, str) and update.error else None
        return f"context compaction {update.compaction_id}: {update.status}" + (
            f" ({error})" if error else ""
        )
    return f"update: {getattr(update, 'session_update', type(update).__name__)}"


def _option_value(value: object) -> str:
    if isinstance(value, bool):
        return "on" if value else "off"
    return str(value)
