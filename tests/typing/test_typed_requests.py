"""pyright (strict) and mypy (strict) agree on what a typed request gives back: its response type."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

#: Slow (type checkers, real processes): run first, so that no worker is left with them at the end.
pytestmark = pytest.mark.slow

HERE = Path(__file__).resolve().parent
SOURCE = HERE / "typed_requests.py"
BIN = Path(sys.executable).parent


@pytest.mark.parametrize(
    "command",
    [
        [str(BIN / "basedpyright"), "--level", "error", str(SOURCE)],
        [
            sys.executable,
            "-m",
            "mypy",
            "--strict",
            "--no-incremental",
            "--config-file",
            "/dev/null",
            str(SOURCE),
        ],
    ],
    ids=["pyright", "mypy"],
)
def test_a_typed_request_gives_its_response_type(command: list[str]) -> None:
    if not Path(command[0]).exists():
        pytest.skip(f"{command[0]} is not installed (make test installs the dev extra)")
    done = subprocess.run(command, capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stdout + done.stderr
