"""examples/drive_pool.py: 50 prompts over 4 testy processes with a policy file; wedged and crashed agents."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "drive_pool.py"


@pytest.mark.slow
def test_the_pool_example_collects_50_results_under_its_policy_and_survives_wedged_and_crashed_agents() -> (
    None
):
    done = subprocess.run(
        [sys.executable, str(EXAMPLE)], capture_output=True, text=True, timeout=180, check=False
    )
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[:6] == [
        "results: 50 {'end_turn': 48, 'cancelled': 1, 'failed': 1}",
        "tool calls: 145",  # per prompt: the tool, the write and the edit asked about; the wedged one's edit
        "files written: 48",
        "usage reported: 48",
        "permissions: 33 allowed, 16 denied",  # the wedged turn's ask is kept though the pool gave up on it
        "decided by: {'edits': 33, 'publishing': 16}",  # the rules of examples/drive_pool.toml
    ]
    assert "cancelled: TurnTimedOut -> CancelSent -> TurnAbandoned -> ProcessKilled -> ProcessStarted -> " \
        "SessionResumed" in lines  # fmt: skip
    crashed = [line for line in lines if "exited with exit code 3" in line]
    assert len(crashed) == 1
    assert crashed[0].endswith(": ProcessDied -> ProcessStarted -> SessionResumed")
    assert "pool: ProcessKilled in slot" in done.stderr
