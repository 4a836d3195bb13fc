"""benchmarks/store.py still runs: a quick run prints every figure (timing is not checked)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_a_quick_run_prints_every_figure_for_memory_and_sqlite() -> None:
    done = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "store.py"), "--quick"],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=ROOT,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    for kind in ("memory", "sqlite"):
        for figure in (
            "append:",
            "streaming typed updates while recording:",
            "streaming dict updates while recording:",
            "session/load of",
            "session/list over",
        ):
            assert any(line.startswith(f"{kind:8} {figure}") for line in done.stdout.splitlines()), (
                kind,
                figure,
            )
