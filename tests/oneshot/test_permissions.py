"""Permission policies: --allow, --deny, and --ask reading the person's answer without blocking."""

from __future__ import annotations

import asyncio
import contextlib
import io
import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from acpio.oneshot.permissions import (
    AllowPolicy,
    AskPolicy,
    DenyPolicy,
    LineInput,
    command_refusal,
    parse_answer,
)
from acpio.oneshot.terminals import TerminalCommand
from acpio.schema import (
    CancelledPermissionOutcome,
    PermissionOption,
    PermissionOptionKind,
    RequestPermissionRequest,
    SelectedPermissionOutcome,
    ToolCallUpdate,
)

TIMEOUT = 5

OPTIONS = [
    PermissionOption(option_id="allow-once", name="Allow once", kind=PermissionOptionKind.ALLOW_ONCE),
    PermissionOption(option_id="allow-always", name="Allow always", kind=PermissionOptionKind.ALLOW_ALWAYS),
    PermissionOption(option_id="reject-once", name="Reject", kind=PermissionOptionKind.REJECT_ONCE),
]


def request(options: list[PermissionOption] = OPTIONS) -> RequestPermissionRequest:
    return RequestPermissionRequest(
        session_id="s",
        tool_call=ToolCallUpdate(tool_call_id="call-1", title="Edit config.json", kind="edit"),
        options=options,
    )


def chosen(outcome: object) -> str:
    assert isinstance(outcome, SelectedPermissionOutcome), outcome
    return outcome.option_id


@pytest.fixture
def pipe() -> Iterator[tuple[int, int]]:
    read_end, write_end = os.pipe()
    yield read_end, write_end
    for fd in (read_end, write_end):
        with contextlib.suppress(OSError):
            os.close(fd)


async def test_allow_picks_allow_once() -> None:
    assert chosen(await AllowPolicy().decide(request())) == "allow-once"


async def test_allow_falls_back_to_allow_always_then_to_reject() -> None:
    assert chosen(await AllowPolicy().decide(request(OPTIONS[1:]))) == "allow-always"
    assert chosen(await AllowPolicy().decide(request(OPTIONS[2:]))) == "reject-once"


async def test_deny_picks_reject_once_or_cancels_without_a_reject_option() -> None:
    assert chosen(await DenyPolicy().decide(request())) == "reject-once"
    assert isinstance(await DenyPolicy().decide(request(OPTIONS[:2])), CancelledPermissionOutcome)


@pytest.mark.parametrize(
    ("answer", "expected"),
    [
        ("1", "allow-once"),
        (" 3 ", "reject-once"),
        ("allow-always", "allow-always"),
        ("REJECT", "reject-once"),
        ("allow_always", "allow-always"),
        ("y", "allow-once"),
        ("no", "reject-once"),
        ("always", "allow-always"),
        ("4", None),
        ("0", None),
        ("maybe", None),
        ("", None),
    ],
)
def test_parse_answer(answer: str, expected: str | None) -> None:
    option = parse_answer(answer, OPTIONS)
    assert (option.option_id if option is not None else None) == expected


async def test_ask_shows_the_options_and_takes_the_answer(pipe: tuple[int, int]) -> None:
    read_end, write_end = pipe
    os.write(write_end, b"perhaps\n2\n")
    shown = io.StringIO()
    async with asyncio.timeout(TIMEOUT):
        outcome = await AskPolicy(LineInput(read_end, name="pipe"), shown).decide(request())
    assert chosen(outcome) == "allow-always"
    text = shown.getvalue()
    assert "Edit config.json (edit)" in text
    assert "1) Allow once" in text
    assert "3) Reject" in text
    assert "'perhaps' is not one of the choices" in text


async def test_ask_refuses_at_the_end_of_input(pipe: tuple[int, int]) -> None:
    read_end, write_end = pipe
    os.close(write_end)
    shown = io.StringIO()
    async with asyncio.timeout(TIMEOUT):
        outcome = await AskPolicy(LineInput(read_end, name="pipe"), shown).decide(request())
    assert chosen(outcome) == "reject-once"
    assert "No answer (end of pipe): refusing." in shown.getvalue()


async def test_a_pending_question_does_not_block_the_event_loop_and_can_be_cancelled(
    pipe: tuple[int, int],
) -> None:
    read_end, write_end = pipe
    answers = LineInput(read_end, name="pipe")
    question = asyncio.ensure_future(answers.readline())
    ticks = 0
    for _ in range(5):  # the loop keeps running while nobody answers
        await asyncio.sleep(0.01)
        ticks += 1
    assert ticks == 5
    assert not question.done()
    question.cancel()
    with pytest.raises(asyncio.CancelledError):
        await question
    os.write(write_end, b"later\n")  # the descriptor is still usable afterwards
    async with asyncio.timeout(TIMEOUT):
        assert await answers.readline() == "later"


async def test_line_input_reads_lines_one_by_one_from_a_regular_file(tmp_path: Path) -> None:
    answers_file = tmp_path / "answers.txt"
    answers_file.write_text("first\r\nsecond\nlast")
    fd = os.open(answers_file, os.O_RDONLY)
    try:
        answers = LineInput(fd, name=str(answers_file))
        assert [await answers.readline() for _ in range(4)] == ["first", "second", "last", None]
    finally:
        os.close(fd)


def test_a_command_refusal_names_the_command_and_what_refused_it_on_the_wire() -> None:
    command = TerminalCommand("s-1", "ls", ("-l",), "/bin/ls", Path("/tmp"), (("PATH", "/x"),))
    error = command_refusal(command, "env", "it sets PATH", variables=["PATH"])
    assert error.to_wire() == {
        "code": -32602,
        "message": "Refused to run PATH=/x ls -l: it sets PATH",
        "data": {"command": "ls", "args": ["-l"], "refused": "env", "variables": ["PATH"]},
    }
