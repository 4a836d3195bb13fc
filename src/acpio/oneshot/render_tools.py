"""How ``acpio prompt`` shows an ACP v1 turn's tool calls: what is known of each, and its lines.

:class:`ToolCallLines` merges each tool call's updates (:class:`ToolCallState`) and gives the
lines a text renderer (:class:`~acpio.oneshot.render.TextRenderer`) writes for it: one status line
per change of status or title, its content once it ended (text, a unified diff of the edit, a
terminal's command and output), and a running command's output line by line as it comes, for a
renderer that streams it. The renderer decides when and where they are written.
"""

from __future__ import annotations

import difflib
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Final, TypeAlias

from acpio.client.permissions import describe_request
from acpio.oneshot.render_events import Line, Segment, clip, patch_style, style_for
from acpio.oneshot.terminals import TerminalSnapshot
from acpio.schema import (
    Content,
    Diff,
    RequestPermissionRequest,
    Terminal,
    ToolCall,
    ToolCallUpdate,
)
from acpio.session.turn_view import block_mark

__all__ = ["TerminalLookup", "ToolCallLines", "ToolCallState", "diff_lines"]

#: How a renderer finds what a terminal showed: the client's :meth:`Terminals.snapshot`.
TerminalLookup: TypeAlias = Callable[[str], TerminalSnapshot | None]

_FINAL_STATUSES: Final = frozenset({"completed", "failed", "cancelled"})
_SHOW_CONTENT: Final = frozenset({"completed", "failed"})


@dataclass(slots=True)
class ToolCallState:
    """What is known of one tool call: the latest value of each field, merged from its updates."""

    tool_call_id: str
    title: str
    kind: str | None = None
    status: str = "pending"
    content: list[Any] = field(default_factory=list)
    #: The status and title of the status line last shown.
    shown: tuple[str, str] | None = None
    content_shown: bool = False


class ToolCallLines:
    """The turn's tool calls merged from their updates, and the lines that show them.

    ``labels`` are the renderer's status marks (``[completed]``...); ``terminals`` finds what a
    client-side terminal showed (its command, output and exit).
    """

    __slots__ = ("_labels", "_streamed", "_terminals", "_tools")

    def __init__(self, labels: dict[str, str], terminals: TerminalLookup | None) -> None:
        self._labels = labels
        self._terminals = terminals
        self._tools: dict[str, ToolCallState] = {}
        #: The terminals whose output is being streamed, and how many of their lines were given so far.
        self._streamed: dict[str, int] = {}

    # --- what is known ------------------------------------------------------------------------------

    def called(self, update: ToolCall) -> ToolCallState:
        """A new tool call (or one announced again: it starts over)."""
        tool = ToolCallState(
            update.tool_call_id, update.title, _str(update.kind), _str(update.status) or "pending"
        )
        tool.content = list(update.content or ())
        self._tools[tool.tool_call_id] = tool
        return tool

    def updated(self, update: ToolCallUpdate) -> ToolCallState:
        """A tool call with the fields ``update`` sets changed (titled by its id if never announced)."""
        known = self._tools.get(update.tool_call_id)
        if known is None:
            known = self._tools[update.tool_call_id] = ToolCallState(update.tool_call_id, update.tool_call_id)
        if update.title is not None:
            known.title = update.title
        if update.kind is not None:
            known.kind = str(update.kind)
        if update.status is not None:
            known.status = str(update.status)
        if update.content is not None:
            known.content = list(update.content)
        return known

    def asked(self, request: RequestPermissionRequest) -> None:
        """Remember the tool call a permission request is about, as shown on the permission's line."""
        asked = request.tool_call
        if asked.tool_call_id not in self._tools:
            tool = ToolCallState(asked.tool_call_id, describe_request(request), _str(asked.kind))
            tool.shown = (tool.status, tool.title)
            self._tools[tool.tool_call_id] = tool

    def cancel_unfinished(self) -> list[ToolCallState]:
        """Mark the tool calls not ended yet as ``cancelled`` (a cancelled turn); they are returned."""
        cancelled = [tool for tool in self._tools.values() if tool.status not in _FINAL_STATUSES]
        for tool in cancelled:
            tool.status = "cancelled"
        return cancelled

    def known(self, tool_call_id: str) -> ToolCallUpdate | None:
        """The tool call's latest title, kind and content (``None`` for a tool call not seen)."""
        tool = self._tools.get(tool_call_id)
        if tool is None:
            return None
        known: dict[str, Any] = {"toolCallId": tool.tool_call_id, "title": tool.title}
        if tool.kind is not None:
            known["kind"] = tool.kind
        if tool.content:
            known["content"] = [item.to_wire() for item in tool.content]
        return ToolCallUpdate.model_validate(known)

    # --- its lines ----------------------------------------------------------------------------------

    def status_line(self, tool: ToolCallState, history: bool) -> Line | None:
        """The tool call's status line if its status or title changed since it was last given."""
        if (tool.status, tool.title) == tool.shown:
            return None
        tool.shown = (tool.status, tool.title)
        line: Line = [
            (
                self._labels.get(tool.status, f"[{tool.status}]") + " ",
                style_for(f"tool.{tool.status}", history),
            )
        ]
        line.append((tool.title, style_for("tool.title", history)))
        if tool.kind and tool.kind != "other":
            line.append((f" ({tool.kind})", style_for("tool.kind", history)))
        return line

    def content_lines(self, tool: ToolCallState, history: bool) -> list[Line]:
        """The content of a tool call that ended (completed or failed), indented; once, then ``[]``."""
        if tool.status not in _SHOW_CONTENT or tool.content_shown or not tool.content:
            return []
        tool.content_shown = True
        lines: list[Line] = []
        for item in tool.content:
            lines.extend(self._item_lines(item, history))
        return [[("    ", "content"), *line] for line in lines]

    # --- a running command's output ------------------------------------------------------------------

    def terminals_to_stream(self, tool: ToolCallState) -> list[str]:
        """The terminals of a running tool call whose output is not streamed yet."""
        if tool.status in _FINAL_STATUSES:
            return []
        return [
            item.terminal_id
            for item in tool.content
            if isinstance(item, Terminal) and item.terminal_id not in self._streamed
        ]

    def start_streaming(self, terminal_id: str) -> Line | None:
        """Stream the terminal's output from now on: its command line; ``None`` for a terminal not known."""
        snapshot = self._terminals(terminal_id) if self._terminals is not None else None
        if snapshot is None:
            return None
        self._streamed[terminal_id] = 0
        return [("    ", "content"), (f"$ {snapshot.command_line}", style_for("command", False))]

    def new_output(self, terminal_id: str) -> list[Line]:
        """The complete lines a streamed terminal wrote since the last call, indented."""
        printed = self._streamed.get(terminal_id)
        snapshot = self._terminals(terminal_id) if self._terminals is not None else None
        if printed is None or snapshot is None:
            return []
        complete = snapshot.output.split("\n")[:-1]
        if len(complete) <= printed:
            return []
        self._streamed[terminal_id] = len(complete)
        style = style_for("content", False)
        return [[("    ", "content"), (text, style)] for text in complete[printed:]]

    def stop_streaming(self) -> None:
        """The turn ended: a command still running past it is not streamed below it."""
        self._streamed.clear()

    def _item_lines(self, item: Any, history: bool) -> list[Line]:
        if isinstance(item, Content):
            style = style_for("content", history)
            return [[(text, style)] for text in clip(block_mark(item.content).rstrip("\n").split("\n"))]
        if isinstance(item, Diff):
            return [[(text, style_for(style, history))] for text, style in diff_lines(item)]
        if isinstance(item, Terminal):
            return self._terminal_lines(item.terminal_id, history)
        kind = getattr(item, "type", None) or "content"
        return [[(f"[{kind}]", style_for("info", history))]]

    def _terminal_lines(self, terminal_id: str, history: bool) -> list[Line]:
        snapshot = self._terminals(terminal_id) if self._terminals is not None else None
        if snapshot is None:
            return [[(f"[terminal {terminal_id}]", style_for("info", history))]]
        printed = self._streamed.pop(terminal_id, None)
        lines: list[Line] = []
        output = snapshot.output.rstrip("\n")
        if printed is not None:  # its command line and first lines are above: the rest, then the status
            rest = output.split("\n")[printed:] if output else []
            style = style_for("content", history)
            lines.extend([(text, style)] for text in clip(rest, keep="end"))
            output = ""
        else:
            lines.append([(f"$ {snapshot.command_line}", style_for("command", history))])
        if output:
            if snapshot.truncated:
                lines.append([("[… earlier output dropped]", style_for("info", history))])
            style = style_for("content", history)
            lines.extend([(text, style)] for text in clip(output.split("\n"), keep="end"))
        status = snapshot.exit_status
        if status is None:
            lines.append([("[still running]", style_for("info", history))])
        elif status.signal is not None:
            lines.append([(f"[killed by {status.signal}]", style_for("tool.failed", history))])
        else:
            style = "tool.completed" if status.exit_code == 0 else "tool.failed"
            lines.append([(f"[exit status {status.exit_code}]", style_for(style, history))])
        return lines


def diff_lines(diff: Diff) -> list[Segment]:
    """A unified diff of ``oldText`` -> ``newText`` as (line, style) pairs, cut to the first lines.

    Styles: ``diff.header`` (file names), ``diff.hunk`` (``@@`` lines), ``diff.add``, ``diff.remove``,
    ``content`` (context).
    """
    old = [] if diff.old_text is None else diff.old_text.splitlines()
    new = diff.new_text.splitlines()
    before = "/dev/null" if diff.old_text is None else diff.path
    lines = list(difflib.unified_diff(old, new, fromfile=before, tofile=diff.path, lineterm=""))
    if not lines:
        return [(f"(no change to {diff.path})", "info")]
    return [(line, patch_style(line)) for line in clip(lines)]


def _str(value: object) -> str | None:
    return None if value is None else str(value)
