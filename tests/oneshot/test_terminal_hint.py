"""An ACP endpoint started by hand in a terminal says what it waits for, instead of a silent hang."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from ._tmux import needs_tmux, tmux_running

ACPIO = [sys.executable, "-m", "acpio"]


@needs_tmux
@pytest.mark.parametrize(
    ("command", "name"),
    [
        (["testy"], "acpio testy"),
        (["agent", "--offline", "--store", "memory:"], "acpio agent"),
        (["conductor", "agent", "acpio testy"], "acpio conductor agent"),
    ],
    ids=["testy", "agent", "conductor"],
)
def test_started_in_a_terminal_it_says_it_waits_for_an_acp_client(
    tmp_path: Path, command: list[str], name: str
) -> None:
    with tmux_running([*ACPIO, *command], cwd=tmp_path) as term:
        term.wait_for_text(f"{name} speaks ACP (JSON-RPC, one message per line) on stdin and stdout")
        term.wait_for_text("Ctrl-D ends it.")
        term.send_keys("C-d")
        code, _ = term.exited()
    assert code == 0
