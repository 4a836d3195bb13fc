"""``acpio testy`` on the command line: its help documents the language and the flags."""

from __future__ import annotations

from pathlib import Path

import pytest

from acpio.agents.testy.script import COMMANDS
from acpio.cli import main

DOCS = Path(__file__).resolve().parents[2] / "docs" / "testy.md"

ALL_FLAGS = [
    "--no-load-session",
    "--no-session-list",
    "--no-session-resume",
    "--no-session-close",
    "--no-session-delete",
    "--no-image",
    "--no-audio",
    "--no-embedded-context",
    "--no-mcp-http",
    "--mcp-acp",
    "--auth",
    "--terminal-auth FILE",
]


def test_help_documents_every_command_and_flag(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main(["testy", "--help"])
    assert exit_info.value.code == 0
    out = capsys.readouterr().out
    for spec in COMMANDS:
        assert f"  {spec.usage}  " in out, spec.usage
    for flag in ALL_FLAGS:
        assert flag in out
    assert "nothing runs and the answer is one agent message" in out


def test_an_unknown_flag_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main(["testy", "--no-such-flag"])
    assert exit_info.value.code == 2
    assert "unrecognized arguments: --no-such-flag" in capsys.readouterr().err


def test_the_user_docs_cover_every_command_and_flag() -> None:
    docs = DOCS.read_text()
    for spec in COMMANDS:
        assert f"| `{spec.usage}` |" in docs, spec.usage
    for flag in ALL_FLAGS:
        assert f"| `{flag}` |" in docs, flag
