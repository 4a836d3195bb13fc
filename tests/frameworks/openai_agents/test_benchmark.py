"""benchmarks/openai_agents_overhead.py still runs: a quick run measures and prints its three ways."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

BENCHMARK = Path(__file__).resolve().parents[3] / "benchmarks" / "openai_agents_overhead.py"


@pytest.mark.slow  # imports the Agents SDK in a fresh process: seconds on a loaded machine
def test_a_quick_run_prints_the_cost_per_update_of_each_way() -> None:
    done = subprocess.run(
        [sys.executable, str(BENCHMARK), "--quick"], capture_output=True, text=True, timeout=180, check=False
    )
    assert done.returncode == 0, done.stderr
    rows = {line.split()[0] for line in done.stdout.splitlines()}
    assert {"hand-written", "adapter", "SDK"} <= rows
    assert "adapter overhead:" in done.stdout
    assert "load average at end:" in done.stdout
