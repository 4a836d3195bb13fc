"""The committed models and method table equal what the generator makes of the schema in ../shared."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def test_generated_modules_are_up_to_date(shared_dir: Path) -> None:
    result = subprocess.run(
        [
            sys.executable,
            str(REPO / "scripts" / "generate_schema.py"),
            "--spec",
            str(shared_dir / "spec"),
            "--check",
        ],
        capture_output=True,
        text=True,
        cwd=REPO,
        timeout=120,
        check=False,
    )
    assert result.returncode == 0, f"generated schema modules are stale; run `make schema`:\n{result.stderr}"
