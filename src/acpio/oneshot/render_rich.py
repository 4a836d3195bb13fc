"""The terminal renderer of ``acpio prompt``, built on rich: colours, and updates in place.

The only module of acpio that imports ``rich``. It shows what :class:`~acpio.oneshot.render.PlainRenderer`
shows, with style: agent text streamed as it arrives, thoughts dim and italic, tool calls as
coloured status lines, plans as checklists, diffs in green and red, replayed history dimmed.

Something that changes while nothing else is printed (a tool call going from pending to completed,
consecutive plan updates) is redrawn in place with :class:`rich.live.Live`; once anything else is
printed, it stays where it is and the next change is printed below.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar, Final

from rich.console import Console, Group
from rich.live import Live
from rich.text import Text

from acpio.oneshot.render import Line, TerminalLookup, TextRenderer

__all__ = ["STYLES", "RichRenderer"]

#: The rich style of each style name the renderer uses.
STYLES: Final[dict[str, str]] = {
    "agent": "",
    "thought": "dim italic",
    "user": "bold cyan",
    "history": "dim",
    "info": "dim",
    "content": "",
    "command": "bold",
    "tool.title": "bold",
    "tool.kind": "dim",
    "tool.pending": "dim",
    "tool.in_progress": "yellow",
    "tool.completed": "green",
    "tool.failed": "red",
    "tool.cancelled": "yellow",
    "diff.header": "bold",
    "diff.hunk": "cyan",
    "diff.add": "green",
    "diff.remove": "red",
    "plan.title": "bold",
    "plan.pending": "",
    "plan.in_progress": "bold yellow",
    "plan.completed": "green",
    "permission.allow": "green",
    "permission.reject": "red",
    "refused": "red",
    "stop.end_turn": "green",
    "stop.cancelled": "yellow",
    "stop.other": "yellow",
}


class RichRenderer(TextRenderer):
    """Colour and in-place updates on a terminal (``console`` is where it writes)."""

    LABELS: ClassVar[dict[str, str]] = {
        "pending": "○",
        "in_progress": "◐",
        "completed": "✔",
        "failed": "✖",
        "cancelled": "⊘",
        "plan.pending": "☐",
        "plan.in_progress": "▶",
        "plan.completed": "☑",
    }
    PREFIXES: ClassVar[dict[str, str]] = {
        "thought": "  ",
        "user": "\N{SINGLE RIGHT-POINTING ANGLE QUOTATION MARK} ",
    }

    def __init__(self, console: Console, terminals: TerminalLookup | None = None) -> None:
        super().__init__(terminals)
        self._console = console
        self._live: Live | None = None
        self._live_key: object = None

    def _write(self, text: str, style: str) -> None:
        self._stop_live()
        self._console.print(Text(text, style=STYLES.get(style, "")), end="", soft_wrap=True)

    def _show(self, lines: Sequence[Line], key: object = None) -> None:
        renderable = Group(
            *(Text.assemble(*((text, STYLES.get(style, "")) for text, style in line)) for line in lines)
        )
        if key is not None and key == self._live_key and self._live is not None:
            self._live.update(renderable, refresh=True)
            return
        self._stop_live()
        if key is None:
            self._console.print(renderable, soft_wrap=True)
            return
        self._live = Live(
            renderable,
            console=self._console,
            auto_refresh=False,
            transient=False,
            redirect_stdout=False,
            redirect_stderr=False,
        )
        self._live.start(refresh=True)
        self._live_key = key

    def _stop_live(self) -> None:
        live, self._live, self._live_key = self._live, None, None
        if live is not None:
            live.stop()

    def settle(self) -> None:
        """Leave the in-place display where it is and finish the current line."""
        super().settle()
        self._stop_live()

    def close(self) -> None:
        """Stop the in-place display."""
        super().close()
        self._stop_live()
