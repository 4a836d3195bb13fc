"""The line editor of ``acpio prompt -i`` on a real pseudo-terminal: keys in, lines out."""

from __future__ import annotations

import asyncio
import io
import os
from collections.abc import Iterator

import pytest

from acpio.oneshot.interactive import TerminalReader

pytestmark = pytest.mark.skipif(not hasattr(os, "openpty"), reason="needs pseudo-terminals (POSIX)")


@pytest.fixture
def terminal() -> Iterator[tuple[TerminalReader, int, io.StringIO]]:
    controller, device = os.openpty()
    screen = io.StringIO()
    reader = TerminalReader(fd=device, out=screen)
    try:
        yield reader, controller, screen
    finally:
        reader.close()
        os.close(controller)
        os.close(device)


async def typed(reader: TerminalReader, controller: int, *chunks: bytes) -> str | None:
    """What ``reader`` reads while ``chunks`` are typed, one write each."""
    reading = asyncio.ensure_future(reader.read("you> "))
    for chunk in chunks:
        await asyncio.sleep(0.01)
        os.write(controller, chunk)
    async with asyncio.timeout(10):
        return await reading


async def test_editing_keys(terminal: tuple[TerminalReader, int, io.StringIO]) -> None:
    reader, controller, screen = terminal
    # Left twice, insert; Ctrl-Right (an unknown sequence) ignored whole; Home, Delete; End
    line = await typed(
        reader, controller, b"abc", b"\x1b[D\x1b[D", b"X", b"\x1b[1;5C", b"\x01\x1b[3~", b"\x05!\r"
    )
    assert line == "Xbc!"
    assert "you> Xbc!" in screen.getvalue()


async def test_the_cursor_moves_back_by_columns_over_wide_characters(
    terminal: tuple[TerminalReader, int, io.StringIO],
) -> None:
    reader, controller, screen = terminal
    # 日本 take two columns each: going back over them before typing ! moves the cursor 4, not 2
    line = await typed(reader, controller, "x日本".encode(), b"\x1b[D\x1b[D", b"!\r")
    assert line == "x!日本"
    assert screen.getvalue().endswith("\r\x1b[Kyou> x日本\x1b[4D\r\x1b[Kyou> x!日本\x1b[4D\r\n")


async def test_text_cut_between_two_reads_and_a_sequence_cut_in_two(
    terminal: tuple[TerminalReader, int, io.StringIO],
) -> None:
    reader, controller, _ = terminal
    e_acute = "é".encode()
    assert await typed(reader, controller, b"caf", e_acute[:1], e_acute[1:], b"\x1b[", b"D!\r") == "caf!é"


async def test_history_completion_ctrl_c_and_ctrl_d(
    terminal: tuple[TerminalReader, int, io.StringIO],
) -> None:
    reader, controller, screen = terminal
    reader.complete_with(["/echo", "/explain", "/help"])
    assert await typed(reader, controller, b"/ec\t", b"hi\r") == "/echo hi"
    assert await typed(reader, controller, b"/e\t", b"x\t", b"\r") == "/explain "  # common part, then the one
    assert await typed(reader, controller, b"\x1b[A\x1b[A\r") == "/echo hi"  # Up twice: the line before
    assert await typed(reader, controller, b"draft", b"\x03", b"ok\r") == "ok"  # Ctrl-C clears the line
    assert "(leave with Ctrl-D or :quit)" in screen.getvalue()
    assert await typed(reader, controller, b"x\x7f", b"\x04") is None  # Ctrl-D on an empty line: the end
