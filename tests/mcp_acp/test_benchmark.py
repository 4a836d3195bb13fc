"""``benchmarks/mcp_over_acp.py`` (run by ``make bench``) still runs: its quick mode prints every figure."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "mcp_over_acp.py"


def test_the_quick_run_reports_each_path_at_each_concurrency() -> None:
    done = subprocess.run(
        [sys.executable, str(SCRIPT), "--quick"], capture_output=True, text=True, timeout=300, check=False
    )
    assert done.returncode == 0, done.stderr
    rows = [line.split() for line in done.stdout.splitlines()[2:]]
    assert [(row[0] if row[0] != "acp" or row[1] != "raw" else "acp raw", row[-3]) for row in rows] == [
        ("direct", "1"),
        ("acp", "1"),
        ("acp raw", "1"),
        ("direct", "16"),
        ("acp", "16"),
        ("acp raw", "16"),
    ]
    assert all(float(row[-2]) > 0 for row in rows)
