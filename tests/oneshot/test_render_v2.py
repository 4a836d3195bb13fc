"""The renderers fed the version-neutral events of an ACP v2 turn (acpio.session.turn_view)."""

from __future__ import annotations

import io
import re

from rich.console import Console

from acpio.oneshot.render import PlainRenderer
from acpio.oneshot.render_rich import RichRenderer
from acpio.session import (
    DiffView,
    FileChange,
    MessageView,
    PlanChanged,
    PlanEntryView,
    StateChanged,
    TerminalChanged,
    TerminalView,
    TextAdded,
    ToolCallChanged,
    ToolCallView,
)

ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")


def plain() -> tuple[PlainRenderer, io.StringIO]:
    out = io.StringIO()
    return PlainRenderer(out, terminals=lambda terminal_id: None), out


def test_message_text_streams_and_a_whole_message_update_adds_only_what_was_not_shown() -> None:
    renderer, out = plain()
    agent, user = MessageView("a", "agent"), MessageView("u", "user", "the prompt")
    renderer.event(TextAdded(user, "the prompt", replaced=True))  # the echo of the prompt: not shown again
    renderer.event(StateChanged("running"))
    agent.text = "Hel"
    renderer.event(TextAdded(agent, "Hel"))
    agent.text = "Hello"
    renderer.event(TextAdded(agent, "lo"))
    agent.text = "Hello world"
    renderer.event(TextAdded(agent, "Hello world", replaced=True))
    agent.text = "Rewritten"
    renderer.event(TextAdded(agent, "Rewritten", replaced=True))
    renderer.event(StateChanged("idle", "end_turn"))  # the stop reason is the turn's end, shown by it
    renderer.turn_ended("end_turn")
    assert out.getvalue().splitlines() == ["[working]", "Hello world", "Rewritten", "[stop reason: end_turn]"]


def test_an_agent_terminal_shows_whole_lines_of_bytes_split_anywhere_and_its_exit() -> None:
    renderer, out = plain()
    terminal = TerminalView("t", command="make", cwd="/w")
    renderer.event(TerminalChanged(terminal, b"caf\xc3"))
    renderer.event(TerminalChanged(terminal, b"\xa9 ok\nlast"))
    terminal.exited, terminal.exit_code = True, 2
    renderer.event(TerminalChanged(terminal))
    assert out.getvalue().splitlines() == [
        "    $ make  (in /w)",
        "    café ok",
        "    last",
        "    [exit status 2]",
    ]


def test_a_finished_tool_call_shows_its_diff_from_the_patch_or_from_the_changes() -> None:
    renderer, out = plain()
    call = ToolCallView("c", title="Edit", kind="edit", status="pending")
    renderer.event(ToolCallChanged(call))
    call.status = "completed"
    call.content = [DiffView((FileChange("modify", "/w/a"),), "--- a/w/a\n+++ b/w/a\n@@ -1 +1 @@\n-x\n+y\n")]
    renderer.event(ToolCallChanged(call))
    renderer.event(ToolCallChanged(call))  # nothing new: nothing shown
    moved = ToolCallView("m", title="Move", status="failed")
    moved.content = [DiffView((FileChange("move", "/w/b", old_path="/w/a"),)), "it failed"]
    renderer.event(ToolCallChanged(moved))
    renderer.event(PlanChanged("p", (PlanEntryView("step", "high", "completed"),)))
    assert out.getvalue().splitlines() == [
        "[pending] Edit (edit)",
        "[completed] Edit (edit)",
        "    --- a/w/a",
        "    +++ b/w/a",
        "    @@ -1 +1 @@",
        "    -x",
        "    +y",
        "[failed] Move",
        "    move /w/a -> /w/b",
        "    it failed",
        "Plan:",
        "  [x] step (high priority)",
    ]


def test_rich_colours_the_v2_diff_and_the_state() -> None:
    out = io.StringIO()
    console = Console(file=out, force_terminal=True, color_system="standard", width=100, highlight=False)
    renderer = RichRenderer(console)
    renderer.event(StateChanged("requires_action"))
    call = ToolCallView("c", title="Edit", status="completed", content=[DiffView((), "+added\n-removed")])
    renderer.event(ToolCallChanged(call))
    renderer.close()
    text = out.getvalue()
    assert "\x1b[32m+added\x1b[0m" in text  # green
    assert "\x1b[31m-removed\x1b[0m" in text  # red
    assert "\x1b[2m[waiting for you]\x1b[0m" in text  # dimmed
    last_drawn = text.split("\r\x1b[2K")[-2]  # the live display, redrawn at close for good
    assert ANSI.sub("", last_drawn).splitlines() == [
        "[waiting for you]",
        "✔ Edit",
        "    +added",
        "    -removed",
    ]
