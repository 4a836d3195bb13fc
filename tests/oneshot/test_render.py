"""The renderers, fed model objects: what a person reads in a pipe, on a terminal, and in --json."""

from __future__ import annotations

import io
import json
import re
import time

from rich.console import Console

from acpio.oneshot.render import JsonLinesRenderer, PlainRenderer, diff_lines
from acpio.oneshot.render_rich import RichRenderer
from acpio.oneshot.terminals import TerminalSnapshot
from acpio.schema import (
    AgentMessageChunk,
    AgentThoughtChunk,
    CancelledPermissionOutcome,
    Content,
    CurrentModeUpdate,
    Diff,
    PermissionOption,
    PermissionOptionKind,
    Plan,
    PlanEntry,
    RequestPermissionRequest,
    SelectedPermissionOutcome,
    Terminal,
    TerminalExitStatus,
    TextContent,
    ToolCall,
    ToolCallUpdate,
    UsageUpdate,
    UserMessageChunk,
)
from acpio.session.turn_view import MessageRole
from acpio.transports import Direction, OversizedFrame

ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")


def text(chunk: str) -> AgentMessageChunk:
    return AgentMessageChunk(content=TextContent(text=chunk))


def thought(chunk: str) -> AgentThoughtChunk:
    return AgentThoughtChunk(content=TextContent(text=chunk))


def plan(*statuses: str) -> Plan:
    return Plan(
        entries=[
            PlanEntry(content=f"step {n}", priority="medium", status=status)
            for n, status in enumerate(statuses, 1)
        ]
    )


def plain() -> tuple[PlainRenderer, io.StringIO]:
    out = io.StringIO()
    return PlainRenderer(out, terminals=lambda terminal_id: None), out


def test_text_is_written_as_each_chunk_arrives() -> None:
    renderer, out = plain()
    renderer.update(text("Hel"))
    assert out.getvalue() == "Hel"
    renderer.update(text("lo, world"))
    assert out.getvalue() == "Hello, world"
    renderer.turn_ended("end_turn")
    assert out.getvalue() == "Hello, world\n[stop reason: end_turn]\n"


def test_thoughts_are_set_apart_line_by_line() -> None:
    renderer, out = plain()
    renderer.update(text("Answer"))
    renderer.update(thought("first idea\nsecond "))
    renderer.update(thought("idea"))
    renderer.update(text("Done."))
    renderer.close()
    assert out.getvalue() == "Answer\n(thinking) first idea\n(thinking) second idea\nDone.\n"


def test_a_tool_call_gets_a_line_per_status_then_its_content() -> None:
    renderer, out = plain()
    renderer.update(ToolCall(tool_call_id="t1", title="Read notes.txt", kind="read", status="pending"))
    renderer.update(ToolCallUpdate(tool_call_id="t1", status="in_progress"))
    renderer.update(ToolCallUpdate(tool_call_id="t1", status="in_progress"))  # no change: no line
    renderer.update(
        ToolCallUpdate(
            tool_call_id="t1",
            status="completed",
            content=[Content(content=TextContent(text="line 1\nline 2\n"))],
        )
    )
    assert out.getvalue() == (
        "[pending] Read notes.txt (read)\n"
        "[in progress] Read notes.txt (read)\n"
        "[completed] Read notes.txt (read)\n"
        "    line 1\n"
        "    line 2\n"
    )


def test_content_coming_after_a_tool_call_ended_starts_on_a_line_of_its_own() -> None:
    # The call ended without content; text streamed; then its content came with no status change.
    renderer, out = plain()
    renderer.update(ToolCall(tool_call_id="t1", title="Read notes.txt", kind="read", status="completed"))
    renderer.update(text("Here is what I found"))
    renderer.update(
        ToolCallUpdate(tool_call_id="t1", content=[Content(content=TextContent(text="first line"))])
    )
    renderer.update(text("Done."))
    renderer.turn_ended("end_turn")
    assert out.getvalue() == (
        "[completed] Read notes.txt (read)\n"
        "Here is what I found\n"
        "    first line\n"
        "Done.\n"
        "[stop reason: end_turn]\n"
    )


def test_a_diff_is_a_unified_diff_of_old_and_new_text() -> None:
    diff = Diff(path="/p/config.json", old_text="a\nb\nc\n", new_text="a\nB\nc\n")
    assert diff_lines(diff) == [
        ("--- /p/config.json", "diff.header"),
        ("+++ /p/config.json", "diff.header"),
        ("@@ -1,3 +1,3 @@", "diff.hunk"),
        (" a", "content"),
        ("-b", "diff.remove"),
        ("+B", "diff.add"),
        (" c", "content"),
    ]
    created = diff_lines(Diff(path="/p/new.txt", old_text=None, new_text="x"))
    assert created[0] == ("--- /dev/null", "diff.header")
    assert ("+x", "diff.add") in created


def test_a_terminal_in_a_tool_call_shows_the_command_its_output_and_status() -> None:
    snapshot = TerminalSnapshot(
        terminal_id="term-1",
        command_line="sh -c 'exit 3'",
        output="oops\n",
        truncated=False,
        exit_status=TerminalExitStatus(exit_code=3),
        released=True,
    )
    out = io.StringIO()
    renderer = PlainRenderer(out, terminals={"term-1": snapshot}.get)
    renderer.update(
        ToolCall(
            tool_call_id="t",
            title="Run it",
            kind="execute",
            status="failed",
            content=[Terminal(terminal_id="term-1")],
        )
    )
    assert out.getvalue().splitlines() == [
        "[failed] Run it (execute)",
        "    $ sh -c 'exit 3'",
        "    oops",
        "    [exit status 3]",
    ]


def test_a_running_commands_output_is_printed_as_it_comes_then_not_again() -> None:
    output = ["first\nsec"]
    status: list[TerminalExitStatus | None] = [None]

    def lookup(terminal_id: str) -> TerminalSnapshot:
        return TerminalSnapshot(
            terminal_id=terminal_id,
            command_line="make test",
            output=output[0],
            truncated=False,
            exit_status=status[0],
            released=False,
        )

    out = io.StringIO()
    renderer = PlainRenderer(out, terminals=lookup)
    renderer.update(ToolCall(tool_call_id="t", title="make test", kind="execute", status="in_progress"))
    renderer.update(ToolCallUpdate(tool_call_id="t", content=[Terminal(terminal_id="term-1")]))
    assert out.getvalue().splitlines() == [
        "[in progress] make test (execute)",
        "    $ make test",
        "    first",
    ]
    output[0] += "ond\nthird\nfour"
    renderer.terminal_output("term-1")  # complete lines only
    renderer.terminal_output("term-2")  # a terminal shown in no tool call: nothing
    assert out.getvalue().splitlines()[-2:] == ["    second", "    third"]
    output[0] += "th\n"
    status[0] = TerminalExitStatus(exit_code=0)
    renderer.update(ToolCallUpdate(tool_call_id="t", status="completed"))
    assert out.getvalue().splitlines() == [
        "[in progress] make test (execute)",
        "    $ make test",
        "    first",
        "    second",
        "    third",
        "[completed] make test (execute)",
        "    fourth",
        "    [exit status 0]",
    ]


def test_a_plan_is_a_checklist_printed_again_at_each_update() -> None:
    renderer, out = plain()
    renderer.update(plan("pending", "pending"))
    renderer.update(plan("completed", "in_progress"))
    assert out.getvalue() == ("Plan:\n  [ ] step 1\n  [ ] step 2\nPlan:\n  [x] step 1\n  [>] step 2\n")


def test_permissions_other_updates_failures_and_history() -> None:
    renderer, out = plain()
    options = [
        PermissionOption(option_id="allow", name="Allow", kind=PermissionOptionKind.ALLOW_ONCE),
        PermissionOption(option_id="reject", name="Reject", kind=PermissionOptionKind.REJECT_ONCE),
    ]
    asked = RequestPermissionRequest(
        session_id="s",
        tool_call=ToolCallUpdate(tool_call_id="t9", title="Delete everything"),
        options=options,
    )
    renderer.begin_history("sess-1")
    renderer.update(UserMessageChunk(content=TextContent(text="hi\nthere")))
    renderer.update(text("hello"))
    renderer.end_history()
    renderer.permission(asked, SelectedPermissionOutcome(option_id="reject"))
    renderer.permission(asked, CancelledPermissionOutcome())
    renderer.update(ToolCallUpdate(tool_call_id="t9", status="failed"))  # titled from the request
    renderer.update(CurrentModeUpdate(current_mode_id="plan"))
    renderer.update(UsageUpdate(used=10, size=100))
    renderer.request_failed("fs/read_text_file", "Refused to read /etc/passwd")
    assert out.getvalue().splitlines() == [
        "--- history of session sess-1 ---",
        "you> hi",
        "you> there",
        "hello",
        "--- end of history ---",
        "[permission] Delete everything: Reject (reject)",
        "[permission] Delete everything: cancelled",
        "[failed] Delete everything",
        "[mode: plan]",
        "[usage: 10 of 100 tokens]",
        "[fs/read_text_file failed] Refused to read /etc/passwd",
    ]


def test_a_cancelled_turn_marks_unfinished_tool_calls_cancelled() -> None:
    renderer, out = plain()
    renderer.update(ToolCall(tool_call_id="a", title="Done", status="completed"))
    renderer.update(ToolCall(tool_call_id="b", title="Running", status="in_progress"))
    renderer.turn_ended("cancelled")
    assert out.getvalue().splitlines()[-2:] == ["[cancelled] Running", "[stop reason: cancelled]"]


# --- rich ----------------------------------------------------------------------------------------------


def rich() -> tuple[RichRenderer, io.StringIO]:
    out = io.StringIO()
    console = Console(file=out, force_terminal=True, color_system="standard", width=100, highlight=False)
    return RichRenderer(console), out


def test_rich_shows_text_at_once_and_prints_it_for_good_line_by_line() -> None:
    renderer, out = rich()
    renderer.update(thought("Hel"))
    assert "Hel" in ANSI.sub("", out.getvalue())  # drawn at once, in the live region
    renderer.update(thought("lo\nwor"))
    renderer.update(thought("ld"))
    renderer.turn_ended("end_turn")
    renderer.close()
    written = out.getvalue()
    assert "\x1b[2;3m  Hello" in written  # printed for good, dim italic, once the line is complete
    assert "\x1b[2;3m  world" in written
    # (the stream also holds the live region's drawings, erased on the screen: the order is what counts)
    final = ANSI.sub("", written)
    assert final.index("  world") < final.index("[stop reason: end_turn]")


def test_rich_renders_markdown_block_by_block_keeping_line_breaks() -> None:
    renderer, out = rich()
    renderer.update(text("# Title\n\nsome **bold** text\nnext line\n\n```\ncode **not bold**\n"))
    printed = ANSI.sub("", out.getvalue())
    assert "Title" in printed
    assert "# Title" not in printed
    renderer.update(text("```\n"))
    renderer.close()
    written = out.getvalue()
    assert "\x1b[1msome bold" not in written  # only the bold word is bold
    assert "\x1b[1mbold\x1b[0m" in written
    lines = ANSI.sub("", written).splitlines()
    assert any(line.rstrip() == "some bold text" for line in lines)  # its own line: the break is kept
    assert any(line.rstrip() == "next line" for line in lines)
    assert "code **not bold**" in ANSI.sub("", written)  # code stays as it is


def test_rich_streams_a_long_code_block_in_small_chunks_without_slowing_down() -> None:
    # Each chunk used to redraw the whole block as markdown and scan it again for its end: a
    # 2,000-line block in 8-character pieces took more than ten minutes; now about a second.
    renderer, out = rich()
    code = "".join(f"x_{i} = compute({i})\n" for i in range(2000))
    message = f"Here:\n\n```python\n{code}```\n\nDone.\n"
    began = time.monotonic()
    for start in range(0, len(message), 8):
        renderer.update(text(message[start : start + 8]))
    renderer.close()
    assert time.monotonic() - began < 60  # (a loaded machine is slow, not ten minutes slow)
    printed = [line.strip() for line in ANSI.sub("", out.getvalue()).splitlines()]
    last = len(printed) - 1 - printed[::-1].index("x_0 = compute(0)")  # printed for good, after the live tail
    assert printed[last : last + 2000] == [f"x_{i} = compute({i})" for i in range(2000)]
    assert "Done." in printed[last + 2000 :]


def test_rich_prints_the_plan_once_as_it_ended() -> None:
    renderer, out = rich()
    renderer.update(plan("pending", "pending"))
    renderer.update(plan("in_progress", "pending"))
    renderer.update(plan("completed", "completed"))
    renderer.turn_ended("end_turn")
    renderer.close()
    final = ANSI.sub("", out.getvalue())
    assert final.count("☑ step 1") >= 1
    # printed for good once: the earlier states were only drawn in the live region, then erased
    tail = final[final.rindex("Plan:") :]
    assert "☐" not in tail
    assert "▶" not in tail


def test_rich_colours_diffs_and_statuses() -> None:
    renderer, out = rich()
    renderer.update(ToolCall(tool_call_id="t", title="Edit", kind="edit", status="in_progress"))
    renderer.update(
        ToolCallUpdate(
            tool_call_id="t", status="completed", content=[Diff(path="/f", old_text="old", new_text="new")]
        )
    )
    renderer.update(ToolCall(tool_call_id="u", title="Broken", status="failed"))
    renderer.turn_ended("end_turn")
    written = out.getvalue()
    assert "\x1b[32m+new" in written  # green
    assert "\x1b[31m-old" in written  # red
    assert "\x1b[31m✖ " in written  # failed: red cross
    assert "\x1b[32m[stop reason: end_turn]" in written


def test_rich_prints_streamed_text_before_content_coming_after_the_tool_call_ended() -> None:
    renderer, out = rich()
    renderer.update(ToolCall(tool_call_id="t", title="Read notes.txt", kind="read", status="completed"))
    renderer.update(text("Here is what I found"))
    renderer.update(ToolCallUpdate(tool_call_id="t", content=[Content(content=TextContent(text="first"))]))
    renderer.turn_ended("end_turn")
    renderer.close()
    final = ANSI.sub("", out.getvalue())
    # the text's last drawing (printed for good) comes before the content, never after it
    assert final.rindex("Here is what I found") < final.index("    first") < final.index("[stop reason")


def test_rich_redraws_a_changing_tool_call_in_place() -> None:
    renderer, out = rich()
    renderer.update(ToolCall(tool_call_id="t", title="Work", status="pending"))
    assert "○ Work" in ANSI.sub("", out.getvalue())
    renderer.update(ToolCallUpdate(tool_call_id="t", status="completed"))
    renderer.close()
    written = out.getvalue()
    assert "\x1b[1A" in written or "\x1b[2K" in written  # the line was erased and redrawn
    assert ANSI.sub("", written).rstrip().endswith("✔ Work")
    assert ANSI.sub("", written).count("✔ Work") == 1


# --- JSON lines -------------------------------------------------------------


def test_json_lines_split_batches_and_keep_invalid_text() -> None:
    out = io.StringIO()
    renderer = JsonLinesRenderer(out)
    renderer.record(Direction.OUTGOING, b'{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}')
    renderer.record(Direction.INCOMING, b'[{"jsonrpc":"2.0","method":"a"},{"jsonrpc":"2.0","method":"b"}]')
    renderer.record(Direction.INCOMING, b"not json")
    renderer.record(Direction.INCOMING, OversizedFrame(size=10_000_000, head=b"{"))
    renderer.update(text("ignored"))
    lines = [json.loads(line) for line in out.getvalue().splitlines()]
    assert lines == [
        {"direction": "send", "message": {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {}}},
        {"direction": "recv", "message": {"jsonrpc": "2.0", "method": "a"}},
        {"direction": "recv", "message": {"jsonrpc": "2.0", "method": "b"}},
        {"direction": "recv", "invalid": "not json"},
    ]


# --- text chunks shown without their models ------------------------------------------------------------


def test_a_text_chunk_read_without_its_model_shows_as_its_model_does() -> None:
    # The prompt flow gives a plain text chunk's text to text() (session.turn_view.text_chunk): the
    # screen must be what update() shows for the chunk's model, history and hostile text included.
    # (Both call the renderer's _stream with the same arguments; the rich renderer's live region
    # redraws on a timer, so its output is compared by the plain renderer's, which has none.)
    kinds = {"agent": AgentMessageChunk, "thought": AgentThoughtChunk, "user": UserMessageChunk}
    turn: list[tuple[MessageRole, str]] = [
        ("user", "hi"),
        ("thought", "let me see\n"),
        ("agent", "one "),
        ("agent", "two\x1b[2J\n"),
        ("thought", ""),
        ("agent", "three"),
    ]
    fast, fast_out = plain()
    typed, typed_out = plain()
    for history in (True, False):
        for renderer in (fast, typed):
            if history:
                renderer.begin_history("s")
        for role, text in turn:
            fast.text(role, text)
            typed.update(kinds[role](content=TextContent(text=text)))
        if history:
            fast.end_history()
            typed.end_history()
    fast.turn_ended("end_turn")
    typed.turn_ended("end_turn")
    assert "three" in fast_out.getvalue()
    assert fast_out.getvalue() == typed_out.getvalue()
