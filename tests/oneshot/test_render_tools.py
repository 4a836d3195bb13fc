"""ToolCallLines: a v1 tool call merged from its updates, and the lines a renderer writes for it."""

from __future__ import annotations

from acpio.oneshot.render_tools import ToolCallLines
from acpio.oneshot.terminals import TerminalSnapshot
from acpio.schema import Content, Terminal, TerminalExitStatus, TextContent, ToolCall, ToolCallUpdate

LABELS = {"pending": "[pending]", "completed": "[completed]", "cancelled": "[cancelled]"}


def words(line: list[tuple[str, str]] | None) -> str:
    assert line is not None
    return "".join(text for text, _ in line)


def test_a_status_line_per_change_and_the_content_once_the_call_ended() -> None:
    calls = ToolCallLines(LABELS, None)
    tool = calls.called(ToolCall(tool_call_id="t1", title="Read notes.txt", kind="read"))
    assert words(calls.status_line(tool, False)) == "[pending] Read notes.txt (read)"
    assert calls.status_line(tool, False) is None  # nothing changed: not shown again
    assert calls.content_lines(tool, False) == []  # not ended yet
    done = ToolCallUpdate(
        tool_call_id="t1", status="completed", content=[Content(content=TextContent(text="first\nsecond\n"))]
    )
    tool = calls.updated(done)
    assert words(calls.status_line(tool, True)) == "[completed] Read notes.txt (read)"
    assert calls.content_lines(tool, True) == [
        [("    ", "content"), ("first", "history")],
        [("    ", "content"), ("second", "history")],
    ]
    assert calls.content_lines(tool, True) == []  # once


def test_an_update_of_a_call_never_announced_is_titled_by_its_id_and_known_merged() -> None:
    calls = ToolCallLines(LABELS, None)
    assert calls.known("t9") is None
    calls.updated(ToolCallUpdate(tool_call_id="t9", kind="edit"))
    calls.updated(ToolCallUpdate(tool_call_id="t9", content=[Content(content=TextContent(text="x"))]))
    known = calls.known("t9")
    assert known is not None
    assert (known.title, str(known.kind), known.content) == (
        "t9",
        "edit",
        [Content(content=TextContent(text="x"))],
    )


def test_a_cancelled_turn_cancels_only_the_calls_not_ended() -> None:
    calls = ToolCallLines(LABELS, None)
    calls.called(ToolCall(tool_call_id="done", title="a", status="completed"))
    calls.called(ToolCall(tool_call_id="running", title="b", status="in_progress"))
    assert [(tool.tool_call_id, tool.status) for tool in calls.cancel_unfinished()] == [
        ("running", "cancelled")
    ]
    assert calls.cancel_unfinished() == []


def test_a_running_command_streams_its_complete_lines_then_the_rest_and_its_exit() -> None:
    running = TerminalSnapshot("term-1", "make test", "one\ntw", False, None, False)
    snapshots = {"term-1": running}
    calls = ToolCallLines(LABELS, snapshots.get)
    tool = calls.called(ToolCall(tool_call_id="t1", title="Run", content=[Terminal(terminal_id="term-1")]))
    assert calls.terminals_to_stream(tool) == ["term-1"]
    assert words(calls.start_streaming("term-1")) == "    $ make test"
    assert calls.terminals_to_stream(tool) == []
    assert [words(line) for line in calls.new_output("term-1")] == ["    one"]  # "tw" is not a whole line yet
    assert calls.new_output("term-1") == []
    snapshots["term-1"] = TerminalSnapshot(
        "term-1", "make test", "one\ntwo\nthree\n", False, TerminalExitStatus(exit_code=0), False
    )
    tool = calls.updated(ToolCallUpdate(tool_call_id="t1", status="completed"))
    assert [words(line) for line in calls.content_lines(tool, False)] == [
        "    two",
        "    three",
        "    [exit status 0]",
    ]
