"""How ``acpio prompt`` shows an ACP v2 turn: the lines of its events (:mod:`acpio.session.turn_view`).

A v2 session's messages reach the renderer as version-neutral events (:attr:`SessionMessage.event
<acpio.session.SessionMessage.event>`): :class:`EventLines` turns each into what to stream (message
text, grouped by message id: a whole-message update shows only what was not streamed yet) or into
lines of styled segments: a tool call's status line and, once it ends, its content (a structured
diff's git patch, or the files it changes); an agent-owned terminal's command, its output line by
line as the base64 chunks come (decoded as bytes, so a character split across two chunks is whole),
its exit; a plan; the state (``running``, ``requires_action``). The text renderers
(:class:`~acpio.oneshot.render.TextRenderer`) write them like the v1 updates' lines.
"""

from __future__ import annotations

from typing import Final, Literal, TypeAlias

from acpio.session.turn_view import (
    DiffView,
    PlanChanged,
    StateChanged,
    TerminalChanged,
    TerminalRef,
    TextAdded,
    ToolCallChanged,
    ToolContent,
    TurnEvent,
)

__all__ = ["MAX_CONTENT_LINES", "EventLines", "Line", "Segment", "clip", "patch_style", "style_for"]

#: A piece of text and the name of its style (``"diff.add"``, ``"tool.failed"``...).
Segment: TypeAlias = tuple[str, str]
#: One line of output: its segments, without the line ending.
Line: TypeAlias = list[Segment]

#: At most this many lines of a tool call's text content, a diff or a command's output are shown.
MAX_CONTENT_LINES: Final = 40
_SHOW_CONTENT: Final = frozenset({"completed", "failed"})
_STATES: Final = {"running": "[working]", "requires_action": "[waiting for you]"}


class EventLines:
    """What to show of each v2 event; remembers what was shown (statuses, text, partial output lines)."""

    __slots__ = ("_content_shown", "_exits_shown", "_labels", "_partial", "_status_shown", "_text_shown")

    def __init__(self, labels: dict[str, str]) -> None:
        #: The status marks (``[completed]``, plan entries' ``[x]``...).
        self._labels = labels
        self._status_shown: dict[str, tuple[str, str]] = {}
        self._content_shown: set[str] = set()
        self._text_shown: dict[int, str] = {}
        self._partial: dict[str, bytes] = {}
        self._exits_shown: set[str] = set()

    def text(self, event: TextAdded) -> str:
        """The text to stream: the chunk, or what a whole-message update adds to what was shown."""
        message = event.message
        shown = self._text_shown.get(id(message), "")
        if not event.replaced:
            self._text_shown[id(message)] = shown + event.text
            return event.text
        self._text_shown[id(message)] = message.text
        if message.text.startswith(shown):
            return message.text[len(shown) :]
        return "\n" + message.text  # rewritten: shown again whole

    def lines(self, event: TurnEvent) -> tuple[list[Line], object] | None:
        """The lines of a non-text event and the key of what they show (redrawn in place); or ``None``."""
        if isinstance(event, ToolCallChanged):
            return self._tool_call(event)
        if isinstance(event, TerminalChanged):
            return self._terminal(event)
        if isinstance(event, PlanChanged):
            lines: list[Line] = [[("Plan:", "plan.title")]]
            for entry in event.entries:
                mark = self._labels.get(f"plan.{entry.status}", f"[{entry.status}]")
                line: Line = [(f"  {mark} ", f"plan.{entry.status}"), (entry.content, f"plan.{entry.status}")]
                if entry.priority == "high":
                    line.append((" (high priority)", "info"))
                lines.append(line)
            return lines, ("plan", event.plan_id)
        if isinstance(event, StateChanged) and event.state in _STATES:
            return [[(_STATES[event.state], "info")]], ("state",)
        return None

    def _tool_call(self, event: ToolCallChanged) -> tuple[list[Line], object] | None:
        call = event.call
        status, title = call.status or "pending", call.title or call.tool_call_id
        lines: list[Line] = []
        if self._status_shown.get(call.tool_call_id) != (status, title):
            self._status_shown[call.tool_call_id] = (status, title)
            line: Line = [
                (self._labels.get(status, f"[{status}]") + " ", f"tool.{status}"),
                (title, "tool.title"),
            ]
            if call.kind and call.kind != "other":
                line.append((f" ({call.kind})", "tool.kind"))
            lines.append(line)
        if status in _SHOW_CONTENT and call.content and call.tool_call_id not in self._content_shown:
            self._content_shown.add(call.tool_call_id)
            for item in call.content:
                lines.extend([("    ", "content"), *part] for part in _content_lines(item))
        return (lines, ("tool", call.tool_call_id)) if lines else None

    def _terminal(self, event: TerminalChanged) -> tuple[list[Line], object] | None:
        terminal = event.terminal
        key = terminal.terminal_id
        lines: list[Line] = []
        if key not in self._partial:
            self._partial[key] = b""
            command = terminal.command or f"terminal {key}"
            where = f"  (in {terminal.cwd})" if terminal.cwd else ""
            lines.append([("    ", "content"), (f"$ {command}", "command"), (where, "info")])
        data = self._partial[key] + event.appended
        *complete, rest = data.split(b"\n")
        if terminal.exited and rest:
            complete.append(rest)
            rest = b""
        self._partial[key] = rest
        lines.extend([("    ", "content"), (part.decode("utf-8", "replace"), "content")] for part in complete)
        if terminal.exited and key not in self._exits_shown:
            self._exits_shown.add(key)
            if terminal.signal is not None:
                lines.append([("    ", "content"), (f"[killed by {terminal.signal}]", "tool.failed")])
            else:
                style = "tool.completed" if terminal.exit_code == 0 else "tool.failed"
                lines.append([("    ", "content"), (f"[exit status {terminal.exit_code}]", style)])
        return (lines, None) if lines else None


def _content_lines(item: ToolContent) -> list[Line]:
    if isinstance(item, str):
        return [[(text, "content")] for text in clip(item.rstrip("\n").split("\n"))]
    if isinstance(item, TerminalRef):
        return []  # its command and output are shown as the terminal's own updates come
    assert isinstance(item, DiffView)
    if item.patch is not None:
        return [[(line, patch_style(line))] for line in clip(item.patch.rstrip("\n").split("\n"))]
    lines: list[Line] = []
    for change in item.changes:
        moved = f"{change.old_path} -> " if change.old_path else ""
        lines.append([(f"{change.operation} ", "diff.hunk"), (moved + change.path, "diff.header")])
    return lines


def style_for(name: str, history: bool) -> str:
    """The style ``name``, or ``history`` for anything ``session/load`` replayed (shown alike, dimmed)."""
    return "history" if history else name


def patch_style(line: str) -> str:
    """The style of a line of a unified diff or git patch."""
    if line.startswith(("---", "+++", "diff --git", "index ")):
        return "diff.header"
    if line.startswith("@@"):
        return "diff.hunk"
    if line.startswith("+"):
        return "diff.add"
    if line.startswith("-"):
        return "diff.remove"
    return "content"


def clip(lines: list[str], *, keep: Literal["start", "end"] = "start") -> list[str]:
    """``lines`` cut to :data:`MAX_CONTENT_LINES`, saying how many were left out."""
    if len(lines) <= MAX_CONTENT_LINES:
        return lines
    hidden = len(lines) - MAX_CONTENT_LINES
    if keep == "end":
        return [f"[… {hidden} earlier lines]", *lines[-MAX_CONTENT_LINES:]]
    return [*lines[:MAX_CONTENT_LINES], f"[… {hidden} more lines]"]
