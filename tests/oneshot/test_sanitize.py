"""Nothing an agent sends reaches the terminal as a control sequence: every print path, plain and rich.

Each path is fed ``HOSTILE`` (an OSC 0 window title, an OSC 52 clipboard write, a clear screen, a
carriage return, an 8-bit CSI, a bidi override, NUL, backspace) and must print exactly what it
prints for ``CLEAN``, the same text without them.
"""

from __future__ import annotations

import io
import os
import re
from collections.abc import Callable
from pathlib import Path

import pytest
from rich.console import Console

from acpio import Agent
from acpio.errors import InvalidParams
from acpio.oneshot import LineInput, PromptFailed, PromptOptions, run_prompt
from acpio.oneshot.permissions import AskPolicy
from acpio.oneshot.render import PlainRenderer, TextRenderer
from acpio.oneshot.render_rich import RichRenderer
from acpio.oneshot.sanitize import sanitize
from acpio.oneshot.terminals import TerminalSnapshot
from acpio.schema import (
    AgentMessageChunk,
    AgentThoughtChunk,
    AvailableCommand,
    AvailableCommandsUpdate,
    Content,
    CurrentModeUpdate,
    Diff,
    InitializeRequest,
    PermissionOption,
    PermissionOptionKind,
    Plan,
    PlanEntry,
    RequestPermissionRequest,
    ResourceLink,
    SelectedPermissionOutcome,
    SessionInfoUpdate,
    Terminal,
    TerminalExitStatus,
    TextContent,
    ToolCall,
    ToolCallUpdate,
    UserMessageChunk,
)

from ._hostile import ScriptedAgent

HOSTILE = (
    "A\x1b]0;owned title\x07B\x1b]52;c;cHduZWQ=\x1b\\C\x1b[2JD\r[permission] fake\x9b31mE\u202eF\x00G\x08H"
)
CLEAN = "ABCD[permission] fakeEFGH"

# Sequences acpio's own rendering writes (rich colours, the in-place redraw of Live).
OURS = re.compile(r"\x1b\[(?:\?25[lh]|[0-9;]*[mAK])|\r")


def test_sanitize_removes_sequences_and_controls_and_keeps_text() -> None:
    assert sanitize(HOSTILE) == CLEAN
    assert sanitize(f"{HOSTILE}\nnext") == f"{CLEAN}\nnext"
    assert sanitize(f"{HOSTILE}\nnext", single_line=True) == f"{CLEAN} next"
    assert sanitize("tab\tand\r\nnewline") == "tab\tand\nnewline"
    assert sanitize("é ü 日本語 \u200f") == "é ü 日本語 \u200f"  # text, and a harmless RTL mark
    assert sanitize("\x1b[1;31mred\x1b[0m \x1b]8;;http://x\x1b\\link\x1b]8;;\x1b\\") == "red link"
    assert sanitize("unterminated \x1b]0;title") == "unterminated 0;title"  # no ESC left to act on
    assert sanitize("\x1b7saved\x1b8 \x1bcreset \x1b(Bcharset \x1b") == "saved reset charset "
    plain = "nothing to do"
    assert sanitize(plain) is plain


def _snapshot(text: str) -> TerminalSnapshot:
    return TerminalSnapshot(
        terminal_id="term-1",
        command_line=text,
        output=f"{text}\n",
        truncated=False,
        exit_status=TerminalExitStatus(exit_code=0),
        released=True,
    )


def _permission_request(text: str) -> RequestPermissionRequest:
    return RequestPermissionRequest(
        session_id="s",
        tool_call=ToolCallUpdate(tool_call_id="t", title=text),
        options=[PermissionOption(option_id=text, name=text, kind=PermissionOptionKind.ALLOW_ONCE)],
    )


def _history(renderer: TextRenderer, text: str) -> None:
    renderer.begin_history(text)
    renderer.update(UserMessageChunk(content=TextContent(text=text)))
    renderer.end_history()


#: Every path a renderer prints the agent's text on; each takes the text and drives a renderer.
PATHS: dict[str, Callable[[TextRenderer, str], None]] = {
    "message": lambda r, s: r.update(AgentMessageChunk(content=TextContent(text=s))),
    "thought": lambda r, s: r.update(AgentThoughtChunk(content=TextContent(text=s))),
    "history": lambda r, s: _history(r, s),
    "tool title": lambda r, s: r.update(ToolCall(tool_call_id="t", title=s, status="pending")),
    "tool title update": lambda r, s: r.update(ToolCallUpdate(tool_call_id=s, title=s)),
    "tool content": lambda r, s: r.update(
        ToolCall(
            tool_call_id="t", title="T", status="completed", content=[Content(content=TextContent(text=s))]
        )
    ),
    "resource link": lambda r, s: r.update(
        ToolCall(
            tool_call_id="t",
            title="T",
            status="completed",
            content=[Content(content=ResourceLink(uri=s, name="n"))],
        )
    ),
    "diff": lambda r, s: r.update(
        ToolCall(
            tool_call_id="t",
            title="T",
            status="completed",
            content=[Diff(path=s, old_text=f"{s}\n", new_text=f"{s}!\n")],
        )
    ),
    "terminal": lambda r, s: r.update(
        ToolCall(tool_call_id="t", title="T", status="completed", content=[Terminal(terminal_id="term-1")])
    ),
    "unknown terminal": lambda r, s: r.update(
        ToolCall(tool_call_id="t", title="T", status="completed", content=[Terminal(terminal_id=s)])
    ),
    "plan": lambda r, s: r.update(Plan(entries=[PlanEntry(content=s, priority="high", status="pending")])),
    "permission": lambda r, s: r.permission(_permission_request(s), SelectedPermissionOutcome(option_id=s)),
    "request failed": lambda r, s: r.request_failed(s, s),
    "session title": lambda r, s: r.update(SessionInfoUpdate(title=s)),
    "mode": lambda r, s: r.update(CurrentModeUpdate(current_mode_id=s)),
    "commands": lambda r, s: r.update(
        AvailableCommandsUpdate(available_commands=[AvailableCommand(name=s, description=s)])
    ),
    "stop reason": lambda r, s: r.turn_ended(s),
}


def _plain(drive: Callable[[TextRenderer, str], None], text: str) -> str:
    out = io.StringIO()
    renderer = PlainRenderer(out, terminals=lambda terminal_id: _snapshot(text))
    drive(renderer, text)
    renderer.close()
    return out.getvalue()


def _rich(drive: Callable[[TextRenderer, str], None], text: str) -> str:
    out = io.StringIO()
    console = Console(file=out, force_terminal=True, color_system="standard", width=400, highlight=False)
    renderer = RichRenderer(console, terminals=lambda terminal_id: _snapshot(text))
    drive(renderer, text)
    renderer.close()
    return out.getvalue()


@pytest.mark.parametrize("render", [_plain, _rich], ids=["plain", "rich"])
@pytest.mark.parametrize("path", list(PATHS))
def test_every_print_path_neutralises_control_sequences(
    path: str, render: Callable[[Callable[[TextRenderer, str], None], str], str]
) -> None:
    drive = PATHS[path]
    hostile = render(drive, HOSTILE)
    assert CLEAN in OURS.sub("", hostile)  # the path does print the text
    for bad in ("\x1b]", "\x1b[2J", "\x9b", "\u202e", "\x00", "\x08", "\x07"):
        assert bad not in hostile
    if render is _plain:
        assert "\r" not in hostile
    if path != "diff":  # a diff splits lines at \r too (str.splitlines), before they are sanitized
        assert hostile == render(drive, CLEAN)


@pytest.mark.parametrize("render", [_plain, _rich], ids=["plain", "rich"])
def test_a_one_line_field_cannot_start_a_line_of_its_own(
    render: Callable[[Callable[[TextRenderer, str], None], str], str],
) -> None:
    title = "Read notes.txt\n[permission] Delete everything: Allow once (allow-once)"
    shown = re.split("[\r\n]", OURS.sub("", render(PATHS["tool title"], title).replace("\r", "\n")))
    assert {line for line in shown if "[permission]" in line} == {
        f"{'[pending]' if render is _plain else '○'} Read notes.txt [permission] Delete everything: "
        "Allow once (allow-once)"
    }


async def test_the_ask_question_is_sanitized() -> None:
    out = io.StringIO()
    read_end, write_end = os.pipe()
    try:
        os.write(write_end, b"1\n")
        policy = AskPolicy(LineInput(read_end, name="pipe"), out)
        await policy.decide(_permission_request(f"{HOSTILE}\nnext"))
    finally:
        os.close(read_end)
        os.close(write_end)
    question = out.getvalue()
    assert f"The agent asks for permission: {CLEAN} next\n" in question
    assert f"  1) {CLEAN} next\n" in question
    assert "\x1b" not in question
    assert "\r" not in question


async def test_notes_and_failures_on_stderr_are_sanitized(tmp_path: Path) -> None:
    agent = ScriptedAgent([], session_id=f"s{HOSTILE}")
    out, err = io.StringIO(), io.StringIO()
    options = PromptOptions(agent=agent.builder, prompt="hi", cwd=tmp_path)
    assert await run_prompt(options, stdout=out, stderr=err, handle_sigint=False) == 0
    assert f"acpio: session s{CLEAN}\n" in err.getvalue()  # no load/resume: no continue hint

    refusing = Agent.builder(name="refusing")

    @refusing.on_request(InitializeRequest)
    async def initialize(request: InitializeRequest) -> None:
        raise InvalidParams(message=f"no\n{HOSTILE}")

    options = PromptOptions(agent=refusing, prompt="hi", cwd=tmp_path)
    with pytest.raises(PromptFailed) as caught:
        await run_prompt(options, stdout=out, stderr=err, handle_sigint=False)
    assert caught.value.message == f"The agent refused initialize: -32602 no\n{CLEAN}"
    assert str(caught.value) == caught.value.message
