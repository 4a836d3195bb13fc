"""examples/drive_pool.py: 50 prompts over 4 testy processes, a wedged agent and a crashed one survived."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "drive_pool.py"


@pytest.mark.slow
def test_the_pool_example_collects_50_results_and_survives_a_wedged_and_a_crashed_agent() -> None:
    done = subprocess.run(
        [sys.executable, str(EXAMPLE)], capture_output=True, text=True, timeout=180, check=False
    )
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[:4] == [
        "results: 50 {'end_turn': 48, 'cancelled': 1, 'failed': 1}",
        "tool calls: 96",  # per prompt: the tool and the write
        "files written: 48",
        "usage reported: 48",
    ]
    assert "cancelled: TurnTimedOut -> CancelSent -> TurnAbandoned -> ProcessKilled -> ProcessStarted -> " \
        "SessionResumed" in lines  # fmt: skip
    crashed = [line for line in lines if "exited with exit code 3" in line]
    assert len(crashed) == 1
    assert crashed[0].endswith(": ProcessDied -> ProcessStarted -> SessionResumed")
    assert "pool: ProcessKilled in slot" in done.stderr
