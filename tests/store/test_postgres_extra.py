"""Without psycopg (acpio installed without its postgres extra), a PostgreSQL store is refused at
start with the extra to install, not as an internal error on the first session/new."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ACPIO = [sys.executable, "-m", "acpio"]


def test_an_agent_with_a_postgres_store_and_no_psycopg_says_which_extra_to_install(tmp_path: Path) -> None:
    (tmp_path / "psycopg").mkdir()  # first on the path, and it cannot be imported: as if not installed
    (tmp_path / "psycopg" / "__init__.py").write_text("raise ImportError(\"No module named 'psycopg'\")\n")
    env = {**os.environ, "PYTHONPATH": str(tmp_path)}
    for command in (["agent", "--offline"], ["testy"]):
        done = subprocess.run(
            [*ACPIO, *command, "--store", "postgresql://127.0.0.1/acpio"],
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=30,
            env=env,
        )
        assert done.returncode == 2, done.stderr
        assert "Traceback" not in done.stderr
        assert "pip install 'acpio[postgres]'" in done.stderr
