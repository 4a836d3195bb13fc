"""The terminal renderer of ``acpio prompt``, built on rich: colours, markdown, and a live region.

The only module of acpio that imports ``rich``. It shows what :class:`~acpio.oneshot.render.PlainRenderer`
shows, with style, in two parts:

* **what is done** is printed once and stays: the agent's text rendered as markdown block by block
  (a paragraph, a list, a code block is printed once it is complete), thoughts dim and italic,
  each tool call's final line and its content (diff, command output), the plan as it was at the
  end of the turn;
* **what is under way** is drawn in place at the bottom (a :class:`rich.live.Live` region, erased
  and drawn again): the line of text being written, one line per unfinished tool call, the last
  lines of each running command's output as it comes, the plan (redrawn at each update), and a
  spinner with the elapsed time while acpio waits (the agent starting, a silent agent).

Before anything else writes to the terminal (a note on stderr, a permission question),
:meth:`RichRenderer.settle` erases the region; it comes back with the next thing to show.
"""

from __future__ import annotations

import contextlib
import io
import re
import time
from collections.abc import Sequence
from typing import ClassVar, Final, TextIO

from rich.console import Console, ConsoleOptions, Group, RenderableType, RenderResult
from rich.live import Live
from rich.markdown import Markdown
from rich.segment import Segment
from rich.spinner import Spinner
from rich.text import Text

from acpio.oneshot.render import Line, TerminalLookup, TextRenderer
from acpio.oneshot.render_tools import ToolCallState
from acpio.oneshot.sanitize import sanitize
from acpio.schema import Terminal

__all__ = ["LIVE_OUTPUT_LINES", "STYLES", "GoneTolerant", "RichRenderer"]

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
    "notice.info": "bold",
    "notice.warning": "bold yellow",
    "notice.error": "bold red",
    "stop.end_turn": "green",
    "stop.cancelled": "yellow",
    "stop.other": "yellow",
    "live.output": "dim",
    "spinner": "cyan",
}

#: Seconds between two redraws of the live region asked for by updates (rich redraws it 8 times a
#: second besides).
_REFRESH_AT_MOST_EVERY: Final = 0.05
#: Lines of a running command's output shown under its tool call while it runs.
LIVE_OUTPUT_LINES: Final = 6
#: Seconds without news before the spinner shows during a turn (text streaming needs none).
_QUIET_BEFORE_SPINNER: Final = 0.5
_FINAL: Final = frozenset({"completed", "failed", "cancelled"})
_PLAN: Final = "plan"
#: Columns the terminal echoes at the cursor for a Ctrl-C (``^C``), which the live region must leave free.
_ECHO_ROOM: Final = 2
#: A line that neither is blank nor starts a block of its own (heading, list item, quote, fence, table).
_IN_PARAGRAPH: Final = re.compile(r"(?!\s*$)(?!\s*(?:#|[-*+>|]|\d+[.)]|```|~~~|    ))")


class RichRenderer(TextRenderer):
    """Colour, markdown and a live region on a terminal (``console`` is where it writes)."""

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

    def __init__(
        self, console: Console, terminals: TerminalLookup | None = None, *, markdown: bool = True
    ) -> None:
        super().__init__(terminals)
        self._console = console
        self._lookup = terminals
        self._markdown = markdown
        self._live: Live | None = None
        #: What is under way, by key (``("tool", id)`` or ``"plan"``), in the order it appeared.
        self._region: dict[object, list[Line]] = {}
        #: The terminals shown in each unfinished tool call, by the tool call's key.
        self._running: dict[object, list[str]] = {}
        #: A tool call's key while its final line is being shown: printed, not kept in the region.
        self._finishing: object = None
        #: Streamed text not printed yet (the line, or the markdown block, being written).
        self._buffer = ""
        self._buffer_history = False
        self._block_ends = _BlockEnds()
        self._refreshed = 0.0
        #: Markdown blocks printed of the current agent message (a blank line goes between two).
        self._blocks = 0
        self._waiting_for: str | None = None
        self._waiting_since = 0.0
        self._last_news = time.monotonic()
        self._spinner = Spinner("dots", style=STYLES["spinner"])

    # --- the live region -----------------------------------------------------------------------

    def status(self, waiting_for: str | None) -> None:
        """Show a spinner saying what the run waits for, with the elapsed time; ``None`` hides it."""
        if waiting_for != self._waiting_for:
            self._waiting_for = waiting_for
            self._waiting_since = time.monotonic()
        if waiting_for is not None:
            self._start_live()
        else:
            self._refresh()

    def _start_live(self) -> None:
        if self._live is None:
            self._live = Live(
                get_renderable=self._render_region,
                console=self._console,
                auto_refresh=True,
                refresh_per_second=8,
                transient=True,
                redirect_stdout=False,
                redirect_stderr=False,
            )
            self._live.start(refresh=True)

    def _refresh(self) -> None:
        if self._live is not None:
            # at most so often by hand: a long stream of small chunks must not redraw the region for each
            now = time.monotonic()
            if now - self._refreshed >= _REFRESH_AT_MOST_EVERY:
                self._refreshed = now
                self._live.refresh()
        elif self._region or self._buffer or self._waiting_for is not None:
            self._start_live()

    def _stop_live(self) -> None:
        live, self._live = self._live, None
        if live is not None:
            # The terminal may be gone (SIGHUP): stopping must not fail, the run has to end in order.
            with contextlib.suppress(OSError):
                live.stop()

    def _render_region(self) -> RenderableType:
        """What is under way, drawn at each refresh (rich calls it from its refresh thread too)."""
        parts: list[RenderableType] = []
        if self._buffer:
            parts.append(self._buffered_renderable())
        region = list(self._region.items())
        # the plan under the tool calls, whatever came first
        for key, lines in [*(i for i in region if i[0] != _PLAN), *(i for i in region if i[0] == _PLAN)]:
            parts.extend(_text(line) for line in lines)
            for terminal_id in self._running.get(key, ()):
                parts.extend(self._output_tail(terminal_id))
        waiting_for = self._waiting_for
        now = time.monotonic()
        if waiting_for is not None and (not self._buffer or now - self._last_news > _QUIET_BEFORE_SPINNER):
            elapsed = now - self._waiting_since
            label = Text.assemble((f"{waiting_for}… ", STYLES["spinner"]), (f"{elapsed:.0f} s", "dim"))
            self._spinner.update(text=label)
            parts.append(self._spinner)
        return _EndsShort(Group(*parts))

    def _output_tail(self, terminal_id: str) -> list[Text]:
        snapshot = self._lookup(terminal_id) if self._lookup is not None else None
        if snapshot is None or snapshot.exit_status is not None:
            return []
        lines = sanitize(snapshot.output).rstrip("\n").split("\n")[-LIVE_OUTPUT_LINES:]
        style = STYLES["live.output"]
        return [
            Text(f"    │ {line}", style=style, no_wrap=True, overflow="ellipsis") for line in lines if line
        ]

    def _print(self, renderable: RenderableType) -> None:
        """Print for good: above the live region while it is shown."""
        self._last_news = time.monotonic()
        if self._live is not None:
            # rich draws its last rendering of the region under what is printed: make it the current one
            self._live.refresh()
        self._console.print(renderable, soft_wrap=not isinstance(renderable, Markdown))

    # --- TextRenderer's output ------------------------------------------------------------------

    def _write(self, text: str, style: str) -> None:
        self._print(Text(text, style=STYLES.get(style, "")))

    def _show(self, lines: Sequence[Line], key: object = None) -> None:
        self._last_news = time.monotonic()
        if key is None or key == self._finishing:
            self._region.pop(key, None)
            self._running.pop(key, None)
            self._print(Group(*(_text(line) for line in lines)))
            self._refresh()
            return
        self._region[key] = list(lines)
        self._refresh()

    def _tool_changed(self, tool: ToolCallState, history: bool) -> None:
        key = ("tool", tool.tool_call_id)
        terminals = [item.terminal_id for item in tool.content if isinstance(item, Terminal)]
        if tool.status in _FINAL or history:
            self._finishing = key
            self._running.pop(key, None)
        elif terminals:
            self._running[key] = terminals
        try:
            super()._tool_changed(tool, history)
        finally:
            self._finishing = None

    # --- streamed text ---------------------------------------------------------------------------

    def _stream(self, kind: str, text: str, history: bool) -> None:
        text = sanitize(text)
        if not text:
            return
        if kind != self._stream_kind:
            self._end_stream()
            self._stream_kind = kind
            self._buffer_history = history
        self._buffer += text
        self._last_news = time.monotonic()
        self._print_complete(final=False)
        self._refresh()

    def _end_stream(self) -> None:
        if self._buffer:
            self._print_complete(final=True)
        self._stream_kind = None
        self._blocks = 0

    def _as_markdown(self) -> bool:
        return self._markdown and self._stream_kind == "agent" and not self._buffer_history

    def _print_complete(self, *, final: bool) -> None:
        """Print what of the buffer is complete: lines, or markdown blocks; everything when ``final``."""
        if self._as_markdown():
            cut = len(self._buffer) if final else self._block_ends.find(self._buffer)
            done, self._buffer = self._buffer[:cut], self._buffer[cut:]
            self._block_ends.cut(cut, whole=not self._buffer)
            if done.strip():
                if self._blocks:
                    self._print(Text(""))
                self._blocks += 1
                self._print(Markdown(_hard_breaks(done.strip("\n")), hyperlinks=False))
            return
        cut = len(self._buffer) if final else self._buffer.rfind("\n") + 1
        done, self._buffer = self._buffer[:cut], self._buffer[cut:]
        if done:
            self._print(Group(*(self._stream_line(line) for line in done.rstrip("\n").split("\n"))))

    def _stream_line(self, line: str) -> Text:
        kind = self._stream_kind or "agent"
        style = STYLES.get("history" if self._buffer_history else kind, "")
        prefix = self.PREFIXES.get(kind, "") if line else ""
        return Text(prefix + line, style=style)

    def _buffered_renderable(self) -> RenderableType:
        lines = self._buffer.split("\n")
        shown = max(1, self._console.size.height - 2)
        if len(lines) > shown:
            # a long block being written (code, most often): its last lines as they are, not the whole
            # block rendered again at each refresh; it is printed as markdown once complete
            return Group(*(self._stream_line(line) for line in lines[-shown:]))
        if self._as_markdown():
            return Markdown(_hard_breaks(self._buffer), hyperlinks=False)
        return Group(*(self._stream_line(line) for line in lines))

    # --- the end of things -------------------------------------------------------------------------

    def _print_region(self) -> None:
        """Print what the region shows (the plan, unfinished tool calls) for good, and empty it."""
        region, self._region = self._region, {}
        self._running.clear()
        lines = [line for item in region.values() for line in item]
        if lines:
            self._print(Group(*(_text(line) for line in lines)))

    def end_history(self) -> None:
        """The replayed history is over: its plan stays where it is."""
        self._end_stream()
        self._print_region()
        super().end_history()

    def turn_ended(self, stop_reason: str | None) -> None:
        """The plan as it ended stays; then the stop reason. The spinner goes.

        After an error (``None``) the tool calls left unfinished stay too, as they were.
        """
        self._end_stream()
        if stop_reason is None:
            self._print_region()
        elif _PLAN in self._region:
            plan = self._region.pop(_PLAN)
            self._print(Group(*(_text(line) for line in plan)))
        self._waiting_for = None
        super().turn_ended(stop_reason)

    def settle(self) -> None:
        """Finish the current text and erase the live region: something else writes to the terminal."""
        super().settle()
        self._stop_live()

    def close(self) -> None:
        """Print what is still under way as it is, and stop the live region (also on a terminal gone)."""
        self._waiting_for = None
        try:
            self._end_stream()
            self._print_region()
        except OSError:
            self._buffer = ""
            self._block_ends = _BlockEnds()
            self._region.clear()
        finally:
            self._stop_live()


class GoneTolerant(io.TextIOBase):
    """A terminal's output that drops what cannot be written once the terminal is gone.

    The live region is redrawn from rich's refresh thread too; when the window closes, its writes
    fail with ``EIO`` while the SIGHUP that came with it ends the run in order: nothing is left to
    show, so nothing fails for it.
    """

    def __init__(self, out: TextIO) -> None:
        super().__init__()
        self._out = out
        #: Whether a write failed (the terminal is gone).
        self.gone = False

    def write(self, text: str) -> int:
        """Write ``text``, or drop it once the terminal is gone."""
        if not self.gone:
            try:
                self._out.write(text)
            except OSError:
                self.gone = True
        return len(text)

    def flush(self) -> None:
        """Flush, unless the terminal is gone."""
        if not self.gone:
            try:
                self._out.flush()
            except OSError:
                self.gone = True

    def isatty(self) -> bool:
        """Whether the output is a terminal (as the wrapped one says)."""
        return self._out.isatty()

    def fileno(self) -> int:
        """The wrapped output's descriptor (rich asks for the terminal's size)."""
        return self._out.fileno()


class _EndsShort:
    """A live region whose last line leaves the terminal's last columns free (else an empty line follows).

    Rich erases the region by moving the cursor up from where its last line ends. The terminal
    echoes a Ctrl-C there (``^C``): after a line that fills the width (a markdown paragraph is padded
    to it) the echo wraps, the cursor goes down a line, and the erasing misses the region's first
    line, which stays on the screen above the text printed for good.
    """

    def __init__(self, region: RenderableType) -> None:
        self._region = region

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        lines = console.render_lines(self._region, options, pad=False)
        for number, line in enumerate(lines):
            if number:
                yield Segment.line()
            yield from line
        if lines and Segment.get_line_length(lines[-1]) > options.max_width - _ECHO_ROOM:
            yield Segment.line()
            yield Segment("")  # the empty line (a line ending alone would not start one)


def _text(line: Line) -> Text:
    return Text.assemble(*((text, STYLES.get(style, "")) for text, style in line))


class _BlockEnds:
    """Where the last complete markdown block of a growing text ends: its last blank line out of fences.

    Each complete line is read once, however often the text grows (a long code block streamed in
    small chunks would otherwise be read again for each chunk).
    """

    __slots__ = ("end", "fenced", "scanned")

    def __init__(self) -> None:
        self.scanned = 0  # the complete lines read so far end here
        self.fenced = False  # whether the text there is inside a code fence
        self.end = 0

    def find(self, text: str) -> int:
        """The end of the last complete block of ``text`` (which starts with what was read before)."""
        stop = text.rfind("\n") + 1
        if stop > self.scanned:
            position = self.scanned
            for line in text[self.scanned : stop - 1].split("\n"):
                position += len(line) + 1
                stripped = line.strip()
                if stripped.startswith(("```", "~~~")):
                    self.fenced = not self.fenced
                elif not stripped and not self.fenced:
                    self.end = position
            self.scanned = stop
        return self.end

    def cut(self, length: int, *, whole: bool) -> None:
        """The first ``length`` characters were taken off the text (``whole``: all of it)."""
        if whole:
            self.scanned, self.fenced, self.end = 0, False, 0
        else:
            self.scanned = max(0, self.scanned - length)
            self.end = max(0, self.end - length)


def _hard_breaks(text: str) -> str:
    """``text`` with the line breaks inside paragraphs kept (markdown would join those lines), not in code."""
    lines = text.split("\n")
    fenced = False
    for index, line in enumerate(lines[:-1]):
        if line.strip().startswith(("```", "~~~")):
            fenced = not fenced
        elif not fenced and _IN_PARAGRAPH.match(line) and _IN_PARAGRAPH.match(lines[index + 1]):
            lines[index] = line + "\\"
    return "\n".join(lines)
