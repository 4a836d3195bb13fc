"""``acpio inspect``'s mistakes: each a one-line error naming the fix, exit code 2."""

from __future__ import annotations

from pathlib import Path

import pytest

from acpio.cli import main


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["inspect"], "no agent: give its command after --, as in `acpio inspect -- acpio testy`"),
        (["inspect", "--export-trace", "out.jsonl", "--", "x"], "--export-trace goes with --open-run FILE"),
        (["inspect", "--open-run", "missing.sqlite"], "no run file at missing.sqlite"),
    ],
)
def test_mistakes_are_one_line(
    argv: list[str],
    message: str,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
) -> None:
    monkeypatch.chdir(tmp_path)
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith("acpio: error: ")
    assert message in err
    assert err.count("\n") == 1


def test_a_run_file_that_is_not_sqlite(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_text(
        "not a database, just some text that is long enough to be read\n" * 20
    )
    assert main(["inspect", "--open-run", str(tmp_path / "notes.txt")]) == 2
    assert "is not a run file the inspector can use" in capsys.readouterr().err
