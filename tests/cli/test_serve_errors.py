"""``acpio serve`` mistakes a new user makes: one line naming what to do, no traceback, no server."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from pathlib import Path

ACPIO = [sys.executable, "-m", "acpio"]


def _env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "ACPIO_TOKEN"}
    env.update(extra)
    return env


def test_without_the_remote_extra_it_says_which_extra_to_install(tmp_path: Path) -> None:
    # a uvicorn that cannot be imported, first on the path: as in an install without acpio[remote]
    (tmp_path / "uvicorn").mkdir()
    (tmp_path / "uvicorn" / "__init__.py").write_text("raise ImportError(\"No module named 'uvicorn'\")\n")
    done = subprocess.run(
        [*ACPIO, "serve", "--port", "0", "--", *ACPIO, "testy"],
        capture_output=True,
        text=True,
        timeout=30,
        env=_env(PYTHONPATH=str(tmp_path)),
    )
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stderr
    assert "pip install 'acpio[remote]'" in done.stderr
    assert done.stdout == ""  # never "listening on ..."


def test_a_public_bind_without_a_token_names_the_command_line_options() -> None:
    done = subprocess.run(
        [*ACPIO, "serve", "--host", "0.0.0.0", "--port", "0", "--", *ACPIO, "testy"],
        capture_output=True,
        text=True,
        timeout=30,
        env=_env(),
    )
    assert done.returncode == 2
    assert done.stderr.count("\n") == 1, done.stderr
    for option in ("--token", "$ACPIO_TOKEN", "--insecure"):
        assert option in done.stderr
    assert "insecure=True" not in done.stderr  # the Python API's words, not the command's


def test_a_port_in_use_is_one_line_saying_to_choose_another() -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        done = subprocess.run(
            [*ACPIO, "serve", "--port", str(port), "--", *ACPIO, "testy"],
            capture_output=True,
            text=True,
            timeout=30,
            env=_env(),
        )
    assert done.returncode == 1
    assert "Traceback" not in done.stderr
    assert f"Cannot serve on 127.0.0.1:{port}" in done.stderr
    assert "choose another --port (0 picks a free one)" in done.stderr
    assert done.stdout == ""
