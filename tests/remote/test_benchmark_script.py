"""benchmarks/remote.py still runs: a quick acpio-only run measures each transport (timing not checked)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_a_quick_run_prints_a_row_per_transport_and_the_target() -> None:
    done = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "remote.py"), "--quick", "--impls", "acpio"],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=ROOT,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    rows = [line.split() for line in done.stdout.splitlines() if line.startswith("acpio -> acpio")]
    assert [row[3] for row in rows] == ["stdio", "websocket", "http+sse"]
    for row in rows:
        round_trips, updates = (float(cell.replace(",", "")) for cell in row[4:6])
        assert round_trips > 0
        assert updates > 0
    assert any(line.startswith("target: acpio over WebSocket") for line in done.stdout.splitlines())
