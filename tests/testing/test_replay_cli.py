"""``acpio replay`` and ``acpio prompt --record``: their usage mistakes are one line and exit code 2."""

from __future__ import annotations

from pathlib import Path

import pytest

from acpio.cli import main


def test_replay_refuses_a_missing_or_empty_cassette(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["replay", str(tmp_path / "none.jsonl")]) == 2
    assert f"acpio: error: cannot replay {tmp_path / 'none.jsonl'}: [Errno 2]" in capsys.readouterr().err
    empty = tmp_path / "empty.jsonl"
    empty.write_text("not a trace\n")
    assert main(["replay", str(empty)]) == 2
    assert "no ACP message between a client and an agent; record one with" in capsys.readouterr().err


def test_replay_counts_messages_from_one(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["replay", "--cut-at", "0", str(tmp_path / "x.jsonl")]) == 2
    assert "--cut-at 0: messages are counted from 1" in capsys.readouterr().err


def test_record_needs_an_existing_directory(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    missing = tmp_path / "no" / "run.jsonl"
    assert main(["prompt", "--agent", "acpio testy", "--record", str(missing), "hi"]) == 2
    assert f"--record {missing}: no such directory {missing.parent}" in capsys.readouterr().err
